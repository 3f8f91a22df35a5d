package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/node"
	"github.com/rs/zerolog"
)

// simpleBenchWorkers is how many goroutines receive and acknowledge at once in the POP
// benchmarks.
const simpleBenchWorkers = 4

// BenchmarkSimpleReceiveAck receives and acknowledges b.N pre-filled 1 KiB messages of a topic
// of 8 queues with one SimpleConsumer and 4 goroutines, each receiving up to 32 messages at a
// time and acknowledging them one by one (one Ack call each, as 5.x's Ack), in-process and
// over TCP; the time runs from the first Receive to the last Ack. BenchmarkPopVsPush runs it
// beside the push consumer on the same node.
func BenchmarkSimpleReceiveAck(b *testing.B) {
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			topic := fmt.Sprintf("BenchSimple_%d", benchSeq.Add(1))
			fill(b, p, topic, b.N)
			b.SetBytes(benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			elapsed := simpleReceiveAck(b, n, kind, topic, b.N, ackEach)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkPopVsPush is issue 28's comparison, made fair: on one node (the same options), b.N
// pre-filled 1 KiB messages of a topic consumed by a push consumer with a listener that does
// nothing, then b.N of a second topic, filled the same way, received and acknowledged as
// BenchmarkSimpleReceiveAck does (each goroutine acks one message after the other: pop), then
// b.N of a third with each received batch's messages acknowledged concurrently (an Ack per
// message, from a goroutine each, as an application handling a batch in parallel does; the
// consumer merges them: popc), then b.N of a fourth acknowledged with AckAsync, each goroutine
// receiving again at once (popa: as 5.x's push consumer, built on receive, and as our push
// consumer, which pulls on while its offsets are committed). It reports the rates and their
// ratios to push:
//
//	go test -run '^$' -bench PopVsPush -benchtime 20000x ./consumer
func BenchmarkPopVsPush(b *testing.B) {
	for _, kind := range []string{"tcp", "inproc"} {
		b.Run(kind, func(b *testing.B) {
			n := startBenchNode(b)
			p := benchProducer(b, n)
			var topics [4]string
			for i := range topics {
				topics[i] = fmt.Sprintf("BenchVs%d_%d", i, benchSeq.Add(1))
				fill(b, p, topics[i], b.N)
			}
			b.SetBytes(4 * benchBody)
			b.ReportAllocs()
			b.ResetTimer()
			push := pushConsumeAll(b, n, kind, topics[0], b.N)
			pop := simpleReceiveAck(b, n, kind, topics[1], b.N, ackEach)
			popc := simpleReceiveAck(b, n, kind, topics[2], b.N, ackConcurrent)
			popa := simpleReceiveAck(b, n, kind, topics[3], b.N, ackAsync)
			b.StopTimer()
			rate := func(d time.Duration) float64 { return float64(b.N) / d.Seconds() }
			b.ReportMetric(rate(push), "push-msgs/s")
			b.ReportMetric(rate(pop), "pop-msgs/s")
			b.ReportMetric(rate(pop)/rate(push), "pop/push")
			b.ReportMetric(rate(popc), "popc-msgs/s")
			b.ReportMetric(rate(popc)/rate(push), "popc/push")
			b.ReportMetric(rate(popa), "popa-msgs/s")
			b.ReportMetric(rate(popa)/rate(push), "popa/push")
		})
	}
}

// pushConsumeAll consumes count messages of topic with a started push consumer whose listener
// does nothing and returns the time from Start to the last message.
func pushConsumeAll(b *testing.B, n *node.Node, kind, topic string, count int) time.Duration {
	var got atomic.Int64
	done := make(chan struct{})
	pc := benchConsumer(b, n, kind, topic, func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		if got.Add(int64(len(msgs))) == int64(count) {
			close(done)
		}
		return ConsumeSuccess, nil
	})
	start := time.Now()
	if err := pc.Start(); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5*time.Minute + time.Duration(count)*time.Millisecond):
		b.Fatalf("push consumed %d of %d", got.Load(), count)
	}
	elapsed := time.Since(start)
	pc.Close()
	return elapsed
}

// ackMode is how the benchmarks' receivers acknowledge a received batch.
type ackMode int

const (
	ackEach       ackMode = iota // Ack one message after the other
	ackConcurrent                // an Ack per message from a goroutine each; wait for all
	ackAsync                     // AckAsync each; receive again at once
)

// simpleReceiveAck receives and acknowledges count messages of topic with a started
// SimpleConsumer and simpleBenchWorkers goroutines, each receiving up to 32 at a time and
// acknowledging them as mode says, and returns the time from the first Receive to the last
// Ack's answer.
func simpleReceiveAck(b *testing.B, n *node.Node, kind, topic string, count int, mode ackMode) time.Duration {
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
	defer sc.Close()
	if err := sc.Subscribe(topic, ByTag("*")); err != nil {
		b.Fatal(err)
	}
	if err := sc.Start(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(count)*time.Millisecond)
	defer cancel()
	var got, acked atomic.Int64
	var failed atomic.Pointer[error]
	var last atomic.Int64 // when the last Ack returned, in ns since start
	// fail keeps the first error; the error escapes only here, not with every Ack.
	fail := func(err error) {
		failed.CompareAndSwap(nil, &err)
		cancel()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range simpleBenchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got.Load() < int64(count) && ctx.Err() == nil {
				views, err := sc.Receive(ctx, MaxReceiveMessageNum, time.Minute)
				if err != nil {
					if got.Load() < int64(count) {
						fail(err)
					}
					cancel()
					return
				}
				switch mode {
				case ackAsync:
					for _, v := range views {
						err := sc.AckAsync(ctx, v, func(err error) {
							if err != nil {
								fail(err)
							} else if acked.Add(1) == int64(count) {
								last.CompareAndSwap(0, int64(time.Since(start)))
								cancel()
							}
						})
						if err != nil {
							fail(err)
							return
						}
					}
					got.Add(int64(len(views)))
					continue
				case ackConcurrent:
					var acks sync.WaitGroup
					for _, v := range views {
						acks.Add(1)
						go func() {
							defer acks.Done()
							if err := sc.Ack(ctx, v); err != nil {
								fail(err)
							}
						}()
					}
					acks.Wait()
					if failed.Load() != nil {
						return
					}
				default:
					for _, v := range views {
						if err := sc.Ack(ctx, v); err != nil {
							fail(err)
							return
						}
					}
				}
				if got.Add(int64(len(views))) >= int64(count) {
					// The others' Receives are parked at the broker, which has nothing
					// left: the run ends with the last Ack, not with their await.
					last.CompareAndSwap(0, int64(time.Since(start)))
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if mode == ackAsync {
		sc.Close() // waits for the acks under way
	}
	if err := failed.Load(); err != nil {
		b.Fatalf("received %d of %d: %v", got.Load(), count, *err)
	}
	elapsed := time.Duration(last.Load())
	return elapsed
}
