package consumer

import "sync"

// workQueue holds the concurrent consume service's listener calls in arrival order for its
// workers: RocketMQ's consumeRequestQueue, an unbounded LinkedBlockingQueue behind the consume
// executor. Submitting never blocks, so a queue's pull loop is never held back by listeners
// busy with other queues; what bounds the messages waiting here is each queue's own flow
// control (pullThresholdForQueue, pullThresholdSizeForQueue, consumeConcurrentlyMaxSpan),
// which pauses that queue's pulls only. Every request holds messages of its queue's cache,
// so the queue costs no memory beyond the caches.
type workQueue struct {
	mu     sync.Mutex
	cond   sync.Cond        // signalled on push and broadcast on close
	reqs   []consumeRequest // waiting from head on; the array is reused once they are taken
	head   int
	closed bool
}

func newWorkQueue() *workQueue {
	q := &workQueue{}
	q.cond.L = &q.mu
	return q
}

// push queues req for a worker; after close it drops it.
func (q *workQueue) push(req consumeRequest) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.reqs = append(q.reqs, req)
	q.mu.Unlock()
	q.cond.Signal()
}

// pop waits for the oldest request; false once the queue is closed, even with requests left:
// those are skipped, their messages stay unacknowledged and go to the queue's next owner.
func (q *workQueue) pop() (consumeRequest, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.reqs) && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return consumeRequest{}, false
	}
	req := q.reqs[q.head]
	q.reqs[q.head] = consumeRequest{} // the array must not keep the messages alive
	q.head++
	switch {
	case q.head == len(q.reqs):
		q.reqs, q.head = q.reqs[:0], 0
	case q.head >= 64 && q.head >= len(q.reqs)/2:
		// A backlog that never empties: move it to the front rather than grow the array.
		n := copy(q.reqs, q.reqs[q.head:])
		clear(q.reqs[n:])
		q.reqs, q.head = q.reqs[:n], 0
	}
	return req, true
}

// len is the number of requests waiting.
func (q *workQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.reqs) - q.head
}

// close wakes every worker and makes pop return false from now on.
func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.reqs, q.head = nil, 0
	q.mu.Unlock()
	q.cond.Broadcast()
}
