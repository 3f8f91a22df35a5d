package protocol

// ConsumeMessageDirectlyRequestHeader asks a broker, then the consumer it names, to run the
// consumer's listener on one stored message (CONSUME_MESSAGE_DIRECTLY, 309; RocketMQ's
// ConsumeMessageDirectlyResultRequestHeader). The broker fills in brokerName and the message.
type ConsumeMessageDirectlyRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	ClientID      string `ext:"clientId"`
	MsgID         string `ext:"msgId"`
	BrokerName    string `ext:"brokerName"`
}
