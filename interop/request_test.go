package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	mqconsumer "github.com/mqgo/mq/consumer"
	mqproducer "github.com/mqgo/mq/producer"
)

// Issue 14's request-reply across clients: the official Go client's Request and RequestAsync
// answered through our broker by our replier and by the official one, and our Request answered
// by the official replier. The broker pushes every reply with PUSH_REPLY_MESSAGE_TO_CLIENT to
// the connection that sent its request.

// ourReplier answers every message of topic with "re: <body>", with our consumer and producer.
func ourReplier(t *testing.T, n *mq.Node, topic string) {
	t.Helper()
	replier := newOurProducer(t, n, mqproducer.WithGroup("our-replier-pg"))
	ourConsumer(t, n, "our-replier-cg", uniqueInstance(t.Name()+"-replier"), topic, "*",
		func(ctx context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
			for _, m := range msgs {
				reply, err := mqconsumer.NewReplyMessage(m, append([]byte("re: "), m.Body...))
				if err != nil {
					return mqconsumer.ConsumeSuccess, err
				}
				if _, err := replier.SendReply(ctx, reply); err != nil {
					t.Logf("reply: %v", err)
				}
			}
			return mqconsumer.ConsumeSuccess, nil
		})
}

// officialReplier answers the same way with the official push consumer and producer, which
// sends replies with SEND_REPLY_MESSAGE (324).
func officialReplier(t *testing.T, n *mq.Node, topic string) {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(n)), producer.WithGroupName("official-replier-pg"),
		producer.WithInstanceName(uniqueInstance(t.Name()+"-replier")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("official-replier-cg"),
		consumer.WithInstance(uniqueInstance(t.Name()+"-replier")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				reply, err := consumer.CreateReplyMessage(m, nil)
				if err != nil {
					return consumer.ConsumeSuccess, err
				}
				// CreateReplyMessage parses its body argument as properties and leaves the
				// reply's body empty: the body is set here.
				reply.Body = append([]byte("re: "), m.Body...)
				_, _ = p.SendSync(ctx, reply)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
}

// officialRequester is a plain official producer. It needs nothing to be answered at once: the
// broker pushes each reply to the connection its request came on (request_start_test.go).
func officialRequester(t *testing.T, n *mq.Node) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(n)), producer.WithGroupName("official-requester-pg"),
		producer.WithInstanceName(uniqueInstance(t.Name()+"-requester")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

func TestOfficialRequest(t *testing.T) {
	for name, replier := range map[string]func(*testing.T, *mq.Node, string){"our replier": ourReplier, "official replier": officialReplier} {
		t.Run(name, func(t *testing.T) {
			n := startNode(t)
			const topic = "OfficialRequests"
			createTopic(t, n, topic, 2)
			replier(t, n, topic)
			p := officialRequester(t, n)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 3 {
				body := fmt.Sprintf("ping-%d", i)
				// The first request may wait for the replier's first rebalance.
				reply, err := p.Request(ctx, 20*time.Second, primitive.NewMessage(topic, []byte(body)))
				if err != nil {
					t.Fatalf("request %s: %v", body, err)
				}
				if string(reply.Body) != "re: "+body || reply.GetProperty(primitive.PropertyCorrelationID) == "" ||
					reply.Topic != "DefaultCluster_REPLY_TOPIC" {
					t.Fatalf("reply %v to %s", reply, body)
				}
			}

			done := make(chan string, 1)
			err := p.RequestAsync(ctx, 20*time.Second, func(_ context.Context, m *primitive.Message, err error) {
				if err != nil {
					done <- "error: " + err.Error()
					return
				}
				done <- string(m.Body)
			}, primitive.NewMessage(topic, []byte("async")))
			if err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-done:
				if got != "re: async" {
					t.Fatalf("async reply %q", got)
				}
			case <-ctx.Done():
				t.Fatal("no async reply")
			}
		})
	}
}

// Our Request answered by the official replier.
func TestOurRequestOfficialReplier(t *testing.T) {
	n := startNode(t)
	const topic = "OurRequests"
	createTopic(t, n, topic, 2)
	officialReplier(t, n, topic)
	p := newOurProducer(t, n, mqproducer.WithGroup("our-requester-pg"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := strings.Repeat("x", 10<<10)
	for _, body := range []string{"ping", big} {
		reply, err := p.Request(ctx, mqproducer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		if string(reply.Body) != "re: "+body || reply.Property("REPLY_TO_CLIENT") != p.ClientID() {
			t.Fatalf("reply %.40q properties %v", reply.Body, reply.Properties)
		}
	}
}
