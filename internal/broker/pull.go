package broker

import (
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// pullState holds parked long-poll pulls (owned by pull.go).
type pullState struct{}

func (b *Broker) initPull() { b.pull = &pullState{} }

// registerPull installs PULL_MESSAGE and the offset requests.
func (b *Broker) registerPull(d *remoting.Dispatcher) {}

// onMessageArriving is the store's dispatch hook: it wakes pulls parked on the queue.
func (b *Broker) onMessageArriving(ev storage.DispatchEvent) {}
