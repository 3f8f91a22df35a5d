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

// benchRounds runs round for i in 1..b.N from workers goroutines at once, after one untimed
// round 0 that connects, and reports rounds per second under unit and the p99 of one round.
func benchRounds(b *testing.B, workers int, unit string, round func(i int64) (time.Duration, error)) {
	if _, err := round(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	lat := make([][]time.Duration, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				d, err := round(i)
				if err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], d)
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
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), unit)
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds()), "p99-µs")
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
			b.SetBytes(int64(len(body)))
			benchRounds(b, senders, "msgs/s", send)
		})
	}
}
