package protocol

// Offset requests: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
// SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and
// GET_EARLIEST_MSG_STORETIME (32). See docs/protocol.md §5.3–§5.5.

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	BrokerName    string `ext:"bname,omitempty"`
}

// UpdateConsumerOffsetRequestHeader is the header of UPDATE_CONSUMER_OFFSET.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	CommitOffset  int64  `ext:"commitOffset,required"`
	BrokerName    string `ext:"bname,omitempty"`
}

// QueueHeader is the header of the requests that name one queue: GET_MAX_OFFSET,
// GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME.
type QueueHeader struct {
	Topic      string `ext:"topic,required"`
	QueueID    int32  `ext:"queueId,required"`
	BrokerName string `ext:"bname,omitempty"`
}

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP. Old Go clients (before
// 2.0) sent "Topic" and "QueueId"; those spellings are accepted too.
type SearchOffsetRequestHeader struct {
	Topic      string `ext:"topic,required,alias=Topic"`
	QueueID    int32  `ext:"queueId,required,alias=QueueId"`
	Timestamp  int64  `ext:"timestamp,required"` // ms since the epoch
	BrokerName string `ext:"bname,omitempty"`
}

// OffsetHeader carries one offset: it answers QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET,
// GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP with a queue offset, and asks
// VIEW_MESSAGE_BY_ID for the record at a CommitLog offset.
type OffsetHeader struct {
	Offset int64 `ext:"offset,required"`
}

// OffsetResponseHeader and ViewMessageRequestHeader (query.go) are RocketMQ's names for
// OffsetHeader.
type OffsetResponseHeader = OffsetHeader

// EarliestMsgStoreTimeResponseHeader answers GET_EARLIEST_MSG_STORETIME.
type EarliestMsgStoreTimeResponseHeader struct {
	Timestamp int64 `ext:"timestamp,required"`
}
