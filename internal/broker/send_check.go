package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Topic system flags (RocketMQ TopicSysFlag), set on the topics unit-mode clients make the
// broker create: FLAG_UNIT on a topic a send creates, FLAG_UNIT_SUB on a retry topic a send or
// a heartbeat creates.
const (
	topicSysFlagUnit    int32 = 0x1
	topicSysFlagUnitSub int32 = 0x2
)

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

// check runs checkSend and picks the queue to write (pickQueue).
func (s *sender) check(ch remoting.Channel, h *protocol.SendMessageRequestHeader) (TopicConfig, int32, *remoting.Command) {
	tc, resp := s.checkSend(ch, h)
	if resp != nil {
		return TopicConfig{}, 0, resp
	}
	queueID, resp := pickQueue(h.QueueID, tc)
	if resp != nil {
		return TopicConfig{}, 0, resp
	}
	return tc, queueID, nil
}

// pickQueue returns the queue to write: the requested one, or for a negative id a random
// writable queue as RocketMQ does.
func pickQueue(queueID int32, tc TopicConfig) (int32, *remoting.Command) {
	if queueID >= 0 {
		return queueID, nil
	}
	if tc.WriteQueueNums <= 0 {
		return 0, sendResponse(remoting.SystemError,
			fmt.Sprintf("request queueId[%d] is illegal, %s has no writable queue", queueID, topicConfigString(tc)))
	}
	return rand.Int32N(tc.WriteQueueNums), nil
}

// checkSend runs RocketMQ's checks of a send before the message is built (msgCheck): broker
// role, reserved topics, the topic's config (auto-created when unknown), its write
// permission and the queue id. It returns the topic config, or the response refusing the send.
func (s *sender) checkSend(ch remoting.Channel, h *protocol.SendMessageRequestHeader) (TopicConfig, *remoting.Command) {
	if !s.IsMaster() {
		return TopicConfig{}, sendResponse(remoting.ServiceNotAvailable, s.slaveRemark)
	}
	if resp := s.seams.checkInSync(); resp != nil {
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
	tc, ok := s.topics.Get(h.Topic)
	if !ok {
		var resp *remoting.Command
		if tc, resp = s.autoCreateTopic(ch, h); resp != nil {
			return TopicConfig{}, resp
		}
	}
	if !route.IsWritable(tc.Perm) {
		return TopicConfig{}, sendResponse(remoting.NoPermission,
			"the topic["+h.Topic+"] sending message is forbidden")
	}
	if tc.Attributes != nil {
		if resp := s.checkMessageType(tc, h); resp != nil {
			return TopicConfig{}, resp
		}
	}
	// RocketMQ accepts any queue below the larger of the two counts, so producers holding a
	// route from before the write queues shrank keep working.
	if h.QueueID >= max(tc.WriteQueueNums, tc.ReadQueueNums) {
		return TopicConfig{}, sendResponse(remoting.SystemError, fmt.Sprintf(
			"request queueId[%d] is illegal, %s Producer: %s", h.QueueID, topicConfigString(tc), ch.RemoteAddr()))
	}
	return tc, nil
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

// messageTypeRemarkf refuses a send whose type is not its topic's (RocketMQ 5's remark).
const messageTypeRemarkf = "TopicMessageType validate failed, the expected type is %s, but actual type is %s"

// checkMessageType refuses a send whose type is not its topic's message.type, as RocketMQ 5
// refuses it (its proxy's DefaultTopicMessageTypeValidator, on by default with
// enableTopicMessageTypeCheck, answered MESSAGE_ILLEGAL to remoting clients): a MIXED topic
// takes any type. Unlike 5.x's proxy, which takes a topic without the attribute for NORMAL, only
// topics whose attribute is set are checked: RocketMQ 5's broker itself checks none, and 4.x
// clients sending delay, transactional or orderly messages to untyped topics must keep working.
// Retry and dead-letter topics and messages a broker forwards (TRANSFER_FLAG) are not checked.
func (s *sender) checkMessageType(tc TopicConfig, h *protocol.SendMessageRequestHeader) *remoting.Command {
	want, set := tables.MessageType(tc)
	if !set || s.opts.Types.DisableTopicMessageTypeCheck || want == tables.TypeMixed ||
		names.IsRetryTopic(h.Topic) || strings.HasPrefix(h.Topic, names.DLQPrefix) {
		return nil
	}
	if _, ok := message.PropertyValueString(h.Properties, message.PropertyTransferFlag); ok {
		return nil
	}
	if got := tables.MessageTypeOf(h.Properties); got != want {
		return sendResponse(remoting.MessageIllegal, fmt.Sprintf(messageTypeRemarkf, want, got))
	}
	return nil
}
