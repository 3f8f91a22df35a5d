package mqtest_test

import (
	"runtime"
	"testing"

	"github.com/mqgo/mq/mqtest"
)

// BenchmarkStartCluster measures starting a cluster until every broker is registered with the
// name server and every slave is connected to its master (ns/op excludes closing it). It
// reports the live heap right after the start (heapMB/cluster, above the heap before the
// loop) and the memory the process obtained from the OS (sysMB, at the end: the runtime keeps
// it); nothing is asserted. CommitLog segments are mmap'd files and count in neither.
func BenchmarkStartCluster(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  mqtest.Config
	}{
		{"ns+master", mqtest.Config{}},
		{"ns+master+slave", mqtest.Config{SlavesPerGroup: 1}},
		{"ns+2masters", mqtest.Config{BrokerGroups: 2}},
		{"ns+2x(master+slave)", mqtest.Config{BrokerGroups: 2, SlavesPerGroup: 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if err := mqtest.Validate(bc.cfg); err != nil {
				b.Skip(err)
			}
			b.ReportAllocs()
			var before, after runtime.MemStats
			var liveSum uint64
			runtime.GC()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				bench := &benchTB{TB: b}
				mqtest.StartCluster(bench, bc.cfg)
				b.StopTimer()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				liveSum += ms.HeapAlloc - min(ms.HeapAlloc, before.HeapAlloc)
				bench.cleanup()
				b.StartTimer()
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(liveSum)/float64(b.N)/(1<<20), "heapMB/cluster")
			b.ReportMetric(float64(after.Sys)/(1<<20), "sysMB")
		})
	}
}

// benchTB runs the cluster's cleanups per iteration instead of at the end of the benchmark.
type benchTB struct {
	testing.TB
	cleanups []func()
}

func (t *benchTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *benchTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
