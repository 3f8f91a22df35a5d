package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc/peer"
)

// Limits of a send, named after RocketMQ's ProxyConfig with its values.
const (
	// DefaultUserPropertyMaxNum bounds a message's user properties (userPropertyMaxNum).
	DefaultUserPropertyMaxNum = 128
	// DefaultMaxUserPropertySize bounds the bytes of a message's user properties, tag and keys
	// (maxUserPropertySize, 16 KiB).
	DefaultMaxUserPropertySize = 16 << 10
	// DefaultMaxMessageGroupSize bounds a FIFO message's group: it must be shorter
	// (maxMessageGroupSize, 64 bytes).
	DefaultMaxMessageGroupSize = 64
	// DefaultMaxDelayTime is how far ahead a delivery timestamp may lie (maxDelayTimeMills, 1 day).
	DefaultMaxDelayTime = 24 * time.Hour
	// DefaultMaxTransactionRecovery bounds a half message's orphaned transaction recovery
	// duration (maxTransactionRecoverySecond, 1 h).
	DefaultMaxTransactionRecovery = time.Hour
	// maxSendBatch bounds the messages of one SendMessage (ours; the SDKs send one at a time,
	// and the request's size is bounded by the endpoint's message limit anyway).
	maxSendBatch = 1024
)

// Properties the proxy sets that internal/message does not name.
const (
	propTraceContext  = "TRACE_CONTEXT"
	propBornHost      = "BORN_HOST"
	propBornTimestamp = "BORN_TIMESTAMP"
	keySeparator      = " " // MessageConst.KEY_SEPARATOR
)

// systemProperties are the keys RocketMQ keeps for itself (MessageConst.STRING_HASH_SET): a
// user property by one of these names is refused, as RocketMQ's proxy refuses it.
var systemProperties = map[string]bool{}

func init() {
	for _, k := range []string{
		message.PropertyTags, message.PropertyKeys, message.PropertyUniqKey, message.PropertyWaitStoreMsgOK,
		message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS, message.PropertyRetryTopic,
		message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared,
		message.PropertyProducerGroup, message.PropertyMinOffset, message.PropertyMaxOffset,
		message.PropertyBuyerID, message.PropertyOriginMessageID, message.PropertyTransferFlag,
		message.PropertyCorrectionFlag, message.PropertyReconsumeTime, message.PropertyMsgRegion,
		message.PropertyTraceSwitch, message.PropertyMaxReconsumeTimes, message.PropertyConsumeStartTimestamp,
		message.PropertyTransactionPreparedQOffset, message.PropertyTransactionCheckTimes,
		message.PropertyCheckImmunityTimeInSeconds, message.PropertyTransactionID, message.PropertyShardingKey,
		message.PropertyMessageGroup, message.PropertyCluster, message.PropertyCorrelationID,
		message.PropertyReplyToClient, message.PropertyTTL, message.PropertyArriveTime, message.PropertyMsgType,
		propTraceContext, propBornHost, propBornTimestamp,
		"INSTANCE_ID", "UNIQ_KEY", "MSG_TYPE", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_OUT_MS",
		"TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_DEL_UNIQKEY", "POP_CK",
		"POP_CK_OFFSET", "1ST_POP_TIME", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "__STARTDELIVERTIME",
		"FORWARD_TOPIC", "PUSH_REPLY_TIME",
	} {
		systemProperties[k] = true
	}
}

// outgoing is one message of a SendMessage, checked and converted.
type outgoing struct {
	id      string // the SDK's message id
	tx      bool
	group   string
	sysFlag int32
	born    int64
	retries int32
	props   string
	body    []byte
}

// SendMessage stores the request's messages on this node's broker, one SEND_MESSAGE_V2 each,
// in order, to the queue RocketMQ's proxy would pick (SendMessageActivity): a FIFO message's
// group hashed over the topic's write queues, else the next queue in turn. Each entry answers
// with the SDK's message id, the queue offset and, for a half message, the transaction id
// EndTransaction takes back.
func (s *service) SendMessage(ctx context.Context, req *apiv2.SendMessageRequest) (*apiv2.SendMessageResponse, error) {
	fail := func(st *apiv2.Status) (*apiv2.SendMessageResponse, error) {
		return &apiv2.SendMessageResponse{Status: st}, nil
	}
	c, st := s.clients.get(ctx)
	if st != nil {
		return fail(st)
	}
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return fail(status(apiv2.Code_MESSAGE_CORRUPTED, "no message to send"))
	}
	if len(msgs) > maxSendBatch {
		return fail(statusf(apiv2.Code_BAD_REQUEST, "%d messages in one request: at most %d", len(msgs), maxSendBatch))
	}
	topic, st := resourceName(msgs[0].GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return fail(st)
	}
	b := s.broker()
	if b == nil || s.opts.BrokerAddr == "" {
		return fail(status(apiv2.Code_INTERNAL_SERVER_ERROR, "this node runs no broker to send to"))
	}
	tc, ok := b.Topics().Get(topic)
	if !ok || tc.WriteQueueNums <= 0 {
		return fail(statusf(apiv2.Code_TOPIC_NOT_FOUND, "topic %s has no queues on broker %s: send through the gRPC endpoint of a node whose broker serves it", topic, b.Options().Broker.Name))
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	out := make([]outgoing, len(msgs))
	for i, m := range msgs {
		if m.GetTopic().GetName() != msgs[0].GetTopic().GetName() ||
			m.GetTopic().GetResourceNamespace() != msgs[0].GetTopic().GetResourceNamespace() {
			return fail(status(apiv2.Code_MESSAGE_CORRUPTED, "the messages of one request name different topics: send each topic's messages apart"))
		}
		o, st := s.convert(m, topic, remote)
		if st != nil {
			return fail(st)
		}
		out[i] = o
	}
	queue := int32(s.nextQ.Add(1) % uint32(tc.WriteQueueNums))
	if len(out) == 1 && out[0].group != "" {
		queue = jumpHash(int64(message.JavaStringHash(out[0].group)), tc.WriteQueueNums)
	}
	resp := &apiv2.SendMessageResponse{Entries: make([]*apiv2.SendResultEntry, 0, len(out))}
	codes := map[apiv2.Code]bool{}
	for _, o := range out {
		e := s.sendOne(ctx, c, topic, queue, b.Options().Broker.Name, o)
		resp.Entries = append(resp.Entries, e)
		codes[e.Status.Code] = true
	}
	if len(codes) > 1 {
		resp.Status = status(apiv2.Code_MULTIPLE_RESULTS, "the messages had different results: see each entry")
	} else {
		resp.Status = resp.Entries[0].Status
	}
	return resp, nil
}

// sendOne sends one message and turns the broker's answer into its entry.
func (s *service) sendOne(ctx context.Context, c *client, topic string, queue int32, brokerName string, o outgoing) *apiv2.SendResultEntry {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         topic, // the proxy's producer group is the topic (see Heartbeat)
		Topic:                 topic,
		DefaultTopic:          names.TopicAutoCreate,
		DefaultTopicQueueNums: 4,
		QueueID:               queue,
		SysFlag:               o.sysFlag,
		BornTimestamp:         o.born,
		Properties:            o.props,
		ReconsumeTimes:        o.retries,
		MaxReconsumeTimes:     -1,
		BrokerName:            brokerName,
	}
	req := remoting.NewRequest(remoting.SendMessageV2, remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&h)), o.body)
	resp, err := s.invoke(ctx, c, req)
	if err != nil {
		return &apiv2.SendResultEntry{Status: fromError("send", err)}
	}
	switch resp.Code {
	case remoting.Success:
	case remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
		return &apiv2.SendResultEntry{Status: fromRemoting(resp.Code, "send message failed, sendStatus="+remoting.ResponseCodeName(resp.Code))}
	default:
		return &apiv2.SendResultEntry{Status: fromRemoting(resp.Code, resp.Remark)}
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return &apiv2.SendResultEntry{Status: statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "the broker's send answer: %v", err)}
	}
	e := &apiv2.SendResultEntry{Status: statusOK, MessageId: o.id, Offset: rh.QueueOffset,
		TransactionId: rh.TransactionID, RecallHandle: rh.RecallHandle}
	if o.tx {
		e.TransactionId = EncodeTransactionID(rh.MsgID, rh.QueueOffset)
	}
	return e
}

// EncodeTransactionID is the transaction id a half message's SendResultEntry carries: its
// offset message id (store host and CommitLog offset) and its queue offset, what
// END_TRANSACTION needs besides the message id, so the endpoint keeps no state per
// transaction (RocketMQ's proxy encodes the same facts in its own form).
func EncodeTransactionID(offsetMsgID string, queueOffset int64) string {
	return offsetMsgID + "-" + strconv.FormatInt(queueOffset, 10)
}

// DecodeTransactionID reads what EncodeTransactionID wrote.
func DecodeTransactionID(id string) (offsetMsgID string, commitLogOffset, queueOffset int64, err error) {
	msgID, q, ok := strings.Cut(id, "-")
	if !ok {
		return "", 0, 0, fmt.Errorf("transaction id %q is not one this endpoint issued", id)
	}
	_, commitLogOffset, err = message.ParseOffsetMsgID(msgID)
	if err != nil {
		return "", 0, 0, fmt.Errorf("transaction id %q: %w", id, err)
	}
	queueOffset, err = strconv.ParseInt(q, 10, 64)
	if err != nil || queueOffset < 0 {
		return "", 0, 0, fmt.Errorf("transaction id %q: bad queue offset", id)
	}
	return msgID, commitLogOffset, queueOffset, nil
}

// convert checks one message as RocketMQ's proxy does (SendMessageActivity.buildMessage) and
// turns its system properties into the broker's properties.
func (s *service) convert(m *apiv2.Message, topic, remote string) (outgoing, *apiv2.Status) {
	sp := m.GetSystemProperties()
	o := outgoing{id: sp.GetMessageId(), body: m.GetBody()}
	if len(o.body) == 0 {
		return o, status(apiv2.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	}
	if b := s.broker(); b != nil {
		if max := b.Options().Limits.MaxMessageBytes; max > 0 && len(o.body) > max {
			return o, statusf(apiv2.Code_MESSAGE_BODY_TOO_LARGE, "message body of %d bytes: the max is %d", len(o.body), max)
		}
	}
	user := m.GetUserProperties()
	if len(user) > DefaultUserPropertyMaxNum {
		return o, statusf(apiv2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "%d user properties: the max is %d", len(user), DefaultUserPropertyMaxNum)
	}
	props := make(map[string]string, len(user)+12)
	size := 0
	for k, v := range user {
		switch {
		case systemProperties[k]:
			return o, statusf(apiv2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property is used by system: %s", k)
		case k == "" || hasControl(k):
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot be empty or contain control character")
		case hasControl(v):
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character")
		}
		size += len(k) + len(v)
		props[k] = v
	}
	if sp.Tag != nil {
		tag := sp.GetTag()
		switch {
		case tag != "" && strings.TrimSpace(tag) == "":
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
		case strings.Contains(tag, "|"):
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
		case hasControl(tag):
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
		}
		if tag != "" {
			props[message.PropertyTags] = tag
		}
		size += len(tag)
	}
	for _, k := range sp.GetKeys() {
		if k != "" && (strings.TrimSpace(k) == "" || hasControl(k)) {
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_KEY, "key cannot be whitespace only or contain control character")
		}
		size += len(k)
	}
	if len(sp.GetKeys()) > 0 {
		props[message.PropertyKeys] = strings.Join(sp.GetKeys(), keySeparator)
	}
	if size > DefaultMaxUserPropertySize {
		return o, statusf(apiv2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "user properties, tag and keys of %d bytes: the max is %d", size, DefaultMaxUserPropertySize)
	}
	if strings.TrimSpace(o.id) == "" || hasControl(o.id) || len(o.id) > 128 {
		return o, status(apiv2.Code_ILLEGAL_MESSAGE_ID, "message id cannot be empty, longer than 128 bytes or contain control character")
	}
	props[message.PropertyUniqKey] = o.id
	if sp.GetBodyEncoding() == apiv2.Encoding_GZIP {
		o.sysFlag |= message.FlagCompressed
	}
	if sp.GetMessageType() == apiv2.MessageType_TRANSACTION {
		o.tx = true
		o.sysFlag |= message.TransactionPreparedType
		props[message.PropertyTransactionPrepared] = "true"
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil {
			secs := d.GetSeconds()
			if !d.IsValid() || secs < 0 || time.Duration(secs)*time.Second > DefaultMaxTransactionRecovery {
				return o, statusf(apiv2.Code_BAD_REQUEST, "the max transaction recovery time of message is too large, max is %d s", int(DefaultMaxTransactionRecovery.Seconds()))
			}
			props[message.PropertyCheckImmunityTimeInSeconds] = strconv.FormatInt(secs, 10)
		}
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil {
		if !ts.IsValid() {
			return o, status(apiv2.Code_ILLEGAL_DELIVERY_TIME, "delivery timestamp is not a valid time")
		}
		at := ts.AsTime().UnixMilli()
		if time.Until(ts.AsTime()) > DefaultMaxDelayTime {
			return o, statusf(apiv2.Code_ILLEGAL_DELIVERY_TIME, "the max delay time of message is too large, max is %d ms", DefaultMaxDelayTime.Milliseconds())
		}
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(at, 10)
	}
	o.retries = sp.GetDeliveryAttempt()
	props[message.PropertyReconsumeTime] = strconv.Itoa(int(o.retries))
	props[message.PropertyProducerGroup] = topic
	if g := sp.GetMessageGroup(); g != "" {
		switch {
		case strings.TrimSpace(g) == "":
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
		case len(g) >= DefaultMaxMessageGroupSize:
			return o, statusf(apiv2.Code_ILLEGAL_MESSAGE_GROUP, "message group exceed the max size %d", DefaultMaxMessageGroupSize)
		case hasControl(g):
			return o, status(apiv2.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
		}
		o.group = g
		props[message.PropertyMessageGroup] = g
	}
	if tc := sp.GetTraceContext(); tc != "" && !hasControl(tc) {
		props[propTraceContext] = tc
	}
	born := sp.GetBornHost()
	if strings.TrimSpace(born) == "" || hasControl(born) {
		born = remote
	}
	if born != "" {
		props[propBornHost] = born
	}
	o.born = time.Now().UnixMilli()
	if ts := sp.GetBornTimestamp(); ts != nil && ts.IsValid() {
		o.born = ts.AsTime().UnixMilli()
		props[propBornTimestamp] = strconv.FormatInt(o.born, 10)
	}
	o.props = message.MarshalProperties(props)
	return o, nil
}

// hasControl reports a control character, or bytes that are not UTF-8, which would corrupt
// the properties' separators (GrpcValidator.containControlCharacter).
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// jumpHash maps key to one of n buckets as Guava's Hashing.consistentHash does (Lamping and
// Veach's jump consistent hash with its linear congruential generator), so a message group
// lands on the queue RocketMQ's proxy would pick.
func jumpHash(key int64, n int32) int32 {
	state := key
	candidate := int32(0)
	for {
		state = 2862933555777941757*state + 1
		next := float64(candidate+1) / (float64(int32(uint64(state)>>33)+1) / float64(1<<31))
		if next < 0 || next >= float64(n) {
			return candidate
		}
		candidate = int32(next)
	}
}
