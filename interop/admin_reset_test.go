package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The official push consumer is moved back in time by INVOKE_BROKER_TO_RESET_OFFSET (222): our
// broker sends it RESET_CONSUMER_CLIENT_OFFSET (220) and it consumes the topic again.
func TestOfficialPushConsumerResetByBroker(t *testing.T) {
	t.Parallel() // waits for the official client's 5 s offset persist: side by side with the other waiting tests
	n := startNode(t)
	const topic, group, queues = "ResetOfficial", "reset-official-cg", 2
	start, consumed := consumedOnceByOfficial(t, n, topic, group, queues)
	// The official client persists offsets every 5 s: until then the broker has none and
	// refuses the reset.
	reset := remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
		&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: start}), nil)
	client := remoting.NewClient(remoting.ClientOptions{})
	defer client.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := client.InvokeSync(ctx, n.BrokerAddr(), reset)
		cancel()
		if err == nil && resp.Code == remoting.Success {
			table, err := protocol.DecodeOffsetSerializeWrapper(resp.Body)
			if err != nil || len(table) != queues {
				t.Fatalf("reset answered %v (%v)", table, err)
			}
			for mq, off := range table {
				if off != 0 {
					t.Fatalf("%v reset to %d, want 0", mq, off)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reset: %v %v", resp, err)
		}
		reset.Opaque = remoting.NextOpaque()
	}

	consumed.waitAgain(t)
}

// officialConsumption is an official push consumer of a topic's six messages.
type officialConsumption struct {
	got  *collector
	want map[string]bool
}

// consumedOnceByOfficial creates topic, stores six messages after the instant it returns,
// starts an official push consumer of group on it and waits until it consumed them all and
// committed its offsets to the broker.
func consumedOnceByOfficial(t *testing.T, n *mq.Node, topic, group string, queues int) (int64, *officialConsumption) {
	t.Helper()
	createTopic(t, n, topic, queues)
	start := time.Now().UnixMilli()
	for time.Now().UnixMilli() <= start {
		time.Sleep(time.Millisecond) // the messages must be stored after start
	}
	p := newProducer(t, n)
	oc := &officialConsumption{got: newCollector(), want: map[string]bool{}}
	for i := range 6 {
		b := fmt.Sprintf("%s-%d", topic, i)
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
		oc.want[b] = true
	}
	c := startConsumer(t, n, group, uniqueInstance(t.Name()), topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		oc.got.add(m)
		return consumer.ConsumeSuccess
	})
	t.Cleanup(func() { c.Shutdown() })
	oc.got.waitFor(t, "first consumption", oc.everyTimes(1))
	waitOffsetsCommitted(t, c, topic)
	return start, oc
}

// everyTimes reports whether every message was consumed at least times times.
func (oc *officialConsumption) everyTimes(times int) func([]*primitive.MessageExt) bool {
	return func(msgs []*primitive.MessageExt) bool {
		count := map[string]int{}
		for _, m := range msgs {
			count[string(m.Body)]++
		}
		for b := range oc.want {
			if count[b] < times {
				return false
			}
		}
		return true
	}
}

// waitAgain waits until every message was consumed a second time after a reset. The official
// client pauses 10 s before storing the offsets, then takes the queues back at its next
// rebalance (every 20 s, not configurable): up to 30 s.
func (oc *officialConsumption) waitAgain(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !oc.everyTimes(2)(snapshot(oc.got)) {
		select {
		case <-oc.got.more:
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not consumed again after the reset: %v", bodies(snapshot(oc.got)))
		}
	}
}

func snapshot(c *collector) []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.msgs...)
}
