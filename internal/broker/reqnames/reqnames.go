// Package reqnames checks the topic and group names a request carries before its processor
// runs: the broker installs every processor through Broker.handle (or a service's Handler,
// internal/broker/service.go), which wraps it with a Guard, so no processor sees a topic or
// group that was not validated (internal/names), whatever it does with it later (a
// ConsumeQueue directory, a %RETRY% topic, a key of a persisted table, a remark).
//
// Header fields are listed per request code here (Fields); the services list their own codes'
// in their Handlers. Names in bodies are checked where the body is decoded: HEART_BEAT
// (CheckHeartbeat, internal/broker/clients.go), LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (CheckLock,
// internal/broker/locks), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (CheckGroupField, Groups.Update in
// internal/broker/view_tables.go).
//
// A refused name answers SYSTEM_ERROR (RocketMQ 4.x's code for every validation failure outside
// the send path) with a remark that starts with the field, e.g.
//
//	consumerGroup: group "../x" contains illegal characters ("." at byte 0), allowing only ^[%|a-zA-Z0-9_-]+$
//
// The send codes keep RocketMQ's msgCheck remarks for the topic ("The specified topic is
// blank." ...) and answer like every send response (MSG_REGION, TRACE_ON): the broker's core
// builds those (Guard). An absent or empty field is left to the header decoder, which names it
// ("the custom field <topic> is null").
package reqnames

import (
	"context"
	"strconv"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Kind says which rule a field must satisfy.
type Kind uint8

const (
	Topic Kind = iota
	Group
	// RetryGroup is a consumer group the request builds %RETRY% and %DLQ% topics from.
	RetryGroup
	// SendTopic is a send's target topic: RocketMQ's msgCheck remarks.
	SendTopic
)

// Field is one header field that carries a name: its key on the wire, the name a remark
// gives it (the key, except for the one-letter keys of SEND_MESSAGE_V2) and its rule.
type Field struct {
	Key, Field string
	Kind       Kind
}

// TopicField and GroupField are the usual Fields: a header key that names a topic or a
// consumer or producer group, the remark naming the key itself.
func TopicField(key string) Field { return Field{Key: key, Field: key, Kind: Topic} }

// GroupField: see TopicField.
func GroupField(key string) Field { return Field{Key: key, Field: key, Kind: Group} }

// Fields returns the header fields that carry names in requests of code, and whether the core
// lists code at all: every code the core serves has an entry, nil when its header carries no
// name; Broker.handle logs a warning at registration for a code without one
// (TestEveryProcessorHasANameEntry fails on it).
func Fields(code int32) ([]Field, bool) {
	f, ok := requestNames[code]
	return f, ok
}

// requestNames is the header fields that carry names, per request code the core serves.
var requestNames = func() map[int32][]Field {
	sendV1 := []Field{{"producerGroup", "producerGroup", Group}, {"topic", "topic", SendTopic},
		{"defaultTopic", "defaultTopic", Topic}}
	sendV2 := []Field{{"a", "producerGroup", Group}, {"b", "topic", SendTopic},
		{"c", "defaultTopic", Topic}}
	topic := []Field{{"topic", "topic", Topic}}
	groupTopic := []Field{{"consumerGroup", "consumerGroup", Group}, {"topic", "topic", Topic}}
	return map[int32][]Field{
		remoting.SendMessage:      sendV1,
		remoting.SendMessageV2:    sendV2,
		remoting.SendBatchMessage: sendV2,
		remoting.ConsumerSendMsgBack: {{"group", "group", RetryGroup},
			{"originTopic", "originTopic", Topic}},

		remoting.PullMessage:          groupTopic,
		remoting.QueryConsumerOffset:  groupTopic,
		remoting.UpdateConsumerOffset: groupTopic,
		// The header decoder falls back to "Topic" when "topic" is absent.
		remoting.SearchOffsetByTimestamp: {{"topic", "topic", Topic}, {"Topic", "Topic", Topic}},
		remoting.GetMaxOffset:            topic,
		remoting.GetMinOffset:            topic,
		remoting.GetEarliestMsgStoreTime: topic,
		remoting.QueryMessage:            topic,
		remoting.ViewMessageByID:         nil,

		remoting.HeartBeat: nil, // body: CheckHeartbeat
		remoting.UnregisterClient: {{"producerGroup", "producerGroup", Group},
			{"consumerGroup", "consumerGroup", Group}},
		remoting.CheckClientConfig:      nil, // body: only its expression type is read
		remoting.GetConsumerListByGroup: {{"consumerGroup", "consumerGroup", Group}},
		// The services declare their codes' names in their Handlers (internal/broker/reply,
		// internal/broker/admin, ...).
	}
}()

// isSendCode reports whether a refusal of code is a send response (RocketMQ adds MSG_REGION
// and TRACE_ON to every send answer, failed or not).
func isSendCode(code int32) bool {
	switch code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.SendReplyMessage, remoting.SendReplyMessageV2:
		return true
	}
	return false
}

// Guard wraps processors with the checks of the names in their headers. The send path's
// answers are the core's (its msgCheck remarks and its send responses), so the core supplies
// them.
type Guard struct {
	// SendTopicRemark returns RocketMQ's msgCheck remark refusing a send's target topic, or ""
	// for a valid one.
	SendTopicRemark func(topic string) string
	// SendRefusal answers a refused send with SYSTEM_ERROR and remark, as every send answer
	// is built.
	SendRefusal func(remark string) *remoting.Command
}

// Wrap returns p behind the checks of the topic and group names that requests of code carry
// in the header fields listed; p itself when none are.
func (g *Guard) Wrap(code int32, fields []Field, p remoting.Processor) remoting.Processor {
	if len(fields) == 0 {
		return p
	}
	send := isSendCode(code)
	return remoting.ProcessorFunc(func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if resp := g.checkHeader(req, fields, send); resp != nil {
			return resp, nil
		}
		return p.ProcessRequest(ctx, ch, req)
	})
}

// checkHeader returns the response refusing the first bad name among fields, or nil. It
// does not allocate when every name is valid.
func (g *Guard) checkHeader(req *remoting.Command, fields []Field, send bool) *remoting.Command {
	for i := range fields {
		f := &fields[i]
		v, _ := req.LookupExt(f.Key)
		if v == "" {
			continue
		}
		var err error
		switch f.Kind {
		case SendTopic:
			if remark := g.SendTopicRemark(v); remark != "" {
				return g.SendRefusal(remark)
			}
		case Topic:
			err = names.CheckTopic(v)
		case Group:
			err = names.CheckGroup(v)
		case RetryGroup:
			err = names.CheckRetryGroup(v)
		}
		if err != nil {
			if send {
				return g.SendRefusal(f.Field + ": " + err.Error())
			}
			return Refused(f.Field, err)
		}
	}
	return nil
}

// Refused answers SYSTEM_ERROR for a bad name in field.
func Refused(field string, err error) *remoting.Command {
	return remoting.NewResponse(remoting.SystemError, field+": "+err.Error())
}

// CheckGroupField refuses an invalid group in a body's field, or returns nil.
func CheckGroupField(field, group string) *remoting.Command {
	if err := names.CheckGroup(group); err != nil {
		return Refused(field, err)
	}
	return nil
}

// CheckHeartbeat checks every name of a HEART_BEAT body: producer groups, consumer groups
// (the broker creates their retry topics, so at most names.MaxRetryGroupBytes) and the topic of
// every subscription. It returns the refusal, or nil.
func CheckHeartbeat(hb *protocol.HeartbeatData) *remoting.Command {
	for i := range hb.ProducerDataSet {
		if err := names.CheckGroup(hb.ProducerDataSet[i].GroupName); err != nil {
			return Refused("producerDataSet["+strconv.Itoa(i)+"].groupName", err)
		}
	}
	for i := range hb.ConsumerDataSet {
		c := &hb.ConsumerDataSet[i]
		if err := names.CheckRetryGroup(c.GroupName); err != nil {
			return Refused("consumerDataSet["+strconv.Itoa(i)+"].groupName", err)
		}
		for j := range c.SubscriptionDataSet {
			if err := names.CheckTopic(c.SubscriptionDataSet[j].Topic); err != nil {
				return Refused("consumerDataSet["+strconv.Itoa(i)+"].subscriptionDataSet["+
					strconv.Itoa(j)+"].topic", err)
			}
		}
	}
	return nil
}

// CheckLock checks the group and every queue's topic of a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ
// body, returning the refusal as an error (the dispatcher answers it).
func CheckLock(body *protocol.LockBatchRequestBody) error {
	if err := names.CheckGroup(body.ConsumerGroup); err != nil {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "consumerGroup: " + err.Error()}
	}
	for i := range body.MQSet {
		if err := names.CheckTopic(body.MQSet[i].Topic); err != nil {
			return &remoting.ResponseError{Code: remoting.SystemError,
				Remark: "mqSet[" + strconv.Itoa(i) + "].topic: " + err.Error()}
		}
	}
	return nil
}
