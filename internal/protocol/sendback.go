package protocol

import "github.com/mqgo/mq/remoting"

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK (36), docs/protocol.md
// §5.7: a consumer hands a message it failed to consume back to the broker, which stores a copy
// in the group's retry topic (delayed) or, past the reconsume limit, in its dead-letter topic.
type ConsumerSendMsgBackRequestHeader struct {
	// Offset is the message's CommitLog (physical) offset.
	Offset int64
	Group  string
	// DelayLevel 0 lets the broker choose (3 + reconsume times); < 0 sends the message
	// straight to the dead-letter topic.
	DelayLevel int32
	// OriginMsgID is the id the consumer saw (UNIQ_KEY, else the offset id).
	OriginMsgID string
	// OriginTopic is the topic as the listener saw it (RETRY_TOPIC restored).
	OriginTopic string
	UnitMode    bool
	// MaxReconsumeTimes is the consumer's limit; 0 (absent) means the group's retryMaxTimes.
	MaxReconsumeTimes int32
	// BrokerName ("bname") is the broker the message was pulled from; sent by the Go client.
	BrokerName string
}

// Encode implements remoting.Header.
func (h *ConsumerSendMsgBackRequestHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "offset", h.Offset)
	ext["group"] = h.Group
	remoting.PutInt32(ext, "delayLevel", h.DelayLevel)
	putOptional(ext, "originMsgId", h.OriginMsgID)
	putOptional(ext, "originTopic", h.OriginTopic)
	remoting.PutBool(ext, "unitMode", h.UnitMode)
	if h.MaxReconsumeTimes != 0 {
		remoting.PutInt32(ext, "maxReconsumeTimes", h.MaxReconsumeTimes)
	}
	putOptional(ext, "bname", h.BrokerName)
}

// Decode implements remoting.Header. offset, group and delayLevel are required, as Java's
// @CFNotNull marks them.
func (h *ConsumerSendMsgBackRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Offset = r.Int64("offset", true)
	h.Group = r.String("group", true)
	h.DelayLevel = r.Int32("delayLevel", true)
	h.OriginMsgID = r.String("originMsgId", false)
	h.OriginTopic = r.String("originTopic", false)
	h.UnitMode = r.Bool("unitMode", false)
	h.MaxReconsumeTimes = r.Int32("maxReconsumeTimes", false)
	h.BrokerName = r.String("bname", false)
	return r.Err()
}

var _ remoting.Header = (*ConsumerSendMsgBackRequestHeader)(nil)
