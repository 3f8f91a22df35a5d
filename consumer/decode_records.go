package consumer

// DecodeMessages decodes stored records laid back to back, the body of PULL_MESSAGE,
// QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answers, fetched from the broker named brokerName (the
// records do not carry it). Admin tools read messages with it. Body slices view body. A record
// that does not decode ends the walk with an error; the records before it are returned.
func DecodeMessages(body []byte, brokerName string) ([]*Message, error) {
	return decodeMessages(body, MessageQueue{BrokerName: brokerName})
}
