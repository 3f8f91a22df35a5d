package protocol

import "github.com/mqgo/mq/remoting"

// Offset requests: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
// SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and
// GET_EARLIEST_MSG_STORETIME (32). See docs/protocol.md §5.3–§5.5.

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	BrokerName    string // "bname"; optional
}

// Encode implements remoting.Header.
func (h *QueryConsumerOffsetRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	remoting.PutInt32(ext, "queueId", h.QueueID)
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header.
func (h *QueryConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.ConsumerGroup = r.String("consumerGroup", true)
	h.Topic = r.String("topic", true)
	h.QueueID = r.Int32("queueId", true)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

// UpdateConsumerOffsetRequestHeader is the header of UPDATE_CONSUMER_OFFSET.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	CommitOffset  int64
	BrokerName    string // "bname"; optional
}

// Encode implements remoting.Header.
func (h *UpdateConsumerOffsetRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt64(ext, "commitOffset", h.CommitOffset)
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header.
func (h *UpdateConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.ConsumerGroup = r.String("consumerGroup", true)
	h.Topic = r.String("topic", true)
	h.QueueID = r.Int32("queueId", true)
	h.CommitOffset = r.Int64("commitOffset", true)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

// QueueHeader is the header of the requests that name one queue: GET_MAX_OFFSET,
// GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME.
type QueueHeader struct {
	Topic      string
	QueueID    int32
	BrokerName string // "bname"; optional
}

// Encode implements remoting.Header.
func (h *QueueHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	remoting.PutInt32(ext, "queueId", h.QueueID)
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header.
func (h *QueueHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	h.QueueID = r.Int32("queueId", true)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP.
type SearchOffsetRequestHeader struct {
	Topic      string
	QueueID    int32
	Timestamp  int64 // ms since the epoch
	BrokerName string
}

// Encode implements remoting.Header.
func (h *SearchOffsetRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt64(ext, "timestamp", h.Timestamp)
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header. Old Go clients (before 2.0) sent "Topic" and "QueueId";
// those spellings are accepted too.
func (h *SearchOffsetRequestHeader) Decode(ext map[string]string) error {
	if _, ok := ext["topic"]; !ok {
		if v, ok := ext["Topic"]; ok {
			ext["topic"] = v
		}
	}
	if _, ok := ext["queueId"]; !ok {
		if v, ok := ext["QueueId"]; ok {
			ext["queueId"] = v
		}
	}
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	h.QueueID = r.Int32("queueId", true)
	h.Timestamp = r.Int64("timestamp", true)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

// OffsetResponseHeader answers QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and
// SEARCH_OFFSET_BY_TIMESTAMP.
type OffsetResponseHeader struct {
	Offset int64
}

// Encode implements remoting.Header.
func (h *OffsetResponseHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "offset", h.Offset)
}

// Decode implements remoting.Header.
func (h *OffsetResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Offset = r.Int64("offset", true)
	return r.Err()
}

// EarliestMsgStoreTimeResponseHeader answers GET_EARLIEST_MSG_STORETIME.
type EarliestMsgStoreTimeResponseHeader struct {
	Timestamp int64
}

// Encode implements remoting.Header.
func (h *EarliestMsgStoreTimeResponseHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "timestamp", h.Timestamp)
}

// Decode implements remoting.Header.
func (h *EarliestMsgStoreTimeResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Timestamp = r.Int64("timestamp", true)
	return r.Err()
}

// Compile-time checks.
var (
	_ remoting.Header = (*UnregisterClientRequestHeader)(nil)
	_ remoting.Header = (*ConsumerGroupHeader)(nil)
	_ remoting.Header = (*PullMessageRequestHeader)(nil)
	_ remoting.Header = (*PullMessageResponseHeader)(nil)
	_ remoting.Header = (*QueryConsumerOffsetRequestHeader)(nil)
	_ remoting.Header = (*UpdateConsumerOffsetRequestHeader)(nil)
	_ remoting.Header = (*QueueHeader)(nil)
	_ remoting.Header = (*SearchOffsetRequestHeader)(nil)
	_ remoting.Header = (*OffsetResponseHeader)(nil)
	_ remoting.Header = (*EarliestMsgStoreTimeResponseHeader)(nil)
)
