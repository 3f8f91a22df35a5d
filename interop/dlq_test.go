package interop

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The official push consumer with MaxReconsumeTimes 0 sends a failed message back with that 0
// in the header, which RocketMQ 4.9 takes as the limit: the message goes straight to
// %DLQ%<group>, created read and write (perm 6), so an official consumer of the dead-letter
// topic receives it.
func TestFidelityDLQOfficialConsumer(t *testing.T) {
	n := startNode(t)
	p := newProducer(t, n)
	const topic, group = "Doomed", "cg-doomed"
	dlq := "%DLQ%" + group
	createTopic(t, n, topic, 1)
	createTopic(t, n, "%RETRY%"+group, 1) // the official consumer reads its route at start
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("poison"))); err != nil {
		t.Fatal(err)
	}

	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName(group),
		consumer.WithInstance("doomed"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithMaxReconsumeTimes(0))
	if err != nil {
		t.Fatal(err)
	}
	failed := newCollector()
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			failed.add(msgs...)
			return consumer.ConsumeRetryLater, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()

	waitRoute(t, n, dlq)
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	resp, err := rc.InvokeSync(ctx, n.Addr(), route.BuildGetRouteInfo(dlq))
	if err != nil {
		t.Fatal(err)
	}
	r, err := route.DecodeRouteInfoResponse(resp)
	if err != nil || len(r.QueueDatas) != 1 || r.QueueDatas[0].Perm != route.PermReadWrite {
		t.Fatalf("route of %s: %+v, %v; want one queue data with perm 6", dlq, r, err)
	}

	dead := newCollector()
	ops := startConsumer(t, n, "cg-doomed-ops", "ops", dlq, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		dead.add(m)
		return consumer.ConsumeSuccess
	})
	defer ops.Shutdown()
	got := dead.waitFor(t, "the dead letter", func(ms []*primitive.MessageExt) bool { return len(ms) >= 1 })
	if string(got[0].Body) != "poison" {
		t.Errorf("dead letter body %q", got[0].Body)
	}
	if seen := failed.waitFor(t, "the failed delivery", func(ms []*primitive.MessageExt) bool { return len(ms) >= 1 }); len(seen) != 1 {
		t.Errorf("the failing listener saw %d deliveries, want 1 (limit 0)", len(seen))
	}
}
