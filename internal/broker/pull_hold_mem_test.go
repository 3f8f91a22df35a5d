package broker

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/broker/longpoll"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestParkedPullRetainsItsSlots parks thousands of pulls of each shape a client can send and
// measures the heap they keep: never more than the slots they are charged (longpoll.Slots)
// times longpoll.SlotBytes, so MaxHeldPulls bounds the bytes parked pulls hold. An honest pull
// (its group's heartbeat subscription) takes one slot.
func TestParkedPullRetainsItsSlots(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		o.Limits.MaxHeldPulls = 1 << 30
		o.Limits.MaxHeldPullsPerConnection = 1 << 30
		// The harness expires a client silent for a second; parking thousands of pulls under
		// -race on a loaded machine can take longer, and an expired group answers
		// SUBSCRIPTION_NOT_EXIST instead of parking. Expiry is not what this test measures.
		o.Periods.ClientChannelExpiredTime = time.Hour
		// Nor is the pulls' deadline: under -race on a loaded machine a case can take longer
		// than a pull's 20 s, and pulls woken then would be answered into ch, whose one-slot
		// buffer would block the workers and the broker's stop.
		o.Limits.MaxLongPollingSuspend = time.Hour
	})
	addTopic(tb, "T", 8)
	long := strings.Repeat("g", 120) // a consumer group's longest (its retry topic must fit)
	addTopic(tb, strings.Repeat("t", 127), 8)
	headerSub := func(typ, expr string) func(*protocol.PullMessageRequestHeader) {
		return func(h *protocol.PullMessageRequestHeader) {
			h.SysFlag |= protocol.PullFlagSubscription
			h.ExpressionType, h.Subscription = typ, expr
		}
	}
	in := make([]string, 1000)
	for i := range in {
		in[i] = "'v" + strings.Repeat("x", i%20) + "'"
	}
	for _, c := range []struct {
		name      string
		shape     func(*protocol.PullMessageRequestHeader)
		honest    bool
		group     string
		TopicName string
	}{
		{name: "heartbeat subscription", shape: func(*protocol.PullMessageRequestHeader) {}, honest: true},
		{name: "longest names", shape: func(*protocol.PullMessageRequestHeader) {}, honest: true,
			group: long, TopicName: strings.Repeat("t", 127)},
		{name: "header *", shape: headerSub(protocol.ExpressionTag, "*"), honest: true},
		{name: "header 3 tags", shape: headerSub(protocol.ExpressionTag, "TagA || TagB || TagC")},
		{name: "header 2000 tags", shape: headerSub(protocol.ExpressionTag, strings.Repeat("tag||", 2000))},
		{name: "header SQL", shape: headerSub(protocol.ExpressionSQL92, "a > 1 AND b = 'x'")},
		{name: "header SQL 16 KB chain", shape: headerSub(protocol.ExpressionSQL92, "a=1"+strings.Repeat(" or a=1", 2300))},
		{name: "header SQL IN 1000", shape: headerSub(protocol.ExpressionSQL92, "a IN ("+strings.Join(in, ",")+")")},
	} {
		t.Run(c.name, func(t *testing.T) {
			group, topic := "g", "T"
			if c.group != "" {
				group, topic = c.group, c.TopicName
			}
			wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", group, wiretest.Sub(topic, "*"))
			shaped := func() *protocol.PullMessageRequestHeader {
				h := pullHeader(group, topic, 0, 0)
				c.shape(h)
				return h
			}
			one := shaped()
			perPull := longpoll.Slots(one, filter.Parse(one.Topic, one.Subscription, one.ExpressionType))
			if c.honest && perPull != 1 {
				t.Errorf("an honest pull takes %d slots, want 1", perPull)
			}
			n := max(100, (16<<20)/(perPull*longpoll.SlotBytes)) // about 16 MiB charged
			ch := &holdTestChannel{id: 1 << 60, resps: make(chan *remoting.Command, 1)}
			defer tb.pull.hold.DropChannel(ch.id)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range n {
				// Decoded here as off the wire: what the pull keeps of its request is the
				// hold's, the rest garbage.
				h := shaped()
				h.QueueID, h.SuspendTimeoutMillis = int32(i%8), time.Hour.Milliseconds()
				if resp, err := tb.pull.processPull(context.Background(), ch, pullCmd(h)); resp != nil || err != nil {
					t.Fatalf("pull %d not parked: %v %v", i, resp, err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			kept := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(n)
			slots := tb.pull.hold.Census().Slots
			if slots != n*perPull {
				t.Fatalf("%d pulls hold %d slots, want %d each", n, slots, perPull)
			}
			t.Logf("%d bytes kept per pull, %d slots charged", kept, perPull)
			if kept > int64(perPull*longpoll.SlotBytes) {
				t.Errorf("a parked pull keeps %d bytes but is charged %d slots of %d bytes", kept, perPull, longpoll.SlotBytes)
			}
		})
	}
}
