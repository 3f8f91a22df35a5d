package mq_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/trace"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// Issue 14's message trace with our clients: a producer and a push consumer WithTrace leave
// Pub, SubBefore and SubAfter records of a message in the trace topic, keyed by its id, in
// process and over TCP, to the default topic and to one of the application's.

func TestOurClientsWriteTraceRecords(t *testing.T) {
	for _, tc := range []struct{ kind, traceTopic string }{{"tcp", ""}, {"inproc", "AppTraces"}} {
		t.Run(tc.kind, func(t *testing.T) {
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
			const topic, pg, cg = "Traced", "trace-pg", "trace-cg"
			createTopicAndWait(t, n, topic)
			instance := strings.ReplaceAll(t.Name(), "/", "_")
			popts := []producer.Option{producer.WithGroup(pg), producer.WithInstanceName(instance), producer.WithTrace(tc.traceTopic)}
			copts := []consumer.Option{consumer.WithGroup(cg), consumer.WithInstanceName(instance),
				consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50 * time.Millisecond),
				consumer.WithTrace(tc.traceTopic)}
			var p *producer.Producer
			var c *consumer.PushConsumer
			if tc.kind == "inproc" {
				p, err = n.NewProducer(popts...)
				if err == nil {
					c, err = n.NewPushConsumer(copts...)
				}
			} else {
				p, err = producer.New(append(popts, producer.WithNameServers(n.Addr()))...)
				if err == nil {
					c, err = consumer.NewPushConsumer(append(copts, consumer.WithNameServers(n.Addr()))...)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			consumed := make(chan string, 16)
			if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					consumed <- m.MsgID
				}
				return consumer.ConsumeSuccess, nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("traced body")).
				WithTags("TagA").WithKeys("order-1", "order-2"))
			if err != nil {
				t.Fatal(err)
			}
			select {
			case id := <-consumed:
				if id != res.MsgID {
					t.Fatalf("consumed %s, sent %s", id, res.MsgID)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("message not consumed")
			}
			// Close sends what the dispatchers hold.
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}

			traceTopic := tc.traceTopic
			if traceTopic == "" {
				traceTopic = trace.DefaultTopic
			}
			records := readTraces(t, n, traceTopic, res.MsgID, 3)
			byType := map[trace.Type]trace.Context{}
			for _, r := range records {
				byType[r.Type] = r
			}
			pub, before, after := byType[trace.Pub], byType[trace.SubBefore], byType[trace.SubAfter]
			pb := pub.Beans[0]
			if pub.Group != pg || !pub.Success || pb.Topic != topic || pb.Tags != "TagA" || pb.Keys != "order-1 order-2" ||
				pb.OffsetMsgID != res.OffsetMsgID || pb.StoreHost == "" || pb.BodyLength != len("traced body") ||
				pb.MsgType != trace.NormalMsg || pub.RegionID == "" {
				t.Errorf("Pub record %+v", pub)
			}
			if before.Group != cg || before.RequestID == "" || before.Beans[0].Keys != "order-1 order-2" || before.Beans[0].RetryTimes != 0 {
				t.Errorf("SubBefore record %+v", before)
			}
			if after.Group != cg || after.RequestID != before.RequestID || !after.Success ||
				after.ContextCode != trace.ConsumeSuccess || after.CostTime < 0 {
				t.Errorf("SubAfter record %+v (SubBefore request %s)", after, before.RequestID)
			}
		})
	}
}

// readTraces reads topic from its start until want records trace msgID, checking that each
// trace message carrying them is keyed by msgID.
func readTraces(t *testing.T, n *mq.Node, topic, msgID string, want int) []trace.Context {
	t.Helper()
	r, err := consumer.NewPullConsumer(consumer.WithNameServers(n.Addr()), consumer.WithGroup("trace-reader"),
		consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_")+"-reader"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Subscribe(topic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	var out []trace.Context
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d trace records of %s in %s, want %d: %+v", len(out), msgID, topic, want, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		msgs, _ := r.Poll(ctx)
		cancel()
		for _, m := range msgs {
			records, err := trace.Decode(string(m.Body))
			if err != nil {
				t.Fatalf("trace message %s: %v", m.MsgID, err)
			}
			mine := 0
			for _, rec := range records {
				if rec.Beans[0].MsgID == msgID {
					out = append(out, rec)
					mine++
				}
			}
			if mine > 0 && !slices.Contains(m.Keys, msgID) {
				t.Errorf("trace message keys %q lack the traced id %s", m.Keys, msgID)
			}
		}
	}
	return out
}
