package broker

import (
	"github.com/mqgo/mq/internal/broker/reqnames"
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
