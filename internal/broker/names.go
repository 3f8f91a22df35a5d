package broker

import (
	"fmt"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// The names a request carries are checked before its processor runs (internal/broker/reqnames:
// which header fields of which codes carry names, and the checks of bodies); here is what the
// core adds: its send answers, and its own names.

// nameGuard is the core's reqnames.Guard: a send keeps RocketMQ's msgCheck remark for its
// topic (validateTopic) and is answered like every send (sendResponse).
var nameGuard = reqnames.Guard{
	SendTopicRemark: validateTopic,
	SendRefusal:     func(remark string) *remoting.Command { return sendResponse(remoting.SystemError, remark) },
}

// guardNames wraps p with the checks of the topic and group names that requests of code carry
// in the header fields listed.
func guardNames(code int32, fields []reqnames.Field, p remoting.Processor) remoting.Processor {
	return nameGuard.Wrap(code, fields, p)
}

// namesValidate refuses a Broker.ClusterName or Broker.Name that is not a valid topic: like RocketMQ,
// the broker serves topics named after them (and <cluster>_REPLY_TOPIC), and name servers
// refuse a registration whose topic table holds an invalid name, so such a broker would never
// be routable.
func (o Options) namesValidate() error {
	for _, c := range []struct{ field, topic string }{
		{"Broker.ClusterName", o.Broker.ClusterName}, {"Broker.Name", o.Broker.Name}, {"Broker.ClusterName", o.Broker.ClusterName + names.ReplyTopicSuffix},
	} {
		if err := names.CheckTopic(c.topic); err != nil {
			return fmt.Errorf("broker: %s must make a valid topic name: %w", c.field, err)
		}
	}
	return nil
}
