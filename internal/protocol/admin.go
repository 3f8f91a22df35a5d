package protocol

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Admin request headers and bodies of the broker (RocketMQ 4.x AdminBrokerProcessor).
//
// Bodies keyed by MessageQueue (TopicStatsTable, ConsumeStats) are written the way Java's
// fastjson writes a Map with object keys, which is not strict JSON (docs/protocol.md §7.5):
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,...}}}
//
// Their decoders accept that form and the strict one with [key, value] pairs.

// ErrMalformedBody wraps every error decoding an admin body.
var ErrMalformedBody = errors.New("protocol: malformed body")

// GetConsumeStatsRequestHeader is the header of GET_CONSUME_STATS (208). An empty Topic asks
// for every topic the group has offsets for.
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,omitempty"`
}

// DeleteSubscriptionGroupRequestHeader is the header of DELETE_SUBSCRIPTIONGROUP (207).
// RemoveOffset (RocketMQ 4.9.3+) also drops the group's consumer offsets.
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName    string `ext:"groupName,required"`
	RemoveOffset bool   `ext:"removeOffset"`
}

// MessageQueue is declared in consumer.go.

// compareMessageQueue orders queues by topic, broker name, queue id.
func compareMessageQueue(a, b MessageQueue) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(a.QueueID, b.QueueID)
}

// appendMessageQueue writes mq as fastjson does: fields in name order, no whitespace.
func appendMessageQueue(dst []byte, mq MessageQueue) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendJSONString(dst, mq.BrokerName)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(mq.QueueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = appendJSONString(dst, mq.Topic)
	return append(dst, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// TopicOffset is one queue's entry of a TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is the body of GET_TOPIC_STATS_INFO: each queue's offsets and the store time
// of its last message.
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
}

// Encode returns the table in fastjson's object-key form, queues sorted.
func (t *TopicStatsTable) Encode() []byte {
	dst := append(make([]byte, 0, 64+96*len(t.OffsetTable)), `{"offsetTable":{`...)
	for i, mq := range slices.SortedFunc(maps.Keys(t.OffsetTable), compareMessageQueue) {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := t.OffsetTable[mq]
		dst = appendMessageQueue(dst, mq)
		dst = append(dst, `:{"lastUpdateTimestamp":`...)
		dst = strconv.AppendInt(dst, v.LastUpdateTimestamp, 10)
		dst = append(dst, `,"maxOffset":`...)
		dst = strconv.AppendInt(dst, v.MaxOffset, 10)
		dst = append(dst, `,"minOffset":`...)
		dst = strconv.AppendInt(dst, v.MinOffset, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}', '}')
}

// DecodeTopicStatsTable parses a TopicStatsTable body. Errors wrap ErrMalformedBody.
func DecodeTopicStatsTable(b []byte) (*TopicStatsTable, error) {
	t := &TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{}}
	err := scanObject(b, func(key, val []byte) error {
		if name, err := fieldName(key); err != nil || name != "offsetTable" {
			return err
		}
		return decodeQueueMap(val, func(mq MessageQueue, v []byte) error {
			var o TopicOffset
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			t.OffsetTable[mq] = o
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%w: topic stats: %v", ErrMalformedBody, err)
	}
	return t, nil
}

// EncodeOffsetSerializeWrapper writes a queue -> offset table as fastjson writes the Java
// client's OffsetSerializeWrapper, the broadcasting consumer's offsets.json
// ({"offsetTable":{<queue>:12,...}}), queues sorted and without whitespace.
func EncodeOffsetSerializeWrapper(offsets map[MessageQueue]int64) []byte {
	dst := append(make([]byte, 0, 32+64*len(offsets)), `{"offsetTable":{`...)
	for i, mq := range slices.SortedFunc(maps.Keys(offsets), compareMessageQueue) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessageQueue(dst, mq)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, offsets[mq], 10)
	}
	return append(dst, '}', '}')
}

// DecodeOffsetSerializeWrapper reads an OffsetSerializeWrapper as the Java client writes it
// (pretty-printed fastjson with object keys) or as EncodeOffsetSerializeWrapper does. Errors
// wrap ErrMalformedBody.
func DecodeOffsetSerializeWrapper(b []byte) (map[MessageQueue]int64, error) {
	offsets := map[MessageQueue]int64{}
	err := scanObject(b, func(key, val []byte) error {
		if name, err := fieldName(key); err != nil || name != "offsetTable" {
			return err
		}
		return decodeQueueMap(val, func(mq MessageQueue, v []byte) error {
			off, err := strconv.ParseInt(string(trimSpace(v)), 10, 64)
			offsets[mq] = off
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%w: offset table: %v", ErrMalformedBody, err)
	}
	return offsets, nil
}

// OffsetWrapper is one queue's entry of ConsumeStats.
type OffsetWrapper struct {
	// BrokerOffset is the queue's max offset.
	BrokerOffset int64 `json:"brokerOffset"`
	// ConsumerOffset is the group's committed offset (0 when none).
	ConsumerOffset int64 `json:"consumerOffset"`
	// LastTimestamp is the store time of the last consumed message (0 when unknown).
	LastTimestamp int64 `json:"lastTimestamp"`
}

// ConsumeStats is the body of GET_CONSUME_STATS: a group's progress per queue.
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// Encode returns the stats in fastjson's object-key form, queues sorted.
func (s *ConsumeStats) Encode() []byte {
	dst := append(make([]byte, 0, 64+112*len(s.OffsetTable)), `{"consumeTps":`...)
	dst = strconv.AppendFloat(dst, s.ConsumeTps, 'f', -1, 64)
	if s.ConsumeTps == float64(int64(s.ConsumeTps)) {
		dst = append(dst, ".0"...) // fastjson writes doubles with a fraction
	}
	dst = append(dst, `,"offsetTable":{`...)
	for i, mq := range slices.SortedFunc(maps.Keys(s.OffsetTable), compareMessageQueue) {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := s.OffsetTable[mq]
		dst = appendMessageQueue(dst, mq)
		dst = append(dst, `:{"brokerOffset":`...)
		dst = strconv.AppendInt(dst, v.BrokerOffset, 10)
		dst = append(dst, `,"consumerOffset":`...)
		dst = strconv.AppendInt(dst, v.ConsumerOffset, 10)
		dst = append(dst, `,"lastTimestamp":`...)
		dst = strconv.AppendInt(dst, v.LastTimestamp, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}', '}')
}

// DecodeConsumeStats parses a ConsumeStats body. Errors wrap ErrMalformedBody.
func DecodeConsumeStats(b []byte) (*ConsumeStats, error) {
	s := &ConsumeStats{OffsetTable: map[MessageQueue]OffsetWrapper{}}
	err := scanObject(b, func(key, val []byte) error {
		name, err := fieldName(key)
		if err != nil {
			return err
		}
		switch name {
		case "consumeTps":
			return json.Unmarshal(val, &s.ConsumeTps)
		case "offsetTable":
			return decodeQueueMap(val, func(mq MessageQueue, v []byte) error {
				var o OffsetWrapper
				if err := json.Unmarshal(v, &o); err != nil {
					return err
				}
				s.OffsetTable[mq] = o
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: consume stats: %v", ErrMalformedBody, err)
	}
	return s, nil
}

// ConsumerOffsetSerializeWrapper is the body of GET_ALL_CONSUMER_OFFSET (43) and the content of
// consumerOffset.json: "topic@group" -> queue id -> next offset to consume. Slaves sync their
// offsets from it. encoding/json writes it as strict JSON ({"0":12});
// DecodeConsumerOffsetSerializeWrapper also reads what Java's fastjson writes, integer keys
// bare ({0:12}).
type ConsumerOffsetSerializeWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// DecodeConsumerOffsetSerializeWrapper parses a GET_ALL_CONSUMER_OFFSET body or
// consumerOffset.json, strict JSON or fastjson's. Errors wrap ErrMalformedBody.
func DecodeConsumerOffsetSerializeWrapper(b []byte) (*ConsumerOffsetSerializeWrapper, error) {
	var w ConsumerOffsetSerializeWrapper
	if err := json.Unmarshal(quoteBareKeys(b), &w); err != nil {
		return nil, fmt.Errorf("%w: consumer offsets: %v", ErrMalformedBody, err)
	}
	return &w, nil
}

// DelayOffsetSerializeWrapper is the body of GET_ALL_DELAY_OFFSET (45) and the content of
// delayOffset.json: delay level -> offset of the next unit of SCHEDULE_TOPIC_XXXX queue
// level-1 to deliver. Slaves sync their copy from it. Java brokers write the levels bare
// ({"offsetTable":{1:0,2:5}}); DecodeDelayOffsetSerializeWrapper reads both forms.
type DelayOffsetSerializeWrapper struct {
	OffsetTable map[int32]int64 `json:"offsetTable"`
}

// DecodeDelayOffsetSerializeWrapper parses a GET_ALL_DELAY_OFFSET body or delayOffset.json,
// strict JSON or fastjson's. Errors wrap ErrMalformedBody.
func DecodeDelayOffsetSerializeWrapper(b []byte) (*DelayOffsetSerializeWrapper, error) {
	var w DelayOffsetSerializeWrapper
	if err := json.Unmarshal(quoteBareKeys(b), &w); err != nil {
		return nil, fmt.Errorf("%w: delay offsets: %v", ErrMalformedBody, err)
	}
	return &w, nil
}

// quoteBareKeys returns b with every object key written as a bare number quoted, turning
// fastjson's {0:12} into {"0":12}. Text inside strings is left alone; b is returned as is when
// it has no bare key.
func quoteBareKeys(b []byte) []byte {
	var out []byte
	last := 0       // b[last:] not yet copied to out
	expect := false // after '{' or ',' of an object: a key may start
	var stack []byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			end, err := skipString(b, i)
			if err != nil {
				return b // let json.Unmarshal report it
			}
			i, expect = end-1, false
		case c == '{' || c == '[':
			stack = append(stack, c)
			expect = c == '{'
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expect = false
		case c == ',':
			expect = len(stack) > 0 && stack[len(stack)-1] == '{'
		case isSpace(c):
		case expect && (c == '-' || c >= '0' && c <= '9'):
			j := i + 1
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if k := skipSpace(b, j); k < len(b) && b[k] == ':' {
				out = append(out, b[last:i]...)
				out = append(out, '"')
				out = append(out, b[i:j]...)
				out = append(out, '"')
				last = j
			}
			i, expect = j-1, false
		default:
			expect = false
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// decodeQueueMap walks a map keyed by MessageQueue, in fastjson object-key form or as a strict
// JSON array of [key, value] pairs.
func decodeQueueMap(b []byte, fn func(MessageQueue, []byte) error) error {
	b = trimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(b, &pairs); err != nil {
			return err
		}
		for _, p := range pairs {
			if len(p) != 2 {
				return errors.New("map entry is not a [key, value] pair")
			}
			var mq MessageQueue
			if err := json.Unmarshal(p[0], &mq); err != nil {
				return err
			}
			if err := fn(mq, p[1]); err != nil {
				return err
			}
		}
		return nil
	}
	return scanObject(b, func(key, val []byte) error {
		var mq MessageQueue
		if err := json.Unmarshal(key, &mq); err != nil {
			return fmt.Errorf("queue key %s: %v", key, err)
		}
		return fn(mq, val)
	})
}

// fieldName unquotes an object key that must be a string.
func fieldName(key []byte) (string, error) {
	var s string
	err := json.Unmarshal(key, &s)
	return s, err
}

// scanObject calls fn with the raw key and value of each member of the JSON-like object b. Keys
// may be strings or, as fastjson writes them, objects; values are any JSON value.
func scanObject(b []byte, fn func(key, val []byte) error) error {
	b = trimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return errors.New("not an object")
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return errors.New("data after object")
		}
		return nil
	}
	for {
		kEnd, err := skipValue(b, i)
		if err != nil {
			return err
		}
		key := b[i:kEnd]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return errors.New("missing ':' after key")
		}
		i = skipSpace(b, i+1)
		vEnd, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if err := fn(key, b[i:vEnd]); err != nil {
			return err
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			return errors.New("unterminated object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return errors.New("data after object")
			}
			return nil
		default:
			return fmt.Errorf("unexpected %q in object", b[i])
		}
	}
}

// skipValue returns the end of the JSON value starting at b[i]. Nested objects and arrays are
// matched by bracket depth; their content is checked later by json.Unmarshal.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("missing value")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated value")
	case '}', ']', ',', ':':
		return 0, fmt.Errorf("unexpected %q", b[i])
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	return j, nil
}

func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}
