package filter

import (
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/sql92"
	"github.com/mqgo/mq/remoting"
)

// Subscriptions by expression type. TAG is filtered by tag hash and tag (filter.go). SQL92 is
// compiled (internal/sql92) and evaluated over each message's properties, TAGS among them, as
// RocketMQ 4.9 does with enablePropertyFilter on; mq has it on always (its default is off), so
// a SQL92 subscription works without configuring the broker. Any other type is answered as
// RocketMQ answers a type it has no filter for:
//
//   - CHECK_CLIENT_CONFIG: a SQL92 expression that does not compile is SUBSCRIPTION_PARSE_FAILED
//     with the compiler's message (ClientManageProcessor.checkClientConfig); another type is
//     SYSTEM_ERROR naming it;
//   - HEART_BEAT: registered whatever it holds; a SQL92 expression that does not compile keeps no
//     filter, as RocketMQ's ConsumerFilterManager keeps none;
//   - PULL_MESSAGE: a pull carrying its own SQL92 expression that does not compile is
//     SUBSCRIPTION_PARSE_FAILED; a pull by a registered one without a filter is
//     FILTER_DATA_NOT_EXIST; another type is SYSTEM_ERROR, before the store is read, so no
//     message is ever delivered unfiltered to a consumer that asked for a filter.

// Remarks of RocketMQ 4.9, word for word: clients and operators search for them.
const (
	unsupportedFilterRemark  = "The broker does not support consumer to filter message by "
	subscriptionParseRemark  = "parse the consumer's subscription failed"
	filterDataNotExistRemark = "The broker's consumer filter data is not exist!Your expression may be wrong!"
)

// filterable reports whether the broker evaluates subscriptions of the type.
func filterable(expressionType string) bool {
	return protocol.IsTagType(expressionType) || expressionType == protocol.ExpressionSQL92
}

// CheckExpression answers CHECK_CLIENT_CONFIG's question about one subscription: nil when the
// broker can filter by it, else the refusal.
func CheckExpression(expr, expressionType string) *remoting.Command {
	if !filterable(expressionType) {
		return remoting.NewResponse(remoting.SystemError, unsupportedFilterRemark+expressionType)
	}
	if expressionType == protocol.ExpressionSQL92 {
		if _, err := sql92.Compile(expr); err != nil {
			return remoting.NewResponse(remoting.SubscriptionParseFailed, err.Error())
		}
	}
	return nil
}

// RefuseHeader answers a pull that carries its own expression the broker cannot
// filter by, or returns nil. RocketMQ refuses an empty non-TAG expression as unparsable before
// anything else.
func RefuseHeader(expr, expressionType string) *remoting.Command {
	if protocol.IsTagType(expressionType) {
		return nil
	}
	if expr == "" {
		return remoting.NewResponse(remoting.SubscriptionParseFailed, subscriptionParseRemark)
	}
	if !filterable(expressionType) {
		return remoting.NewResponse(remoting.SystemError, unsupportedFilterRemark+expressionType)
	}
	if _, err := sql92.Compile(expr); err != nil {
		return remoting.NewResponse(remoting.SubscriptionParseFailed, subscriptionParseRemark+": "+err.Error())
	}
	return nil
}

// RefuseRegistered answers a pull filtered by a subscription a heartbeat registered
// that the broker cannot filter by, or returns nil. RocketMQ keeps filter data only for an
// expression it compiled: never for an empty one or for a type it has no compiler for, and a
// pull without filter data is FILTER_DATA_NOT_EXIST.
func RefuseRegistered(s *Subscription) *remoting.Command {
	d := &s.data
	if protocol.IsTagType(d.ExpressionType) {
		return nil
	}
	if d.ExpressionType != protocol.ExpressionSQL92 || s.sql == nil {
		return remoting.NewResponse(remoting.FilterDataNotExist, filterDataNotExistRemark)
	}
	return nil
}
