package proxy

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Limits of the handle RPCs, named after RocketMQ's ProxyConfig with its values.
const (
	// DefaultMaxInvisibleTime bounds an invisible duration (maxInvisibleTimeMills, 12 h).
	DefaultMaxInvisibleTime = 12 * time.Hour
	// maxAckEntries bounds the entries of one AckMessage (ours, as the broker bounds a
	// BATCH_ACK_MESSAGE; the SDKs ack one message a call).
	maxAckEntries = 1024
	// nackInvisibleTime is how soon a message popped for a client whose stream broke is
	// visible again (ReceiveMessageResponseStreamWriter.NACK_INVISIBLE_TIME, 1 s).
	nackInvisibleTime = time.Second
)

// receipt is a receipt handle an SDK sends back: the broker's handle (POP_CK, 8 fields) with
// the message's CommitLog offset after it, as RocketMQ's proxy writes handles
// (ConsumerProcessor.createHandle), so a forward to the dead-letter queue can name the message.
type receipt struct {
	info            protocol.ExtraInfo
	text            string // the broker's 8 fields
	commitLogOffset int64  // -1 when the handle has none
}

// encodeReceipt is the handle the SDK gets for a message of the broker's handle info stored at
// commitLogOffset.
func encodeReceipt(info protocol.ExtraInfo, commitLogOffset int64) string {
	return info.String() + " " + strconv.FormatInt(commitLogOffset, 10)
}

// parseReceipt reads a handle from the network. Everything is checked before the broker sees
// it: the fields, that this node's broker issued it and that it has not expired (the proxy's
// validateReceiptHandle).
func (s *service) parseReceipt(h string, b *broker.Broker) (receipt, *apiv2.Status) {
	r := receipt{commitLogOffset: -1}
	if len(h) > protocol.MaxExtraInfoLen+21 {
		return r, statusf(apiv2.Code_INVALID_RECEIPT_HANDLE, "receipt handle of %d bytes is not one this endpoint issued", len(h))
	}
	text := h
	if strings.Count(h, " ") == 8 {
		i := strings.LastIndexByte(h, ' ')
		off, err := strconv.ParseInt(h[i+1:], 10, 64)
		if err != nil || off < 0 {
			return r, status(apiv2.Code_INVALID_RECEIPT_HANDLE, "receipt handle's last field (commit log offset) is not a non-negative decimal")
		}
		text, r.commitLogOffset = h[:i], off
	}
	info, err := protocol.ParseExtraInfo(text)
	if err != nil {
		return r, statusf(apiv2.Code_INVALID_RECEIPT_HANDLE, "%v", err)
	}
	if name := b.Options().Broker.Name; info.BrokerName != name {
		return r, statusf(apiv2.Code_INVALID_RECEIPT_HANDLE, "receipt handle of broker %s: this endpoint serves broker %s, send it to the endpoint the message came from", info.BrokerName, name)
	}
	if info.PopTime > time.Now().UnixMilli()-info.InvisibleTime { // no overflow: both are checked non-negative
		r.info, r.text = info, text
		return r, nil
	}
	return r, status(apiv2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired: the message's invisible time has passed, receive it again")
}

// handleCall is what every handle RPC checks first: the client, the group, the topic and the
// broker.
func (s *service) handleCall(ctx context.Context, group, topic *apiv2.Resource) (*client, string, string, *broker.Broker, *apiv2.Status) {
	c, st := s.clients.get(ctx)
	if st != nil {
		return nil, "", "", nil, st
	}
	t, st := resourceName(topic, "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return nil, "", "", nil, st
	}
	g, st := resourceName(group, "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup)
	if st != nil {
		return nil, "", "", nil, st
	}
	b := s.broker()
	if b == nil || s.opts.BrokerAddr == "" {
		return nil, "", "", nil, status(apiv2.Code_INTERNAL_SERVER_ERROR, "this node runs no broker to consume from")
	}
	return c, g, t, b, nil
}

// handleStatus is the status of a broker's answer to a request naming a handle: its refusals
// of the handle (no such message awaiting ack, a queue or offset the handle invented) say the
// handle is invalid, with the broker's reason.
func handleStatus(resp *remoting.Command) *apiv2.Status {
	switch resp.Code {
	case remoting.Success:
		return statusOK
	case remoting.NoMessage, remoting.InvalidParameter, remoting.MessageIllegal:
		return status(apiv2.Code_INVALID_RECEIPT_HANDLE, resp.Remark)
	}
	return fromRemoting(resp.Code, resp.Remark)
}

// AckMessage acknowledges each entry's message with ACK_MESSAGE, one a time, as RocketMQ's
// proxy does by default (enableBatchAck is off): each entry answers its own status, the
// response MULTIPLE_RESULTS when they differ.
func (s *service) AckMessage(ctx context.Context, req *apiv2.AckMessageRequest) (*apiv2.AckMessageResponse, error) {
	c, group, topic, b, st := s.handleCall(ctx, req.GetGroup(), req.GetTopic())
	if st != nil {
		return &apiv2.AckMessageResponse{Status: st}, nil
	}
	entries := req.GetEntries()
	switch {
	case len(entries) == 0:
		return &apiv2.AckMessageResponse{Status: status(apiv2.Code_BAD_REQUEST, "no entry to acknowledge")}, nil
	case len(entries) > maxAckEntries:
		return &apiv2.AckMessageResponse{Status: statusf(apiv2.Code_BAD_REQUEST, "%d entries in one request: at most %d", len(entries), maxAckEntries)}, nil
	}
	resp := &apiv2.AckMessageResponse{Entries: make([]*apiv2.AckMessageResultEntry, 0, len(entries))}
	codes := map[apiv2.Code]bool{}
	for _, e := range entries {
		est := s.ackOne(ctx, c, b, group, topic, e.GetReceiptHandle())
		resp.Entries = append(resp.Entries, &apiv2.AckMessageResultEntry{MessageId: e.GetMessageId(),
			ReceiptHandle: e.GetReceiptHandle(), Status: est})
		codes[est.Code] = true
	}
	if len(codes) > 1 {
		resp.Status = status(apiv2.Code_MULTIPLE_RESULTS, "the entries had different results: see each entry")
	} else {
		resp.Status = resp.Entries[0].Status
	}
	return resp, nil
}

// ackOne sends one ACK_MESSAGE.
func (s *service) ackOne(ctx context.Context, c *client, b *broker.Broker, group, topic, handle string) *apiv2.Status {
	r, st := s.parseReceipt(handle, b)
	if st != nil {
		return st
	}
	h := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: r.info.RealTopic(topic, group),
		QueueID: r.info.QueueID, ExtraInfo: r.text, Offset: r.info.QueueOffset, BrokerName: r.info.BrokerName}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return fromError("ack", err)
	}
	return handleStatus(resp)
}

// ChangeInvisibleDuration hides a received message for the request's duration from now and
// answers the message's new receipt handle, which the next ack or change must use.
func (s *service) ChangeInvisibleDuration(ctx context.Context, req *apiv2.ChangeInvisibleDurationRequest) (*apiv2.ChangeInvisibleDurationResponse, error) {
	fail := func(st *apiv2.Status) (*apiv2.ChangeInvisibleDurationResponse, error) {
		return &apiv2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	c, group, topic, b, st := s.handleCall(ctx, req.GetGroup(), req.GetTopic())
	if st != nil {
		return fail(st)
	}
	d := req.GetInvisibleDuration()
	if d == nil || !d.IsValid() || d.AsDuration() < 0 {
		return fail(status(apiv2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small. min is 0"))
	}
	if d.AsDuration() > DefaultMaxInvisibleTime {
		return fail(statusf(apiv2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large. max is %d", DefaultMaxInvisibleTime.Milliseconds()))
	}
	r, st := s.parseReceipt(req.GetReceiptHandle(), b)
	if st != nil {
		return fail(st)
	}
	handle, st := s.changeInvisible(ctx, c, group, topic, r, d.AsDuration())
	if st != nil {
		return fail(st)
	}
	return &apiv2.ChangeInvisibleDurationResponse{Status: statusOK, ReceiptHandle: handle}, nil
}

// changeInvisible sends CHANGE_MESSAGE_INVISIBLETIME and builds the new handle as RocketMQ 5's
// client does from the answer: the message checkpointed alone, at its own offset, with the
// broker's new pop time. A duration of 0 (the SDKs' "now") is sent as 1 ms: the broker takes
// only positive times, and a message visible 1 ms from now is visible now.
func (s *service) changeInvisible(ctx context.Context, c *client, group, topic string, r receipt, d time.Duration) (string, *apiv2.Status) {
	h := protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: group, Topic: r.info.RealTopic(topic, group),
		QueueID: r.info.QueueID, ExtraInfo: r.text, Offset: r.info.QueueOffset,
		InvisibleTime: max(d.Milliseconds(), 1), BrokerName: r.info.BrokerName}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.ChangeMessageInvisibleTime, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return "", fromError("change invisible duration", err)
	}
	if st := handleStatus(resp); st.Code != apiv2.Code_OK {
		return "", st
	}
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return "", statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's change invisible time answer: %v", err)
	}
	info := r.info
	info.CkQueueOffset = info.QueueOffset
	info.PopTime, info.InvisibleTime, info.ReviveQid = rh.PopTime, rh.InvisibleTime, rh.ReviveQid
	return encodeReceipt(info, r.commitLogOffset), nil
}

// ForwardMessageToDeadLetterQueue sends a received message to its group's dead-letter topic
// with CONSUMER_SEND_MSG_BACK (delay level -1, as the proxy sends it) and then acknowledges it.
// The handle's CommitLog offset is checked to hold the message the handle names first: it
// comes from the network, and the broker would copy whatever message lies there.
func (s *service) ForwardMessageToDeadLetterQueue(ctx context.Context, req *apiv2.ForwardMessageToDeadLetterQueueRequest) (*apiv2.ForwardMessageToDeadLetterQueueResponse, error) {
	fail := func(st *apiv2.Status) (*apiv2.ForwardMessageToDeadLetterQueueResponse, error) {
		return &apiv2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	c, group, topic, b, st := s.handleCall(ctx, req.GetGroup(), req.GetTopic())
	if st != nil {
		return fail(st)
	}
	r, st := s.parseReceipt(req.GetReceiptHandle(), b)
	if st != nil {
		return fail(st)
	}
	if r.commitLogOffset < 0 {
		return fail(status(apiv2.Code_INVALID_RECEIPT_HANDLE, "commit log offset is empty: the handle is not one this endpoint issued"))
	}
	real := r.info.RealTopic(topic, group)
	if st := s.checkStoredAt(b, r.commitLogOffset, real, r.info.QueueID, r.info.QueueOffset); st != nil {
		return fail(st)
	}
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: r.commitLogOffset, Group: group, DelayLevel: -1,
		OriginMsgID: req.GetMessageId(), OriginTopic: real, MaxReconsumeTimes: 0, BrokerName: r.info.BrokerName}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return fail(fromError("forward to the dead-letter queue", err))
	}
	if resp.Code != remoting.Success {
		return fail(fromRemoting(resp.Code, resp.Remark))
	}
	// As the proxy, the answer is the send-back's; the ack that follows only spares a
	// redelivery of the original, so its failure is logged, not answered.
	ah := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: real, QueueID: r.info.QueueID,
		ExtraInfo: r.text, Offset: r.info.QueueOffset, BrokerName: r.info.BrokerName}
	if ar, err := s.invoke(ctx, c, remoting.NewRequest(remoting.AckMessage, remoting.EncodeHeader(&ah), nil)); err != nil || ar.Code != remoting.Success {
		s.log.Debug().Str("client", c.id).Str("group", group).Msg("ack after the dead-letter forward failed")
	}
	return fail(statusOK)
}

// checkStoredAt reports whether the CommitLog record at offset is the message of topic's queue
// at queueOffset.
func (s *service) checkStoredAt(b *broker.Broker, offset int64, topic string, queueID int32, queueOffset int64) *apiv2.Status {
	raw, err := b.Store().LookMessageByOffset(offset)
	if err == nil {
		var m []storedMessage
		if m, err = decodeStored(raw); err == nil && len(m) == 1 &&
			string(m[0].rec.Topic) == topic && m[0].rec.QueueID == queueID && m[0].rec.QueueOffset == queueOffset {
			return nil
		}
	}
	return status(apiv2.Code_INVALID_RECEIPT_HANDLE, "the receipt handle's commit log offset does not hold the message it names")
}
