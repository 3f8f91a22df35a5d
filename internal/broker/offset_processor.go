package broker

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// registerOffsets installs QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET,
// SEARCH_OFFSET_BY_TIMESTAMP, GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME on the
// client pool (RocketMQ's consumerManageExecutor).
func (pu *puller) registerOffsets(d *remoting.Dispatcher) {
	pu.handle(d, remoting.QueryConsumerOffset, remoting.ProcessorFunc(pu.processQueryConsumerOffset), pu.clientEx)
	pu.handle(d, remoting.UpdateConsumerOffset, remoting.ProcessorFunc(pu.processUpdateConsumerOffset), pu.clientEx)
	pu.handle(d, remoting.SearchOffsetByTimestamp, remoting.ProcessorFunc(pu.processSearchOffset), pu.clientEx)
	pu.handle(d, remoting.GetMaxOffset, remoting.ProcessorFunc(pu.processGetMaxOffset), pu.clientEx)
	pu.handle(d, remoting.GetMinOffset, remoting.ProcessorFunc(pu.processGetMinOffset), pu.clientEx)
	pu.handle(d, remoting.GetEarliestMsgStoreTime, remoting.ProcessorFunc(pu.processGetEarliestMsgStoreTime), pu.clientEx)
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
func (pu *puller) processQueryConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if off := pu.offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID); off >= 0 {
		return offsetResponse(off), nil
	}
	if pu.firstMessageInStore(h.Topic, h.QueueID) {
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
func (pu *puller) firstMessageInStore(topic string, queueID int32) bool {
	if pu.store.MinOffsetInQueue(topic, queueID) > 0 {
		return false
	}
	if pu.store.MaxOffsetInQueue(topic, queueID) == 0 {
		return true
	}
	r := pu.store.GetMessage("", topic, queueID, 0, 1, 0, nil)
	defer r.Release()
	return r.Status == storage.Found && !r.SuggestPullingFromSlave
}

// processUpdateConsumerOffset stores a group's offset (the answer is discarded by clients).
// As RocketMQ 5's ConsumerManageProcessor the group and the topic must exist, neither created
// here; ours, the queue id must be one of the topic's: each commit may add an entry to the
// offset table and consumerOffset.json, so without the checks one client could grow both
// without bound with names and queue ids of its choosing.
func (pu *puller) processUpdateConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if _, ok := pu.groups.Get(h.ConsumerGroup); !ok {
		return remoting.NewResponse(remoting.SubscriptionGroupNotExist, "Group "+h.ConsumerGroup+" not exist!"), nil
	}
	tc, ok := pu.topics.Get(h.Topic)
	if !ok {
		return remoting.NewResponse(remoting.TopicNotExist, "Topic "+h.Topic+" not exist!"), nil
	}
	// Either count: a queue being shrunk away is still read (readQueueNums) while producers no
	// longer write it, and a queue being added is written before it is read.
	if n := max(tc.ReadQueueNums, tc.WriteQueueNums); h.QueueID < 0 || h.QueueID >= n {
		return remoting.NewResponse(remoting.InvalidParameter, fmt.Sprintf(
			"queueId[%d] is illegal, topic:[%s] has %d queues (max of readQueueNums %d and writeQueueNums %d)",
			h.QueueID, h.Topic, n, tc.ReadQueueNums, tc.WriteQueueNums)), nil
	}
	pu.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processGetMaxOffset answers the queue offset one past the last message.
func (pu *puller) processGetMaxOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(pu.store.MaxOffsetInQueue(h.Topic, h.QueueID)), nil
}

// processGetMinOffset answers the smallest readable queue offset.
func (pu *puller) processGetMinOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(pu.store.MinOffsetInQueue(h.Topic, h.QueueID)), nil
}

// processSearchOffset answers the offset of the first message stored at or after a time, the
// max offset if none.
func (pu *puller) processSearchOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SearchOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return offsetResponse(pu.store.GetOffsetInQueueByTime(h.Topic, h.QueueID, h.Timestamp)), nil
}

// processGetEarliestMsgStoreTime answers the store time of a queue's first readable message,
// -1 when there is none (as RocketMQ does).
func (pu *puller) processGetEarliestMsgStoreTime(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueueHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	ts, err := pu.store.GetEarliestMessageTime(h.Topic, h.QueueID)
	if err != nil {
		ts = -1
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.EarliestMsgStoreTimeResponseHeader{Timestamp: ts})
	return resp, nil
}
