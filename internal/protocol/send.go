package protocol

// Send headers (RocketMQ 4.x SendMessageRequestHeader, SendMessageRequestHeaderV2,
// SendMessageResponseHeader; docs/protocol.md §4.1–§4.3).

// SendMessageRequestHeader is the header of SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324), with
// the long key names of docs/protocol.md §4.1. SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
// SEND_REPLY_MESSAGE_V2 (325) carry the same fields under one-letter keys: see
// SendMessageRequestHeaderV2, a conversion of this type. With DefaultTopic "TBW102" and
// DefaultTopicQueueNums 4, Encode writes exactly the keys and values the official Go client
// sends; the fields Java marks @CFNotNull are required.
type SendMessageRequestHeader struct {
	ProducerGroup string `ext:"producerGroup,required" v2:"a"`
	Topic         string `ext:"topic,required" v2:"b"`
	// DefaultTopic is the template topic for auto-creation; the Go client always sends
	// "TBW102" and DefaultTopicQueueNums 4.
	DefaultTopic          string `ext:"defaultTopic,required" v2:"c"`
	DefaultTopicQueueNums int32  `ext:"defaultTopicQueueNums,required" v2:"d"`
	// QueueID is the target queue; a negative id asks the broker to pick one.
	QueueID int32 `ext:"queueId,required" v2:"e"`
	// SysFlag holds the message sysFlag bits (docs/protocol.md §9.2).
	SysFlag       int32 `ext:"sysFlag,required" v2:"f"`
	BornTimestamp int64 `ext:"bornTimestamp,required" v2:"g"`
	Flag          int32 `ext:"flag,required" v2:"h"`
	// Properties is the encoded properties string (docs/protocol.md §9.3).
	Properties     string `ext:"properties" v2:"i"`
	ReconsumeTimes int32  `ext:"reconsumeTimes" v2:"j"`
	UnitMode       bool   `ext:"unitMode" v2:"k"`
	// MaxReconsumeTimes is -1 when the field is absent (clients older than 3.4.9), and then
	// left out by Encode; the broker uses the group's retryMaxTimes instead.
	MaxReconsumeTimes int32 `ext:"maxReconsumeTimes,omitneg" v2:"l"`
	Batch             bool  `ext:"batch" v2:"m"`
	// BrokerName is the broker name of the selected queue ("bname"; "n" in V2).
	BrokerName string `ext:"bname" v2:"n"`
}

// SendMessageRequestHeaderV2 is SendMessageRequestHeader under the one-letter keys a..n of
// SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2 (docs/protocol.md §4.2): what the
// Go client's batch send writes. Convert with (*SendMessageRequestHeaderV2)(&h).
//
//headergen:keys v2
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// SendMessageResponseHeader answers the send requests (docs/protocol.md §4.1): the stored message's
// offset message id (comma-joined ids for a batch), its queue and queue offset (the first
// message's for a batch), and the broker's region and trace switch.
type SendMessageResponseHeader struct {
	MsgID       string `ext:"msgId,required"`
	QueueID     int32  `ext:"queueId,required"`
	QueueOffset int64  `ext:"queueOffset,required"`
	// TransactionID is left out when empty (Java leaves out the null field).
	TransactionID string `ext:"transactionId,omitempty"`
	// MsgRegion ("MSG_REGION") is left out when empty; brokers send "DefaultRegion".
	MsgRegion string `ext:"MSG_REGION,omitempty"`
	// TraceOn ("TRACE_ON") is always written, and read as the Go client reads it: anything but
	// empty or "false" is on.
	TraceOn bool `ext:"TRACE_ON,nonfalse"`
	// RecallHandle is RocketMQ 5's handle of a timer message, for RECALL_MESSAGE; left out for
	// any other message.
	RecallHandle string `ext:"recallHandle,omitempty"`
}
