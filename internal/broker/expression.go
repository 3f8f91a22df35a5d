package broker

import (
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Subscriptions whose expression type is not TAG (SQL92) are answered as RocketMQ 4.9 answers
// them with enablePropertyFilter false, its default and, until mq evaluates SQL92, the only
// mode there is:
//
//   - CHECK_CLIENT_CONFIG: SYSTEM_ERROR naming the type (ClientManageProcessor.checkClientConfig);
//   - HEART_BEAT: accepted and registered, as RocketMQ does (its heartBeat checks no type);
//   - PULL_MESSAGE: refused before the store is read (PullMessageProcessor), so no message is
//     ever delivered unfiltered to a consumer that asked for a filter.
//
// RocketMQ compiles a SQL92 expression before it refuses the pull, so a malformed one gets
// SUBSCRIPTION_PARSE_FAILED or FILTER_DATA_NOT_EXIST where mq, which cannot parse it, answers
// SYSTEM_ERROR (docs/rocketmq-differences.md).

// Remarks of RocketMQ 4.9, word for word: clients and operators search for them.
const (
	unsupportedFilterRemark  = "The broker does not support consumer to filter message by "
	subscriptionParseRemark  = "parse the consumer's subscription failed"
	filterDataNotExistRemark = "The broker's consumer filter data is not exist!Your expression may be wrong!"
)

// refuseExpressionType answers SYSTEM_ERROR for a non-TAG expression type, or returns nil.
func refuseExpressionType(expressionType string) *remoting.Command {
	if protocol.IsTagType(expressionType) {
		return nil
	}
	return remoting.NewResponse(remoting.SystemError, unsupportedFilterRemark+expressionType)
}

// refuseHeaderExpression answers a pull that carries its own non-TAG expression, or returns
// nil. RocketMQ refuses an empty expression as unparsable before anything else.
func refuseHeaderExpression(expr, expressionType string) *remoting.Command {
	if protocol.IsTagType(expressionType) {
		return nil
	}
	if expr == "" {
		return remoting.NewResponse(remoting.SubscriptionParseFailed, subscriptionParseRemark)
	}
	return refuseExpressionType(expressionType)
}

// refuseRegisteredExpression answers a pull filtered by a non-TAG subscription a heartbeat
// registered, or returns nil. RocketMQ keeps filter data only for an expression it compiled:
// never for an empty one or for a type it has no compiler for (it has one, SQL92), and a pull
// without filter data is FILTER_DATA_NOT_EXIST.
func refuseRegisteredExpression(d *protocol.SubscriptionData) *remoting.Command {
	if protocol.IsTagType(d.ExpressionType) {
		return nil
	}
	if d.ExpressionType != protocol.ExpressionSQL92 || d.SubString == "" {
		return remoting.NewResponse(remoting.FilterDataNotExist, filterDataNotExistRemark)
	}
	return refuseExpressionType(d.ExpressionType)
}
