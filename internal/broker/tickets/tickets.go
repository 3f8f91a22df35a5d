// Package tickets coalesces the work that changes wait for, as group commit coalesces fsyncs.
package tickets

import (
	"sync"
	"time"
)

// Rounds coalesces the work that topic changes wait for, as group commit coalesces fsyncs:
// the broker's registration rounds with the name servers and the metadata writer's passes
// over the topics. A change takes a ticket (Ask) after it is in the topic table
// and wakes the worker; a round or pass reads the last ticket issued (Begin) before it takes
// the table's changes, and once they are done (Finish) releases every ticket up to that one.
// So each waiter's change is in the round that releases it, and changes made while a round is
// in flight share the next one: N concurrent creators, or one heartbeat creating N retry
// topics, cost one or two rounds, not N.
type Rounds struct {
	mu      sync.Mutex
	asked   uint64        // tickets issued
	covered uint64        // every ticket up to this one was in a finished round
	done    chan struct{} // closed (and replaced) when covered advances or the loop stops
	begun   bool          // a round has begun: earlier changes ride on the first round
	stopped bool          // the worker has ended: nobody waits any more
}

// New returns Rounds with no ticket issued and no round begun.
func New() *Rounds { return &Rounds{done: make(chan struct{})} }

// Ask issues a ticket for a change already in the topic table, and reports whether the caller
// should wait for it. Before the first round has begun there is nothing to wait for: that
// round takes the table after this change (a change made while New loads the metadata,
// before anything registers, must not wait for a loop that has not started).
func (r *Rounds) Ask() (ticket uint64, wait bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	return r.asked, r.begun && !r.stopped
}

// Start lets changes wait from now on: the worker runs, so a round or pass will take them.
func (r *Rounds) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun = true
}

// Begin marks a round begun and returns the last ticket issued: the changes it takes.
func (r *Rounds) Begin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun = true
	return r.asked
}

// Finish releases every ticket up to upTo (what Begin returned).
func (r *Rounds) Finish(upTo uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.covered = max(r.covered, upTo)
	close(r.done)
	r.done = make(chan struct{})
}

// Stop ends the worker: waiters return uncovered, and later changes do not wait.
func (r *Rounds) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	close(r.done)
	r.done = make(chan struct{})
}

// Wait blocks until a round covered ticket, the loop stopped, or timeout passed; it reports
// whether the ticket was covered.
func (r *Rounds) Wait(ticket uint64, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		covered, stopped, done := r.covered >= ticket, r.stopped, r.done
		r.mu.Unlock()
		if covered || stopped {
			return covered
		}
		select {
		case <-done:
		case <-timer.C:
			return false
		}
	}
}

// Asked is the number of tickets issued (tests watch waiters arrive by it).
func (r *Rounds) Asked() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}
