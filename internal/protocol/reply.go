package protocol

import "github.com/mqgo/mq/remoting"

// ReplyMessageRequestHeader is the header of PUSH_REPLY_MESSAGE_TO_CLIENT (326), by which a
// broker hands a reply to the client that sent the request (RocketMQ 4.x
// ReplyMessageRequestHeader): the reply's send header plus where and when it was born and
// stored. Hand-written rather than generated from struct tags: it is the only header whose
// encoder and decoder live on opposite sides of one push, and keeping it out of the generated
// set keeps headers_gen.go untouched by this feature.
type ReplyMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	// BornHost and StoreHost are "ip:port": the replier's address as the broker saw it, and
	// the broker's store address.
	BornHost       string
	StoreHost      string
	StoreTimestamp int64
}

// replyHeaderFields is how many keys Encode writes.
const replyHeaderFields = 14

// ExtFieldsCap implements remoting.SizedHeader.
func (h *ReplyMessageRequestHeader) ExtFieldsCap() int { return replyHeaderFields }

// Encode writes every field under RocketMQ's key names.
func (h *ReplyMessageRequestHeader) Encode(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
	ext["topic"] = h.Topic
	ext["defaultTopic"] = h.DefaultTopic
	remoting.PutInt32(ext, "defaultTopicQueueNums", h.DefaultTopicQueueNums)
	remoting.PutInt32(ext, "queueId", h.QueueID)
	remoting.PutInt32(ext, "sysFlag", h.SysFlag)
	remoting.PutInt64(ext, "bornTimestamp", h.BornTimestamp)
	remoting.PutInt32(ext, "flag", h.Flag)
	ext["properties"] = h.Properties
	remoting.PutInt32(ext, "reconsumeTimes", h.ReconsumeTimes)
	remoting.PutBool(ext, "unitMode", h.UnitMode)
	ext["bornHost"] = h.BornHost
	ext["storeHost"] = h.StoreHost
	remoting.PutInt64(ext, "storeTimestamp", h.StoreTimestamp)
}

// Decode reads the fields Java marks @CFNotNull as required, the others as optional.
// producerGroup and defaultTopic are not required: the official Go client's reply send may
// carry them empty, and a requester has no use for them.
func (h *ReplyMessageRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.ProducerGroup = r.String("producerGroup", false)
	h.Topic = r.String("topic", true)
	h.DefaultTopic = r.String("defaultTopic", false)
	h.DefaultTopicQueueNums = r.Int32("defaultTopicQueueNums", false)
	h.QueueID = r.Int32("queueId", true)
	h.SysFlag = r.Int32("sysFlag", true)
	h.BornTimestamp = r.Int64("bornTimestamp", true)
	h.Flag = r.Int32("flag", true)
	h.Properties = r.String("properties", false)
	h.ReconsumeTimes = r.Int32("reconsumeTimes", false)
	h.UnitMode = r.Bool("unitMode", false)
	h.BornHost = r.String("bornHost", true)
	h.StoreHost = r.String("storeHost", true)
	h.StoreTimestamp = r.Int64("storeTimestamp", true)
	return r.Err()
}
