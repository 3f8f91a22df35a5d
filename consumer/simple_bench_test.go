package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// BenchmarkSimpleReceiveAck receives and acknowledges b.N pre-filled 1 KiB messages of a topic
// of 8 queues with one SimpleConsumer and 4 goroutines, each receiving up to 32 messages at a
// time and acknowledging them one by one (one ACK_MESSAGE each, as 5.x's Ack), in-process and
// over TCP; the time runs from the first Receive to the last Ack. Beside BenchmarkPushConsume
// it compares POP with pulls on the same node:
//
//	go test -run '^$' -bench 'PushConsume|SimpleReceiveAck' -benchtime 20000x ./consumer
func BenchmarkSimpleReceiveAck(b *testing.B) {
	const workers = 4
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			topic := fmt.Sprintf("BenchSimple_%d", benchSeq.Add(1))
			fill(b, p, topic, b.N)
			log := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
			seq := benchSeq.Add(1)
			opts := []Option{WithNameServers(n.Addr()), WithGroup(fmt.Sprintf("bench-simple-%d", seq)),
				WithInstanceName(fmt.Sprintf("bench-simple-%d", seq)), WithConsumeFrom(FromFirstOffset, time.Time{}),
				WithLogger(&log), WithAwaitDuration(time.Second)}
			if kind == "inproc" {
				opts = append(opts, WithOwnedTransport(n.NewTransport()))
			}
			sc, err := NewSimpleConsumer(opts...)
			if err != nil {
				b.Fatal(err)
			}
			if err := sc.Subscribe(topic, ByTag("*")); err != nil {
				b.Fatal(err)
			}
			if err := sc.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { sc.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(b.N)*time.Millisecond)
			defer cancel()
			var got atomic.Int64
			var failed atomic.Pointer[error]
			var wg sync.WaitGroup
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for got.Load() < int64(b.N) && ctx.Err() == nil {
						views, err := sc.Receive(ctx, MaxReceiveMessageNum, time.Minute)
						if err != nil {
							failed.CompareAndSwap(nil, &err)
							cancel()
							return
						}
						for _, v := range views {
							if err := sc.Ack(ctx, v); err != nil {
								failed.CompareAndSwap(nil, &err)
								cancel()
								return
							}
						}
						got.Add(int64(len(views)))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatalf("received %d of %d: %v", got.Load(), b.N, *err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}
