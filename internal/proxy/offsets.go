package proxy

import (
	"context"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
)

// The offset RPCs serve a client that keeps its own place in each queue (a pull consumer):
// PullMessage reads a queue from an offset with PULL_MESSAGE, UpdateOffset and GetOffset store
// and read the group's offset with UPDATE_CONSUMER_OFFSET and QUERY_CONSUMER_OFFSET, QueryOffset
// finds a queue's first, last or timed offset with GET_MIN_OFFSET, GET_MAX_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP. RocketMQ's proxy defines these RPCs in the API without serving
// them yet; the answers here follow the broker's own.

// maxPullNums bounds one PullMessage's batch (the 4.x pull consumer's largest, 32 as POP's).
const maxPullNums = 32

// queueCall is what every offset RPC checks first: the client, the queue's topic and id on
// this node's broker and, when the RPC names one, the group.
func (s *service) queueCall(ctx context.Context, group *apiv2.Resource, mq *apiv2.MessageQueue) (*client, string, string, *broker.Broker, *apiv2.Status) {
	c, st := s.clients.get(ctx)
	if st != nil {
		return nil, "", "", nil, st
	}
	topic, st := resourceName(mq.GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return nil, "", "", nil, st
	}
	g := ""
	if group != nil {
		if g, st = resourceName(group, "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup); st != nil {
			return nil, "", "", nil, st
		}
	}
	b := s.broker()
	if b == nil || s.opts.BrokerAddr == "" {
		return nil, "", "", nil, status(apiv2.Code_INTERNAL_SERVER_ERROR, "this node runs no broker to read from")
	}
	if name := mq.GetBroker().GetName(); name != "" && name != b.Options().Broker.Name {
		return nil, "", "", nil, statusf(apiv2.Code_BAD_REQUEST, "the queue is broker %s's: this endpoint serves broker %s, call the endpoint its route names", name, b.Options().Broker.Name)
	}
	if mq.GetId() < 0 {
		return nil, "", "", nil, statusf(apiv2.Code_BAD_REQUEST, "queue id %d: name one queue", mq.GetId())
	}
	return c, g, topic, b, nil
}

// PullMessage reads up to batch_size messages of one queue from offset: a status, the
// messages, then the offset to pull from next. No message past the offset is
// MESSAGE_NOT_FOUND, an offset outside the queue ILLEGAL_OFFSET, each with the next offset.
func (s *service) PullMessage(req *apiv2.PullMessageRequest, stream grpc.ServerStreamingServer[apiv2.PullMessageResponse]) error {
	ctx := stream.Context()
	send := func(st *apiv2.Status) error {
		return stream.Send(&apiv2.PullMessageResponse{Content: &apiv2.PullMessageResponse_Status{Status: st}})
	}
	c, group, topic, b, st := s.queueCall(ctx, req.GetGroup(), req.GetMessageQueue())
	if st != nil {
		return send(st)
	}
	if group == "" {
		return send(status(apiv2.Code_ILLEGAL_CONSUMER_GROUP, "the request names no consumer group"))
	}
	if req.GetOffset() < 0 {
		return send(statusf(apiv2.Code_ILLEGAL_OFFSET, "offset %d is negative", req.GetOffset()))
	}
	batch := req.GetBatchSize()
	if batch <= 0 {
		return send(statusf(apiv2.Code_BAD_REQUEST, "batch size %d: pull at least 1 message", batch))
	}
	batch = min(batch, maxPullNums)
	expType, exp := protocol.ExpressionTag, req.GetFilterExpression().GetExpression()
	if req.GetFilterExpression().GetType() == apiv2.FilterType_SQL {
		expType = protocol.ExpressionSQL92
	} else if exp == "" {
		exp = protocol.SubAll
	}
	if len(exp) > maxFilterBytes {
		return send(statusf(apiv2.Code_ILLEGAL_FILTER_EXPRESSION, "filter expression of %d bytes: at most %d", len(exp), maxFilterBytes))
	}
	var suspend time.Duration
	if d := req.GetLongPollingTimeout(); d != nil && d.IsValid() && d.AsDuration() > 0 {
		suspend = min(d.AsDuration(), DefaultGrpcClientConsumerMaxLongPollingTimeout)
	}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: req.GetMessageQueue().GetId(),
		QueueOffset: req.GetOffset(), MaxMsgNums: batch, SysFlag: protocol.BuildPullSysFlag(false, suspend > 0, true, false),
		SuspendTimeoutMillis: suspend.Milliseconds(), Subscription: exp, SubVersion: time.Now().UnixMilli(),
		ExpressionType: expType, BrokerName: b.Options().Broker.Name}
	pctx, cancel := context.WithTimeout(ctx, suspend+DefaultRequestTimeout)
	defer cancel()
	resp, err := s.invoke(pctx, c, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return send(fromError("pull", err))
	}
	var rh protocol.PullMessageResponseHeader
	switch resp.Code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
		if err := rh.Decode(resp.ExtFields); err != nil {
			return send(statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's pull answer: %v", err))
		}
	case remoting.SubscriptionParseFailed:
		return send(status(apiv2.Code_ILLEGAL_FILTER_EXPRESSION, resp.Remark))
	default:
		return send(fromRemoting(resp.Code, resp.Remark))
	}
	next := func() error {
		return stream.Send(&apiv2.PullMessageResponse{Content: &apiv2.PullMessageResponse_NextOffset{NextOffset: rh.NextBeginOffset}})
	}
	switch resp.Code {
	case remoting.PullNotFound, remoting.PullRetryImmediately:
		if err := send(status(apiv2.Code_MESSAGE_NOT_FOUND, "no new message")); err != nil {
			return err
		}
		return next()
	case remoting.PullOffsetMoved:
		if err := send(statusf(apiv2.Code_ILLEGAL_OFFSET, "offset %d is outside the queue [%d, %d]: pull from the next offset", req.GetOffset(), rh.MinOffset, rh.MaxOffset)); err != nil {
			return err
		}
		return next()
	}
	stored, err := decodeStored(resp.Body)
	if err != nil {
		s.log.Warn().Err(err).Str("topic", topic).Msg("PULL answer the endpoint cannot read")
		return send(statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's pull answer: %v", err))
	}
	if err := send(statusOK); err != nil {
		return err
	}
	for i := range stored {
		if err := stream.Send(&apiv2.PullMessageResponse{Content: &apiv2.PullMessageResponse_Message{Message: stored[i].toAPI(topic)}}); err != nil {
			return err
		}
	}
	return next()
}

// UpdateOffset stores the group's offset in a queue.
func (s *service) UpdateOffset(ctx context.Context, req *apiv2.UpdateOffsetRequest) (*apiv2.UpdateOffsetResponse, error) {
	c, group, topic, b, st := s.queueCall(ctx, req.GetGroup(), req.GetMessageQueue())
	switch {
	case st != nil:
	case group == "":
		st = status(apiv2.Code_ILLEGAL_CONSUMER_GROUP, "the request names no consumer group")
	case req.GetOffset() < 0:
		st = statusf(apiv2.Code_ILLEGAL_OFFSET, "offset %d is negative", req.GetOffset())
	default:
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic,
			QueueID: req.GetMessageQueue().GetId(), CommitOffset: req.GetOffset(), BrokerName: b.Options().Broker.Name}
		st = s.offsetCall(ctx, c, remoting.UpdateConsumerOffset, &h, nil)
	}
	return &apiv2.UpdateOffsetResponse{Status: st}, nil
}

// GetOffset reads the group's stored offset in a queue; a group that stored none there is
// OFFSET_NOT_FOUND.
func (s *service) GetOffset(ctx context.Context, req *apiv2.GetOffsetRequest) (*apiv2.GetOffsetResponse, error) {
	c, group, topic, b, st := s.queueCall(ctx, req.GetGroup(), req.GetMessageQueue())
	var off int64
	switch {
	case st != nil:
	case group == "":
		st = status(apiv2.Code_ILLEGAL_CONSUMER_GROUP, "the request names no consumer group")
	default:
		h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic,
			QueueID: req.GetMessageQueue().GetId(), BrokerName: b.Options().Broker.Name}
		st = s.offsetCall(ctx, c, remoting.QueryConsumerOffset, &h, &off)
	}
	return &apiv2.GetOffsetResponse{Status: st, Offset: off}, nil
}

// QueryOffset finds an offset of a queue by policy: its first (BEGINNING), the one after its
// last (END) or the first stored at or after a time (TIMESTAMP).
func (s *service) QueryOffset(ctx context.Context, req *apiv2.QueryOffsetRequest) (*apiv2.QueryOffsetResponse, error) {
	c, _, topic, b, st := s.queueCall(ctx, nil, req.GetMessageQueue())
	if st != nil {
		return &apiv2.QueryOffsetResponse{Status: st}, nil
	}
	q := protocol.QueueHeader{Topic: topic, QueueID: req.GetMessageQueue().GetId(), BrokerName: b.Options().Broker.Name}
	var off int64
	switch req.GetQueryOffsetPolicy() {
	case apiv2.QueryOffsetPolicy_BEGINNING:
		st = s.offsetCall(ctx, c, remoting.GetMinOffset, &q, &off)
	case apiv2.QueryOffsetPolicy_END:
		st = s.offsetCall(ctx, c, remoting.GetMaxOffset, &q, &off)
	case apiv2.QueryOffsetPolicy_TIMESTAMP:
		ts := req.GetTimestamp()
		if ts == nil || !ts.IsValid() {
			st = status(apiv2.Code_BAD_REQUEST, "query offset by TIMESTAMP needs a valid timestamp")
			break
		}
		h := protocol.SearchOffsetRequestHeader{Topic: topic, QueueID: q.QueueID, Timestamp: ts.AsTime().UnixMilli(),
			BrokerName: q.BrokerName}
		st = s.offsetCall(ctx, c, remoting.SearchOffsetByTimestamp, &h, &off)
	default:
		st = statusf(apiv2.Code_BAD_REQUEST, "query offset policy %v: BEGINNING, END or TIMESTAMP", req.GetQueryOffsetPolicy())
	}
	return &apiv2.QueryOffsetResponse{Status: st, Offset: off}, nil
}

// offsetCall sends one offset request and reads the offset of its answer into off, when set.
func (s *service) offsetCall(ctx context.Context, c *client, code int32, h remoting.Header, off *int64) *apiv2.Status {
	resp, err := s.invoke(ctx, c, remoting.NewRequest(code, remoting.EncodeHeader(h), nil))
	if err != nil {
		return fromError(remoting.RequestCodeName(code), err)
	}
	switch resp.Code {
	case remoting.Success:
	case remoting.QueryNotFound:
		return status(apiv2.Code_OFFSET_NOT_FOUND, "the group stored no offset in this queue")
	default:
		return fromRemoting(resp.Code, resp.Remark)
	}
	if off != nil {
		var oh protocol.OffsetHeader
		if err := oh.Decode(resp.ExtFields); err != nil {
			return statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's %s answer: %v", remoting.RequestCodeName(code), err)
		}
		*off = oh.Offset
	}
	return statusOK
}
