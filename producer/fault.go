package producer

import (
	"sync"
	"sync/atomic"
	"time"
)

// Latency fault tolerance (RocketMQ MQFaultStrategy / LatencyFaultToleranceImpl), off unless
// WithLatencyFaultTolerance(true), as RocketMQ's sendLatencyFaultEnable: after each send the
// broker's latency picks an isolation period from the table below; a failed send counts as
// failureLatency. While isolated, queue selection skips the broker unless no other broker is
// left. Off, nothing is recorded and every broker is available, as RocketMQ's updateFaultItem
// does nothing then.
var (
	latencyMax   = [...]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 15 * time.Second}
	notAvailable = [...]time.Duration{0, 0, 30 * time.Second, 60 * time.Second, 120 * time.Second, 180 * time.Second, 600 * time.Second}
)

// failureLatency is what a failed send counts as (RocketMQ's updateFaultItem with
// isolation=true), which the table maps to 600 s.
const failureLatency = 30 * time.Second

// isolationFor returns how long a broker that answered in latency is skipped.
func isolationFor(latency time.Duration) time.Duration {
	for i := len(latencyMax) - 1; i >= 0; i-- {
		if latency >= latencyMax[i] {
			return notAvailable[i]
		}
	}
	return 0
}

// faultTolerance tracks isolated brokers. The empty case (no broker isolated) costs one atomic
// load per check; off, it costs a field read.
type faultTolerance struct {
	on  bool
	now func() time.Time

	n     atomic.Int32 // len(items)
	mu    sync.RWMutex
	items map[string]time.Time // broker name -> isolated until
}

func newFaultTolerance(on bool, now func() time.Time) *faultTolerance {
	return &faultTolerance{on: on, now: now, items: make(map[string]time.Time)}
}

// update records a send to broker that took latency (failed: counted as failureLatency). A
// send that earns no isolation ends the broker's isolation: it works again.
func (f *faultTolerance) update(broker string, latency time.Duration, failed bool) {
	if !f.on {
		return
	}
	if failed {
		latency = failureLatency
	}
	d := isolationFor(latency)
	if d == 0 {
		if f.n.Load() == 0 {
			return
		}
		f.mu.Lock()
		if _, ok := f.items[broker]; ok {
			delete(f.items, broker)
			f.n.Store(int32(len(f.items)))
		}
		f.mu.Unlock()
		return
	}
	until := f.now().Add(d)
	f.mu.Lock()
	if cur, ok := f.items[broker]; !ok || until.After(cur) {
		f.items[broker] = until
	}
	f.n.Store(int32(len(f.items)))
	f.mu.Unlock()
}

// state reports whether broker may be used now and, if not, when it may again.
func (f *faultTolerance) state(broker string) (bool, time.Time) {
	if !f.on || f.n.Load() == 0 {
		return true, time.Time{}
	}
	f.mu.RLock()
	until, ok := f.items[broker]
	f.mu.RUnlock()
	if !ok {
		return true, time.Time{}
	}
	if !f.now().Before(until) {
		return true, time.Time{}
	}
	return false, until
}

// available reports whether broker is not isolated.
func (f *faultTolerance) available(broker string) bool {
	ok, _ := f.state(broker)
	return ok
}
