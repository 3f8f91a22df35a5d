package remoting

import (
	"runtime"
	"sync"
	"testing"
)

// BenchmarkExecutor measures tasks through a pool of 8 workers, as the broker's pools are fed:
// each submitted once (a full queue yields, as a dispatcher would answer SYSTEM_BUSY rather
// than spin), 64 submitters at once.
func BenchmarkExecutor(b *testing.B) {
	e := NewExecutor("bench", 8, 1024)
	e.start()
	defer e.stop()
	var wg sync.WaitGroup
	task := func() { wg.Done() }
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			wg.Add(1)
			for !e.trySubmit(task) {
				runtime.Gosched()
			}
		}
	})
	wg.Wait()
}
