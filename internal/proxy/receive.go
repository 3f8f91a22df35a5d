package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Receive settings, named after RocketMQ's ProxyConfig with its values.
const (
	// DefaultGrpcClientConsumerMinLongPollingTimeout is the shortest long polling a receive
	// gets (grpcClientConsumerMinLongPollingTimeoutMillis, 5 s).
	DefaultGrpcClientConsumerMinLongPollingTimeout = 5 * time.Second
	// DefaultInvisibleTime is the invisible time of a receive that asks the endpoint to renew
	// (defaultInvisibleTimeMills, 60 s).
	DefaultInvisibleTime = 60 * time.Second
	// DefaultMinInvisibleTimeForRecv is the shortest invisible duration a receive may ask
	// (minInvisibleTimeMillsForRecv, 10 s).
	DefaultMinInvisibleTimeForRecv = 10 * time.Second
	// maxPopNums bounds one receive's batch (ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST, 32).
	maxPopNums = 32
)

// receiveWriteTimeout bounds the writing of one receive's answer to a client that does not
// read it (ours): past it the call ends and the messages it did not take are handed out again.
// Tests shorten it while a node runs, hence atomic.
var receiveWriteTimeout atomic.Int64

func init() { receiveWriteTimeout.Store(int64(30 * time.Second)) }

// ReceiveMessage pops messages for a consumer group from this node's broker, as RocketMQ's
// proxy in local mode does (ReceiveMessageActivity): POP_MESSAGE of every queue of the topic on
// the broker (queue id -1, whichever queue the SDK named), FIFO when the group is, the request's
// filter, its invisible duration (or the default for a push consumer that asks for renewal),
// long polling bounded as the proxy bounds it. The stream is a status, then the messages, then a
// delivery timestamp; MESSAGE_NOT_FOUND when there is none.
func (s *service) ReceiveMessage(req *apiv2.ReceiveMessageRequest, stream grpc.ServerStreamingServer[apiv2.ReceiveMessageResponse]) error {
	ctx := stream.Context()
	msgs, c, pop, st := s.receive(ctx, req)
	if st != nil {
		_ = stream.Send(&apiv2.ReceiveMessageResponse{Content: &apiv2.ReceiveMessageResponse_Status{Status: st}})
		return stream.Send(deliveryStamp())
	}
	// The answer is written apart, so a client that never reads costs a bounded wait: when
	// the handler returns, gRPC ends the stream and a blocked write returns.
	done := make(chan int, 1)
	go func() {
		sent := 0
		defer func() { done <- sent }()
		if stream.Send(&apiv2.ReceiveMessageResponse{Content: &apiv2.ReceiveMessageResponse_Status{Status: statusOK}}) != nil {
			return
		}
		for _, m := range msgs {
			if stream.Send(&apiv2.ReceiveMessageResponse{Content: &apiv2.ReceiveMessageResponse_Message{Message: m}}) != nil {
				return
			}
			sent++
		}
		_ = stream.Send(deliveryStamp())
	}()
	limit := time.Duration(receiveWriteTimeout.Load())
	t := time.NewTimer(limit)
	defer t.Stop()
	var sent int
	select {
	case sent = <-done:
	case <-t.C:
		sent = -1
	}
	if sent == len(msgs) {
		return nil
	}
	// The messages the client did not get are visible again soon (the proxy's nack), not
	// after their whole invisible time. The stream is gone, so the broker requests get a
	// context of their own; the service waits for them on Close.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if sent < 0 {
			sent = <-done
		}
		for _, m := range msgs[sent:] {
			r, st := s.parseReceipt(m.GetSystemProperties().GetReceiptHandle(), pop.b)
			if st != nil {
				continue
			}
			nctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
			_, _ = s.changeInvisible(nctx, c, pop.group, pop.topic, r, nackInvisibleTime)
			cancel()
		}
	}()
	if sent < 0 {
		return fmt.Errorf("proxy: the client read no answer for %v", limit)
	}
	return nil
}

func deliveryStamp() *apiv2.ReceiveMessageResponse {
	return &apiv2.ReceiveMessageResponse{Content: &apiv2.ReceiveMessageResponse_DeliveryTimestamp{
		DeliveryTimestamp: timestamppb.Now()}}
}

// popCall is a receive's resolved names.
type popCall struct {
	b            *broker.Broker
	group, topic string
}

// receive checks the request, pops and converts the messages; a status when there are none.
func (s *service) receive(ctx context.Context, req *apiv2.ReceiveMessageRequest) ([]*apiv2.Message, *client, popCall, *apiv2.Status) {
	var pc popCall
	c, group, topic, b, st := s.handleCall(ctx, req.GetGroup(), req.GetMessageQueue().GetTopic())
	if st != nil {
		return nil, nil, pc, st
	}
	pc = popCall{b: b, group: group, topic: topic}
	poll, st := pollingTime(ctx, req.LongPollingTimeout, c.Settings().GetRequestTimeout())
	if st != nil {
		return nil, nil, pc, st
	}
	invisible := DefaultInvisibleTime
	if !req.GetAutoRenew() {
		d := req.GetInvisibleDuration()
		switch {
		case d == nil || !d.IsValid() || d.AsDuration() < DefaultMinInvisibleTimeForRecv:
			return nil, nil, pc, statusf(apiv2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small. min is %d", DefaultMinInvisibleTimeForRecv.Milliseconds())
		case d.AsDuration() > maxInvisibleTime(b):
			return nil, nil, pc, statusf(apiv2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large. max is %d", maxInvisibleTime(b).Milliseconds())
		}
		invisible = d.AsDuration()
	}
	batch := req.GetBatchSize()
	if batch <= 0 {
		return nil, nil, pc, statusf(apiv2.Code_BAD_REQUEST, "batch size %d: receive at least 1 message", batch)
	}
	batch = min(batch, maxPopNums)
	expType, exp := protocol.ExpressionTag, req.GetFilterExpression().GetExpression()
	var tags map[string]bool
	switch req.GetFilterExpression().GetType() {
	case apiv2.FilterType_SQL:
		expType = protocol.ExpressionSQL92
		if strings.TrimSpace(exp) == "" {
			return nil, nil, pc, status(apiv2.Code_ILLEGAL_FILTER_EXPRESSION, "an SQL92 filter expression cannot be empty")
		}
	default:
		if strings.TrimSpace(exp) == "" {
			exp = protocol.SubAll
		}
		if exp != protocol.SubAll {
			tags = map[string]bool{}
			for _, t := range splitTags(exp) {
				tags[t] = true
			}
		}
	}
	if len(exp) > maxFilterBytes {
		return nil, nil, pc, statusf(apiv2.Code_ILLEGAL_FILTER_EXPRESSION, "filter expression of %d bytes: at most %d", len(exp), maxFilterBytes)
	}
	if id := req.GetAttemptId(); len(id) > maxAttemptIDBytes || hasControl(id) {
		return nil, nil, pc, statusf(apiv2.Code_BAD_REQUEST, "attempt id of %d bytes: at most %d, no control characters", len(id), maxAttemptIDBytes)
	}
	retryMax, fifo := int32(16), false
	if g, ok := b.Groups().Find(group); ok {
		retryMax, fifo = g.RetryMaxTimes, g.ConsumeMessageOrderly
	}
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: -1, MaxMsgNums: batch,
		InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli(),
		InitMode: protocol.PopInitModeMax, ExpType: expType, Exp: exp, Order: fifo, AttemptID: req.GetAttemptId(),
		BrokerName: b.Options().Broker.Name}
	// The broker answers by the end of the poll; the call's own deadline, which the poll fits
	// in, bounds the wait, else the poll and a request timeout.
	pctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, poll+DefaultRequestTimeout)
		defer cancel()
	}
	resp, err := s.invoke(pctx, c, remoting.NewRequest(remoting.PopMessage, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return nil, nil, pc, fromError("receive", err)
	}
	switch resp.Code {
	case remoting.Success:
	case remoting.PollingTimeout, remoting.PullNotFound:
		return nil, nil, pc, status(apiv2.Code_MESSAGE_NOT_FOUND, "no new message")
	case remoting.PollingFull:
		return nil, nil, pc, status(apiv2.Code_TOO_MANY_REQUESTS, "polling full")
	case remoting.SubscriptionParseFailed:
		return nil, nil, pc, status(apiv2.Code_ILLEGAL_FILTER_EXPRESSION, resp.Remark)
	case remoting.InvalidParameter:
		return nil, nil, pc, status(apiv2.Code_BAD_REQUEST, resp.Remark)
	default:
		return nil, nil, pc, fromRemoting(resp.Code, resp.Remark)
	}
	msgs, err := s.popped(resp, b.Options().Broker.Name, topic, fifo)
	if err != nil {
		s.log.Warn().Err(err).Str("group", group).Str("topic", topic).Msg("POP answer the endpoint cannot read")
		return nil, nil, pc, statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's POP answer: %v", err)
	}
	// As PopMessageResultFilterImpl: a message whose tag the filter does not take (a tag hash
	// collision) is acknowledged, one past the group's attempts goes to the dead-letter queue,
	// the rest go to the client.
	out := make([]*apiv2.Message, 0, len(msgs))
	for _, m := range msgs {
		sp := m.GetSystemProperties()
		r, st := s.parseReceipt(sp.GetReceiptHandle(), b)
		switch {
		case st != nil:
			out = append(out, m) // the client's ack will say what is wrong
		case tags != nil && !tags[sp.GetTag()]:
			s.ackOne(ctx, c, b, group, topic, sp.GetReceiptHandle())
		case sp.GetDeliveryAttempt()-1 >= retryMax+1:
			_, _ = s.ForwardMessageToDeadLetterQueue(ctx, &apiv2.ForwardMessageToDeadLetterQueueRequest{
				Group: req.GetGroup(), Topic: req.GetMessageQueue().GetTopic(), ReceiptHandle: encodeReceipt(r.info, r.commitLogOffset),
				MessageId: sp.GetMessageId()})
		default:
			sp.InvisibleDuration = durationpb.New(invisible)
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, nil, pc, status(apiv2.Code_MESSAGE_NOT_FOUND, "no match message")
	}
	return out, c, pc, nil
}

// maxFilterBytes bounds a filter expression (ours: the broker parses and keeps it per group).
const maxFilterBytes = 16 << 10

// maxAttemptIDBytes bounds a receive's attempt id (ours: the SDKs send a UUID; the broker keeps
// a FIFO queue's last one).
const maxAttemptIDBytes = 128

// pollingTime is a receive's long polling as the proxy bounds it: the request's, else the
// call's remaining time less half the client's request timeout, within the minimum and the
// maximum, and never past the call's deadline. A call with too little time left for the
// minimum is ILLEGAL_POLLING_TIME.
func pollingTime(ctx context.Context, asked *durationpb.Duration, requestTimeout *durationpb.Duration) (time.Duration, *apiv2.Status) {
	remaining := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		remaining = time.Until(dl)
	}
	var poll time.Duration
	switch {
	case asked != nil && asked.IsValid():
		poll = asked.AsDuration()
	case remaining >= 0:
		poll = remaining - requestTimeout.AsDuration()/2
	default:
		poll = DefaultGrpcClientConsumerMaxLongPollingTimeout
	}
	poll = min(max(poll, DefaultGrpcClientConsumerMinLongPollingTimeout), DefaultGrpcClientConsumerMaxLongPollingTimeout)
	if remaining >= 0 && poll > remaining {
		if remaining < DefaultGrpcClientConsumerMinLongPollingTimeout {
			return 0, status(apiv2.Code_ILLEGAL_POLLING_TIME, "The deadline time remaining is not enough for polling, please check network condition")
		}
		poll = remaining
	}
	return poll, nil
}

// popped converts a POP_MESSAGE answer's messages, each with its receipt handle: the POP_CK
// the broker set (on messages from a retry topic), else one built from the answer's header as
// RocketMQ's proxy builds it (LocalMessageService.popMessage), with the message's CommitLog
// offset after it. A FIFO message's delivery attempt counts from the answer's order counts.
func (s *service) popped(resp *remoting.Command, brokerName, topic string, fifo bool) ([]*apiv2.Message, error) {
	var h protocol.PopMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	stored, err := decodeStored(resp.Body)
	if err != nil {
		return nil, err
	}
	starts, err := offsetInfo(h.StartOffsetInfo)
	if err != nil {
		return nil, fmt.Errorf("startOffsetInfo: %w", err)
	}
	counts, _ := offsetInfo(h.OrderCountInfo)
	first := map[string]int64{}
	out := make([]*apiv2.Message, 0, len(stored))
	for i := range stored {
		m := &stored[i]
		retry := protocol.PopRetryMarker(string(m.rec.Topic))
		key := retry + " " + strconv.Itoa(int(m.rec.QueueID))
		if _, ok := first[key]; !ok {
			first[key] = m.rec.QueueOffset
		}
		var info protocol.ExtraInfo
		ck, hasCK := m.props[protocol.PropertyPopCK]
		if hasCK {
			if info, err = protocol.ParseExtraInfo(ck); err != nil {
				hasCK = false
			}
		}
		if !hasCK {
			start, ok := starts[key]
			if starts == nil {
				start, ok = first[key], true
			}
			if !ok {
				return nil, fmt.Errorf("no checkpoint offset for queue %d of %s", m.rec.QueueID, m.rec.Topic)
			}
			info = protocol.ExtraInfo{CkQueueOffset: start, PopTime: h.PopTime, InvisibleTime: h.InvisibleTime,
				ReviveQid: h.ReviveQid, Retry: retry, BrokerName: brokerName, QueueID: m.rec.QueueID,
				QueueOffset: m.rec.QueueOffset}
		}
		if fifo {
			n, ok := counts[retry+" qo"+strconv.Itoa(int(m.rec.QueueID))+"%"+strconv.FormatInt(m.rec.QueueOffset, 10)]
			if !ok {
				n = counts[key]
			}
			if n > 0 {
				m.rec.ReconsumeTimes = int32(min(n, 1<<30))
			}
		}
		delete(m.props, protocol.PropertyPopCK)
		a := m.toAPI(topic)
		handle := encodeReceipt(info, m.rec.PhysicalOffset)
		a.SystemProperties.ReceiptHandle = &handle
		out = append(out, a)
	}
	return out, nil
}

// maxInfoEntries bounds the entries read from one offset-info string of a POP answer.
const maxInfoEntries = 4 * maxPopNums

// offsetInfo reads an offset-info string of a POP answer, ";"-separated "retry queue value"
// entries, into values by "retry queue". "" is nil.
func offsetInfo(s string) (map[string]int64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]int64{}
	for i, e := range strings.Split(s, ";") {
		if i == maxInfoEntries {
			return out, fmt.Errorf("more than %d entries", maxInfoEntries)
		}
		f := strings.Split(e, " ")
		if len(f) != 3 {
			return out, fmt.Errorf("entry %q is not \"retry queue value\"", e)
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return out, fmt.Errorf("entry %q: value is not a decimal", e)
		}
		out[f[0]+" "+f[1]] = v
	}
	return out, nil
}
