package protocol

import "github.com/mqgo/mq/remoting"

// Send headers (RocketMQ 4.x SendMessageRequestHeader, SendMessageRequestHeaderV2,
// SendMessageResponseHeader; docs/protocol.md §4.1–§4.3).

// SendMessageRequestHeader is the header of SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324), with
// the long key names of docs/protocol.md §4.1. SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
// SEND_REPLY_MESSAGE_V2 (325) carry the same fields under one-letter keys: see
// SendMessageRequestHeaderV2, a conversion of this type.
type SendMessageRequestHeader struct {
	ProducerGroup string
	Topic         string
	// DefaultTopic is the template topic for auto-creation; the Go client always sends
	// "TBW102" and DefaultTopicQueueNums 4.
	DefaultTopic          string
	DefaultTopicQueueNums int32
	// QueueID is the target queue; a negative id asks the broker to pick one.
	QueueID int32
	// SysFlag holds the message sysFlag bits (docs/protocol.md §9.2).
	SysFlag       int32
	BornTimestamp int64
	Flag          int32
	// Properties is the encoded properties string (docs/protocol.md §9.3).
	Properties     string
	ReconsumeTimes int32
	UnitMode       bool
	// MaxReconsumeTimes is -1 when the field is absent (clients older than 3.4.9), and then
	// left out by Encode; the broker uses the group's retryMaxTimes instead.
	MaxReconsumeTimes int32
	Batch             bool
	// BrokerName is the broker name of the selected queue ("bname"; "n" in V2).
	BrokerName string
}

// Encode implements remoting.Header. With DefaultTopic "TBW102" and DefaultTopicQueueNums 4 it
// writes exactly the keys and values the official Go client sends (docs/protocol.md §4.1).
func (h *SendMessageRequestHeader) Encode(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
	ext["topic"] = h.Topic
	ext["defaultTopic"] = h.DefaultTopic
	remoting.PutInt32(ext, "defaultTopicQueueNums", h.DefaultTopicQueueNums)
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt32(ext, "sysFlag", h.SysFlag)
	remoting.PutInt64(ext, "bornTimestamp", h.BornTimestamp)
	remoting.PutInt32(ext, "flag", h.Flag)
	ext["properties"] = h.Properties
	remoting.PutInt32(ext, "reconsumeTimes", h.ReconsumeTimes)
	remoting.PutBool(ext, "unitMode", h.UnitMode)
	if h.MaxReconsumeTimes >= 0 {
		remoting.PutInt32(ext, "maxReconsumeTimes", h.MaxReconsumeTimes)
	}
	remoting.PutBool(ext, "batch", h.Batch)
	ext["bname"] = h.BrokerName
}

// Decode implements remoting.Header. The fields Java marks @CFNotNull are required.
func (h *SendMessageRequestHeader) Decode(ext map[string]string) error {
	return h.decode(ext, &sendKeysV1)
}

// SendMessageRequestHeaderV2 is SendMessageRequestHeader under the one-letter keys a..n of
// SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2 (docs/protocol.md §4.2). Convert
// with (*SendMessageRequestHeaderV2)(&h).
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// Encode implements remoting.Header; it writes what the Go client's batch send writes.
func (h *SendMessageRequestHeaderV2) Encode(ext map[string]string) {
	ext["a"] = h.ProducerGroup
	ext["b"] = h.Topic
	ext["c"] = h.DefaultTopic
	remoting.PutInt32(ext, "d", h.DefaultTopicQueueNums)
	remoting.PutInt32(ext, "e", h.QueueID)
	remoting.PutInt32(ext, "f", h.SysFlag)
	remoting.PutInt64(ext, "g", h.BornTimestamp)
	remoting.PutInt32(ext, "h", h.Flag)
	ext["i"] = h.Properties
	remoting.PutInt32(ext, "j", h.ReconsumeTimes)
	remoting.PutBool(ext, "k", h.UnitMode)
	if h.MaxReconsumeTimes >= 0 {
		remoting.PutInt32(ext, "l", h.MaxReconsumeTimes)
	}
	remoting.PutBool(ext, "m", h.Batch)
	ext["n"] = h.BrokerName
}

// Decode implements remoting.Header.
func (h *SendMessageRequestHeaderV2) Decode(ext map[string]string) error {
	return (*SendMessageRequestHeader)(h).decode(ext, &sendKeysV2)
}

// sendKeys names the fields of a send header in one of its two encodings.
type sendKeys struct {
	producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueID, sysFlag, bornTimestamp,
	flag, properties, reconsumeTimes, unitMode, maxReconsumeTimes, batch, brokerName string
}

var (
	sendKeysV1 = sendKeys{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
		"sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
		"maxReconsumeTimes", "batch", "bname"}
	sendKeysV2 = sendKeys{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}
)

func (h *SendMessageRequestHeader) decode(ext map[string]string, k *sendKeys) error {
	r := remoting.NewFieldReader(ext)
	h.ProducerGroup = r.String(k.producerGroup, true)
	h.Topic = r.String(k.topic, true)
	h.DefaultTopic = r.String(k.defaultTopic, true)
	h.DefaultTopicQueueNums = r.Int32(k.defaultTopicQueueNums, true)
	h.QueueID = r.Int32(k.queueID, true)
	h.SysFlag = r.Int32(k.sysFlag, true)
	h.BornTimestamp = r.Int64(k.bornTimestamp, true)
	h.Flag = r.Int32(k.flag, true)
	h.Properties = r.String(k.properties, false)
	h.ReconsumeTimes = r.Int32(k.reconsumeTimes, false)
	h.UnitMode = r.Bool(k.unitMode, false)
	h.MaxReconsumeTimes = -1
	if v := ext[k.maxReconsumeTimes]; v != "" {
		h.MaxReconsumeTimes = r.Int32(k.maxReconsumeTimes, false)
	}
	h.Batch = r.Bool(k.batch, false)
	h.BrokerName = r.String(k.brokerName, false)
	return r.Err()
}

// SendMessageResponseHeader answers the send requests (docs/protocol.md §4.1): the stored message's
// offset message id (comma-joined ids for a batch), its queue and queue offset (the first
// message's for a batch), and the broker's region and trace switch.
type SendMessageResponseHeader struct {
	MsgID       string
	QueueID     int32
	QueueOffset int64
	// TransactionID is left out when empty (Java leaves out the null field).
	TransactionID string
	// MsgRegion ("MSG_REGION") is left out when empty; brokers send "DefaultRegion".
	MsgRegion string
	// TraceOn ("TRACE_ON") is always written.
	TraceOn bool
}

// Encode implements remoting.Header.
func (h *SendMessageResponseHeader) Encode(ext map[string]string) {
	ext["msgId"] = h.MsgID
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt64(ext, "queueOffset", h.QueueOffset)
	putOptional(ext, "transactionId", h.TransactionID)
	putOptional(ext, "MSG_REGION", h.MsgRegion)
	remoting.PutBool(ext, "TRACE_ON", h.TraceOn)
}

// Decode implements remoting.Header. TRACE_ON is read as the Go client reads it: anything but
// empty or "false" is on.
func (h *SendMessageResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.MsgID = r.String("msgId", true)
	h.QueueID = r.Int32("queueId", true)
	h.QueueOffset = r.Int64("queueOffset", true)
	h.TransactionID = r.String("transactionId", false)
	h.MsgRegion = r.String("MSG_REGION", false)
	v := r.String("TRACE_ON", false)
	h.TraceOn = v != "" && v != "false"
	return r.Err()
}

var (
	_ remoting.Header = (*SendMessageRequestHeader)(nil)
	_ remoting.Header = (*SendMessageRequestHeaderV2)(nil)
	_ remoting.Header = (*SendMessageResponseHeader)(nil)
)
