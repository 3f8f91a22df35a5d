package protocol

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK (36), docs/protocol.md
// §5.7: a consumer hands a message it failed to consume back to the broker, which stores a copy
// in the group's retry topic (delayed) or, past the reconsume limit, in its dead-letter topic.
// offset, group and delayLevel are required, as Java's @CFNotNull marks them.
type ConsumerSendMsgBackRequestHeader struct {
	// Offset is the message's CommitLog (physical) offset.
	Offset int64  `ext:"offset,required"`
	Group  string `ext:"group,required"`
	// DelayLevel 0 lets the broker choose (3 + reconsume times); < 0 sends the message
	// straight to the dead-letter topic.
	DelayLevel int32 `ext:"delayLevel,required"`
	// OriginMsgID is the id the consumer saw (UNIQ_KEY, else the offset id).
	OriginMsgID string `ext:"originMsgId,omitempty"`
	// OriginTopic is the topic as the listener saw it (RETRY_TOPIC restored).
	OriginTopic string `ext:"originTopic,omitempty"`
	UnitMode    bool   `ext:"unitMode"`
	// MaxReconsumeTimes is the consumer's limit, 0 included (RocketMQ 4.9 takes any value the
	// header carries: 0 sends the message straight to the DLQ). -1 stands for absent, which
	// Encode leaves out and the broker reads as the group's retryMaxTimes.
	MaxReconsumeTimes int32 `ext:"maxReconsumeTimes,omitneg"`
	// BrokerName ("bname") is the broker the message was pulled from; sent by the Go client.
	BrokerName string `ext:"bname,omitempty"`
}
