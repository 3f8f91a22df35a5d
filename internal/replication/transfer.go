package replication

import (
	"container/heap"
	"sync"
)

// groupTransfer is the sync-replication core (RocketMQ GroupTransferService), like group
// commit: senders queue a waiter for the end offset of their message; one slave
// acknowledgement releases every waiter at or below it. It has no goroutines and no clock:
// connections feed it acks and connect/disconnect events, WaitForAck adds and removes
// waiters and owns the timeout. All methods are safe for concurrent use.
type groupTransfer struct {
	mu struct {
		sync.Mutex
		acked   int64 // highest offset any slave acknowledged; never decreases
		slaves  int   // connected slaves
		waiters waiterHeap
	}
}

// waiter is one sender waiting for a slave to acknowledge offset. done is closed (by ack,
// under gt.mu) when it is released; index is its heap position, -1 once out of the heap.
type waiter struct {
	offset int64
	done   chan struct{}
	index  int
}

// add registers a waiter for offset. It returns nil and ErrNoSlave when no slave is
// connected, or when the best acknowledgement is more than fallBehindMax behind offset
// (RocketMQ isSlaveOK); it returns nil and nil when offset is already acknowledged.
func (g *groupTransfer) add(offset, fallBehindMax int64) (*waiter, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.acked >= offset {
		return nil, nil
	}
	if g.mu.slaves == 0 || offset-g.mu.acked > fallBehindMax {
		return nil, ErrNoSlave
	}
	w := &waiter{offset: offset, done: make(chan struct{})}
	heap.Push(&g.mu.waiters, w)
	return w, nil
}

// remove takes a waiter that gave up out of the queue. It reports whether the waiter had been
// released meanwhile (the caller then counts it as acknowledged).
func (g *groupTransfer) remove(w *waiter) (released bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.index < 0 {
		return true
	}
	heap.Remove(&g.mu.waiters, w.index)
	return false
}

// ack records that a slave has the log up to offset and releases every waiter it covers.
func (g *groupTransfer) ack(offset int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if offset <= g.mu.acked {
		return
	}
	g.mu.acked = offset
	for len(g.mu.waiters) > 0 && g.mu.waiters[0].offset <= offset {
		w := heap.Pop(&g.mu.waiters).(*waiter)
		close(w.done)
	}
}

// connected and disconnected count slave connections.
func (g *groupTransfer) connected() {
	g.mu.Lock()
	g.mu.slaves++
	g.mu.Unlock()
}

func (g *groupTransfer) disconnected() {
	g.mu.Lock()
	g.mu.slaves--
	g.mu.Unlock()
}

func (g *groupTransfer) acked() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.acked
}

func (g *groupTransfer) slaves() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.slaves
}

func (g *groupTransfer) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.mu.waiters)
}

// waiterHeap is a min-heap of waiters by offset (container/heap).
type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].offset < h[j].offset }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}
