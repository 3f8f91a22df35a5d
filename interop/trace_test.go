package interop

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/trace"
)

// TestOfficialClientsTraceThroughOurNode: the official Go client's producer and push consumer
// WithTrace against our node (which serves RMQ_SYS_TRACE_TOPIC without being asked, as the
// official trace dispatcher never creates it) write Pub, SubBefore and SubAfter records that
// our decoder reads, in trace messages keyed by the traced message id.
// officialTraceUsed: the official client keeps one trace client per process (instance
// INNER_TRACE_CLIENT_DEFAULT, bound to the first name server it was given; a second trace
// config with another name server gets a nil dispatcher and panics at Shutdown), so only one
// node per test process can be traced by it.
var officialTraceUsed atomic.Bool

func TestOfficialClientsTraceThroughOurNode(t *testing.T) {
	if officialTraceUsed.Swap(true) {
		t.Skip("the official client traces through one name server per process (run it with -count=1)")
	}
	n := startNode(t)
	const topic = "OfficialTraced"
	createTopic(t, n, topic, 2)
	waitRoute(t, n, trace.DefaultTopic)
	traceCfg := func(group string) *primitive.TraceConfig {
		return &primitive.TraceConfig{GroupName: group, Access: primitive.Local, NamesrvAddrs: []string{n.Addr()}}
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(n)), producer.WithGroupName("pg-traced"),
		producer.WithInstanceName(uniqueInstance(t.Name()+"-producer")), producer.WithTrace(traceCfg("pg-traced")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })

	consumed := make(chan string, 16)
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("cg-traced"),
		consumer.WithInstance(uniqueInstance(t.Name()+"-consumer")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithTrace(traceCfg("cg-traced")))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				consumed <- m.MsgId
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

	msg := primitive.NewMessage(topic, []byte("traced by the official client"))
	msg.WithTag("TagT")
	msg.WithKeys([]string{"key-1"})
	res, err := p.SendSync(context.Background(), msg)
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", res, err)
	}
	select {
	case id := <-consumed:
		if id != res.MsgID {
			t.Fatalf("consumed %s, sent %s", id, res.MsgID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("message not consumed")
	}

	records := readOurTraces(t, n, res.MsgID)
	pub, before, after := records[trace.Pub], records[trace.SubBefore], records[trace.SubAfter]
	pb := pub.Beans[0]
	if pub.Group != "pg-traced" || !pub.Success || pb.Topic != topic || pb.Tags != "TagT" || pb.Keys != "key-1" ||
		pb.OffsetMsgID != res.OffsetMsgID || pb.BodyLength != len(msg.Body) || pub.RegionID == "" {
		t.Errorf("Pub record %+v", pub)
	}
	if before.Group != "cg-traced" || before.RequestID == "" || before.Beans[0].Keys != "key-1" {
		t.Errorf("SubBefore record %+v", before)
	}
	if after.Group != "cg-traced" || after.RequestID != before.RequestID || !after.Success || after.ContextCode != trace.ConsumeSuccess {
		t.Errorf("SubAfter record %+v", after)
	}
}

// readOurTraces reads RMQ_SYS_TRACE_TOPIC with our pull consumer until it has a Pub, a
// SubBefore and a SubAfter record of msgID.
func readOurTraces(t *testing.T, n *mq.Node, msgID string) map[trace.Type]trace.Context {
	t.Helper()
	r, err := mqconsumer.NewPullConsumer(mqconsumer.WithNameServers(n.Addr()), mqconsumer.WithGroup("trace-reader"),
		mqconsumer.WithInstanceName(uniqueInstance(t.Name()+"-reader")),
		mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}), mqconsumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Subscribe(trace.DefaultTopic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	out := map[trace.Type]trace.Context{}
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("trace records of %s: %+v, want Pub, SubBefore and SubAfter", msgID, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		msgs, _ := r.Poll(ctx)
		cancel()
		for _, m := range msgs {
			records, err := trace.Decode(string(m.Body))
			if err != nil {
				t.Fatalf("trace message %s %q: %v", m.MsgID, m.Body, err)
			}
			for _, rec := range records {
				if rec.Beans[0].MsgID != msgID {
					continue
				}
				out[rec.Type] = rec
				if !slices.Contains(m.Keys, msgID) {
					t.Errorf("trace message keys %q lack the traced id %s", m.Keys, msgID)
				}
			}
		}
	}
	return out
}
