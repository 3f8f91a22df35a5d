package tables

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/route"
)

// RocketMQ 5's topic attributes (TopicAttributes, AttributeParser, AttributeUtil): a topic's
// TopicConfig carries a map of them, UPDATE_AND_CREATE_TOPIC changes it with an "attributes"
// header such as "+message.type=FIFO,-reserve.time", and the broker refuses keys it does not
// know, values outside a key's set and changes to keys that may only be set at creation.
//
// A topic's attribute map is never changed in place: Alter returns a new map, so the copies
// the table hands out (Get, Snapshot) may share it.

// Attribute keys (TopicAttributes).
const (
	AttrMessageType   = "message.type"
	AttrQueueType     = "queue.type"
	AttrCleanupPolicy = "cleanup.policy"
	AttrReserveTime   = "reserve.time"
)

// Message types, the values of message.type (TopicMessageType).
const (
	TypeUnspecified = "UNSPECIFIED"
	TypeNormal      = "NORMAL"
	TypeFIFO        = "FIFO"
	TypeDelay       = "DELAY"
	TypeTransaction = "TRANSACTION"
	TypeMixed       = "MIXED"
)

// attribute is one key RocketMQ 5 knows: whether an existing topic may change it, and the
// values this broker accepts for it.
type attribute struct {
	changeable bool
	values     []string
}

// topicAttributes are the keys UPDATE_AND_CREATE_TOPIC may set. RocketMQ 5 also accepts
// queue.type=BatchCQ, cleanup.policy=COMPACTION and reserve.time (a per-topic retention);
// this broker has none of them, so it accepts only the values it honours — the defaults, which
// describe what every topic here is — and refuses reserve.time rather than store a setting it
// would ignore (docs/rocketmq-differences.md).
var topicAttributes = map[string]attribute{
	AttrMessageType: {changeable: true, values: []string{TypeUnspecified, TypeNormal, TypeFIFO, TypeDelay,
		TypeTransaction, TypeMixed}},
	AttrQueueType:     {values: []string{"SimpleCQ"}},
	AttrCleanupPolicy: {values: []string{"DELETE"}},
}

// ParseAttributes reads an attributes modification, "+key=value" to add or change a key and
// "-key" to delete one, comma-separated (AttributeParser.parseToMap). The map's keys keep
// their sign. The error says what is malformed, as RocketMQ's remarks do.
func ParseAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for kv := range strings.SplitSeq(s, ",") {
		key, value, isSet := strings.Cut(kv, "=")
		switch {
		case isSet && !strings.HasPrefix(key, "+"):
			return nil, fmt.Errorf("add/alter attribute format is wrong: %s", quoteAttr(key))
		case isSet && (value == "" || strings.Contains(value, "=")):
			return nil, fmt.Errorf("add/alter attribute format is wrong: %s", quoteAttr(kv))
		case !isSet && !strings.HasPrefix(key, "-"):
			return nil, fmt.Errorf("delete attribute format is wrong: %s", quoteAttr(key))
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key duplication: %s", quoteAttr(key))
		}
		out[key] = value
	}
	return out, nil
}

// quoteAttr bounds what a remark repeats of a client's attribute text.
func quoteAttr(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return s
}

// AlterAttributes applies a parsed modification to a topic's current attributes as
// AttributeUtil.alterCurrentAttributes does: a new topic (create) takes only additions; an
// existing one may add, change and delete keys, but not change a key fixed at creation nor
// delete one it lacks; every key must be known and every value in its set. current is not
// changed; the result is a new map, nil when empty.
func AlterAttributes(create bool, current, mods map[string]string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	seen := make(map[string]bool, len(mods))
	for key := range mods {
		real := key[1:]
		if seen[real] {
			return nil, fmt.Errorf("alter duplication key. key: %s", quoteAttr(real))
		}
		seen[real] = true
	}
	// Sorted, so that a request with several faults is told the same one every time.
	for _, key := range slices.Sorted(maps.Keys(mods)) {
		value := mods[key]
		real := key[1:] // ParseAttributes left only signed keys
		if real == "" || strings.ContainsAny(real, "+-") {
			//lint:ignore ST1005 RocketMQ 5's remark (AttributeParser), word for word
			return nil, errors.New("kv string format wrong.")
		}
		attr, known := topicAttributes[real]
		if !known {
			if real == AttrReserveTime {
				return nil, fmt.Errorf("unsupported key: %s (this broker has no per-topic retention)", real)
			}
			return nil, fmt.Errorf("unsupported key: %s", quoteAttr(real))
		}
		_, has := current[real]
		switch {
		case create && key[0] != '+':
			return nil, fmt.Errorf("only add attribute is supported while creating topic. key: %s", real)
		case key[0] == '-' && !has:
			return nil, fmt.Errorf("attempt to delete a nonexistent key: %s", real)
		case !create && !attr.changeable:
			return nil, fmt.Errorf("attempt to update an unchangeable attribute. key: %s", real)
		}
		if key[0] == '-' {
			delete(out, real)
			continue
		}
		if !slices.Contains(attr.values, value) {
			return nil, fmt.Errorf("value is not in set: [%s]", strings.Join(attr.values, ", "))
		}
		out[real] = value
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// AttributeError is a refused attributes modification; its message is the remark.
type AttributeError struct{ Err error }

func (e *AttributeError) Error() string { return e.Err.Error() }
func (e *AttributeError) Unwrap() error { return e.Err }

// MessageType is a topic's message.type, TypeNormal when it has none (TopicConfig
// .getTopicMessageType), and whether it was set.
func MessageType(tc route.TopicConfig) (string, bool) {
	t, ok := tc.Attributes[AttrMessageType]
	if !ok {
		return TypeNormal, false
	}
	return t, true
}

// MessageTypeOf is the message.type a message's properties make it (TopicMessageType
// .parseFromMessageProperty), which a send to a typed topic must match: TRANSACTION for a half
// message, DELAY for a delay level or a timer, FIFO for a message group (the key 5.x's clients
// and proxy set; 4.x's SHARDING_KEY was renamed), else NORMAL.
func MessageTypeOf(props string) string {
	if v, _ := message.PropertyValueString(props, message.PropertyTransactionPrepared); v == "true" {
		return TypeTransaction
	}
	for _, k := range []string{message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if _, ok := message.PropertyValueString(props, k); ok {
			return TypeDelay
		}
	}
	if _, ok := message.PropertyValueString(props, message.PropertyMessageGroup); ok {
		return TypeFIFO
	}
	return TypeNormal
}

// scrubAttributes drops from a topic what a request could not have set — unknown keys, values
// outside their sets — from a table loaded from disk or sent by a master, and reports whether
// it dropped anything: a hand-edited file or a newer master must not make the send path read a
// type it does not know.
func scrubAttributes(tc *route.TopicConfig) bool {
	var bad bool
	for k, v := range tc.Attributes {
		if a, ok := topicAttributes[k]; !ok || !slices.Contains(a.values, v) {
			bad = true
			break
		}
	}
	if !bad {
		return false
	}
	kept := map[string]string{}
	for k, v := range tc.Attributes {
		if a, ok := topicAttributes[k]; ok && slices.Contains(a.values, v) {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	tc.Attributes = kept
	return true
}

// scrubTable scrubs every topic's attributes and returns how many it changed.
func scrubTable(table map[string]route.TopicConfig) int {
	n := 0
	for name, tc := range table {
		if scrubAttributes(&tc) {
			table[name] = tc
			n++
		}
	}
	return n
}
