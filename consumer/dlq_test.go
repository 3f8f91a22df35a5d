package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Dead letters can be consumed, as RocketMQ 4.9 makes them: a message sent back with delay
// level -1 (an orderly consumer past its limit) or failing under an explicit
// maxReconsumeTimes of 0 (a concurrent one) lands in %DLQ%<group>, which the name service
// routes with perm 6 (read and write), and a consumer subscribed to that topic receives it.
func TestDeadLettersAreConsumable(t *testing.T) {
	for _, c := range []struct {
		name    string
		orderly bool
	}{{"delay level -1", true}, {"maxReconsumeTimes 0", false}} {
		for _, kind := range transports {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				n := testNode(t)
				a := newAdmin(t, n)
				a.createTopic("deadsrc", 1)
				group := "g-dead-" + kind
				opts := append(fastOptions(t, n, transportFor(t, n, kind), group, "dead-"+kind),
					WithOrderly(c.orderly), WithSuspendDelay(10*time.Millisecond), WithMaxReconsumeTimes(0))
				var failed seen
				startConsumer(t, "deadsrc", "*", func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
					failed.add("src", msgs)
					return ConsumeRetryLater, nil // SuspendCurrentQueueAMoment when orderly
				}, opts...)
				a.send("deadsrc", 0, "", "", "poison")

				dlq := DLQTopic(group)
				var perm int32
				eventually(t, "a route of "+dlq, func() bool {
					resp := a.invoke(n.Addr(), route.BuildGetRouteInfo(dlq))
					if resp.Code != remoting.Success {
						return false
					}
					r, err := route.DecodeRouteInfoResponse(resp)
					if err != nil || len(r.QueueDatas) == 0 {
						return false
					}
					perm = r.QueueDatas[0].Perm
					return true
				})
				if perm != route.PermReadWrite {
					t.Fatalf("%s routed with perm %d, want %d (read and write)", dlq, perm, route.PermReadWrite)
				}

				var dead seen
				startConsumer(t, dlq, "*", dead.recorder("ops"),
					fastOptions(t, n, transportFor(t, n, kind), "ops-"+kind, "ops-"+kind)...)
				eventually(t, "the dead letter consumed from "+dlq, func() bool { return dead.count() >= 1 })
				got := dead.snapshot()[0].msg
				if string(got.Body) != "poison" || got.Queue.Topic != dlq {
					t.Errorf("from %s got %q (queue topic %q)", dlq, got.Body, got.Queue.Topic)
				}
				if n := failed.count(); n != 1 {
					t.Errorf("the failing listener saw the message %d times, want once (limit 0)", n)
				}
			})
		}
	}
}
