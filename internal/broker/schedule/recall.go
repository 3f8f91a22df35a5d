package schedule

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// RECALL_MESSAGE (RocketMQ 5's RecallMessageProcessor): a producer takes back a timer message
// before its time with the recall handle its send was answered. The broker stores a deletion
// marker — a timer message for the same time whose TIMER_DEL_UNIQKEY names the message — and
// the timer service, finding it in the timer queue, does not deliver the message (timer.go).

// recallTag is the tag of a deletion marker (RecallMessageProcessor.RECALL_MESSAGE_TAG).
const recallTag = "_RECALL_TAG_"

// maxRecallMsgIDBytes bounds the message id a handle may carry (ours): a UNIQ_KEY is 32 hex
// digits; the id becomes a property, so it may hold no separator either.
const maxRecallMsgIDBytes = 128

// Answers of RECALL_MESSAGE, RocketMQ 5's remarks.
const (
	recallForbidden      = "recall failed, operation is forbidden"
	recallNotAvailable   = "recall failed, broker service not available"
	recallInvalidHandle  = "recall handle is invalid"
	recallTopicMismatch  = "recall failed, topic not match"
	recallBadTimestamp   = "recall failed, timestamp invalid"
	recallExecuteFailure = "recall failed, execute error"
)

// recallHandle is a decoded recall handle, version 1.
type recallHandle struct{ topic, brokerName, timestamp, msgID string }

// RecallHandle is the recall handle of m, a single message stored as a timer message (RocketMQ
// 5's SendMessageProcessor.attachRecallHandle): "v1 <real topic> <broker name> <TIMER_OUT_MS +
// 1> <UNIQ_KEY>", the +1 so the deletion it asks for lands no earlier than the message; "" for a
// retry, which is not the producer's to recall, and for a message without those properties.
func (s *Service) RecallHandle(m *storage.Message) string {
	out, ok1 := message.PropertyValueString(m.Properties, PropertyTimerOutMS)
	real, ok2 := message.PropertyValueString(m.Properties, message.PropertyRealTopic)
	ms, err := strconv.ParseInt(out, 10, 64)
	if !ok1 || !ok2 || err != nil || names.IsRetryTopic(real) {
		return ""
	}
	uniq, _ := message.PropertyValueString(m.Properties, message.PropertyUniqKey)
	return encodeRecallHandle(recallHandle{topic: real, brokerName: s.b.Options().Broker.Name,
		timestamp: strconv.FormatInt(ms+1, 10), msgID: uniq})
}

// encodeRecallHandle writes h as RecallMessageHandle.HandleV1.buildHandle does: base64url of
// its fields after "v1", separated by spaces.
func encodeRecallHandle(h recallHandle) string {
	return base64.URLEncoding.EncodeToString([]byte("v1 " + h.topic + " " + h.brokerName + " " + h.timestamp + " " + h.msgID))
}

// decodeRecallHandle reads RecallMessageHandle.decodeHandle's form: base64url of
// "v1 topic brokerName timestamp messageId" (fields after the fifth are ignored, as Java
// ignores them). The id must be printable ASCII of at most maxRecallMsgIDBytes.
func decodeRecallHandle(h string) (recallHandle, bool) {
	if h == "" {
		return recallHandle{}, false
	}
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		// Java's URL decoder takes the handle with or without padding.
		if raw, err = base64.RawURLEncoding.DecodeString(h); err != nil {
			return recallHandle{}, false
		}
	}
	f := strings.Split(string(raw), " ")
	if len(f) < 5 || f[0] != "v1" {
		return recallHandle{}, false
	}
	id := f[4]
	if id == "" || len(id) > maxRecallMsgIDBytes {
		return recallHandle{}, false
	}
	for i := range len(id) {
		if id[i] <= ' ' || id[i] > '~' {
			return recallHandle{}, false
		}
	}
	return recallHandle{topic: f[1], brokerName: f[2], timestamp: f[3], msgID: id}, true
}

// recallHandler is RECALL_MESSAGE's handler: its header names the topic and the producer
// group. It runs on the send pool, as RocketMQ's.
func (s *Service) recallHandler() broker.Handler {
	return broker.Handler{Code: remoting.RecallMessage,
		Names: []reqnames.Field{reqnames.TopicField("topic"), reqnames.GroupField("producerGroup")},
		Proc:  remoting.ProcessorFunc(s.recall), Pool: s.b.Pools().Send}
}

// recall serves RECALL_MESSAGE with RocketMQ 5's checks and answers.
func (s *Service) recall(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.RecallMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	opts := s.b.Options()
	if !opts.Types.RecallMessageEnable {
		return recallAnswer(remoting.NoPermission, recallForbidden), nil
	}
	if !s.b.IsMaster() {
		return recallAnswer(remoting.SlaveNotAvailable, recallNotAvailable), nil
	}
	if _, ok := s.b.Topics().Get(h.Topic); !ok {
		return recallAnswer(remoting.TopicNotExist, "recall failed, the topic["+h.Topic+"] not exist"), nil
	}
	hd, ok := decodeRecallHandle(h.RecallHandle)
	switch {
	case !ok:
		return recallAnswer(remoting.IllegalOperation, recallInvalidHandle), nil
	case hd.topic != h.Topic:
		return recallAnswer(remoting.IllegalOperation, recallTopicMismatch), nil
	case hd.brokerName != opts.Broker.Name:
		return recallAnswer(remoting.IllegalOperation, recallNotAvailable), nil
	}
	ts, err := strconv.ParseInt(hd.timestamp, 10, 64)
	left := ts - time.Now().UnixMilli()
	if err != nil || left <= 0 || left >= opts.Timers.MaxDelay.Milliseconds() {
		return recallAnswer(remoting.IllegalOperation, recallBadTimestamp), nil
	}
	now := time.Now().UnixMilli()
	props := message.MarshalProperties(map[string]string{
		message.PropertyTags:           recallTag,
		PropertyTimerDelUniqKey:        TimerDeleteKey(hd.topic, hd.msgID),
		message.PropertyUniqKey:        hd.msgID,
		message.PropertyTimerDeliverMS: hd.timestamp,
		"BORN_TIMESTAMP":               strconv.FormatInt(now, 10),
		"TRACE_CONTEXT":                "",
		message.PropertyProducerGroup:  h.ProducerGroup,
	})
	m := &storage.Message{Topic: hd.topic, QueueID: 0, Body: []byte("0"), Properties: props,
		BornTimestamp: now, BornHost: broker.BornHost(ch), StoreHost: s.b.Messages().StoreHost()}
	if refusal := s.Schedule(m); refusal != nil {
		return recallAnswer(refusal.Code, refusal.Remark), nil
	}
	r, stored, err := s.b.Messages().StoreAsSend(ctx, m)
	if !stored {
		s.timer.log.Warn().Err(err).Str("status", r.Status.String()).Str("topic", hd.topic).Msg("recall marker not stored")
		return recallAnswer(remoting.SystemError, recallExecuteFailure), nil
	}
	resp := recallAnswer(remoting.Success, "")
	(&protocol.RecallMessageResponseHeader{MsgID: hd.msgID}).Encode(resp.ExtFields)
	return resp, nil
}

// recallRegion is the MSG_REGION of every answer (BrokerConfig.regionId's default).
const recallRegion = "DefaultRegion"

// recallAnswer is a RECALL_MESSAGE answer, which carries MSG_REGION whatever its code.
func recallAnswer(code int32, remark string) *remoting.Command {
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = map[string]string{message.PropertyMsgRegion: recallRegion}
	return resp
}
