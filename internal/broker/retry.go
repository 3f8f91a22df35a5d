package broker

import "github.com/mqgo/mq/remoting"

// retryState holds the schedule (delay) service (owned by retry.go).
type retryState struct{}

func (b *Broker) initRetry() { b.retry = &retryState{} }

// registerRetry installs CONSUMER_SEND_MSG_BACK.
func (b *Broker) registerRetry(d *remoting.Dispatcher) {}

// persistRetry saves the schedule service's per-level offsets.
func (b *Broker) persistRetry() error { return nil }
