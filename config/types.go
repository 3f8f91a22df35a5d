package config

import (
	"fmt"
)

// Message request modes (RocketMQ 5's MessageRequestMode): how QUERY_ASSIGNMENT tells a
// consumer to read its queues.
const (
	MessageRequestModePull = "PULL"
	MessageRequestModePop  = "POP"
)

// Defaults of the Types group, RocketMQ 5's BrokerConfig values.
const (
	// DefaultMessageRequestMode is defaultMessageRequestMode.
	DefaultMessageRequestMode = MessageRequestModePull
	// DefaultPopShareQueueNum is defaultPopShareQueueNum: -1, every POP consumer of a group
	// is assigned every queue.
	DefaultPopShareQueueNum = -1
)

// Types are RocketMQ 5's message types and consumption modes: the topic attribute
// message.type, what a send to a typed topic must be, and the modes and assignments
// QUERY_ASSIGNMENT answers (internal/broker/assignment).
type Types struct {
	// DisableTopicMessageTypeCheck accepts any message on a topic whose message.type is set
	// (RocketMQ 5 enableTopicMessageTypeCheck, default true, which its proxy applies; this
	// broker applies it to the sends it serves).
	DisableTopicMessageTypeCheck bool `flag:"no-topic-message-type-check" rocketmq:"enableTopicMessageTypeCheck=false" usage:"accept any message on a topic whose message.type is set"`
	// EnableMixedMessageType lets UPDATE_AND_CREATE_TOPIC set message.type=MIXED (RocketMQ 5
	// enableMixedMessageType, default false).
	EnableMixedMessageType bool `flag:"enable-mixed-message-type" rocketmq:"enableMixedMessageType" usage:"allow topics of message.type MIXED"`
	// DefaultMessageRequestMode is the mode of a group and topic nobody set one for with
	// SET_MESSAGE_REQUEST_MODE: MessageRequestModePull (default) or MessageRequestModePop.
	DefaultMessageRequestMode string `flag:"default-message-request-mode" rocketmq:"defaultMessageRequestMode" usage:"PULL or POP: the mode QUERY_ASSIGNMENT answers when none was set"`
	// DefaultPopShareQueueNum is, for the POP mode's default, how many following consumers'
	// queues each consumer also pops; 0 or less (default -1) assigns every queue to every
	// consumer.
	DefaultPopShareQueueNum int `flag:"default-pop-share-queue-num" rocketmq:"defaultPopShareQueueNum" usage:"POP mode: how many following consumers' queues each also pops (-1: all queues)"`
	// DisableServerLoadBalancer answers QUERY_ASSIGNMENT with every queue of the topic,
	// whatever the group's members (RocketMQ 5 serverLoadBalancerEnable=false).
	DisableServerLoadBalancer bool `flag:"no-server-load-balancer" rocketmq:"serverLoadBalancerEnable=false" usage:"QUERY_ASSIGNMENT assigns every queue to every consumer"`
	// RecallMessageEnable serves RECALL_MESSAGE, which takes back a timer (DELAY) message
	// before its time (RocketMQ 5 recallMessageEnable, default false: refused with
	// NO_PERMISSION).
	RecallMessageEnable bool `flag:"recall-message-enable" rocketmq:"recallMessageEnable" usage:"serve RECALL_MESSAGE: timer messages may be taken back before their time"`
}

// EnsureDefaults writes the group's defaults.
func (t *Types) EnsureDefaults() {
	setDefault(&t.DefaultMessageRequestMode, DefaultMessageRequestMode)
	if t.DefaultPopShareQueueNum == 0 {
		t.DefaultPopShareQueueNum = DefaultPopShareQueueNum
	}
}

// Validate checks the default mode's name.
func (t *Types) Validate() error {
	switch t.DefaultMessageRequestMode {
	case "", MessageRequestModePull, MessageRequestModePop:
		return nil
	}
	return fmt.Errorf("mq: Types.DefaultMessageRequestMode %q is neither %s nor %s",
		t.DefaultMessageRequestMode, MessageRequestModePull, MessageRequestModePop)
}
