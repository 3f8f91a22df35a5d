package consumer

import "errors"

// Sentinel errors of the consumer package; compare with errors.Is.
var (
	// ErrClosed is a call on a closed consumer.
	ErrClosed = errors.New("consumer: closed")
	// ErrStarted is Start or Subscribe on a consumer that already started (or is starting).
	ErrStarted = errors.New("consumer: already started")
	// ErrStartFailed is Start or Subscribe on a consumer whose Start failed (RocketMQ
	// START_FAILED): what it had acquired is released, so it cannot start again; make a new
	// one. The error wraps the first Start's.
	ErrStartFailed = errors.New("consumer: an earlier Start failed; create a new consumer")
	// ErrGroupExists is a Start while another consumer of the same group is registered with
	// the same client instance (same client id, name servers and transport), as RocketMQ's
	// "The consumer group has been created before".
	ErrGroupExists = errors.New("consumer: the consumer group has been created before in this client instance")
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
