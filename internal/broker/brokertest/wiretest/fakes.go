package wiretest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

// FakeChannel is a remoting.Channel that sends nothing; only its identity and whether it is
// closed matter to the tests that use it.
type FakeChannel struct {
	Num  uint64
	Shut bool
}

func (c *FakeChannel) ID() uint64                            { return c.Num }
func (c *FakeChannel) RemoteAddr() string                    { return "10.0.0.9:1" }
func (c *FakeChannel) LocalAddr() string                     { return "10.0.0.1:10911" }
func (c *FakeChannel) WriteResponse(*remoting.Command) error { return nil }
func (c *FakeChannel) InvokeSync(context.Context, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}
func (c *FakeChannel) InvokeAsync(context.Context, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}
func (c *FakeChannel) InvokeOneway(*remoting.Command) error { return nil }
func (c *FakeChannel) Close() error                         { c.Shut = true; return nil }
func (c *FakeChannel) Closed() bool                         { return c.Shut }

// FakeClock is a clock tests move by hand, safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock starts at a fixed instant, so that runs compare.
func NewFakeClock() *FakeClock { return &FakeClock{now: time.Unix(1700000000, 0)} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// BenchRounds runs round for i in 1..b.N from workers goroutines at once, after one untimed
// round 0 that connects, and reports rounds per second under unit and the p99 of one round.
func BenchRounds(b *testing.B, workers int, unit string, round func(i int64) (time.Duration, error)) {
	if _, err := round(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	lat := make([][]time.Duration, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	begin := time.Now()
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
	elapsed := time.Since(begin)
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), unit)
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds()), "p99-µs")
}
