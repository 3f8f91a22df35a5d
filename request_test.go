package mq_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// Issue 14's request-reply with our clients, in process and over TCP: a producer's Request
// reaches a push consumer, whose reply (consumer.NewReplyMessage, sent with SendReply) the
// broker pushes back to the requesting client.

// replyingConsumer answers every message of topic with "re: <body>" (a large request gets a
// large, compressed, reply) through its own producer.
func replyingConsumer(t *testing.T, n *mq.Node, kind, topic string) {
	t.Helper()
	createTopicAndWait(t, n, topic)
	name := strings.ReplaceAll(t.Name(), "/", "_")
	popts := []producer.Option{producer.WithGroup("replier-pg"), producer.WithInstanceName(name + "-replier")}
	copts := []consumer.Option{consumer.WithGroup("replier-cg"), consumer.WithInstanceName(name + "-replier"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50 * time.Millisecond)}
	var replier *producer.Producer
	var c *consumer.PushConsumer
	var err error
	if kind == "inproc" {
		if replier, err = n.NewProducer(popts...); err == nil {
			c, err = n.NewPushConsumer(copts...)
		}
	} else {
		if replier, err = producer.New(append(popts, producer.WithNameServers(n.Addr()))...); err == nil {
			c, err = consumer.NewPushConsumer(append(copts, consumer.WithNameServers(n.Addr()))...)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replier.Close() })
	if err := c.Subscribe(topic, "*", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			reply, err := consumer.NewReplyMessage(m, append([]byte("re: "), m.Body...))
			if err != nil {
				return consumer.ConsumeSuccess, err
			}
			// The requester may have given up: the broker then answers SYSTEM_ERROR, and
			// there is nobody left to tell.
			_, _ = replier.SendReply(ctx, reply)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
}

func requestNode(t *testing.T) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", HAListen: "127.0.0.1:0", StoreDir: t.TempDir(), Logger: &l,
		SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func requester(t *testing.T, n *mq.Node, kind string) *producer.Producer {
	t.Helper()
	return kindProducer(t, n, kind, producer.WithGroup("requester-pg"),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_")+"-requester"))
}

func TestOurRequestReply(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n := requestNode(t)
			const topic = "Requests"
			replyingConsumer(t, n, kind, topic)
			p := requester(t, n, kind)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			msg := producer.NewMessage(topic, []byte("ping")).WithProperty("app", "x")
			reply, err := p.Request(ctx, msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(reply.Body) != "re: ping" || reply.Topic != "DefaultCluster_REPLY_TOPIC" ||
				reply.Property("MSG_TYPE") != "reply" || reply.Property("CORRELATION_ID") == "" ||
				reply.Property("REPLY_TO_CLIENT") != p.ClientID() || reply.Property("PUSH_REPLY_TIME") == "" {
				t.Fatalf("reply %+v", reply)
			}
			if len(msg.Properties) != 1 {
				t.Fatalf("Request changed the caller's message: %v", msg.Properties)
			}

			// Concurrent requests each get their own reply; a large one comes back compressed
			// by the replier and inflated here.
			large := bytes.Repeat([]byte("L"), 64<<10)
			type answer struct {
				body string
				err  error
			}
			const concurrent = 20
			answers := make(chan answer, concurrent+1)
			for i := range concurrent + 1 {
				body := []byte(fmt.Sprintf("req-%d", i))
				if i == concurrent {
					body = large
				}
				if err := p.RequestAsync(ctx, producer.NewMessage(topic, body), func(r *producer.Reply, err error) {
					if err != nil {
						answers <- answer{err: err}
						return
					}
					if want := "re: " + string(body); string(r.Body) != want || r.Compressed {
						answers <- answer{err: fmt.Errorf("reply %.20q (compressed %t) to %.20q", r.Body, r.Compressed, body)}
						return
					}
					answers <- answer{body: string(body)}
				}); err != nil {
					t.Fatal(err)
				}
			}
			for range concurrent + 1 {
				if a := <-answers; a.err != nil {
					t.Fatal(a.err)
				}
			}

			// Nobody consumes this topic: the request times out with its context.
			createTopicAndWait(t, n, "Unanswered")
			tctx, tcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer tcancel()
			if _, err := p.Request(tctx, producer.NewMessage("Unanswered", []byte("hello?"))); !errors.Is(err, producer.ErrRequestTimeout) ||
				!errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("unanswered request: %v", err)
			}
		})
	}
}

// SendReply sends replies only; NewReplyMessage needs the CLUSTER property a broker adds.
func TestReplyMisuse(t *testing.T) {
	n := requestNode(t)
	p := requester(t, n, "inproc")
	if _, err := p.SendReply(context.Background(), producer.NewMessage("T", []byte("x"))); !errors.Is(err, producer.ErrInvalidMessage) {
		t.Fatalf("SendReply of a plain message: %v", err)
	}
	if _, err := consumer.NewReplyMessage(&consumer.Message{Topic: "T", Properties: map[string]string{}}, nil); !errors.Is(err, consumer.ErrNotARequest) {
		t.Fatalf("NewReplyMessage without CLUSTER: %v", err)
	}
	if err := p.RequestAsync(context.Background(), producer.NewMessage("T", []byte("x")), nil); !errors.Is(err, producer.ErrInvalidMessage) {
		t.Fatalf("RequestAsync without a callback: %v", err)
	}
}
