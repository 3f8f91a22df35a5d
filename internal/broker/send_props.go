package broker

import (
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/message"
)

// Editing encoded properties strings ("name 0x01 value 0x02" pairs, docs/protocol.md §9.3) without
// decoding them into a map: the send path adds CLUSTER to every message, so the common case is
// one concatenation.

// setProperty returns props with key set to value. When key is absent (the common case) the pair
// is appended; otherwise every piece named key is dropped first, so the result parses to the
// same map with key replaced.
func setProperty(props, key, value string) string {
	if v, ok := message.PropertyValueString(props, key); ok {
		if v == value {
			return props
		}
		props = removeProperty(props, key)
	}
	if props != "" && props[len(props)-1] != message.PropertySeparator {
		return props + string(message.PropertySeparator) + key + string(message.NameValueSeparator) + value +
			string(message.PropertySeparator)
	}
	return props + key + string(message.NameValueSeparator) + value + string(message.PropertySeparator)
}

// removeProperty returns props without the pieces named key. Other pieces are kept byte for
// byte, malformed ones included.
func removeProperty(props, key string) string {
	if !strings.Contains(props, key) {
		return props
	}
	var sb strings.Builder
	sb.Grow(len(props))
	for rest := props; rest != ""; {
		piece := rest
		if i := strings.IndexByte(rest, message.PropertySeparator); i >= 0 {
			piece, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = ""
		}
		if len(piece) > len(key) && piece[len(key)] == message.NameValueSeparator && piece[:len(key)] == key {
			continue
		}
		sb.WriteString(piece)
	}
	return sb.String()
}

// joinProperties appends a batch's wrapper properties to one element's, as RocketMQ 4.9's batch
// encoder does, adding the separator the element may lack.
func joinProperties(elem []byte, batch string) string {
	if batch == "" {
		return string(elem)
	}
	if len(elem) > 0 && elem[len(elem)-1] != message.PropertySeparator {
		return string(elem) + string(message.PropertySeparator) + batch
	}
	return string(elem) + batch
}

// delayLevel returns the DELAY property as a level, or 0 when absent or not a number.
func delayLevel(props string) int {
	v, ok := message.PropertyValueString(props, message.PropertyDelayTimeLevel)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// transactionHalf reports whether a send is a transaction half message, decided as RocketMQ
// 4.9's SendMessageProcessor decides it: TRAN_MSG parses as true (Java's Boolean.parseBoolean,
// case-insensitive), except for a retry with a delay level, which clients before 4.6.1 send
// back with the property still set.
func transactionHalf(props string, reconsumeTimes int32) bool {
	v, ok := message.PropertyValueString(props, message.PropertyTransactionPrepared)
	if !ok || !strings.EqualFold(v, "true") {
		return false
	}
	return reconsumeTimes <= 0 || delayLevel(props) <= 0
}
