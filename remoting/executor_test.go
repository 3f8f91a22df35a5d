package remoting

import (
	"testing"
	"time"
)

// TestExecutorQueueFigures: the queue length and the head's wait, as runtime info reports a
// pool's backlog, while the only worker is stuck and after it is free.
func TestExecutorQueueFigures(t *testing.T) {
	e := NewExecutor("t", 1, 8)
	e.start()
	defer e.stop()
	if e.QueueLen() != 0 || e.HeadWait() != 0 {
		t.Fatalf("idle pool: %d queued, head waited %v", e.QueueLen(), e.HeadWait())
	}
	gate, running := make(chan struct{}), make(chan struct{})
	if !e.trySubmit(func() { close(running); <-gate }) {
		t.Fatal("submit refused")
	}
	<-running
	done := make(chan struct{}, 3)
	for range 3 {
		if !e.trySubmit(func() { done <- struct{}{} }) {
			t.Fatal("submit refused")
		}
	}
	if e.QueueLen() != 3 {
		t.Fatalf("%d queued, want 3", e.QueueLen())
	}
	const stuck = 50 * time.Millisecond
	time.Sleep(stuck)
	if w := e.HeadWait(); w < stuck {
		t.Errorf("head waited %v behind a stuck worker, want at least %v", w, stuck)
	}
	close(gate)
	for range 3 {
		<-done
	}
	if e.QueueLen() != 0 || e.HeadWait() != 0 {
		t.Errorf("drained pool: %d queued, head waited %v", e.QueueLen(), e.HeadWait())
	}
}
