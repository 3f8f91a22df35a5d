package consumer

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// processQueue is the client-side cache of one assigned queue: the messages pulled and not yet
// acknowledged, ordered by queue offset (RocketMQ's ProcessQueue). The pull loop adds to it,
// the consume service removes from it, and the committed offset is derived from it.
//
// All methods are safe for concurrent use; mu guards the message tables.
type processQueue struct {
	mq MessageQueue

	mu struct {
		sync.Mutex
		offsets   []int64 // sorted offsets of msgs
		msgs      map[int64]*Message
		consuming map[int64]*Message // orderly: taken by the listener, not yet committed
		maxOffset int64              // largest offset ever put (queueOffsetMax)
		bytes     int64
	}

	dropped  atomic.Bool
	done     chan struct{} // closed when dropped
	dropOnce sync.Once

	locked       atomic.Bool
	lastLockTime atomic.Int64 // unix nanos
	lastPullTime atomic.Int64
	// wake nudges the orderly consume goroutine of this queue.
	wake chan struct{}
	// consumeSlot (capacity 1) is held by the orderly consume loop during a listener call, so
	// a drop can tell whether the queue is safe to unlock; a channel, so a drop can wait for
	// it with a deadline.
	consumeSlot chan struct{}
}

func newProcessQueue(mq MessageQueue) *processQueue {
	pq := &processQueue{mq: mq, done: make(chan struct{}), wake: make(chan struct{}, 1),
		consumeSlot: make(chan struct{}, 1)}
	pq.mu.msgs = make(map[int64]*Message)
	pq.mu.consuming = make(map[int64]*Message)
	pq.mu.maxOffset = -1
	pq.lastPullTime.Store(time.Now().UnixNano())
	return pq
}

// drop marks the queue as no longer ours: pulls and consumption of it stop.
func (pq *processQueue) drop() {
	pq.dropped.Store(true)
	pq.dropOnce.Do(func() { close(pq.done) })
}

func (pq *processQueue) isDropped() bool { return pq.dropped.Load() }

func (pq *processQueue) notify() {
	select {
	case pq.wake <- struct{}{}:
	default:
	}
}

// put adds pulled messages, skipping offsets already held, and returns those added: msgs,
// filtered in place (the caller hands msgs over).
func (pq *processQueue) put(msgs []*Message) []*Message {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	added := msgs[:0]
	for _, m := range msgs {
		if _, ok := pq.mu.msgs[m.QueueOffset]; ok {
			continue
		}
		if _, ok := pq.mu.consuming[m.QueueOffset]; ok {
			continue
		}
		pq.mu.msgs[m.QueueOffset] = m
		pq.insertOffsetLocked(m.QueueOffset)
		pq.mu.bytes += int64(len(m.Body))
		pq.mu.maxOffset = max(pq.mu.maxOffset, m.QueueOffset)
		added = append(added, m)
	}
	return added
}

// insertOffsetLocked keeps offsets sorted; pulls arrive in order, so this is an append.
// pq.mu must be held.
func (pq *processQueue) insertOffsetLocked(off int64) {
	n := len(pq.mu.offsets)
	if n == 0 || pq.mu.offsets[n-1] < off {
		pq.mu.offsets = append(pq.mu.offsets, off)
		return
	}
	i, _ := slices.BinarySearch(pq.mu.offsets, off)
	pq.mu.offsets = slices.Insert(pq.mu.offsets, i, off)
}

// removeOffsetLocked drops off from the sorted offsets. pq.mu must be held.
func (pq *processQueue) removeOffsetLocked(off int64) {
	if i, ok := slices.BinarySearch(pq.mu.offsets, off); ok {
		pq.mu.offsets = slices.Delete(pq.mu.offsets, i, i+1)
	}
}

// remove acknowledges consumed messages and returns the offset to commit: the smallest offset
// still cached, or, when the cache empties, the largest offset seen + 1; -1 when the cache was
// already empty (nothing to commit). docs/protocol.md §10.4.
func (pq *processQueue) remove(msgs []*Message) int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.mu.offsets) == 0 {
		return -1
	}
	for _, m := range msgs {
		held, ok := pq.mu.msgs[m.QueueOffset]
		if !ok {
			continue
		}
		delete(pq.mu.msgs, m.QueueOffset)
		pq.removeOffsetLocked(m.QueueOffset)
		pq.mu.bytes -= int64(len(held.Body))
	}
	if len(pq.mu.offsets) > 0 {
		return pq.mu.offsets[0]
	}
	return pq.mu.maxOffset + 1
}

// take moves up to n of the lowest-offset messages to the consuming table (orderly).
func (pq *processQueue) take(n int) []*Message {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	n = min(n, len(pq.mu.offsets))
	out := make([]*Message, 0, n)
	for _, off := range pq.mu.offsets[:n] {
		m := pq.mu.msgs[off]
		delete(pq.mu.msgs, off)
		pq.mu.consuming[off] = m
		out = append(out, m)
	}
	pq.mu.offsets = slices.Delete(pq.mu.offsets, 0, n)
	return out
}

// commit acknowledges every message in the consuming table (orderly) and returns the offset
// to commit: the largest consumed offset + 1, or -1 when nothing was being consumed.
func (pq *processQueue) commit() int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.mu.consuming) == 0 {
		return -1
	}
	var maxOff int64 = -1
	for off, m := range pq.mu.consuming {
		maxOff = max(maxOff, off)
		pq.mu.bytes -= int64(len(m.Body))
	}
	clear(pq.mu.consuming)
	return maxOff + 1
}

// putBack returns taken messages to the cache to be consumed again (orderly suspend).
func (pq *processQueue) putBack(msgs []*Message) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		delete(pq.mu.consuming, m.QueueOffset)
		if _, ok := pq.mu.msgs[m.QueueOffset]; !ok {
			pq.mu.msgs[m.QueueOffset] = m
			pq.insertOffsetLocked(m.QueueOffset)
		}
	}
}

// hasCached reports whether messages wait in the cache, not counting those an orderly
// listener call holds (RocketMQ's hasTempMessage).
func (pq *processQueue) hasCached() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return len(pq.mu.offsets) > 0
}

// stats returns the cached message count (including those being consumed orderly), their body
// bytes and the span between the lowest and highest cached offsets.
func (pq *processQueue) stats() (count int, bytes int64, span int64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	count = len(pq.mu.offsets) + len(pq.mu.consuming)
	if n := len(pq.mu.offsets); n > 0 {
		span = pq.mu.offsets[n-1] - pq.mu.offsets[0]
	}
	return count, pq.mu.bytes, span
}

// expired returns up to n of the lowest-offset cached messages whose listener call started
// more than timeout before now.
func (pq *processQueue) expired(now time.Time, timeout time.Duration, n int) []*Message {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	var out []*Message
	for _, off := range pq.mu.offsets[:min(n, len(pq.mu.offsets))] {
		m := pq.mu.msgs[off]
		if st := m.consumeStart.Load(); st > 0 && now.UnixMilli()-st > timeout.Milliseconds() {
			out = append(out, m)
		}
	}
	return out
}

func (pq *processQueue) lockExpired(now time.Time, expiry time.Duration) bool {
	return now.UnixNano()-pq.lastLockTime.Load() > int64(expiry)
}

func (pq *processQueue) setLocked(now time.Time) {
	pq.lastLockTime.Store(now.UnixNano())
	pq.locked.Store(true)
}

// lockConsume takes the consume slot; unlockConsume gives it back.
func (pq *processQueue) lockConsume()   { pq.consumeSlot <- struct{}{} }
func (pq *processQueue) unlockConsume() { <-pq.consumeSlot }

// tryConsumeLock takes the consume slot if it comes free within wait.
func (pq *processQueue) tryConsumeLock(wait time.Duration) bool {
	select {
	case pq.consumeSlot <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case pq.consumeSlot <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}
