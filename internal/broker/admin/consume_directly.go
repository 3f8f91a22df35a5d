package admin

import (
	"context"
	"maps"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// processConsumeMessageDirectly serves CONSUME_MESSAGE_DIRECTLY (309) as RocketMQ's
// AdminBrokerProcessor does: it reads the message the offset message id points to, names this
// broker in the header and relays the request to the one consumer named, whose answer
// (ConsumeMessageDirectlyResult) goes back to the tool. The consumer runs its listener on the
// message and commits nothing. With ACL the tool must be allowed to read the message's topic
// (ReadCheck): the consumer's answer tells how it went with the message.
func (s *Service) processConsumeMessageDirectly(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumeMessageDirectlyRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	_, offset, err := message.ParseOffsetMsgID(h.MsgID)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, "msgId: "+err.Error()), nil
	}
	rec, err := s.core.Store().LookMessageByOffset(offset)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, "can not find message by the msgId "+h.MsgID), nil
	}
	if refused := s.core.Messages().CheckRead(ch, req, rec); refused != nil {
		return refused, nil
	}
	ext := maps.Clone(req.ExtFields)
	ext["brokerName"] = s.core.Options().Broker.Name
	return s.callConsumer(ctx, remoting.NewRequest(req.Code, ext, rec), h.ConsumerGroup, h.ClientID), nil
}
