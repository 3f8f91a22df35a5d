package consumer

import "errors"

// Sentinel errors of the consumer package; compare with errors.Is.
var (
	// ErrClosed is a call on a closed consumer.
	ErrClosed = errors.New("consumer: closed")
	// ErrStarted is Start or Subscribe on a consumer that already started.
	ErrStarted = errors.New("consumer: already started")
	// ErrNoSubscription is Start without any Subscribe.
	ErrNoSubscription = errors.New("consumer: no subscription")
	// ErrNoInstance means the shared client instance could not be had.
	ErrNoInstance = errors.New("consumer: no client instance")
	// ErrNoBroker is a queue whose broker address is unknown.
	ErrNoBroker = errors.New("consumer: broker address unknown")
	// ErrNotAssigned is a Seek of a queue the pull consumer does not hold.
	ErrNotAssigned = errors.New("consumer: queue not assigned")
	// ErrOffsetNotFound is a queue for which the group has no stored offset.
	ErrOffsetNotFound = errors.New("consumer: no stored offset")
)
