package broker

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// queueKey names a ConsumeQueue.
type queueKey struct {
	topic   string
	queueID int32
}

// heldPull is a parked PULL_MESSAGE (RocketMQ PullRequest).
type heldPull struct {
	ch remoting.Channel
	// req is what re-running the pull and answering it need of its request (heldRequest):
	// no body, no remark, no extension fields; h is its header, decoded.
	req      *remoting.Command
	h        protocol.PullMessageRequestHeader
	key      queueKey
	offset   int64 // the queue offset the pull wants
	sub      *subscription
	deadline time.Time
	slots    int // what it counts against the caps (heldPullSlots)
	index    int // position in pullHold.deadlines; -1 once taken out
	queuePos int // position in pullHold.byQueue[key]
}

// channelHeld is one connection's parked pulls.
type channelHeld struct {
	pulls map[*heldPull]struct{}
	slots int
}

// parkResult says whether park held a pull.
type parkResult int

const (
	parked          parkResult = iota
	parkClosed                 // the hold is shut down
	parkChannelFull            // the connection holds MaxHeldPullsPerConnection slots
	parkHoldFull               // the broker holds MaxHeldPulls slots
)

// pullHold parks long-poll pulls without holding a worker (RocketMQ PullRequestHoldService).
// A pull leaves the hold exactly once, through one of: arrive (a message for its queue),
// expired (its deadline), take, dropChannel (its connection closed) or closeAll; whoever takes
// it out answers it (or, for dropChannel, nobody does).
//
// Deadlines are kept in a min-heap and one goroutine (runPullHold) sleeps until the earliest,
// so a pull is answered within a timer's precision of its deadline. Every deadline is finite
// (suspendTime caps it), so a pull leaves by expiry even when its connection's close event
// never arrives.
//
// The hold is bounded: a connection may hold maxPerChannel slots and the hold maxTotal; park
// refuses a pull that would go over either.
type pullHold struct {
	held atomic.Int64 // pulls parked; lets arrive skip the lock when there are none
	kick chan struct{}

	maxPerChannel, maxTotal int // in slots

	mu        sync.Mutex
	byQueue   map[queueKey][]*heldPull
	byChannel map[uint64]*channelHeld
	deadlines deadlineHeap
	slots     int // of every held pull
	closed    bool
}

func newPullHold(maxPerChannel, maxTotal int) *pullHold {
	return &pullHold{kick: make(chan struct{}, 1), maxPerChannel: maxPerChannel, maxTotal: maxTotal,
		byQueue: map[queueKey][]*heldPull{}, byChannel: map[uint64]*channelHeld{}}
}

// park holds p unless the hold is closed or p would take its connection or the hold over a
// cap.
func (h *pullHold) park(p *heldPull) parkResult {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return parkClosed
	}
	c := h.byChannel[p.ch.ID()]
	if c == nil {
		c = &channelHeld{}
	}
	switch {
	case c.slots+p.slots > h.maxPerChannel:
		h.mu.Unlock()
		return parkChannelFull
	case h.slots+p.slots > h.maxTotal:
		h.mu.Unlock()
		return parkHoldFull
	}
	if c.pulls == nil {
		c.pulls = map[*heldPull]struct{}{}
		h.byChannel[p.ch.ID()] = c
	}
	c.pulls[p] = struct{}{}
	c.slots += p.slots
	h.slots += p.slots
	p.queuePos = len(h.byQueue[p.key])
	h.byQueue[p.key] = append(h.byQueue[p.key], p)
	heap.Push(&h.deadlines, p)
	earliest := h.deadlines[0] == p
	h.held.Add(1)
	h.mu.Unlock()
	if earliest {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
	return parked
}

// take removes p if it is still held and reports whether it was.
func (h *pullHold) take(p *heldPull) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.index < 0 {
		return false
	}
	h.removeLocked(p)
	return true
}

// removeLocked takes p out of every index. h.mu must be held and p held.
func (h *pullHold) removeLocked(p *heldPull) {
	heap.Remove(&h.deadlines, p.index)
	// Swap-remove by position: a linear search would make taking out the n pulls of one
	// queue (a closed connection's, or a burst expiring together) cost n², with n up to
	// MaxHeldPulls, under the lock the store's dispatcher waits on.
	list := h.byQueue[p.key]
	last := len(list) - 1
	list[p.queuePos] = list[last]
	list[p.queuePos].queuePos = p.queuePos
	list[last] = nil
	list = list[:last]
	if len(list) == 0 {
		delete(h.byQueue, p.key)
	} else {
		h.byQueue[p.key] = list
	}
	if c := h.byChannel[p.ch.ID()]; c != nil {
		delete(c.pulls, p)
		c.slots -= p.slots
		if len(c.pulls) == 0 {
			delete(h.byChannel, p.ch.ID())
		}
	}
	h.slots -= p.slots
	h.held.Add(-1)
}

// arrive takes out the pulls of a queue that a message at newMax-1 (with tag code tagsCode)
// satisfies: those wanting an offset below newMax whose subscription admits the tag code.
// Called on the store's dispatcher goroutine: no I/O, and no allocation unless a pull wakes.
func (h *pullHold) arrive(key queueKey, newMax, tagsCode int64) []*heldPull {
	if h.held.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var woken []*heldPull
	for _, p := range h.byQueue[key] {
		if newMax > p.offset && (p.sub == nil || p.sub.IsMatchedByConsumeQueue(tagsCode)) {
			woken = append(woken, p)
		}
	}
	for _, p := range woken {
		h.removeLocked(p)
	}
	return woken
}

// expired takes out the pulls whose deadline is not after now.
func (h *pullHold) expired(now time.Time) []*heldPull {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*heldPull
	for len(h.deadlines) > 0 && !h.deadlines[0].deadline.After(now) {
		p := h.deadlines[0]
		h.removeLocked(p)
		out = append(out, p)
	}
	return out
}

// next returns the earliest deadline.
func (h *pullHold) next() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deadlines) == 0 {
		return time.Time{}, false
	}
	return h.deadlines[0].deadline, true
}

// dropChannel forgets the pulls of a closed connection; nobody answers them.
func (h *pullHold) dropChannel(chID uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.byChannel[chID]; c != nil {
		for p := range c.pulls {
			h.removeLocked(p)
		}
	}
}

// closeAll closes the hold and takes out every pull.
func (h *pullHold) closeAll() []*heldPull {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	out := make([]*heldPull, 0, len(h.deadlines))
	for len(h.deadlines) > 0 {
		p := h.deadlines[0]
		h.removeLocked(p)
		out = append(out, p)
	}
	return out
}

// count returns the number of parked pulls.
func (h *pullHold) count() int { return int(h.held.Load()) }

// deadlineHeap orders held pulls by deadline (container/heap).
type deadlineHeap []*heldPull

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].deadline.Before(d[j].deadline) }
func (d deadlineHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].index, d[j].index = i, j
}
func (d *deadlineHeap) Push(x any) {
	p := x.(*heldPull)
	p.index = len(*d)
	*d = append(*d, p)
}
func (d *deadlineHeap) Pop() any {
	old := *d
	n := len(old) - 1
	p := old[n]
	old[n] = nil
	p.index = -1
	*d = old[:n]
	return p
}

// runPullHold answers parked pulls when their deadline passes, with a fresh read, and answers
// every parked pull when ctx ends.
func (pu *puller) runPullHold(ctx context.Context) error {
	h := pu.hold
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Hour
		if next, ok := h.next(); ok {
			wait = time.Until(next)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			for _, p := range h.closeAll() {
				pu.answerHeldNow(p)
			}
			return nil
		case <-h.kick:
		case <-t.C:
			for _, p := range h.expired(time.Now()) {
				pu.wakePull(p)
			}
		}
	}
}

// answerHeldNow answers a parked pull at shutdown with "nothing new" at its own offset, without
// going through the (closing) pools.
func (pu *puller) answerHeldNow(p *heldPull) {
	if p.ch.Closed() || p.req.IsOneway() {
		return
	}
	resp := remoting.NewResponseFor(p.req, remoting.PullNotFound, "OFFSET_OVERFLOW_ONE")
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{SuggestWhichBrokerID: masterID,
		NextBeginOffset: p.offset, MinOffset: pu.store.MinOffsetInQueue(p.key.topic, p.key.queueID),
		MaxOffset: pu.store.MaxOffsetInQueue(p.key.topic, p.key.queueID)})
	_ = p.ch.WriteResponse(resp)
}
