package remoting

import "sync"

// Executor is a bounded worker pool: a fixed number of workers draining a bounded queue, the Go
// shape of the processor executors in RocketMQ's processorTable. A full queue refuses work, which
// the dispatcher turns into SYSTEM_BUSY instead of queueing without bound.
type Executor struct {
	name    string
	workers int
	queue   chan func()

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
	return &Executor{name: name, workers: workers, queue: make(chan func(), queueSize)}
}

// Name is the pool's name, for logs.
func (e *Executor) Name() string { return e.name }

func (e *Executor) start() {
	e.startOnce.Do(func() {
		e.wg.Add(e.workers)
		for range e.workers {
			go func() {
				defer e.wg.Done()
				for task := range e.queue {
					task()
				}
			}()
		}
	})
}

// trySubmit queues task, or reports false when the queue is full. Must not be called after stop.
func (e *Executor) trySubmit(task func()) bool {
	select {
	case e.queue <- task:
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
