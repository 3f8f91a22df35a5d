package protocol

// RecallMessageRequestHeader is the header of RocketMQ 5's RECALL_MESSAGE (370): recall the
// timer message a send answered recallHandle for, before its time.
type RecallMessageRequestHeader struct {
	ProducerGroup string `ext:"producerGroup"`
	Topic         string `ext:"topic,required"`
	RecallHandle  string `ext:"recallHandle,required"`
}

// RecallMessageResponseHeader answers RECALL_MESSAGE: the recalled message's id (its UNIQ_KEY).
type RecallMessageResponseHeader struct {
	MsgID string `ext:"msgId,required"`
}
