package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mqgo/mq/rebalance"
)

// Consumer-group management: HEART_BEAT (34) bodies, UNREGISTER_CLIENT (35),
// GET_CONSUMER_LIST_BY_GROUP (38), NOTIFY_CONSUMER_IDS_CHANGED (40), LOCK_BATCH_MQ (41) and
// UNLOCK_BATCH_MQ (42). See docs/protocol.md §5.1, §5.2, §5.8, §7.1.

// Values of ConsumerData.ConsumeType, MessageModel and ConsumeFromWhere (Java enum names).
const (
	ConsumeActively  = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively = "CONSUME_PASSIVELY" // push consumer

	Clustering   = "CLUSTERING"
	Broadcasting = "BROADCASTING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"
)

// Expression types of a subscription. An empty type means TAG (docs/protocol.md §5.1).
const (
	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
	// SubAll is the expression that matches every message.
	SubAll = "*"
)

// IsTagType reports whether an expression type selects tag filtering ("" counts as TAG).
func IsTagType(expressionType string) bool {
	return expressionType == "" || expressionType == ExpressionTag
}

// TagCodes is a subscription's codeSet: tag hash codes. Java clients send JSON numbers, the Go
// client decimal strings; both decode. It encodes as strings, as the Go client does.
type TagCodes []int32

// MarshalJSON implements json.Marshaler.
func (c TagCodes) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c)*8)
	b = append(b, '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *TagCodes) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(TagCodes, 0, len(raw))
	for _, r := range raw {
		s := string(bytes.TrimSpace(r))
		if len(s) >= 2 && s[0] == '"' {
			if err := json.Unmarshal(r, &s); err != nil {
				return err
			}
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("protocol: codeSet element %s: %w", r, err)
		}
		out = append(out, int32(v))
	}
	*c = out
	return nil
}

// SubscriptionData is one topic subscription of a consumer group, as heartbeats carry it.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         TagCodes `json:"codeSet"`
	// SubVersion orders subscriptions of a topic: a heartbeat only replaces a subscription
	// with a newer one. The Go client uses nanoseconds, Java clients milliseconds.
	SubVersion     int64  `json:"subVersion"`
	ExpressionType string `json:"expressionType"`
}

// ProducerData names a producer group of a client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group of a client with its subscriptions.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// HeartbeatData is the body of HEART_BEAT (34).
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// DecodeHeartbeatData parses a HEART_BEAT body.
func DecodeHeartbeatData(body []byte) (*HeartbeatData, error) {
	var h HeartbeatData
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("protocol: heartbeat body: %w", err)
	}
	return &h, nil
}

// Encode returns the JSON body, in the Go client's key order and without whitespace.
func (h *HeartbeatData) Encode() []byte {
	b, err := json.Marshal(h)
	if err != nil {
		panic(err) // only strings, numbers and bools: cannot fail
	}
	return b
}

// UnregisterClientRequestHeader is the header of UNREGISTER_CLIENT (35). Either group may be
// empty.
type UnregisterClientRequestHeader struct {
	ClientID      string `ext:"clientID,required"`
	ProducerGroup string `ext:"producerGroup,omitempty"`
	ConsumerGroup string `ext:"consumerGroup,omitempty"`
}

// ConsumerGroupHeader is the header of the requests that name only a consumer group:
// GET_CONSUMER_LIST_BY_GROUP (38) and NOTIFY_CONSUMER_IDS_CHANGED (40).
type ConsumerGroupHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
}

// GetConsumerListByGroupResponseBody is the body answering GET_CONSUMER_LIST_BY_GROUP.
type GetConsumerListByGroupResponseBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// MessageQueue is the triple lock bodies (and admin bodies) carry: the module's one queue type.
type MessageQueue = rebalance.MessageQueue

// LockBatchRequestBody is the body of LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).
type LockBatchRequestBody struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []MessageQueue `json:"mqSet"`
}

// LockBatchResponseBody answers LOCK_BATCH_MQ with the requested queues now locked by the
// caller.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}
