package protocol

// Topic admin headers (RocketMQ 4.x CreateTopicRequestHeader, DeleteTopicRequestHeader;
// docs/protocol.md §6.1, §6.2).

// CreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17); Encode writes every
// key the Go admin client writes. Like Java, topicSysFlag and order are optional; unlike Java,
// an absent defaultTopic or topicFilterType is accepted (neither is used).
type CreateTopicRequestHeader struct {
	Topic string `ext:"topic,required"`
	// DefaultTopic is required by Java but ignored; the Go admin sends the literal
	// "defaultTopic".
	DefaultTopic    string `ext:"defaultTopic"`
	ReadQueueNums   int32  `ext:"readQueueNums,required"`
	WriteQueueNums  int32  `ext:"writeQueueNums,required"`
	Perm            int32  `ext:"perm,required"`
	TopicFilterType string `ext:"topicFilterType"` // "SINGLE_TAG" or "MULTI_TAG"
	TopicSysFlag    int32  `ext:"topicSysFlag"`
	Order           bool   `ext:"order"`
	// Attributes is RocketMQ 5's modification of the topic's attributes,
	// "+message.type=FIFO,-key" (AttributeParser); absent, the topic keeps those it has.
	Attributes string `ext:"attributes,omitempty"`
}

// TopicHeader is the header of the requests that name only a topic.
type TopicHeader struct {
	Topic string `ext:"topic,required"`
}

// RocketMQ's names for TopicHeader, one per request: DELETE_TOPIC_IN_BROKER (215),
// GET_TOPIC_STATS_INFO (202), GET_ROUTEINFO_BY_TOPIC (105), DELETE_TOPIC_IN_NAMESRV (216) and
// REGISTER_TOPIC_IN_NAMESRV (217, whose body is a TopicRouteData whose queue datas are
// registered for the topic).
type (
	DeleteTopicRequestHeader            = TopicHeader
	GetTopicStatsInfoRequestHeader      = TopicHeader
	GetRouteInfoRequestHeader           = TopicHeader
	DeleteTopicFromNamesrvRequestHeader = TopicHeader
	RegisterTopicRequestHeader          = TopicHeader
)
