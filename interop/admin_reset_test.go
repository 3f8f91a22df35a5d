package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The official push consumer is moved back in time by INVOKE_BROKER_TO_RESET_OFFSET (222): our
// broker sends it RESET_CONSUMER_CLIENT_OFFSET (220) and it consumes the topic again.
func TestOfficialPushConsumerResetByBroker(t *testing.T) {
	n := startNode(t)
	const topic, group, queues = "ResetOfficial", "reset-official-cg", 2
	createTopic(t, n, topic, queues)
	start := time.Now().UnixMilli()
	for time.Now().UnixMilli() <= start {
		time.Sleep(time.Millisecond) // the messages must be stored after start
	}
	p := newProducer(t, n)
	want := map[string]bool{}
	for i := range 6 {
		b := fmt.Sprintf("o-%d", i)
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(b))); err != nil {
			t.Fatal(err)
		}
		want[b] = true
	}

	got := newCollector()
	c := startConsumer(t, n, group, uniqueInstance(t.Name()), topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		got.add(m)
		return consumer.ConsumeSuccess
	})
	t.Cleanup(func() { c.Shutdown() })
	everyTimes := func(times int) func([]*primitive.MessageExt) bool {
		return func(msgs []*primitive.MessageExt) bool {
			count := map[string]int{}
			for _, m := range msgs {
				count[string(m.Body)]++
			}
			for b := range want {
				if count[b] < times {
					return false
				}
			}
			return true
		}
	}
	got.waitFor(t, "first consumption", everyTimes(1))
	waitOffsetsCommitted(t, c, topic)
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

	// The official client pauses 10 s before storing the offsets, then takes the queues back at
	// its next rebalance (every 20 s, not configurable): up to 30 s.
	deadline := time.Now().Add(45 * time.Second)
	for !everyTimes(2)(snapshot(got)) {
		select {
		case <-got.more:
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not consumed again after the reset: %v", bodies(snapshot(got)))
		}
	}
}

func snapshot(c *collector) []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.msgs...)
}
