package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The names a request carries are checked here, before its processor runs: every processor is
// installed through Broker.handle (or a service's Handler, service.go), which wraps it with guardNames, so no processor sees a topic
// or group that was not validated (internal/names), whatever it does with it later (a
// ConsumeQueue directory, a %RETRY% topic, a key of a persisted table, a remark).
//
// Header fields are listed per request code in requestNames. Names in bodies are checked where
// the body is decoded: HEART_BEAT (checkHeartbeatNames, clients.go), LOCK_BATCH_MQ and
// UNLOCK_BATCH_MQ (decodeLockBody, clients.go), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// (Broker.UpdateSubscriptionGroup, core_svc.go).
//
// A refused name answers SYSTEM_ERROR (RocketMQ 4.x's code for every validation failure outside
// the send path) with a remark that starts with the field, e.g.
//
//	consumerGroup: group "../x" contains illegal characters ("." at byte 0), allowing only ^[%|a-zA-Z0-9_-]+$
//
// The send codes keep RocketMQ's msgCheck remarks for the topic ("The specified topic is
// blank." ...) and answer like every send response (MSG_REGION, TRACE_ON). An absent or empty
// field is left to the header decoder, which names it ("the custom field <topic> is null").

// nameKind says which rule a field must satisfy.
type NameKind uint8

const (
	TopicName NameKind = iota
	GroupName
	// retryGroupName is a consumer group the request builds %RETRY% and %DLQ% topics from.
	RetryGroupName
	// sendTopicName is a send's target topic: RocketMQ's msgCheck remarks.
	SendTopicName
)

// nameField is one header field that carries a name: its key on the wire, the name a remark
// gives it (the key, except for the one-letter keys of SEND_MESSAGE_V2) and its rule.
type NameField struct {
	Key, Field string
	Kind       NameKind
}

// requestNames is the header fields that carry names, per request code. Every code the broker
// serves has an entry, nil when its header carries no name; handle logs a warning at
// registration for a code without one (TestEveryProcessorHasANameEntry fails on it).
var requestNames = func() map[int16][]NameField {
	sendV1 := []NameField{{"producerGroup", "producerGroup", GroupName}, {"topic", "topic", SendTopicName},
		{"defaultTopic", "defaultTopic", TopicName}}
	sendV2 := []NameField{{"a", "producerGroup", GroupName}, {"b", "topic", SendTopicName},
		{"c", "defaultTopic", TopicName}}
	topic := []NameField{{"topic", "topic", TopicName}}
	groupTopic := []NameField{{"consumerGroup", "consumerGroup", GroupName}, {"topic", "topic", TopicName}}
	return map[int16][]NameField{
		remoting.SendMessage:      sendV1,
		remoting.SendMessageV2:    sendV2,
		remoting.SendBatchMessage: sendV2,
		remoting.ConsumerSendMsgBack: {{"group", "group", RetryGroupName},
			{"originTopic", "originTopic", TopicName}},

		remoting.PullMessage:          groupTopic,
		remoting.QueryConsumerOffset:  groupTopic,
		remoting.UpdateConsumerOffset: groupTopic,
		// The header decoder falls back to "Topic" when "topic" is absent.
		remoting.SearchOffsetByTimestamp: {{"topic", "topic", TopicName}, {"Topic", "Topic", TopicName}},
		remoting.GetMaxOffset:            topic,
		remoting.GetMinOffset:            topic,
		remoting.GetEarliestMsgStoreTime: topic,
		remoting.QueryMessage:            topic,
		remoting.ViewMessageByID:         nil,

		remoting.HeartBeat: nil, // body: checkHeartbeatNames
		remoting.UnregisterClient: {{"producerGroup", "producerGroup", GroupName},
			{"consumerGroup", "consumerGroup", GroupName}},
		remoting.CheckClientConfig:      nil, // body: only its expression type is read
		remoting.GetConsumerListByGroup: {{"consumerGroup", "consumerGroup", GroupName}},
		remoting.LockBatchMQ:            nil, // body: decodeLockBody
		remoting.UnlockBatchMQ:          nil, // body: decodeLockBody

		remoting.UpdateAndCreateTopic: {{"topic", "topic", TopicName}, {"defaultTopic", "defaultTopic", TopicName}},
		remoting.DeleteTopicInBroker:  topic,
		remoting.GetAllTopicConfig:    nil,
		// The reply and admin services declare their codes' names in their Handlers
		// (internal/broker/reply, internal/broker/admin).
	}
}()

// isSendCode reports whether a refusal of code is a send response (sendResponse: RocketMQ adds
// MSG_REGION and TRACE_ON to every send answer, failed or not).
func isSendCode(code int16) bool {
	switch code {
	case remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage,
		remoting.SendReplyMessage, remoting.SendReplyMessageV2:
		return true
	}
	return false
}

// guardNames wraps p with the checks of the topic and group names that requests of code carry
// in the header fields listed.
func guardNames(code int16, fields []NameField, p remoting.Processor) remoting.Processor {
	if len(fields) == 0 {
		return p
	}
	send := isSendCode(code)
	return remoting.ProcessorFunc(func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if resp := checkHeaderNames(req.ExtFields, fields, send); resp != nil {
			return resp, nil
		}
		return p.ProcessRequest(ctx, ch, req)
	})
}

// checkHeaderNames returns the response refusing the first bad name among fields, or nil. It
// does not allocate when every name is valid.
func checkHeaderNames(ext map[string]string, fields []NameField, send bool) *remoting.Command {
	for i := range fields {
		f := &fields[i]
		v := ext[f.Key]
		if v == "" {
			continue
		}
		var err error
		switch f.Kind {
		case SendTopicName:
			if remark := validateTopic(v); remark != "" {
				return sendResponse(remoting.SystemError, remark)
			}
		case TopicName:
			err = names.CheckTopic(v)
		case GroupName:
			err = names.CheckGroup(v)
		case RetryGroupName:
			err = names.CheckRetryGroup(v)
		}
		if err != nil {
			if send {
				return sendResponse(remoting.SystemError, f.Field+": "+err.Error())
			}
			return nameRefused(f.Field, err)
		}
	}
	return nil
}

// nameRefused answers SYSTEM_ERROR for a bad name in field.
func nameRefused(field string, err error) *remoting.Command {
	return remoting.NewResponse(remoting.SystemError, field+": "+err.Error())
}

// namesValidate refuses a Broker.ClusterName or Broker.Name that is not a valid topic: like RocketMQ,
// the broker serves topics named after them (and <cluster>_REPLY_TOPIC), and name servers
// refuse a registration whose topic table holds an invalid name, so such a broker would never
// be routable.
func (o Options) namesValidate() error {
	for _, c := range []struct{ field, topic string }{
		{"Broker.ClusterName", o.Broker.ClusterName}, {"Broker.Name", o.Broker.Name}, {"Broker.ClusterName", o.Broker.ClusterName + names.ReplyTopicSuffix},
	} {
		if err := names.CheckTopic(c.topic); err != nil {
			return fmt.Errorf("broker: %s must make a valid topic name: %w", c.field, err)
		}
	}
	return nil
}

// checkGroupField refuses an invalid group in a body's field, or returns nil.
func checkGroupField(field, group string) *remoting.Command {
	if err := names.CheckGroup(group); err != nil {
		return nameRefused(field, err)
	}
	return nil
}

// checkHeartbeatNames checks every name of a HEART_BEAT body: producer groups, consumer groups
// (the broker creates their retry topics, so at most names.MaxRetryGroupBytes) and the topic of
// every subscription. It returns the refusal, or nil.
func checkHeartbeatNames(hb *protocol.HeartbeatData) *remoting.Command {
	for i := range hb.ProducerDataSet {
		if err := names.CheckGroup(hb.ProducerDataSet[i].GroupName); err != nil {
			return nameRefused("producerDataSet["+strconv.Itoa(i)+"].groupName", err)
		}
	}
	for i := range hb.ConsumerDataSet {
		c := &hb.ConsumerDataSet[i]
		if err := names.CheckRetryGroup(c.GroupName); err != nil {
			return nameRefused("consumerDataSet["+strconv.Itoa(i)+"].groupName", err)
		}
		for j := range c.SubscriptionDataSet {
			if err := names.CheckTopic(c.SubscriptionDataSet[j].Topic); err != nil {
				return nameRefused("consumerDataSet["+strconv.Itoa(i)+"].subscriptionDataSet["+
					strconv.Itoa(j)+"].topic", err)
			}
		}
	}
	return nil
}

// checkLockNames checks the group and every queue's topic of a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ
// body, returning the refusal as an error (the dispatcher answers it).
func checkLockNames(body *protocol.LockBatchRequestBody) error {
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
