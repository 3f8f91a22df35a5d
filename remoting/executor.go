package remoting

import (
	"sync"
	"sync/atomic"
	"time"
)

// Executor is a bounded worker pool: a fixed number of workers draining a bounded queue, the Go
// shape of the processor executors in RocketMQ's processorTable. A full queue refuses work, which
// the dispatcher turns into SYSTEM_BUSY instead of queueing without bound.
type Executor struct {
	name    string
	workers int
	queue   chan task
	// takenAt is when the task a worker took last was queued (ns since epoch), which HeadWait
	// measures from. Padded: workers write it while submitters read queue.
	_       [64]byte
	takenAt atomic.Int64
	_       [56]byte

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
	return &Executor{name: name, workers: workers, queue: make(chan task, queueSize)}
}

// task is one queued function with the time it was queued (monotonic ns since epoch).
type task struct {
	run func()
	at  int64
}

// epoch is the origin of task times: time.Since reads the monotonic clock.
var epoch = time.Now()

// QueueLen is how many tasks wait for a worker (RocketMQ's thread pool queue size).
func (e *Executor) QueueLen() int { return len(e.queue) }

// HeadWait is how long the task at the head of the queue has waited at most (RocketMQ's
// headSlowTimeMills): 0 when none waits, else the time since the task a worker took last was
// queued. A channel cannot be peeked; the head was queued after that task, so this is an upper
// bound, close under a steady flow and large when the workers are stuck, which is what it is
// read for.
func (e *Executor) HeadWait() time.Duration {
	at := e.takenAt.Load()
	if len(e.queue) == 0 || at == 0 {
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
				for t := range e.queue {
					e.takenAt.Store(t.at)
					t.run()
				}
			}()
		}
	})
}

// trySubmit queues task, or reports false when the queue is full. Must not be called after stop.
func (e *Executor) trySubmit(run func()) bool {
	select {
	case e.queue <- task{run: run, at: int64(time.Since(epoch))}:
		return true
	default:
		return false
	}
}

// stop lets the workers finish what is queued and waits for them.
func (e *Executor) stop() {
	e.stopOnce.Do(func() {
		close(e.queue)
		e.start() // a never-started pool still drains its queue
		e.wg.Wait()
	})
}
