package replication

import (
	"container/heap"
	"math"
	"sync"
)

// peerID names one slave connection inside groupTransfer; the master numbers connections
// from 1 and never reuses a number.
type peerID uint64

// groupTransfer is the sync-replication core (RocketMQ GroupTransferService), like group
// commit: senders queue a waiter for the end offset of their message; one slave
// acknowledgement releases every waiter at or below it. It has no goroutines and no clock:
// connections feed it connect, report and disconnect events, WaitForAck adds and removes
// waiters and owns the timeout. All methods are safe for concurrent use.
//
// The acknowledgement that counts is the highest latest report among the slaves connected
// now, not the highest report ever seen (RocketMQ's push2SlaveMaxOffset): a peer that
// reported a high offset and left, or a slave that restarted with less, must not make later
// sends look replicated. A released waiter stays released: what it was told was true when
// told (a connected slave held its bytes).
//
// With a required set (setRequired, RocketMQ 5's allAckInSyncStateSet) the acknowledgement is
// instead the lowest, over the required broker ids, of the best report of a connected slave
// with that id: every member must hold the bytes. A member with no connection holds nothing.
type groupTransfer struct {
	mu struct {
		sync.Mutex
		// reports is each connected slave's latest report.
		reports map[peerID]int64
		// ids is each connected slave's broker id (0 without identity).
		ids map[peerID]int64
		// required is the broker ids that must all acknowledge; nil: the best slave counts.
		required map[int64]struct{}
		// acked is the acknowledgement that counts (above); 0 with no slave.
		acked   int64
		waiters waiterHeap
	}
	// onAck is told acked whenever it changes (MasterOptions.OnAck), under mu.
	onAck func(int64)
}

// waiter is one sender waiting for a slave to acknowledge offset. done is closed (by a
// report, under gt.mu) when it is released; index is its heap position, -1 once out of the
// heap.
type waiter struct {
	offset int64
	done   chan struct{}
	index  int
}

// add registers a waiter for offset. It returns nil and ErrNoSlave when no slave is
// connected, or when the best connected slave is more than fallBehindMax behind offset
// (RocketMQ isSlaveOK); it returns nil and nil when a connected slave already has offset.
func (g *groupTransfer) add(offset, fallBehindMax int64) (*waiter, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.required == nil && (len(g.mu.reports) == 0 || offset-g.mu.acked > fallBehindMax) {
		return nil, ErrNoSlave
	}
	if g.mu.acked >= offset {
		return nil, nil
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

// connect counts a slave whose first report is offset; the report acknowledges like any
// other (the slave says it holds everything below offset).
func (g *groupTransfer) connect(id peerID, brokerID, offset int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.reports == nil {
		g.mu.reports = make(map[peerID]int64)
		g.mu.ids = make(map[peerID]int64)
	}
	g.mu.reports[id] = offset
	g.mu.ids[id] = brokerID
	g.updateLocked()
}

// setRequired sets the broker ids that must all acknowledge (nil: the best slave counts).
func (g *groupTransfer) setRequired(ids []int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ids == nil {
		g.mu.required = nil
	} else {
		g.mu.required = make(map[int64]struct{}, len(ids))
		for _, id := range ids {
			g.mu.required[id] = struct{}{}
		}
	}
	g.updateLocked()
}

// report records that slave id now holds the log up to offset and releases every waiter the
// new acknowledgement covers. A report lower than the slave's previous one is taken as the
// truth (the slave lost data): it lowers that slave's standing for later waiters. A report
// from a slave that is not connected (any more) is ignored. The caller has checked that
// offset is within what the master sent.
func (g *groupTransfer) report(id peerID, offset int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev, ok := g.mu.reports[id]
	if !ok {
		return
	}
	g.mu.reports[id] = offset
	switch {
	case g.mu.required != nil:
		g.updateLocked()
	case offset >= g.mu.acked:
		g.raiseLocked(offset)
	case prev == g.mu.acked:
		g.updateLocked()
	}
}

// disconnect forgets slave id: its reports no longer acknowledge anything.
func (g *groupTransfer) disconnect(id peerID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.mu.reports[id]; !ok {
		return
	}
	delete(g.mu.reports, id)
	delete(g.mu.ids, id)
	g.updateLocked()
}

// raiseLocked sets acked to offset if higher and releases the waiters it covers. g.mu must
// be held.
func (g *groupTransfer) raiseLocked(offset int64) {
	if offset <= g.mu.acked {
		return
	}
	g.mu.acked = offset
	g.releaseLocked()
}

// recomputeLocked sets acked to what the connected slaves acknowledge now after one went down
// or away, or the required set changed; nothing is released by a lower value. g.mu must be
// held.
func (g *groupTransfer) recomputeLocked() {
	if g.mu.required != nil {
		g.mu.acked = g.requiredAckLocked()
		return
	}
	var best int64
	for _, off := range g.mu.reports {
		best = max(best, off)
	}
	g.mu.acked = best
}

// updateLocked recomputes acked and releases the waiters it covers.
func (g *groupTransfer) updateLocked() {
	g.recomputeLocked()
	g.releaseLocked()
}

// requiredAckLocked is the lowest, over the required ids, of the best report of a connected
// slave with that id; math.MaxInt64 with nothing required (the master is the whole set), 0
// when a required id has no connection.
func (g *groupTransfer) requiredAckLocked() int64 {
	ack := int64(math.MaxInt64)
	for want := range g.mu.required {
		best, found := int64(0), false
		for peer, id := range g.mu.ids {
			if id == want {
				best, found = max(best, g.mu.reports[peer]), true
			}
		}
		if !found {
			return 0
		}
		ack = min(ack, best)
	}
	return ack
}

// releaseLocked releases every waiter at or below acked, and tells onAck.
func (g *groupTransfer) releaseLocked() {
	if g.onAck != nil {
		g.onAck(g.mu.acked)
	}
	for len(g.mu.waiters) > 0 && g.mu.waiters[0].offset <= g.mu.acked {
		w := heap.Pop(&g.mu.waiters).(*waiter)
		close(w.done)
	}
}

// acked is the acknowledgement that counts now: the best connected slave's latest report.
func (g *groupTransfer) acked() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.acked
}

func (g *groupTransfer) slaves() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.mu.reports)
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
