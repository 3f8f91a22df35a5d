package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// benchBroker is a test broker for benchmarks: silent, with segments large enough that the run
// measures appends, not segment rolls.
func benchBroker(b *testing.B) *testBroker {
	return startTestBroker(b, func(o *Options) {
		l := zerolog.Nop()
		o.Logger = &l
		o.Store.SegmentBytes = 128 << 20
		o.Store.ConsumeQueueUnits = 0
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
			env.topics.update(TopicConfig{TopicName: "Bench", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
			var tr remoting.Transport = env.TCP
			if transport == "inproc" {
				tr = env.InProc
			}
			body := make([]byte, 1024)
			props := map[string]string{"TAGS": "TagA", "UNIQ_KEY": "C0A8000100002A9F0000000000000001"}
			ctx := context.Background()
			send := func(i int64) (time.Duration, error) {
				h := goSendHeader("Bench", int32(i%4), props)
				req := sendRequest(remoting.SendMessage, &h, body, remoting.SerializeJSON)
				t0 := time.Now()
				resp, err := tr.InvokeSync(ctx, env.Addr, req)
				d := time.Since(t0)
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("send: %d %s", resp.Code, resp.Remark)
				}
				return d, err
			}
			if _, err := send(0); err != nil { // connect outside the timing
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			lat := make([][]time.Duration, senders)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						d, err := send(i)
						if err != nil {
							b.Error(err)
							return
						}
						lat[s] = append(lat[s], d)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			if len(all) == 0 {
				return
			}
			slices.Sort(all)
			p99 := all[min(len(all)-1, len(all)*99/100)]
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
		})
	}
}
