package names

import "strings"

// System topics: the broker writes or serves them itself (RocketMQ TopicValidator, MixAll).
const (
	// TopicAutoCreate is the template topic a broker auto-creates others from (TBW102).
	TopicAutoCreate = "TBW102"
	// TopicSelfTest and TopicOffsetMoved are created at start, as RocketMQ does.
	TopicSelfTest    = "SELF_TEST_TOPIC"
	TopicOffsetMoved = "OFFSET_MOVED_EVENT"
	// TopicSchedule holds delayed messages until their level's delay has passed; one queue
	// per delay level.
	TopicSchedule = "SCHEDULE_TOPIC_XXXX"
	// Transaction topics: half messages, their op records, and half messages checked too often.
	TopicTransHalf         = "RMQ_SYS_TRANS_HALF_TOPIC"
	TopicTransOpHalf       = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TopicTransCheckMaxTime = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TopicTimer holds timer messages until their time (TimerMessageStore.TIMER_TOPIC).
	TopicTimer = "rmq_sys_wheel_timer"
	// TopicTrace is where message traces go by default.
	TopicTrace = "RMQ_SYS_TRACE_TOPIC"
	// ReplyTopicSuffix ends a cluster's request-reply topic (MixAll.REPLY_TOPIC_POSTFIX).
	ReplyTopicSuffix = "_REPLY_TOPIC"
	// systemPrefix starts every RMQ_SYS_ topic (TopicValidator.SYSTEM_TOPIC_PREFIX).
	systemPrefix = "RMQ_SYS_"
)

// RetryTopic is the retry topic of a consumer group, %RETRY%<group>.
func RetryTopic(group string) string { return RetryPrefix + group }

// DLQTopic is the dead-letter topic of a consumer group, %DLQ%<group>.
func DLQTopic(group string) string { return DLQPrefix + group }

// IsRetryTopic reports whether topic is a consumer group's retry topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, RetryPrefix) }

// Reserved reports whether producers may not send to topic: the auto-create template, the
// topics the broker writes itself, and every RMQ_SYS_ topic (the client-side check of
// RocketMQ's Validators and TopicValidator).
func Reserved(topic string) bool {
	switch topic {
	case TopicAutoCreate, TopicSchedule, TopicOffsetMoved, TopicSelfTest, TopicTransCheckMaxTime:
		return true
	}
	return strings.HasPrefix(topic, systemPrefix) || strings.HasPrefix(topic, "rmq_sys_")
}

// HoldsOthers reports whether topic's messages belong to other topics: delayed, timer and
// transaction half messages wait in these for the broker to move them, each naming its own
// topic in REAL_TOPIC. Reading one of them is reading every topic's messages.
func HoldsOthers(topic string) bool {
	switch topic {
	case TopicSchedule, TopicTimer, TopicTransHalf, TopicTransCheckMaxTime:
		return true
	}
	return false
}
