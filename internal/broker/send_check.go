package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Topic system flags (RocketMQ TopicSysFlag), set on topics auto-created by unit-mode sends.
const (
	sendSysFlagUnitTopic    int32 = 0x1
	sendSysFlagUnitSubTopic int32 = 0x2
)

// sendDLQQueueNums is the queue count of a dead-letter topic the send path creates
// (DLQ_NUMS_PER_GROUP).
const sendDLQQueueNums = 1

// notAllowedSendTopics may not be the target of a send (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET):
// the broker writes them itself.
var notAllowedSendTopics = map[string]bool{
	names.TopicSchedule:          true,
	names.TopicTransHalf:         true,
	names.TopicTransOpHalf:       true,
	names.TopicTransCheckMaxTime: true,
}

// validateTopic checks a topic name with internal/names and returns RocketMQ's msgCheck remark
// (TopicValidator.validateTopic) for SYSTEM_ERROR, or "" for a valid name.
func validateTopic(topic string) string {
	if strings.TrimSpace(topic) == "" {
		return "The specified topic is blank."
	}
	if err := names.CheckTopic(topic); err != nil {
		return invalidTopicRemark(err)
	}
	return ""
}

// invalidTopicRemark is RocketMQ's remark for a topic names refused. Apart from validateTopic
// so that the errors.As target escapes only on a refusal, not on every send.
func invalidTopicRemark(err error) string {
	var e *names.Error
	if errors.As(err, &e) && e.Rule == names.TooLong {
		return "The specified topic is longer than topic max length."
	}
	return "The specified topic contains illegal characters, allowing only " + names.Pattern
}

// checkSend runs RocketMQ's checks of a send before the message is built (msgCheck): broker
// role, reserved topics, the topic's config (auto-created when unknown), its write
// permission and the queue id. It returns the topic config, or the response refusing the send.
func (b *Broker) checkSend(ch remoting.Channel, h *protocol.SendMessageRequestHeader) (TopicConfig, *remoting.Command) {
	if !b.IsMaster() {
		return TopicConfig{}, sendResponse(remoting.ServiceNotAvailable, b.send.slaveRemark)
	}
	if resp := b.checkInSync(); resp != nil {
		return TopicConfig{}, resp
	}
	// The topic's name was checked by guardNames (names.go) before the processor ran.
	if h.Topic == names.TopicAutoCreate {
		return TopicConfig{}, sendResponse(remoting.SystemError,
			"the topic["+h.Topic+"] is conflict with system reserved words.")
	}
	if notAllowedSendTopics[h.Topic] {
		return TopicConfig{}, sendResponse(remoting.NoPermission, "Sending message to topic["+h.Topic+"] is forbidden.")
	}
	tc, ok := b.topics.get(h.Topic)
	if !ok {
		var resp *remoting.Command
		if tc, resp = b.autoCreateTopic(ch, h); resp != nil {
			return TopicConfig{}, resp
		}
	}
	if !route.IsWritable(tc.Perm) {
		return TopicConfig{}, sendResponse(remoting.NoPermission,
			"the topic["+h.Topic+"] sending message is forbidden")
	}
	// RocketMQ accepts any queue below the larger of the two counts, so producers holding a
	// route from before the write queues shrank keep working.
	if h.QueueID >= max(tc.WriteQueueNums, tc.ReadQueueNums) {
		return TopicConfig{}, sendResponse(remoting.SystemError, fmt.Sprintf(
			"request queueId[%d] is illegal, %s Producer: %s", h.QueueID, topicConfigString(tc), ch.RemoteAddr()))
	}
	return tc, nil
}

// handleRetryAndDLQ redirects a message sent to %RETRY%<group> to %DLQ%<group> (one queue,
// read-write) once its reconsume times reach reconsumeLimit (RocketMQ handleRetryAndDLQ). A message
// going to the DLQ loses its DELAY property, so it lands there at once rather than after the
// longest delay. props is the message's properties string, updated in place.
func (b *Broker) handleRetryAndDLQ(req *remoting.Command, h *protocol.SendMessageRequestHeader, m *storage.Message, props *string) *remoting.Command {
	if !strings.HasPrefix(h.Topic, names.RetryPrefix) {
		return nil
	}
	group := h.Topic[len(names.RetryPrefix):]
	gc, ok := b.groups.find(group)
	if !ok {
		return sendResponse(remoting.SubscriptionGroupNotExist, "subscription group not exist, "+group)
	}
	if h.ReconsumeTimes < reconsumeLimit(req, h.MaxReconsumeTimes, gc.RetryMaxTimes) {
		return nil
	}
	dlq := names.DLQTopic(group)
	if _, err := b.topics.createIfAbsent(dlq, sendDLQQueueNums, dlqPerm, 0); err != nil {
		return sendResponse(remoting.TopicNotExist, b.topicsFullRemark(dlq))
	}
	m.Topic = dlq
	m.QueueID = 0 // RocketMQ: random % DLQ_NUMS_PER_GROUP
	*props = removeProperty(*props, message.PropertyDelayTimeLevel)
	return nil
}

// topicConfigString renders tc as Java's TopicConfig.toString, for remarks.
func topicConfigString(tc TopicConfig) string {
	ft := tc.TopicFilterType
	if ft == "" {
		ft = route.FilterSingleTag
	}
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, "+
		"topicFilterType=%s, topicSysFlag=%d, order=%t]", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums,
		route.PermString(tc.Perm), ft, tc.TopicSysFlag, tc.Order)
}
