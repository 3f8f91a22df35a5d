package wiretest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
