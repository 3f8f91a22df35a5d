package broker

import (
	"context"
	"strconv"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Query limits (MessageStoreConfig defaultQueryMaxNum, maxMsgsNumBatch).
const (
	defaultQueryMaxNum = 32 // matches answered to a query by unique key
	maxQueryMaxNum     = 64 // matches answered to any query
)

// querier is the query processor (RocketMQ's QueryMessageProcessor and the VIEW_MESSAGE_BY_ID
// of AdminBrokerProcessor): reads of stored messages by key and by offset. It has no state.
type querier struct{ *Broker }

// register installs QUERY_MESSAGE and VIEW_MESSAGE_BY_ID on the query pool.
func (q *querier) register(d *remoting.Dispatcher) {
	q.handle(d, remoting.QueryMessage, remoting.ProcessorFunc(q.processQueryMessage), q.queryEx)
	q.handle(d, remoting.ViewMessageByID, remoting.ProcessorFunc(q.processViewMessage), q.queryEx)
}

// processQueryMessage handles QUERY_MESSAGE (12), docs/protocol.md §5.10, as RocketMQ's
// QueryMessageProcessor: the body is the matching records back to back; no match answers
// QUERY_NOT_FOUND. The index positions travel in the response header either way. Records
// ReadCheck refuses are left out; when it refused every match, its refusal is the answer.
func (q *querier) processQueryMessage(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if h.UniqueKeyQuery {
		h.MaxNum = defaultQueryMaxNum
	}
	maxNum := min(int(h.MaxNum), maxQueryMaxNum)
	res, err := q.store.QueryMessage(h.Topic, h.Key, maxNum, h.BeginTimestamp, h.EndTimestamp)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: res.IndexLastUpdateTimestamp,
		IndexLastUpdatePhyoffset: res.IndexLastUpdatePhyOffset,
	})
	if refused := q.dropUnreadable(ch, req, &res.Messages); len(res.Messages) == 0 && refused != nil {
		return refused, nil
	}
	if len(res.Messages) == 0 {
		resp.Code, resp.Remark = remoting.QueryNotFound, "can not find message, maybe time range not correct"
		return resp, nil
	}
	n := 0
	for _, m := range res.Messages {
		n += len(m)
	}
	body := make([]byte, 0, n)
	for _, m := range res.Messages {
		body = append(body, m...)
	}
	resp.Body = body
	return resp, nil
}

// processViewMessage handles VIEW_MESSAGE_BY_ID (33): the record at a CommitLog offset, once
// ReadCheck let the peer read its topic.
func (q *querier) processViewMessage(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ViewMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	rec, err := q.store.LookMessageByOffset(h.Offset)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError,
			"can not find message by the offset, "+strconv.FormatInt(h.Offset, 10)), nil
	}
	if refused := q.checkReadRaw(ch, req, rec); refused != nil {
		return refused, nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = rec
	return resp, nil
}

// dropUnreadable leaves out of msgs the records ReadCheck does not let the peer of req read,
// and returns the first refusal, for an answer left empty. A query names its topic and ACL
// checked it before the store kept only that topic's records, so a record is left out only
// where its own topic is another (a delayed message's REAL_TOPIC): the account gets what it
// may read, as a pull of the same topic would give it.
func (q *querier) dropUnreadable(ch remoting.Channel, req *remoting.Command, msgs *[][]byte) *remoting.Command {
	if q.opts.ReadCheck == nil {
		return nil
	}
	var first *remoting.Command
	kept := (*msgs)[:0]
	for _, m := range *msgs {
		if refused := q.checkReadRaw(ch, req, m); refused != nil {
			if first == nil {
				first = refused
			}
			continue
		}
		kept = append(kept, m)
	}
	*msgs = kept
	return first
}
