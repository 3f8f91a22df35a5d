package protocol

// ReplyMessageRequestHeader is the header of PUSH_REPLY_MESSAGE_TO_CLIENT (326), by which a
// broker hands a reply to the client that sent the request (RocketMQ 4.x
// ReplyMessageRequestHeader): the reply's send header plus where and when it was born and
// stored. Decode requires the fields Java marks @CFNotNull but producerGroup and defaultTopic:
// the official Go client's reply send may carry them empty, and a requester has no use for them.
type ReplyMessageRequestHeader struct {
	ProducerGroup         string `ext:"producerGroup"`
	Topic                 string `ext:"topic,required"`
	DefaultTopic          string `ext:"defaultTopic"`
	DefaultTopicQueueNums int32  `ext:"defaultTopicQueueNums"`
	QueueID               int32  `ext:"queueId,required"`
	SysFlag               int32  `ext:"sysFlag,required"`
	BornTimestamp         int64  `ext:"bornTimestamp,required"`
	Flag                  int32  `ext:"flag,required"`
	Properties            string `ext:"properties"`
	ReconsumeTimes        int32  `ext:"reconsumeTimes"`
	UnitMode              bool   `ext:"unitMode"`
	// BornHost and StoreHost are "ip:port": the replier's address as the broker saw it, and
	// the broker's store address.
	BornHost       string `ext:"bornHost,required"`
	StoreHost      string `ext:"storeHost,required"`
	StoreTimestamp int64  `ext:"storeTimestamp,required"`
}
