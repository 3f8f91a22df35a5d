package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// benchBroker is a test broker for benchmarks: silent, with segments large enough that the run
// measures appends, not segment rolls.
func benchBroker(b *testing.B, edits ...func(*Options)) *testBroker {
	return startTestBroker(b, func(o *Options) {
		l := zerolog.Nop()
		o.Logger = &l
		o.Store.SegmentBytes = 128 << 20
		o.Store.ConsumeQueueUnits = 0
		for _, edit := range edits {
			edit(o)
		}
	})
}

func BenchmarkSendTCP(b *testing.B) { benchmarkSend(b, "tcp") }

func BenchmarkSendInProcess(b *testing.B) { benchmarkSend(b, "inproc") }

// benchmarkSend measures synchronous SEND_MESSAGE of 1 KiB bodies, as the Go client sends them,
// with 1 and 16 concurrent senders and asynchronous flush. It reports msgs/s and the p99
// latency of one send.
func benchmarkSend(b *testing.B, transport string) {
	for _, senders := range []int{1, 16} {
		b.Run(fmt.Sprintf("1KiB/senders=%d", senders), func(b *testing.B) {
			env := benchBroker(b)
			env.topics.Update(TopicConfig{TopicName: "Bench", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
			var tr remoting.Transport = env.TCP
			if transport == "inproc" {
				tr = env.InProc
			}
			body := make([]byte, 1024)
			props := map[string]string{"TAGS": "TagA", "UNIQ_KEY": "C0A8000100002A9F0000000000000001"}
			ctx := context.Background()
			send := func(i int64) (time.Duration, error) {
				h := wiretest.SendHeader("Bench", int32(i%4), props)
				req := wiretest.SendRequest(remoting.SendMessage, &h, body, remoting.SerializeJSON)
				t0 := time.Now()
				resp, err := tr.InvokeSync(ctx, env.Addr, req)
				d := time.Since(t0)
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("send: %d %s", resp.Code, resp.Remark)
				}
				return d, err
			}
			b.SetBytes(int64(len(body)))
			wiretest.BenchRounds(b, senders, "msgs/s", send)
		})
	}
}
