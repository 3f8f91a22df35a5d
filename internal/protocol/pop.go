package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// POP consumption (RocketMQ 5.x, docs/protocol.md "POP consumption"): the broker hands out
// messages and hides them for invisibleTime; a client acknowledges each one with the receipt
// handle (ExtraInfo) it got in the message's POP_CK property, or the message comes back.

// PropertyPopCK is the message property (MessageConst.PROPERTY_POP_CK) a popped message carries:
// its receipt handle, ExtraInfo.String().
const PropertyPopCK = "POP_CK"

// PopInitMode values (ConsumeInitMode): where a group with no pop offset in a queue starts.
const (
	PopInitModeMin int32 = 0 // the queue's first message
	PopInitModeMax int32 = 1 // the queue's last message
)

// PopMessageRequestHeader is the header of POP_MESSAGE (200050).
type PopMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	// QueueID -1 pops from any readable queue of the topic.
	QueueID    int32 `ext:"queueId,required"`
	MaxMsgNums int32 `ext:"maxMsgNums,required"`
	// InvisibleTime is how long, in ms, the popped messages stay hidden unless acknowledged.
	InvisibleTime int64 `ext:"invisibleTime,required"`
	// PollTime is how long, in ms, the broker may hold the request when nothing is there.
	PollTime int64 `ext:"pollTime,required"`
	// BornTime is the client's clock (ms) when it sent the request.
	BornTime int64  `ext:"bornTime,required"`
	InitMode int32  `ext:"initMode,required"`
	ExpType  string `ext:"expType,omitempty"` // "TAG" or "SQL92"; empty means TAG
	Exp      string `ext:"exp,omitempty"`
	// Order asks for FIFO hand-out: one batch of a queue at a time.
	Order      bool   `ext:"order,omitempty"`
	AttemptID  string `ext:"attemptId,omitempty"`
	BrokerName string `ext:"bname,omitempty"`
}

// PopMessageResponseHeader answers POP_MESSAGE. The *Info strings are ";"-joined entries of
// space-separated fields, as ExtraInfoUtil builds them (see BuildOffsetInfo).
type PopMessageResponseHeader struct {
	PopTime         int64  `ext:"popTime,required"`
	InvisibleTime   int64  `ext:"invisibleTime,required"`
	ReviveQid       int32  `ext:"reviveQid,required"`
	RestNum         int64  `ext:"restNum,required"`
	StartOffsetInfo string `ext:"startOffsetInfo,omitempty"`
	MsgOffsetInfo   string `ext:"msgOffsetInfo,omitempty"`
	OrderCountInfo  string `ext:"orderCountInfo,omitempty"`
}

// AckMessageRequestHeader is the header of ACK_MESSAGE (200051).
type AckMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	// ExtraInfo is the message's receipt handle (its POP_CK property).
	ExtraInfo string `ext:"extraInfo,required"`
	// Offset is the acknowledged message's queue offset.
	Offset     int64  `ext:"offset,required"`
	BrokerName string `ext:"bname,omitempty"`
}

// ChangeInvisibleTimeRequestHeader is the header of CHANGE_MESSAGE_INVISIBLETIME (200053): hide
// the message for InvisibleTime ms from now. The old handle stops working; the answer carries
// the fields of the new one.
type ChangeInvisibleTimeRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	ExtraInfo     string `ext:"extraInfo,required"`
	Offset        int64  `ext:"offset,required"`
	InvisibleTime int64  `ext:"invisibleTime,required"`
	BrokerName    string `ext:"bname,omitempty"`
}

// ChangeInvisibleTimeResponseHeader answers CHANGE_MESSAGE_INVISIBLETIME.
type ChangeInvisibleTimeResponseHeader struct {
	PopTime       int64 `ext:"popTime,required"`
	InvisibleTime int64 `ext:"invisibleTime,required"`
	ReviveQid     int32 `ext:"reviveQid,required"`
}

// PeekMessageRequestHeader is the header of PEEK_MESSAGE (200052): read without hiding or
// moving any offset.
type PeekMessageRequestHeader struct {
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	MaxMsgNums    int32  `ext:"maxMsgNums,required"`
	ConsumerGroup string `ext:"consumerGroup,required"`
	BrokerName    string `ext:"bname,omitempty"`
}

// NotificationRequestHeader is the header of NOTIFICATION (200054): wait up to PollTime ms for
// a message the group could pop, without popping it.
type NotificationRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	PollTime      int64  `ext:"pollTime,required"`
	BornTime      int64  `ext:"bornTime,required"`
	Order         bool   `ext:"order,omitempty"`
	AttemptID     string `ext:"attemptId,omitempty"`
	BrokerName    string `ext:"bname,omitempty"`
}

// NotificationResponseHeader answers NOTIFICATION.
type NotificationResponseHeader struct {
	HasMsg      bool `ext:"hasMsg,required"`
	PollingFull bool `ext:"pollingFull"`
}

// PollingInfoRequestHeader is the header of POLLING_INFO (200055): how many pops of the group
// the broker holds parked on the queue. Its keys are those of QUERY_CONSUMER_OFFSET.
type PollingInfoRequestHeader = QueryConsumerOffsetRequestHeader

// PollingInfoResponseHeader answers POLLING_INFO.
type PollingInfoResponseHeader struct {
	PollingNum int32 `ext:"pollingNum,required"`
}

// BatchAckMessageRequestBody is the JSON body of BATCH_ACK_MESSAGE (200151).
type BatchAckMessageRequestBody struct {
	BrokerName string     `json:"brokerName,omitempty"`
	Acks       []BatchAck `json:"acks"`
}

// BatchAck acknowledges several messages of one pop of one queue: bit i of BitSet acks the
// message at StartOffset+i. Keys are 5.x's short JSON names.
type BatchAck struct {
	ConsumerGroup string `json:"c"`
	Topic         string `json:"t"`
	// Retry is ExtraInfo.Retry: "0" the topic itself, "1" the group's V1 pop retry topic.
	Retry         string `json:"r"`
	StartOffset   int64  `json:"so"`
	QueueID       int32  `json:"q"`
	ReviveQueueID int32  `json:"rq"`
	PopTime       int64  `json:"pt"`
	InvisibleTime int64  `json:"it"`
	// BitSet is java.util.BitSet.toByteArray (bit i is byte i/8, bit i%8, low bit first),
	// written as base64 as fastjson writes a byte array.
	BitSet []byte `json:"b"`
}

// BitSetGet reports bit i of a java.util.BitSet byte form.
func BitSetGet(b []byte, i int) bool {
	if i < 0 || i/8 >= len(b) {
		return false
	}
	return b[i/8]&(1<<(uint(i)%8)) != 0
}

// BitSetOf builds java.util.BitSet.toByteArray for the given bit indexes (none negative).
func BitSetOf(bits ...int) []byte {
	n := 0
	for _, i := range bits {
		if i+1 > n {
			n = i + 1
		}
	}
	b := make([]byte, (n+7)/8)
	for _, i := range bits {
		b[i/8] |= 1 << (uint(i) % 8)
	}
	return b
}

// DecodeBatchAckBody parses a BATCH_ACK_MESSAGE body.
func DecodeBatchAckBody(body []byte) (*BatchAckMessageRequestBody, error) {
	var b BatchAckMessageRequestBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("batch ack body: %w", err)
	}
	return &b, nil
}

// Encode returns the JSON body.
func (b *BatchAckMessageRequestBody) Encode() []byte {
	out, _ := json.Marshal(b) // plain strings, numbers and bytes: cannot fail
	return out
}

// Retry markers of ExtraInfo.Retry (ExtraInfoUtil NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2).
const (
	PopRetryNone = "0"
	PopRetryV1   = "1"
	PopRetryV2   = "2"
)

// PopRetryTopicV1 is the topic a group's popped-but-unacknowledged messages of topic go back to
// (KeyBuilder.buildPopRetryTopicV1): "%RETRY%<group>_<topic>".
func PopRetryTopicV1(topic, group string) string { return "%RETRY%" + group + "_" + topic }

// PopRetryMarker is the Retry marker for a topic popped from: "1" for a retry topic.
func PopRetryMarker(topic string) string {
	if strings.HasPrefix(topic, "%RETRY%") {
		return PopRetryV1
	}
	return PopRetryNone
}

// ExtraInfo is a popped message's receipt handle, written as its POP_CK property and sent back
// in ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME: eight fields separated by one space
// (MessageConst.KEY_SEPARATOR), "ckQueueOffset popTime invisibleTime reviveQid retry brokerName
// queueId queueOffset".
type ExtraInfo struct {
	// CkQueueOffset is the first queue offset of the pop batch the message came in.
	CkQueueOffset int64
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int32
	Retry         string // PopRetryNone or PopRetryV1 (or PopRetryV2)
	BrokerName    string
	QueueID       int32
	QueueOffset   int64
}

// String writes the handle.
func (e ExtraInfo) String() string {
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, e.CkQueueOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.PopTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.InvisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.ReviveQid), 10)
	b = append(b, ' ')
	b = append(b, e.Retry...)
	b = append(b, ' ')
	b = append(b, e.BrokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.QueueID), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.QueueOffset, 10)
	return string(b)
}

// MaxExtraInfoLen bounds a handle: eight fields, the broker name at most 127 bytes (its name
// rule) and the numbers at most 20 digits each.
const MaxExtraInfoLen = 300

// extraInfoFields is how many space-separated fields a receipt handle has.
const extraInfoFields = 8

// splitExtraInfo puts s's space-separated fields into f, as many as fit, and returns how many
// s has, without allocating (an ack parses one handle per message).
func splitExtraInfo(s string, f *[extraInfoFields]string) int {
	n := 0
	for {
		field, rest, more := strings.Cut(s, " ")
		if n < len(f) {
			f[n] = field
		}
		n++
		if !more {
			return n
		}
		s = rest
	}
}

// ExtraInfoField returns field i (0-based) of receipt handle s, and false when s is longer
// than MaxExtraInfoLen or has no such field: a cheap look at one field before the whole handle
// is parsed.
func ExtraInfoField(s string, i int) (string, bool) {
	if len(s) > MaxExtraInfoLen || i < 0 || i >= extraInfoFields {
		return "", false
	}
	var f [extraInfoFields]string
	if splitExtraInfo(s, &f) <= i {
		return "", false
	}
	return f[i], true
}

// ParseExtraInfo reads a receipt handle strictly: exactly eight non-empty fields separated by
// single spaces, numbers in decimal and none negative, retry "0", "1" or "2". The error names
// the field that is wrong.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	var e ExtraInfo
	if len(s) > MaxExtraInfoLen {
		return e, fmt.Errorf("receipt handle is %d bytes, over %d", len(s), MaxExtraInfoLen)
	}
	var f [extraInfoFields]string
	n := splitExtraInfo(s, &f)
	if n != extraInfoFields {
		return e, fmt.Errorf("receipt handle has %d space-separated fields, want 8 (ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId queueOffset)", n)
	}
	num := func(i int, name string, bits int) (int64, error) {
		if f[i] == "" || f[i][0] == '+' || f[i][0] == '-' {
			return 0, fmt.Errorf("receipt handle field %s %q is not a non-negative decimal", name, f[i])
		}
		v, err := strconv.ParseInt(f[i], 10, bits)
		if err != nil {
			return 0, fmt.Errorf("receipt handle field %s %q is not a non-negative decimal", name, f[i])
		}
		return v, nil
	}
	var err error
	if e.CkQueueOffset, err = num(0, "ckQueueOffset", 64); err != nil {
		return e, err
	}
	if e.PopTime, err = num(1, "popTime", 64); err != nil {
		return e, err
	}
	if e.InvisibleTime, err = num(2, "invisibleTime", 64); err != nil {
		return e, err
	}
	v, err := num(3, "reviveQid", 32)
	if err != nil {
		return e, err
	}
	e.ReviveQid = int32(v)
	switch f[4] {
	case PopRetryNone, PopRetryV1, PopRetryV2:
		e.Retry = f[4]
	default:
		return e, fmt.Errorf("receipt handle field retry %q is not 0, 1 or 2", f[4])
	}
	if f[5] == "" {
		return e, fmt.Errorf("receipt handle field brokerName is empty")
	}
	e.BrokerName = f[5]
	if v, err = num(6, "queueId", 32); err != nil {
		return e, err
	}
	e.QueueID = int32(v)
	if e.QueueOffset, err = num(7, "queueOffset", 64); err != nil {
		return e, err
	}
	return e, nil
}

// RealTopic is the topic the handle's message was popped from: topic itself, or the group's pop
// retry topic when Retry says so.
func (e ExtraInfo) RealTopic(topic, group string) string {
	switch e.Retry {
	case PopRetryV1:
		return PopRetryTopicV1(topic, group)
	case PopRetryV2:
		return "%RETRY%" + group + "+" + topic
	}
	return topic
}

// AppendOffsetInfo appends one ";"-separated entry "retry queueId value" to an *Info string of
// PopMessageResponseHeader (ExtraInfoUtil.buildStartOffsetInfo and friends).
func AppendOffsetInfo(info, topic string, queueID int32, value string) string {
	return appendInfoEntry(info, PopRetryMarker(topic)+" "+strconv.FormatInt(int64(queueID), 10)+" "+value)
}

// AppendQueueOffsetCount appends to an orderCountInfo one message's consumed count, keyed by
// its queue and offset as ExtraInfoUtil.buildQueueOffsetOrderCountInfo writes it:
// "retry qo<queueId>%<queueOffset> count" (the key takes the place of the queue id field).
func AppendQueueOffsetCount(info, topic string, queueID int32, queueOffset int64, count int) string {
	return appendInfoEntry(info, PopRetryMarker(topic)+" qo"+strconv.FormatInt(int64(queueID), 10)+"%"+
		strconv.FormatInt(queueOffset, 10)+" "+strconv.Itoa(count))
}

func appendInfoEntry(info, e string) string {
	if info == "" {
		return e
	}
	return info + ";" + e
}
