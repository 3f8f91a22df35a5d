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

// TestExecutorQueueBeyondHandoff: a queue bound larger than the handoff channel holds that many
// tasks behind a stuck worker, refuses the next, and runs them all in order once the worker is
// free; stopping with tasks still overflowed runs them too.
func TestExecutorQueueBeyondHandoff(t *testing.T) {
	const limit = 3*handoffCap + 7
	for _, stopEarly := range []bool{false, true} {
		e := NewExecutor("t", 1, limit)
		e.start()
		gate, running := make(chan struct{}), make(chan struct{})
		if !e.trySubmit(func() { close(running); <-gate }) {
			t.Fatal("submit refused")
		}
		<-running
		var order []int // only the one worker appends
		for i := range limit {
			if !e.trySubmit(func() { order = append(order, i) }) {
				t.Fatalf("task %d of %d refused", i, limit)
			}
		}
		if e.QueueLen() != limit {
			t.Fatalf("%d queued, want %d", e.QueueLen(), limit)
		}
		if e.trySubmit(func() {}) {
			t.Fatalf("a task over the bound of %d was accepted", limit)
		}
		close(gate)
		if stopEarly {
			e.stop() // returns once every queued task ran
		} else {
			done := make(chan struct{})
			for !e.trySubmit(func() { close(done) }) {
				time.Sleep(time.Millisecond)
			}
			<-done
			e.stop()
		}
		if len(order) != limit {
			t.Fatalf("stopEarly=%v: %d tasks ran, want %d", stopEarly, len(order), limit)
		}
		for i, v := range order {
			if v != i {
				t.Fatalf("stopEarly=%v: task %d ran in place %d", stopEarly, v, i)
			}
		}
		if e.QueueLen() != 0 {
			t.Fatalf("stopped pool: %d queued", e.QueueLen())
		}
	}
}
