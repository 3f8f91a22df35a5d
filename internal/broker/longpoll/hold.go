// Package longpoll is the table of parked pulls (RocketMQ's PullRequestHoldService without its
// thread): a PULL_MESSAGE that found nothing waits here, indexed by queue, connection and
// deadline, until a message arrives for its queue, its deadline passes, its connection closes
// or the broker stops. The table answers nobody: whoever takes a pull out (the core's pull
// processor, on the store's dispatcher or its deadline goroutine) re-runs or answers it.
package longpoll

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Queue names a ConsumeQueue.
type Queue struct {
	Topic   string
	QueueID int32
}

// Pull is a parked PULL_MESSAGE (RocketMQ PullRequest). The caller fills the exported fields
// before Park and does not change them while the pull is held.
type Pull struct {
	Channel remoting.Channel
	// Request is what re-running the pull and answering it need of its request (the core's
	// heldRequest): no body, no remark, no extension fields; Header is its header, decoded.
	Request  *remoting.Command
	Header   protocol.PullMessageRequestHeader
	Queue    Queue
	Offset   int64 // the queue offset the pull wants
	Sub      *filter.Subscription
	Deadline time.Time
	Slots    int // what it counts against the caps (Slots)
	index    int // position in Hold.deadlines; -1 once taken out
	queuePos int // position in Hold.byQueue[Queue]
}

// channelHeld is one connection's parked pulls.
type channelHeld struct {
	pulls map[*Pull]struct{}
	slots int
}

// ParkResult says whether Park held a pull.
type ParkResult int

const (
	Parked      ParkResult = iota
	Closed                 // the hold is shut down
	ChannelFull            // the connection holds MaxHeldPullsPerConnection slots
	HoldFull               // the broker holds MaxHeldPulls slots
)

// Hold parks long-poll pulls without holding a worker (RocketMQ PullRequestHoldService).
// A pull leaves the hold exactly once, through one of: Arrive (a message for its queue),
// Expired (its deadline), Take, DropChannel (its connection closed) or CloseAll; whoever takes
// it out answers it (or, for DropChannel, nobody does).
//
// Deadlines are kept in a min-heap and one goroutine (the core's runPullHold) sleeps until the
// earliest (Next, woken early by Kick), so a pull is answered within a timer's precision of its
// deadline. Every deadline is finite (the core's suspendTime caps it), so a pull leaves by
// expiry even when its connection's close event never arrives.
//
// The hold is bounded: a connection may hold maxPerChannel slots and the hold maxTotal; Park
// refuses a pull that would go over either.
type Hold struct {
	held atomic.Int64 // pulls parked; lets Arrive skip the lock when there are none
	kick chan struct{}

	maxPerChannel, maxTotal int // in slots

	mu        sync.Mutex
	byQueue   map[Queue][]*Pull
	byChannel map[uint64]*channelHeld
	deadlines deadlineHeap
	slots     int // of every held pull
	closed    bool
}

// New returns an empty hold whose caps, in slots, are maxPerChannel for one connection and
// maxTotal for the whole hold.
func New(maxPerChannel, maxTotal int) *Hold {
	return &Hold{kick: make(chan struct{}, 1), maxPerChannel: maxPerChannel, maxTotal: maxTotal,
		byQueue: map[Queue][]*Pull{}, byChannel: map[uint64]*channelHeld{}}
}

// Kick receives a value when a pull parked with a deadline earlier than every other: the
// goroutine sleeping until Next must look again.
func (h *Hold) Kick() <-chan struct{} { return h.kick }

// Park holds p unless the hold is closed or p would take its connection or the hold over a
// cap.
func (h *Hold) Park(p *Pull) ParkResult {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return Closed
	}
	c := h.byChannel[p.Channel.ID()]
	if c == nil {
		c = &channelHeld{}
	}
	switch {
	case c.slots+p.Slots > h.maxPerChannel:
		h.mu.Unlock()
		return ChannelFull
	case h.slots+p.Slots > h.maxTotal:
		h.mu.Unlock()
		return HoldFull
	}
	if c.pulls == nil {
		c.pulls = map[*Pull]struct{}{}
		h.byChannel[p.Channel.ID()] = c
	}
	c.pulls[p] = struct{}{}
	c.slots += p.Slots
	h.slots += p.Slots
	p.queuePos = len(h.byQueue[p.Queue])
	h.byQueue[p.Queue] = append(h.byQueue[p.Queue], p)
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
	return Parked
}

// Take removes p if it is still held and reports whether it was.
func (h *Hold) Take(p *Pull) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.index < 0 {
		return false
	}
	h.removeLocked(p)
	return true
}

// removeLocked takes p out of every index. h.mu must be held and p held.
func (h *Hold) removeLocked(p *Pull) {
	heap.Remove(&h.deadlines, p.index)
	// Swap-remove by position: a linear search would make taking out the n pulls of one
	// queue (a closed connection's, or a burst expiring together) cost n², with n up to
	// MaxHeldPulls, under the lock the store's dispatcher waits on.
	list := h.byQueue[p.Queue]
	last := len(list) - 1
	list[p.queuePos] = list[last]
	list[p.queuePos].queuePos = p.queuePos
	list[last] = nil
	list = list[:last]
	if len(list) == 0 {
		delete(h.byQueue, p.Queue)
	} else {
		h.byQueue[p.Queue] = list
	}
	if c := h.byChannel[p.Channel.ID()]; c != nil {
		delete(c.pulls, p)
		c.slots -= p.Slots
		if len(c.pulls) == 0 {
			delete(h.byChannel, p.Channel.ID())
		}
	}
	h.slots -= p.Slots
	h.held.Add(-1)
}

// Arrive takes out the pulls of a queue that a message at newMax-1 (with tag code tagsCode)
// satisfies: those wanting an offset below newMax whose subscription admits the tag code.
// Called on the store's dispatcher goroutine: no I/O, and no allocation unless a pull wakes.
func (h *Hold) Arrive(key Queue, newMax, tagsCode int64) []*Pull {
	if h.held.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var woken []*Pull
	for _, p := range h.byQueue[key] {
		if newMax > p.Offset && (p.Sub == nil || p.Sub.IsMatchedByConsumeQueue(tagsCode)) {
			woken = append(woken, p)
		}
	}
	for _, p := range woken {
		h.removeLocked(p)
	}
	return woken
}

// Expired takes out the pulls whose deadline is not after now.
func (h *Hold) Expired(now time.Time) []*Pull {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Pull
	for len(h.deadlines) > 0 && !h.deadlines[0].Deadline.After(now) {
		p := h.deadlines[0]
		h.removeLocked(p)
		out = append(out, p)
	}
	return out
}

// Next returns the held pull whose deadline comes first, nil when none is held. Its exported
// fields do not change while it is held, so they may be read after Next returns; it may
// have left the hold by then.
func (h *Hold) Next() *Pull {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deadlines) == 0 {
		return nil
	}
	return h.deadlines[0]
}

// DropChannel forgets the pulls of a closed connection; nobody answers them.
func (h *Hold) DropChannel(chID uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.byChannel[chID]; c != nil {
		for p := range c.pulls {
			h.removeLocked(p)
		}
	}
}

// CloseAll closes the hold and takes out every pull.
func (h *Hold) CloseAll() []*Pull {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	out := make([]*Pull, 0, len(h.deadlines))
	for len(h.deadlines) > 0 {
		p := h.deadlines[0]
		h.removeLocked(p)
		out = append(out, p)
	}
	return out
}

// Count returns the number of parked pulls.
func (h *Hold) Count() int { return int(h.held.Load()) }

// Census counts what the hold keeps: its pulls, the slots they take and the entries of each
// of its indexes, all 0 once every pull has left (the core's tests check that nothing leaks).
type Census struct {
	Pulls, Slots, Queues, Channels, Deadlines int
}

// Census counts what the hold keeps now.
func (h *Hold) Census() Census {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Census{Pulls: h.Count(), Slots: h.slots, Queues: len(h.byQueue), Channels: len(h.byChannel),
		Deadlines: len(h.deadlines)}
}

// deadlineHeap orders held pulls by deadline (container/heap).
type deadlineHeap []*Pull

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].Deadline.Before(d[j].Deadline) }
func (d deadlineHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].index, d[j].index = i, j
}
func (d *deadlineHeap) Push(x any) {
	p := x.(*Pull)
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
