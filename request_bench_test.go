package mq_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// BenchmarkRequestReply measures producer.Request answered by a push consumer that replies with
// SendReply, all over TCP against one node: the whole round a caller sees (send, delivery to
// the replier, the reply's send, its push back). It reports requests/s and the p99 of one
// request.
//
//	go test -run '^$' -bench RequestReply -count 6 .
func BenchmarkRequestReply(b *testing.B) {
	for _, concurrent := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrent=%d", concurrent), func(b *testing.B) {
			l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
			n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: b.TempDir(), SegmentBytes: 256 << 20}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { n.Close() })
			const topic = "BenchRequests"
			requester, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithGroup("bench-requester-pg"),
				producer.WithInstanceName(fmt.Sprintf("bench-requester-%d", concurrent)), producer.WithLogger(&l))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { requester.Close() })
			ctx := context.Background()
			// The topic exists (auto-created from TBW102) before the replier looks for its route.
			if _, err := requester.SendSync(ctx, producer.NewMessage(topic, []byte("create"))); err != nil {
				b.Fatal(err)
			}
			replier, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithGroup("bench-replier-pg"),
				producer.WithInstanceName(fmt.Sprintf("bench-replier-%d", concurrent)), producer.WithLogger(&l))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { replier.Close() })
			c, err := consumer.NewPushConsumer(consumer.WithNameServers(n.Addr()), consumer.WithGroup("bench-replier-cg"),
				consumer.WithInstanceName(fmt.Sprintf("bench-replier-%d", concurrent)), consumer.WithLogger(&l),
				consumer.WithConsumeFrom(consumer.FromLastOffset, time.Time{}),
				consumer.WithRebalanceInterval(50*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			err = c.Subscribe(topic, "*", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					if reply, err := consumer.NewReplyMessage(m, m.Body); err == nil {
						_, _ = replier.SendReply(ctx, reply)
					}
				}
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			body := make([]byte, 256)
			request := func(timeout time.Duration) (time.Duration, error) {
				rctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				t0 := time.Now()
				_, err := requester.Request(rctx, producer.NewMessage(topic, body))
				return time.Since(t0), err
			}
			// The first requests wait for the consumer's first rebalance.
			for deadline := time.Now().Add(30 * time.Second); ; {
				if _, err := request(time.Second); err == nil {
					break
				} else if time.Now().After(deadline) {
					b.Fatalf("no reply within 30 s: %v", err)
				}
			}
			b.ReportAllocs()
			lat := make([][]time.Duration, concurrent)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for s := range concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						d, err := request(10 * time.Second)
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
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "requests/s")
			b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds()), "p99-µs")
		})
	}
}
