package consumer

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/rebalance"
)

// MessageQueue names one queue of a topic on one broker name. It is rebalance.MessageQueue, so
// strategies allocate the same values the consumer pulls from.
type MessageQueue = rebalance.MessageQueue

// maxInflatedBody bounds a compressed body once inflated, so a zlib bomb costs little. Bodies
// are at most 4 MiB before compression; a larger result keeps the raw bytes.
const maxInflatedBody = 64 << 20

// Message is a message as a listener receives it: a decoded stored record (docs/protocol.md §9.1).
//
// A Message handed to a listener belongs to the consumer until the listener returns; the
// listener may read every field but must not keep or modify Properties afterwards. Body is the
// inflated body when the record was compressed (sysFlag bit 0); if inflating fails, Body holds
// the raw bytes and Compressed stays true.
type Message struct {
	// Topic is the topic the application subscribed to. A message redelivered from the
	// group's retry topic shows its original topic (the RETRY_TOPIC property); Queue still
	// names the retry queue it was pulled from.
	Topic string
	// Tags is the TAGS property ("" when absent).
	Tags string
	// Keys are the KEYS property split on spaces (nil when absent).
	Keys []string
	// Properties holds every property of the record, plus MIN_OFFSET and MAX_OFFSET of the pull
	// that fetched it and CONSUME_START_TIME, as the official client adds them.
	Properties map[string]string
	Body       []byte
	// Compressed reports that Body is still compressed because inflating it failed.
	Compressed bool
	Flag       int32
	SysFlag    int32

	// Queue is the queue the message was pulled from, and QueueOffset its logical offset there.
	Queue       MessageQueue
	QueueOffset int64
	// MsgID is the UNIQ_KEY property, else OffsetMsgID.
	MsgID string
	// OffsetMsgID is derived from the store host and CommitLogOffset (docs/protocol.md §9.5).
	OffsetMsgID     string
	CommitLogOffset int64
	ReconsumeTimes  int32
	BornTime        time.Time
	BornHost        netip.AddrPort
	StoreTime       time.Time
	StoreHost       netip.AddrPort
	StoreSize       int32
	BodyCRC         int32
	// PreparedTransactionOffset is the record's prepared transaction offset.
	PreparedTransactionOffset int64

	// consumeStart is when a consume service last handed the message to the listener (unix
	// ms, 0 = never); the expiry scan reads it without touching Properties.
	consumeStart atomic.Int64
}

// Property returns one property ("" when absent).
func (m *Message) Property(key string) string { return m.Properties[key] }

// String describes the message for logs.
func (m *Message) String() string {
	return fmt.Sprintf("Message[topic=%s, queue=%s/%d, offset=%d, msgId=%s, tags=%s, reconsume=%d]",
		m.Topic, m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset, m.MsgID, m.Tags, m.ReconsumeTimes)
}

// decodeMessages decodes a pull body (records back to back) fetched from mq. Body slices view
// body, which the caller hands over. A record that does not decode ends the walk with an
// error; the records before it are returned.
//
// The consume path's garbage is counted in objects, so a pull answer's messages cost a few
// allocations whatever their number: the Messages share one array, their properties and
// offset message ids one string their fields and map entries slice, and each gets one map
// sized for the properties the consumer adds (MIN_OFFSET, MAX_OFFSET, CONSUME_START_TIME).
// Messages of the queue's topic share mq.Topic. A Message a listener keeps keeps its answer's
// array and string alive, no more than its Body already kept of the answer.
func decodeMessages(body []byte, mq MessageQueue) ([]*Message, error) {
	var stack [32]message.Record // a default pull batch: no allocation for the walk
	recs := stack[:0]
	var err error
	for len(body) > 0 {
		var r message.Record
		n, derr := message.DecodeRecord(body, &r, false)
		if derr != nil {
			err = fmt.Errorf("consumer: record %d of pull from %s: %w", len(recs), mq, derr)
			break
		}
		recs = append(recs, r)
		body = body[n:]
	}
	if len(recs) == 0 {
		return nil, err
	}
	textLen := 0
	for i := range recs {
		textLen += len(recs[i].Properties) + message.OffsetMsgIDLen(recs[i].StoreHost)
	}
	var sb strings.Builder
	sb.Grow(textLen)
	var id [56]byte
	for i := range recs {
		sb.Write(recs[i].Properties)
		sb.Write(message.AppendOffsetMsgID(id[:0], recs[i].StoreHost, recs[i].PhysicalOffset))
	}
	text := sb.String()
	slab := make([]Message, len(recs))
	msgs := make([]*Message, len(recs))
	topic := mq.Topic
	for i := range recs {
		r := &recs[i]
		if string(r.Topic) != topic {
			topic = string(r.Topic)
		}
		props, idLen := len(r.Properties), message.OffsetMsgIDLen(r.StoreHost)
		fillMessage(&slab[i], r, mq.BrokerName, topic, text[:props], text[props:props+idLen])
		text = text[props+idLen:]
		msgs[i] = &slab[i]
	}
	return msgs, err
}

// fromRecord converts one decoded record. The queue's broker name comes from mq; its topic and
// queue id from the record.
func fromRecord(r *message.Record, mq MessageQueue) *Message {
	m := new(Message)
	fillMessage(m, r, mq.BrokerName, string(r.Topic), string(r.Properties),
		message.OffsetMsgID(r.StoreHost, r.PhysicalOffset))
	return m
}

// propertiesAdded is how many properties the consumer adds to a pulled message's: MIN_OFFSET,
// MAX_OFFSET and CONSUME_START_TIME.
const propertiesAdded = 3

// fillMessage sets m from r, whose topic (as a string), properties and offset message id the
// caller gives, so that it can share their memory.
func fillMessage(m *Message, r *message.Record, brokerName, topic, props, offsetMsgID string) {
	m.Topic = topic
	m.Properties = message.UnmarshalPropertiesString(props, propertiesAdded)
	m.Body = r.Body
	m.Flag = r.Flag
	m.SysFlag = r.SysFlag
	m.Queue = MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: int(r.QueueID)}
	m.QueueOffset = r.QueueOffset
	m.CommitLogOffset = r.PhysicalOffset
	m.ReconsumeTimes = r.ReconsumeTimes
	m.BornTime = time.UnixMilli(r.BornTimestamp)
	m.BornHost = r.BornHost
	m.StoreTime = time.UnixMilli(r.StoreTimestamp)
	m.StoreHost = r.StoreHost
	m.StoreSize = r.TotalSize
	m.BodyCRC = r.BodyCRC
	m.PreparedTransactionOffset = r.PreparedTransactionOffset
	if r.SysFlag&message.FlagCompressed != 0 {
		if b, err := inflate(r.Body); err == nil {
			m.Body = b
		} else {
			m.Compressed = true
		}
	}
	m.Tags = m.Properties[message.PropertyTags]
	if k := m.Properties[message.PropertyKeys]; k != "" {
		m.Keys = strings.Fields(k)
	}
	m.OffsetMsgID = offsetMsgID
	m.MsgID = m.Properties[message.PropertyUniqKey]
	if m.MsgID == "" {
		m.MsgID = m.OffsetMsgID
	}
}

// inflate decompresses a zlib body, refusing results larger than maxInflatedBody.
func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflatedBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxInflatedBody {
		return nil, fmt.Errorf("consumer: inflated body exceeds %d bytes", maxInflatedBody)
	}
	return out, nil
}

// restoreRetryTopic shows a message pulled from the group's retry topic under its original
// topic, as the official client's resetRetryAndNamespace does.
func restoreRetryTopic(m *Message, retryTopic string) {
	if m.Queue.Topic != retryTopic {
		return
	}
	if t := m.Properties[message.PropertyRetryTopic]; t != "" {
		m.Topic = t
	}
}

// markConsumeStart records when the listener got msgs (property CONSUME_START_TIME, as the
// official client sets it, and the field the expiry scan reads). The messages of one listener
// call share the time's string, and so do the calls of one goroutine within a millisecond
// when it keeps a stamp (nil: none).
func markConsumeStart(msgs []*Message, now time.Time, stamp *consumeStamp) {
	if stamp == nil {
		stamp = new(consumeStamp)
	}
	ms, s := stamp.at(now)
	for _, m := range msgs {
		m.Properties[message.PropertyConsumeStartTimestamp] = s
		m.consumeStart.Store(ms)
	}
}

// consumeStamp is a CONSUME_START_TIME value and the millisecond it was formatted for. A
// consume worker keeps one: at thousands of listener calls a second most share a millisecond,
// and so one string, where each took an allocation.
type consumeStamp struct {
	ms int64
	s  string
}

// at returns now in unix milliseconds and as the property's decimal string.
func (c *consumeStamp) at(now time.Time) (int64, string) {
	if ms := now.UnixMilli(); c.s == "" || c.ms != ms {
		c.ms, c.s = ms, strconv.FormatInt(ms, 10)
	}
	return c.ms, c.s
}

// RetryTopic is the retry topic of a consumer group, %RETRY%<group> (docs/protocol.md §10.2).
func RetryTopic(group string) string { return names.RetryTopic(group) }

// DLQTopic is the dead-letter topic of a consumer group, %DLQ%<group>.
func DLQTopic(group string) string { return names.DLQTopic(group) }

func isRetryTopic(topic string) bool { return names.IsRetryTopic(topic) }
