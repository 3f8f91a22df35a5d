package mq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// TestResetOffsetByTimeReconsumes is the admin's resetOffsetByTime against a running push
// consumer of ours: the broker tells it (220) and it consumes the topic again from the time.
func TestResetOffsetByTimeReconsumes(t *testing.T) {
	for _, kind := range []string{"inproc", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			n := requestNode(t)
			topic, group := "reset-"+kind, "reset-cg-"+kind
			createTopicAndWait(t, n, topic)
			start := time.Now().UnixMilli()
			for time.Now().UnixMilli() <= start {
				time.Sleep(time.Millisecond) // the messages must be stored after start
			}
			p := kindProducer(t, n, kind)
			var bodies []string
			for i := range 8 {
				b := fmt.Sprintf("r-%d", i)
				if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(b))); err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, b)
			}
			d := kindConsumer(t, n, kind, topic, group, consumer.WithPersistInterval(50*time.Millisecond))
			d.waitFor(t, bodies...)

			// The group's offsets reach the broker on the consumer's persist period; until then
			// the broker knows no offsets of the group and refuses.
			reset := remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
				&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: start}), nil)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				resp := adminRequest(t, n, nil, remoting.Credentials{}, reset)
				if resp.Code == remoting.Success {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reset: %d %s", resp.Code, resp.Remark)
				}
				reset.Opaque = remoting.NextOpaque()
			}
			d.waitCount(t, 2, bodies...)
		})
	}
}
