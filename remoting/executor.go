package remoting

import (
	"sync"
	"sync/atomic"
	"time"
)

// handoffCap bounds the channel workers take tasks from; a queue allowed to hold more keeps the
// rest in an overflow list that grows only while it is used. RocketMQ's queues are linked
// lists that grow as they fill; a channel of the full bound (a broker's pools allow ~300,000
// tasks together) would allocate and zero ~5 MB at every start and keep it.
const handoffCap = 1024

// Executor is a bounded worker pool: a fixed number of workers draining a bounded queue, the Go
// shape of the processor executors in RocketMQ's processorTable. A full queue refuses work, which
// the dispatcher turns into SYSTEM_BUSY instead of queueing without bound.
type Executor struct {
	name    string
	workers int
	limit   int       // how many tasks may wait
	handoff chan task // the oldest waiting tasks, up to handoffCap
	// overflowLen mirrors len(overflow) for lock-free reads on the hot path.
	overflowLen atomic.Int64
	// takenAt is when the task a worker took last was queued (ns since epoch), which HeadWait
	// measures from. Padded: workers write it while submitters read the queue.
	_       [64]byte
	takenAt atomic.Int64
	_       [56]byte

	mu       sync.Mutex
	overflow []task // mu guards; FIFO from overflowHead, the tasks queued after handoff's
	head     int    // mu guards
	stopped  bool   // mu guards; handoff is closed

	startOnce sync.Once
	stopOnce  sync.Once
	wg        sync.WaitGroup
}

// NewExecutor makes a pool of workers goroutines with room for queueSize waiting tasks. It starts
// nothing; the Dispatcher it is registered with starts and stops it.
func NewExecutor(name string, workers, queueSize int) *Executor {
	if workers < 1 {
		workers = 1
	}
	if queueSize < 0 {
		queueSize = 0
	}
	return &Executor{name: name, workers: workers, limit: queueSize, handoff: make(chan task, min(queueSize, handoffCap))}
}

// task is one queued function with the time it was queued (monotonic ns since epoch).
type task struct {
	run func()
	at  int64
}

// epoch is the origin of task times: time.Since reads the monotonic clock.
var epoch = time.Now()

// QueueLen is how many tasks wait for a worker (RocketMQ's thread pool queue size).
func (e *Executor) QueueLen() int { return len(e.handoff) + int(e.overflowLen.Load()) }

// HeadWait is how long the task at the head of the queue has waited at most (RocketMQ's
// headSlowTimeMills): 0 when none waits, else the time since the task a worker took last was
// queued. A channel cannot be peeked; the head was queued after that task, so this is an upper
// bound, close under a steady flow and large when the workers are stuck, which is what it is
// read for.
func (e *Executor) HeadWait() time.Duration {
	at := e.takenAt.Load()
	if e.QueueLen() == 0 || at == 0 {
		return 0
	}
	return max(0, time.Since(epoch)-time.Duration(at))
}

func (e *Executor) start() {
	e.startOnce.Do(func() {
		e.wg.Add(e.workers)
		for range e.workers {
			go func() {
				defer e.wg.Done()
				for t := range e.handoff {
					if e.overflowLen.Load() > 0 {
						e.refill()
					}
					e.takenAt.Store(t.at)
					t.run()
				}
				// Stopped: what overflowed is still owed a run.
				for t, ok := e.popOverflow(); ok; t, ok = e.popOverflow() {
					e.takenAt.Store(t.at)
					t.run()
				}
			}()
		}
	})
}

// trySubmit queues task, or reports false when the queue is full. Must not be called after stop.
func (e *Executor) trySubmit(run func()) bool {
	t := task{run: run, at: int64(time.Since(epoch))}
	if e.overflowLen.Load() == 0 {
		select {
		case e.handoff <- t:
			return true
		default:
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.handoff)+len(e.overflow)-e.head >= e.limit {
		return false
	}
	e.overflow = append(e.overflow, t)
	e.overflowLen.Add(1)
	// Workers refill the handoff after each take; if they all wait on an empty one, this does.
	e.refillLocked()
	return true
}

// refill moves overflowed tasks into the handoff while it has room.
func (e *Executor) refill() {
	e.mu.Lock()
	e.refillLocked()
	e.mu.Unlock()
}

func (e *Executor) refillLocked() {
	for !e.stopped && e.head < len(e.overflow) {
		select {
		case e.handoff <- e.overflow[e.head]:
			e.dropHeadLocked()
		default:
			return
		}
	}
}

// popOverflow takes the oldest overflowed task, once the handoff is closed.
func (e *Executor) popOverflow() (task, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.head == len(e.overflow) {
		return task{}, false
	}
	t := e.overflow[e.head]
	e.dropHeadLocked()
	return t, true
}

func (e *Executor) dropHeadLocked() {
	e.overflow[e.head] = task{}
	e.head++
	e.overflowLen.Add(-1)
	if e.head == len(e.overflow) {
		// Empty: start over, and let a burst's large list go.
		e.head = 0
		if cap(e.overflow) > 4*handoffCap {
			e.overflow = nil
		} else {
			e.overflow = e.overflow[:0]
		}
	}
}

// stop lets the workers finish what is queued and waits for them.
func (e *Executor) stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopped = true
		close(e.handoff)
		e.mu.Unlock()
		e.start() // a never-started pool still drains its queue
		e.wg.Wait()
	})
}
