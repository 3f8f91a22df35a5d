package consumer

import (
	"errors"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/producer"
)

// The replier's side of request-reply: here rather than in producer because producer's own
// tests import this package, and the requester's side (producer.Request) needs no consumer.

// replyMessageType is MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG).
const replyMessageType = "reply"

// ErrNotARequest is a message NewReplyMessage cannot answer: it lacks the CLUSTER property the
// broker adds to every stored message, which names the reply topic.
var ErrNotARequest = errors.New("consumer: cannot reply: the message has no CLUSTER property")

// NewReplyMessage returns the reply to request with body (RocketMQ MessageUtil.createReplyMessage):
// to the request's cluster's reply topic, with MSG_TYPE reply and the request's CORRELATION_ID,
// REPLY_TO_CLIENT and TTL. Send it with (*producer.Producer).SendReply. Unlike the official Go
// client's CreateReplyMessage, the body is the reply's body.
func NewReplyMessage(request *Message, body []byte) (*producer.Message, error) {
	if request == nil {
		return nil, errors.New("consumer: cannot reply to a nil message")
	}
	cluster := request.Properties[message.PropertyCluster]
	if cluster == "" {
		return nil, ErrNotARequest
	}
	return producer.NewMessage(cluster+names.ReplyTopicSuffix, body).
		WithProperty(message.PropertyMsgType, replyMessageType).
		WithProperty(message.PropertyCorrelationID, request.Properties[message.PropertyCorrelationID]).
		WithProperty(message.PropertyReplyToClient, request.Properties[message.PropertyReplyToClient]).
		WithProperty(message.PropertyTTL, request.Properties[message.PropertyTTL]), nil
}
