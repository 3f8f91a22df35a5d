package broker

import (
	"context"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// registerOffsets installs QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET,
// SEARCH_OFFSET_BY_TIMESTAMP, GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME on the
// client pool (RocketMQ's consumerManageExecutor).
func (b *Broker) registerOffsets(d *remoting.Dispatcher) {
	b.handle(d, remoting.QueryConsumerOffset, remoting.ProcessorFunc(b.processQueryConsumerOffset), b.clientEx)
	b.handle(d, remoting.UpdateConsumerOffset, remoting.ProcessorFunc(b.processUpdateConsumerOffset), b.clientEx)
	b.handle(d, remoting.SearchOffsetByTimestamp, remoting.ProcessorFunc(b.processSearchOffset), b.clientEx)
	b.handle(d, remoting.GetMaxOffset, remoting.ProcessorFunc(b.processGetMaxOffset), b.clientEx)
	b.handle(d, remoting.GetMinOffset, remoting.ProcessorFunc(b.processGetMinOffset), b.clientEx)
	b.handle(d, remoting.GetEarliestMsgStoreTime, remoting.ProcessorFunc(b.processGetEarliestMsgStoreTime), b.clientEx)
}

// queryNotFoundRemark is RocketMQ's remark for QUERY_NOT_FOUND.
const queryNotFoundRemark = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"

func offsetResponse(offset int64) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.OffsetResponseHeader{Offset: offset})
	return resp
}

// processQueryConsumerOffset answers a group's committed offset. With none stored it answers 0
// when the queue still starts at offset 0 with its first message in the store (or is empty),
// so a new group reads a young queue from its start whatever its consume-from-where; otherwise
// QUERY_NOT_FOUND, and the client applies its consume-from-where (docs/protocol.md §5.3, §10.3).
func (b *Broker) processQueryConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if off := b.offsets.query(h.ConsumerGroup, h.Topic, h.QueueID); off >= 0 {
		return offsetResponse(off), nil
	}
	if b.firstMessageInStore(h.Topic, h.QueueID) {
		return offsetResponse(0), nil
	}
	return remoting.NewResponse(remoting.QueryNotFound, queryNotFoundRemark), nil
}

// firstMessageInStore reports whether a queue starts at offset 0 with its message 0 readable
// and still "in memory", or is empty: RocketMQ's minOffset <= 0 &&
// !checkInDiskByConsumeOffset(0). In memory means within AccessMessageInMemoryMaxRatio of
// physical memory from the CommitLog's end, the test the store applies for
// SuggestPullingFromSlave; so a large old queue answers QUERY_NOT_FOUND and the client applies
// its consume-from-where instead of reading everything.
func (b *Broker) firstMessageInStore(topic string, queueID int32) bool {
	if b.store.MinOffsetInQueue(topic, queueID) > 0 {
		return false
	}
	if b.store.MaxOffsetInQueue(topic, queueID) == 0 {
		return true
	}
	r := b.store.GetMessage("", topic, queueID, 0, 1, 0, nil)
	defer r.Release()
	return r.Status == storage.Found && !r.SuggestPullingFromSlave
}

// processUpdateConsumerOffset stores a group's offset (the answer is discarded by clients).
func (b *Broker) processUpdateConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	b.offsets.commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processGetMaxOffset answers the queue offset one past the last message.
func (b *Broker) processGetMaxOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(b.store.MaxOffsetInQueue(h.Topic, h.QueueID)), nil
}

// processGetMinOffset answers the smallest readable queue offset.
func (b *Broker) processGetMinOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(b.store.MinOffsetInQueue(h.Topic, h.QueueID)), nil
}

// processSearchOffset answers the offset of the first message stored at or after a time, the
// max offset if none.
func (b *Broker) processSearchOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SearchOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(b.store.GetOffsetInQueueByTime(h.Topic, h.QueueID, h.Timestamp)), nil
}

// processGetEarliestMsgStoreTime answers the store time of a queue's first readable message,
// -1 when there is none (as RocketMQ does).
func (b *Broker) processGetEarliestMsgStoreTime(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	ts, err := b.store.GetEarliestMessageTime(h.Topic, h.QueueID)
	if err != nil {
		ts = -1
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.EarliestMsgStoreTimeResponseHeader{Timestamp: ts})
	return resp, nil
}
