package proxy

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Properties the outgoing conversion reads that internal/message does not name
// (MessageConst).
const (
	propTimerDelaySec     = "TIMER_DELAY_SEC"
	propDLQOriginTopic    = "DLQ_ORIGIN_TOPIC"
	propDLQOriginMsgID    = "DLQ_ORIGIN_MESSAGE_ID"
	maxStoredMessagesSeen = 1 << 16 // bounds a walk over one answer's records
)

// storedMessage is one message as the broker hands it out: a record of a POP_MESSAGE or
// PULL_MESSAGE answer body, or the body of a CHECK_TRANSACTION_STATE request, decoded as the
// 4.x consumer decodes it (the body left as stored: compressed stays compressed, with
// body_encoding GZIP, as RocketMQ's proxy decodes without decompressing).
type storedMessage struct {
	rec   message.Record
	props map[string]string
}

// decodeStored decodes records laid back to back. The record's byte views are copied, so the
// messages outlive body. A record that does not decode is an error naming its place: the
// broker wrote it, so it means a bug or a damaged store, not a client's mistake.
func decodeStored(body []byte) ([]storedMessage, error) {
	var out []storedMessage
	for off := 0; off < len(body); {
		if len(out) == maxStoredMessagesSeen {
			return out, fmt.Errorf("more than %d records in one answer", maxStoredMessagesSeen)
		}
		var m storedMessage
		n, err := message.DecodeRecord(body[off:], &m.rec, false)
		if err != nil {
			return out, fmt.Errorf("record %d at byte %d: %w", len(out), off, err)
		}
		off += n
		m.rec.Body = append([]byte(nil), m.rec.Body...)
		m.rec.Topic = append([]byte(nil), m.rec.Topic...)
		m.props = message.UnmarshalProperties(m.rec.Properties)
		m.rec.Properties = nil
		out = append(out, m)
	}
	return out, nil
}

// messageID is the message id the SDKs see: UNIQ_KEY, else the offset message id, as the
// proxy's MessageClientExt.getMsgId answers.
func (m *storedMessage) messageID() string {
	if id := m.props[message.PropertyUniqKey]; id != "" {
		return id
	}
	return message.OffsetMsgID(m.rec.StoreHost, m.rec.PhysicalOffset)
}

// toAPI is the message an SDK receives, with system_properties as RocketMQ's proxy builds
// them (GrpcConverter.buildMessage). topic is the topic the caller asked for, as the broker
// knows it (the proxy shows a message popped from a retry topic under the subscribed topic);
// "" keeps the record's. The receipt handle is POP_CK when the record carries one; the caller
// sets it otherwise, and the invisible duration.
func (m *storedMessage) toAPI(topic string) *apiv2.Message {
	if topic == "" {
		topic = string(m.rec.Topic)
	}
	p := m.props
	sp := &apiv2.SystemProperties{
		MessageId:      m.messageID(),
		BodyDigest:     &apiv2.Digest{Type: apiv2.DigestType_MD5, Checksum: bodyMD5(m.rec.Body)},
		BodyEncoding:   apiv2.Encoding_IDENTITY,
		MessageType:    messageType(p),
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.rec.BornTimestamp)),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.rec.StoreTimestamp)),
		QueueId:        m.rec.QueueID,
	}
	if tag, ok := p[message.PropertyTags]; ok {
		sp.Tag = &tag
	}
	if keys := p[message.PropertyKeys]; keys != "" {
		for _, k := range strings.Split(keys, keySeparator) {
			if k != "" {
				sp.Keys = append(sp.Keys, k)
			}
		}
	}
	if m.rec.SysFlag&message.FlagCompressed != 0 {
		sp.BodyEncoding = apiv2.Encoding_GZIP
	}
	// The proxy's born host is the BORN_HOST property a 5.x SDK's message carries, else the
	// record's born address without its port (MessageExt.getBornHostString).
	if h := p[propBornHost]; strings.TrimSpace(h) != "" {
		sp.BornHost = h
	} else if m.rec.BornHost.IsValid() {
		sp.BornHost = m.rec.BornHost.Addr().Unmap().String()
	}
	if m.rec.StoreHost.IsValid() {
		sp.StoreHost = m.rec.StoreHost.String()
	}
	if at, ok := deliveryTime(p); ok {
		sp.DeliveryTimestamp = timestamppb.New(at)
	}
	if g, ok := p[message.PropertyMessageGroup]; ok {
		sp.MessageGroup = &g
	}
	if ck, ok := p[protocol.PropertyPopCK]; ok {
		sp.ReceiptHandle = &ck
	}
	off := m.rec.QueueOffset
	sp.QueueOffset = &off
	attempt := m.rec.ReconsumeTimes + 1
	if m.rec.ReconsumeTimes < 0 || attempt < 0 {
		attempt = 1
	}
	sp.DeliveryAttempt = &attempt
	if tc, ok := p[propTraceContext]; ok {
		sp.TraceContext = &tc
	}
	dlqTopic, okT := p[propDLQOriginTopic]
	dlqID, okID := p[propDLQOriginMsgID]
	if okT && okID {
		sp.DeadLetterQueue = &apiv2.DeadLetterQueue{Topic: dlqTopic, MessageId: dlqID}
	}
	user := make(map[string]string, len(p))
	for k, v := range p {
		if !systemProperties[k] {
			user[k] = v
		}
	}
	return &apiv2.Message{
		Topic:            resourceOf(topic),
		UserProperties:   user,
		SystemProperties: sp,
		Body:             m.rec.Body,
	}
}

// messageType is the type the proxy reads from a stored message's properties: a half message,
// then a timed one, then one with a message group.
func messageType(p map[string]string) apiv2.MessageType {
	_, delay := p[message.PropertyDelayTimeLevel]
	_, deliver := p[message.PropertyTimerDeliverMS]
	_, delaySec := p[propTimerDelaySec]
	_, group := p[message.PropertyMessageGroup]
	switch {
	case p[message.PropertyTransactionPrepared] == "true":
		return apiv2.MessageType_TRANSACTION
	case delay || deliver || delaySec:
		return apiv2.MessageType_DELAY
	case group:
		return apiv2.MessageType_FIFO
	}
	return apiv2.MessageType_NORMAL
}

// deliveryTime is a timed message's delivery time: now plus TIMER_DELAY_SEC, else
// TIMER_DELIVER_MS, as the proxy reads them. A value that is not a number is left out (the
// proxy would fail the whole answer on it).
func deliveryTime(p map[string]string) (time.Time, bool) {
	if s, ok := p[propTimerDelaySec]; ok {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 || sec > int64(math.MaxInt64/time.Second) {
			return time.Time{}, false
		}
		return time.Now().Add(time.Duration(sec) * time.Second), true
	}
	if s, ok := p[message.PropertyTimerDeliverMS]; ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}

// bodyMD5 is the body digest the SDKs check: MD5 in uppercase hex (BinaryUtil.generateMd5).
func bodyMD5(body []byte) string {
	sum := md5.Sum(body)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// resourceOf splits a name as the broker knows it into the SDK's namespace and name, as
// NamespaceUtil does: "ns%name" is namespace ns; a retry or dead-letter prefix stays on the
// name and system topics have none.
func resourceOf(name string) *apiv2.Resource {
	bare := name
	prefix := ""
	for _, p := range []string{names.RetryPrefix, names.DLQPrefix} {
		if strings.HasPrefix(name, p) {
			prefix, bare = p, name[len(p):]
			break
		}
	}
	ns, rest, ok := strings.Cut(bare, names.NamespaceSeparator)
	if !ok || ns == "" || names.Reserved(name) {
		return &apiv2.Resource{Name: name}
	}
	return &apiv2.Resource{ResourceNamespace: ns, Name: prefix + rest}
}
