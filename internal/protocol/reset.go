package protocol

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Admin requests that reach consumers through the broker: INVOKE_BROKER_TO_RESET_OFFSET (222)
// and RESET_CONSUMER_CLIENT_OFFSET (220), INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and
// GET_CONSUMER_STATUS_FROM_CLIENT (221).

// ResetOffsetRequestHeader asks a broker to move a group's offsets of a topic to a time (222),
// and tells a consumer where they moved (220). Timestamp -1 means the end of each queue. Java
// writes isForce even when false (a primitive), so it is always written here too.
type ResetOffsetRequestHeader struct {
	Topic     string `ext:"topic,required"`
	Group     string `ext:"group,required"`
	Timestamp int64  `ext:"timestamp,required"` // ms since the epoch
	IsForce   bool   `ext:"isForce"`
}

// GetConsumerStatusRequestHeader asks a broker (223), then each consumer (221), for a group's
// offsets of a topic; ClientAddr, when set, narrows the broker's question to one client.
type GetConsumerStatusRequestHeader struct {
	Topic      string `ext:"topic,required"`
	Group      string `ext:"group,required"`
	ClientAddr string `ext:"clientAddr,omitempty"`
}

// EncodeResetOffsetBody writes RocketMQ's ResetOffsetBody ({"offsetTable":{<queue>:12,...}}),
// the body of 220 and of the answer to 222; DecodeOffsetSerializeWrapper reads it.
func EncodeResetOffsetBody(offsets map[MessageQueue]int64) []byte {
	return EncodeOffsetSerializeWrapper(offsets)
}

// EncodeResetOffsetBodyForC writes the body RocketMQ sends a C++ client instead of
// ResetOffsetBody: the same table as a list, because its JSON reader has no object keys.
func EncodeResetOffsetBodyForC(offsets map[MessageQueue]int64) []byte {
	type queueForC struct {
		BrokerName string `json:"brokerName"`
		Offset     int64  `json:"offset"`
		QueueID    int    `json:"queueId"`
		Topic      string `json:"topic"`
	}
	list := make([]queueForC, 0, len(offsets))
	for _, mq := range slices.SortedFunc(maps.Keys(offsets), compareMessageQueue) {
		list = append(list, queueForC{BrokerName: mq.BrokerName, Offset: offsets[mq], QueueID: mq.QueueID, Topic: mq.Topic})
	}
	body, _ := json.Marshal(struct {
		OffsetTable []queueForC `json:"offsetTable"`
	}{list}) // cannot fail: strings and integers only
	return body
}

// ConsumerStatusBody is RocketMQ's GetConsumerStatusBody: a consumer answers 221 with
// MessageQueueTable (its offsets), a broker answers 223 with ConsumerTable (each client's).
type ConsumerStatusBody struct {
	MessageQueueTable map[MessageQueue]int64
	ConsumerTable     map[string]map[MessageQueue]int64
}

// EncodeConsumerStatusBody writes the body as fastjson does, queues as object keys.
func EncodeConsumerStatusBody(s *ConsumerStatusBody) []byte {
	dst := append(make([]byte, 0, 64), `{"consumerTable":{`...)
	for i, id := range slices.Sorted(maps.Keys(s.ConsumerTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, id)
		dst = append(dst, ':')
		dst = appendQueueOffsets(dst, s.ConsumerTable[id])
	}
	dst = append(dst, `},"messageQueueTable":`...)
	dst = appendQueueOffsets(dst, s.MessageQueueTable)
	return append(dst, '}')
}

func appendQueueOffsets(dst []byte, offsets map[MessageQueue]int64) []byte {
	dst = append(dst, '{')
	for i, mq := range slices.SortedFunc(maps.Keys(offsets), compareMessageQueue) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessageQueue(dst, mq)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, offsets[mq], 10)
	}
	return append(dst, '}')
}

// DecodeConsumerStatusBody reads a GetConsumerStatusBody written by fastjson or by
// EncodeConsumerStatusBody. Errors wrap ErrMalformedBody.
func DecodeConsumerStatusBody(b []byte) (*ConsumerStatusBody, error) {
	s := &ConsumerStatusBody{MessageQueueTable: map[MessageQueue]int64{}, ConsumerTable: map[string]map[MessageQueue]int64{}}
	readOffsets := func(val []byte, into map[MessageQueue]int64) error {
		return decodeQueueMap(val, func(mq MessageQueue, v []byte) error {
			off, err := strconv.ParseInt(string(trimSpace(v)), 10, 64)
			into[mq] = off
			return err
		})
	}
	err := scanObject(b, func(key, val []byte) error {
		name, err := fieldName(key)
		if err != nil {
			return err
		}
		switch name {
		case "messageQueueTable":
			return readOffsets(val, s.MessageQueueTable)
		case "consumerTable":
			return scanObject(val, func(key, val []byte) error {
				id, err := fieldName(key)
				if err != nil {
					return err
				}
				offsets := map[MessageQueue]int64{}
				s.ConsumerTable[id] = offsets
				return readOffsets(val, offsets)
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: consumer status: %v", ErrMalformedBody, err)
	}
	return s, nil
}

// GetConsumerRunningInfoRequestHeader asks a broker, then the consumer it names, for a
// group's running info (GET_CONSUMER_RUNNING_INFO, 307).
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	ClientID      string `ext:"clientId,required"`
	JstackEnable  bool   `ext:"jstackEnable"`
}
