package broker

import (
	"net/netip"

	"github.com/mqgo/mq/remoting"
)

// What the core declares for the request-reply and statistics services (internal/broker/reply
// and stats): the seams the send and pull paths call them through (installed with Seams), and
// the send-path pieces the reply service shares with plain sends. Nil seams mean what RocketMQ
// does with the feature off: a send remembers no reply route, nothing is counted.

// RequestNoter is the reply service's part of the send path: a plain send is shown to it before
// its append, so that a replier that reads the stored request finds its route already there.
type RequestNoter interface {
	NoteRequest(ch remoting.Channel, props string)
}

// Counter counts what the broker stores and serves (RocketMQ's BrokerStatsManager). Its methods
// are called on the send and pull paths, concurrently: they must not block.
type Counter interface {
	// CountPut records n messages of size bytes stored in topic.
	CountPut(topic string, n, size int)
	// CountGet records n messages of size bytes of topic returned to group.
	CountGet(topic, group string, n, size int)
	// ForgetTopic drops a deleted topic's counters.
	ForgetTopic(topic string)
}

// Send-path pieces the reply service shares with plain sends.

// Values of the MSG_REGION and TRACE_ON fields of every send answer.
const (
	RegionID = defaultRegion
	TraceOn  = traceOn
)

// SendResponse is a send answer with RocketMQ's MSG_REGION and TRACE_ON fields.
func SendResponse(code int32, remark string) *remoting.Command { return sendResponse(code, remark) }

// BornHost is the connection's peer address, or 0.0.0.0:0 when it does not parse.
func BornHost(ch remoting.Channel) netip.AddrPort { return bornHost(ch) }
