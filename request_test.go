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
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
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
	n, err := mq.StartNode(mq.Options{
		Listen: "127.0.0.1:0",
		Logger: &l,
		Store:  config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		HA:     config.HA{Listen: "127.0.0.1:0"},
	})
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

// A request stored on one broker whose reply the replier sends to another broker of the
// cluster (its reply topic lives on every broker): the other broker knows the requester only
// by its heartbeats, and the request topic's route names only the first broker. Our Request
// fetches the route of the cluster's reply topic first, so the requester has heartbeated the
// other broker before its first request leaves, right after the producer started.
func TestRequestReplyAcrossBrokers(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2})
	const topic = "OnBrokerA"
	a, b := c.Master(0), c.Master(1)
	if resp := adminRequest(t, a.Current(), nil, remoting.Credentials{}, createTopicRequest(topic)); resp.Code != remoting.Success {
		t.Fatalf("create %s on %s: %d %s", topic, a, resp.Code, resp.Remark)
	}
	rc := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { rc.Close() })
	mqtest.Eventually(t, topic+" routable", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := rc.InvokeSync(ctx, c.NameServerAddrs()[0], route.BuildGetRouteInfo(topic))
		return err == nil && resp.Code == remoting.Success
	})

	// The replier answers each request through broker b, which did not store it.
	replyErrs := make(chan string, 16)
	replier := c.NewPushConsumer(consumer.WithGroup("cross-replier"))
	err := replier.Subscribe(topic, "*", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			h := protocol.SendMessageRequestHeader{ProducerGroup: "cross-replier-pg",
				Topic: m.Properties[message.PropertyCluster] + "_REPLY_TOPIC", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(),
				Properties: message.MarshalProperties(map[string]string{message.PropertyMsgType: "reply",
					message.PropertyCorrelationID: m.Properties[message.PropertyCorrelationID],
					message.PropertyReplyToClient: m.Properties[message.PropertyReplyToClient],
					message.PropertyTTL:           m.Properties[message.PropertyTTL]})}
			req := remoting.NewRequest(remoting.SendReplyMessageV2, remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&h)),
				append([]byte("re: "), m.Body...))
			resp, err := rc.InvokeSync(ctx, b.Current().BrokerAddr(), req)
			if err == nil && resp.Code != remoting.Success {
				err = fmt.Errorf("%s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
			}
			if err != nil {
				select {
				case replyErrs <- err.Error():
				default:
				}
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := replier.Start(); err != nil {
		t.Fatal(err)
	}

	p := c.NewProducer(producer.WithGroup("cross-requester-pg"))
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		body := fmt.Sprintf("across-%d", i)
		reply, err := p.Request(ctx, producer.NewMessage(topic, []byte(body)))
		cancel()
		if err != nil {
			select {
			case e := <-replyErrs:
				t.Fatalf("request %s: %v (broker b answered the replier: %s)", body, err, e)
			default:
				t.Fatalf("request %s: %v", body, err)
			}
		}
		if string(reply.Body) != "re: "+body || reply.StoreHost != b.Current().BrokerAddr() {
			t.Fatalf("reply %q stored by %s, want %q by %s", reply.Body, reply.StoreHost, "re: "+body, b.Current().BrokerAddr())
		}
	}
}
