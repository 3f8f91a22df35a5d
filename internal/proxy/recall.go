package proxy

import (
	"context"
	"strings"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// maxRecallHandleBytes bounds a recall handle (ours): a handle is base64 of a topic, a broker
// name, a time and a message id, well under 1 KiB; the broker decodes what it is given.
const maxRecallHandleBytes = 1024

// RecallMessage takes back a delay or timer message before its delivery time with the recall
// handle its SendMessage entry carried, as RecallMessageActivity does: the topic must take DELAY
// messages (the proxy's message type check), and the broker's schedule service serves
// RECALL_MESSAGE. The broker refuses a handle it cannot read, one of another topic or broker,
// or one whose time has passed; the proxy answers those INTERNAL_SERVER_ERROR, this endpoint
// BAD_REQUEST with the broker's reason, since only a new handle can succeed.
func (s *service) RecallMessage(ctx context.Context, req *apiv2.RecallMessageRequest) (*apiv2.RecallMessageResponse, error) {
	answer := func(st *apiv2.Status) (*apiv2.RecallMessageResponse, error) {
		return &apiv2.RecallMessageResponse{Status: st}, nil
	}
	c, st := s.clients.get(ctx)
	if st != nil {
		return answer(st)
	}
	topic, st := resourceName(req.GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return answer(st)
	}
	handle := req.GetRecallHandle()
	switch {
	case strings.TrimSpace(handle) == "":
		return answer(status(apiv2.Code_BAD_REQUEST, "recall handle cannot be empty: pass the recall_handle SendMessage answered for a delay message"))
	case len(handle) > maxRecallHandleBytes:
		return answer(statusf(apiv2.Code_BAD_REQUEST, "recall handle of %d bytes: a handle SendMessage answers is at most %d", len(handle), maxRecallHandleBytes))
	}
	b := s.broker()
	if b == nil || s.opts.BrokerAddr == "" {
		return answer(status(apiv2.Code_INTERNAL_SERVER_ERROR, "this node runs no broker to recall from"))
	}
	tc, ok := b.Topics().Get(topic)
	if !ok {
		return answer(statusf(apiv2.Code_TOPIC_NOT_FOUND, "topic %s does not exist on broker %s", topic, b.Options().Broker.Name))
	}
	if !b.Options().Types.DisableTopicMessageTypeCheck {
		if t, _ := tables.MessageType(tc); t != tables.TypeDelay && t != tables.TypeMixed {
			return answer(statusf(apiv2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
				"topic %s is of message type %s: only a DELAY (or MIXED) topic's messages can be recalled", topic, t))
		}
	}
	h := protocol.RecallMessageRequestHeader{Topic: topic, RecallHandle: handle}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.RecallMessage, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return answer(fromError("recall", err))
	}
	switch resp.Code {
	case remoting.Success:
	case remoting.IllegalOperation:
		return answer(statusf(apiv2.Code_BAD_REQUEST,
			"%s: a recall handle works for its topic, on the broker that stored the message, before the delivery time", resp.Remark))
	case remoting.NoPermission:
		return answer(statusf(apiv2.Code_FORBIDDEN, "%s: a broker serves RECALL_MESSAGE only with recall-message-enable (RocketMQ's recallMessageEnable)", resp.Remark))
	default:
		return answer(fromRemoting(resp.Code, resp.Remark))
	}
	var rh protocol.RecallMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return answer(statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's recall answer: %v", err))
	}
	return &apiv2.RecallMessageResponse{Status: statusOK, MessageId: rh.MsgID}, nil
}
