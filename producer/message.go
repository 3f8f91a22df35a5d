package producer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/rebalance"
)

// Message is what a producer sends. The producer reads it during the send call only (and, for
// SendAsync, until the call returns), never keeps it and never modifies it, so one Message may
// be sent again or from several goroutines.
type Message struct {
	// Topic is the destination; the producer's namespace, if any, is prefixed on the wire.
	Topic string
	// Body is the payload: non-empty, at most the producer's max message size.
	Body []byte
	// Tags is the single tag consumers filter on (property TAGS).
	Tags string
	// Keys index the message for queries (property KEYS, joined by spaces).
	Keys []string
	// DelayTimeLevel, when > 0, delays delivery by the broker's level (1 = 1 s ... 18 = 2 h).
	DelayTimeLevel int
	// Flag is stored verbatim with the message.
	Flag int32
	// MessageGroup, when set, makes m a FIFO message of that group (RocketMQ 5's message group,
	// property __SHARDINGKEY): SendSync, SendAsync, SendOneway and SendBatch send it to the
	// queue the group hashes to, as 5.x's clients pick it, so one group's messages keep their
	// order in one queue. At most MaxMessageGroupLength bytes; not with a delay or a delivery
	// time. SendToQueue and SendOrdered send to the queue they name, group or not.
	MessageGroup string
	// Properties are user properties. Names and values must not contain 0x01 or 0x02; the
	// fields above override TAGS, KEYS, DELAY and __SHARDINGKEY given here. A UNIQ_KEY given
	// here is kept.
	Properties map[string]string
}

// NewMessage returns a message for topic with body.
func NewMessage(topic string, body []byte) *Message { return &Message{Topic: topic, Body: body} }

// WithTags sets Tags and returns m.
func (m *Message) WithTags(tags string) *Message { m.Tags = tags; return m }

// WithKeys sets Keys and returns m.
func (m *Message) WithKeys(keys ...string) *Message { m.Keys = keys; return m }

// WithDelayTimeLevel sets DelayTimeLevel and returns m.
func (m *Message) WithDelayTimeLevel(level int) *Message { m.DelayTimeLevel = level; return m }

// WithMessageGroup sets MessageGroup and returns m.
func (m *Message) WithMessageGroup(group string) *Message { m.MessageGroup = group; return m }

// WithProperty sets one user property and returns m.
func (m *Message) WithProperty(name, value string) *Message {
	if m.Properties == nil {
		m.Properties = make(map[string]string, 4)
	}
	m.Properties[name] = value
	return m
}

// WithShardingKey sets the SHARDING_KEY property (what HashSelector hashes when no argument is
// given) and returns m.
func (m *Message) WithShardingKey(key string) *Message {
	return m.WithProperty(message.PropertyShardingKey, key)
}

// Property returns a user property ("" when absent).
func (m *Message) Property(name string) string { return m.Properties[name] }

// String describes the message without its body.
func (m *Message) String() string {
	return fmt.Sprintf("Message{Topic: %s, Tags: %s, Keys: %v, BodyLen: %d}", m.Topic, m.Tags, m.Keys, len(m.Body))
}

// appendProperties appends m's encoded properties (docs/protocol.md §9.3) with uniqKey (when not
// empty and the user gave none) to sb.
func (m *Message) appendProperties(sb *strings.Builder, uniqKey string) {
	put := func(k, v string) {
		sb.WriteString(k)
		sb.WriteByte(message.NameValueSeparator)
		sb.WriteString(v)
		sb.WriteByte(message.PropertySeparator)
	}
	for k, v := range m.Properties {
		switch {
		case k == message.PropertyTags && m.Tags != "",
			k == message.PropertyKeys && len(m.Keys) > 0,
			k == message.PropertyDelayTimeLevel && m.DelayTimeLevel > 0,
			k == message.PropertyMessageGroup && m.MessageGroup != "":
			continue
		case k == message.PropertyUniqKey:
			uniqKey = ""
		}
		put(k, v)
	}
	if m.Tags != "" {
		put(message.PropertyTags, m.Tags)
	}
	if len(m.Keys) > 0 {
		put(message.PropertyKeys, strings.Join(m.Keys, " "))
	}
	if m.DelayTimeLevel > 0 {
		put(message.PropertyDelayTimeLevel, strconv.Itoa(m.DelayTimeLevel))
	}
	if m.MessageGroup != "" {
		put(message.PropertyMessageGroup, m.MessageGroup)
	}
	if uniqKey != "" {
		put(message.PropertyUniqKey, uniqKey)
	}
}

// uniqKeyOf returns the UNIQ_KEY the user set, or "".
func (m *Message) uniqKeyOf() string { return m.Properties[message.PropertyUniqKey] }

// MessageQueue names one queue of a topic on a broker; it is rebalance.MessageQueue, the module's
// one queue type, so a queue a producer sent to compares equal to the one a consumer reads.
type MessageQueue = rebalance.MessageQueue

// SendStatus is the outcome of a successful send.
type SendStatus int

// Send statuses. All four mean the broker stored the message; the last three say a
// durability step (flush, replication) did not finish in time.
const (
	SendOK SendStatus = iota
	SendFlushDiskTimeout
	SendFlushSlaveTimeout
	SendSlaveNotAvailable
)

// String returns RocketMQ's name of the status.
func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SendStatus(" + strconv.Itoa(int(s)) + ")"
}

// SendResult describes a stored message (for a batch: all of them).
type SendResult struct {
	Status SendStatus
	// MsgID is the client-generated unique id (UNIQ_KEY); for a batch the ids of its messages
	// joined by commas.
	MsgID string
	// OffsetMsgID is the broker's id (store host + CommitLog offset); comma-joined for a batch.
	OffsetMsgID string
	// Queue is where the message went (topic without the namespace).
	Queue MessageQueue
	// QueueOffset is the message's offset in Queue (the first message's for a batch).
	QueueOffset   int64
	RegionID      string
	TransactionID string
	TraceOn       bool
	// Attempts is how many brokers were tried (1 when the first one stored it).
	Attempts int
}

// String summarizes the result.
func (r *SendResult) String() string {
	return fmt.Sprintf("SendResult{Status: %s, MsgID: %s, OffsetMsgID: %s, Queue: %s, QueueOffset: %d, Attempts: %d}",
		r.Status, r.MsgID, r.OffsetMsgID, r.Queue, r.QueueOffset, r.Attempts)
}

// propertyTimerDelayMS is RocketMQ 5's MessageConst.PROPERTY_TIMER_DELAY_MS.
const propertyTimerDelayMS = "TIMER_DELAY_MS"

// WithDeliverTime has the broker deliver m at t, to the millisecond, never earlier (RocketMQ 5
// timer message, property TIMER_DELIVER_MS; the broker's precision bounds how much later).
// A time in the past delivers at once. Returns m.
func (m *Message) WithDeliverTime(t time.Time) *Message {
	return m.WithProperty(message.PropertyTimerDeliverMS, strconv.FormatInt(t.UnixMilli(), 10))
}

// WithDeliverAfter has the broker deliver m d after it stores it (property TIMER_DELAY_MS,
// counted on the broker's clock, so a skewed producer clock does not matter). Returns m.
func (m *Message) WithDeliverAfter(d time.Duration) *Message {
	return m.WithProperty(propertyTimerDelayMS, strconv.FormatInt(d.Milliseconds(), 10))
}
