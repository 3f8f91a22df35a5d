package broker

import "github.com/mqgo/mq/remoting"

// clientState holds the producer and consumer managers (owned by clients.go).
type clientState struct{}

func (b *Broker) initClients() { b.clients = &clientState{} }

// registerClients installs HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
// CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
func (b *Broker) registerClients(d *remoting.Dispatcher) {}

// onConnEvent drops a closed or idle connection's producers, consumers and locks.
func (b *Broker) onConnEvent(ev remoting.ConnEvent) {}
