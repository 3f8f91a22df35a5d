package protocol

import "github.com/mqgo/mq/remoting"

// Topic admin headers (RocketMQ 4.x CreateTopicRequestHeader, DeleteTopicRequestHeader;
// docs/protocol.md §6.1, §6.2).

// CreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17).
type CreateTopicRequestHeader struct {
	Topic string
	// DefaultTopic is required by Java but ignored; the Go admin sends the literal
	// "defaultTopic".
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string // "SINGLE_TAG" or "MULTI_TAG"
	TopicSysFlag    int32
	Order           bool
}

// Encode implements remoting.Header; it writes every key the Go admin client writes.
func (h *CreateTopicRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["defaultTopic"] = h.DefaultTopic
	remoting.PutInt32(ext, "readQueueNums", h.ReadQueueNums)
	remoting.PutInt32(ext, "writeQueueNums", h.WriteQueueNums)
	remoting.PutInt32(ext, "perm", h.Perm)
	ext["topicFilterType"] = h.TopicFilterType
	remoting.PutInt32(ext, "topicSysFlag", h.TopicSysFlag)
	remoting.PutBool(ext, "order", h.Order)
}

// Decode implements remoting.Header. Like Java, topicSysFlag and order are optional; unlike
// Java, an absent defaultTopic or topicFilterType is accepted (neither is used).
func (h *CreateTopicRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	h.DefaultTopic = r.String("defaultTopic", false)
	h.ReadQueueNums = r.Int32("readQueueNums", true)
	h.WriteQueueNums = r.Int32("writeQueueNums", true)
	h.Perm = r.Int32("perm", true)
	h.TopicFilterType = r.String("topicFilterType", false)
	h.TopicSysFlag = r.Int32("topicSysFlag", false)
	h.Order = r.Bool("order", false)
	return r.Err()
}

// DeleteTopicRequestHeader is the header of DELETE_TOPIC_IN_BROKER (215).
type DeleteTopicRequestHeader struct {
	Topic string
}

// Encode implements remoting.Header.
func (h *DeleteTopicRequestHeader) Encode(ext map[string]string) { ext["topic"] = h.Topic }

// Decode implements remoting.Header.
func (h *DeleteTopicRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	return r.Err()
}

var (
	_ remoting.Header = (*CreateTopicRequestHeader)(nil)
	_ remoting.Header = (*DeleteTopicRequestHeader)(nil)
)
