package replication

import (
	"testing"
	"time"
)

// TestFlowPerSecond: the rate is the last whole second's bytes, 0 after a silent second.
func TestFlowPerSecond(t *testing.T) {
	var f flow
	t0 := time.Unix(1000, 0)
	f.add(100, t0)
	f.add(50, t0.Add(500*time.Millisecond))
	if got := f.perSecond(t0.Add(900 * time.Millisecond)); got != 0 {
		t.Errorf("during the first second: %d, want 0 (no whole second yet)", got)
	}
	if got := f.perSecond(t0.Add(1500 * time.Millisecond)); got != 150 {
		t.Errorf("in the next second: %d, want 150", got)
	}
	f.add(10, t0.Add(1200*time.Millisecond))
	if got := f.perSecond(t0.Add(1300 * time.Millisecond)); got != 150 {
		t.Errorf("after a write in the next second: %d, want 150", got)
	}
	if got := f.perSecond(t0.Add(2100 * time.Millisecond)); got != 10 {
		t.Errorf("two seconds in: %d, want 10", got)
	}
	if got := f.perSecond(t0.Add(3100 * time.Millisecond)); got != 0 {
		t.Errorf("after a silent second: %d, want 0", got)
	}
	f.add(7, t0.Add(5*time.Second))
	if got := f.perSecond(t0.Add(5100 * time.Millisecond)); got != 0 {
		t.Errorf("after a gap: %d, want 0", got)
	}
}

// BenchmarkFlowAdd is what counting one block costs the writer (and the slave's reader).
func BenchmarkFlowAdd(b *testing.B) {
	var f flow
	for range b.N {
		f.add(32<<10, time.Now())
	}
}
