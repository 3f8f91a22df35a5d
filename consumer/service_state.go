package consumer

import "sync"

// The lifecycle of a puller or a SimpleConsumer, RocketMQ's ServiceState: new (CREATE_JUST) ->
// starting -> started (RUNNING) or startFailed (START_FAILED); any -> closed
// (SHUTDOWN_ALREADY). Only new may start or take subscriptions; a failed start released what it
// acquired (an owned transport among it), so it is final, as in RocketMQ.
const (
	stateNew = iota
	stateStarting
	stateStarted
	stateStartFailed
	stateClosed
)

// serviceState is the lifecycle state a consumer keeps under its own mutex (embedded beside it
// in the consumer's mu struct): a start runs unlocked between beginStart and endStart, and a
// close waits for it.
type serviceState struct {
	state int
	// started is closed when a start that set stateStarting is over, either way.
	started chan struct{}
	// startErr is why start failed (stateStartFailed).
	startErr error
}

// beginStart marks a start in progress; the caller holds the mutex and unlocks it for the
// start's own work.
func (l *serviceState) beginStart() {
	l.state = stateStarting
	l.started = make(chan struct{})
}

// endStart ends the start beginStart marked, with its error; the caller holds the mutex again.
func (l *serviceState) endStart(err error) {
	close(l.started)
	if err != nil {
		l.state, l.startErr = stateStartFailed, err
		return
	}
	l.state = stateStarted
}

// closeAfterStart waits for a start in progress, marks the consumer closed and returns the
// state it was in. mu is the mutex guarding l; the caller does not hold it.
func (l *serviceState) closeAfterStart(mu *sync.Mutex) (was int) {
	mu.Lock()
	defer mu.Unlock()
	for l.state == stateStarting {
		started := l.started
		mu.Unlock()
		<-started
		mu.Lock()
	}
	was, l.state = l.state, stateClosed
	return was
}
