package broker

import (
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// The fourth step of a send (send.go): where the message goes and what its properties say.

// redirect sets m's properties from the request's and moves m where RocketMQ stores it instead
// of its topic: %DLQ%<group> for an exhausted retry, the half topic for a transaction half
// message, the schedule topic for a DELAY level, the timer topic for a timer property. It
// returns the transaction id the answer carries (a half message's UNIQ_KEY), or the response
// refusing the send.
func (s *sender) redirect(req *remoting.Command, h *protocol.SendMessageRequestHeader, m *storage.Message) (string, *remoting.Command) {
	props := h.Properties
	if resp := s.handleRetryAndDLQ(req, h, m, &props); resp != nil {
		return "", resp
	}
	m.Properties = setProperty(props, message.PropertyCluster, s.opts.Broker.ClusterName)
	var txID string
	if transactionHalf(h.Properties, h.ReconsumeTimes) {
		// The property decides, as in RocketMQ, whatever the sysFlag says. A DELAY level
		// waits for the commit (internal/broker/transaction). Without Transactions a half
		// message is refused as with RejectTransactionMessage.
		if s.opts.Transactions.Reject || !s.seams.prepareHalf(m) {
			return "", sendResponse(remoting.NoPermission, s.rejectTxRemark)
		}
		// RocketMQ answers a half message with its UNIQ_KEY as transaction id.
		txID, _ = message.PropertyValueString(m.Properties, message.PropertyUniqKey)
	} else {
		switch message.TransactionType(m.SysFlag) {
		case message.TransactionNotType, message.TransactionCommitType:
			if resp := s.seams.schedule(m); resp != nil {
				return "", resp
			}
		}
	}
	if len(m.Properties) > message.MaxPropertiesBytes {
		return "", sendResponse(remoting.MessageIllegal, s.illegalRemark)
	}
	return txID, nil
}

// sendDLQQueueNums is the queue count of a dead-letter topic the send path creates
// (DLQ_NUMS_PER_GROUP).
const sendDLQQueueNums = 1

// handleRetryAndDLQ redirects a message sent to %RETRY%<group> to %DLQ%<group> (one queue,
// read-write) once its reconsume times reach reconsumeLimit (RocketMQ handleRetryAndDLQ). A message
// going to the DLQ loses its DELAY property, so it lands there at once rather than after the
// longest delay. props is the message's properties string, updated in place.
func (s *sender) handleRetryAndDLQ(req *remoting.Command, h *protocol.SendMessageRequestHeader, m *storage.Message, props *string) *remoting.Command {
	if !strings.HasPrefix(h.Topic, names.RetryPrefix) {
		return nil
	}
	group := h.Topic[len(names.RetryPrefix):]
	gc, err := s.groups.Lookup(group)
	if err != nil {
		return sendResponse(remoting.SubscriptionGroupNotExist, GroupRemark(err, "subscription group not exist, "+group))
	}
	if h.ReconsumeTimes < reconsumeLimit(req, h.MaxReconsumeTimes, gc.RetryMaxTimes) {
		return nil
	}
	dlq := names.DLQTopic(group)
	if _, err := s.topics.CreateIfAbsent(dlq, sendDLQQueueNums, dlqPerm, 0); err != nil {
		return sendResponse(remoting.TopicNotExist, s.topicsFullRemark(dlq))
	}
	m.Topic = dlq
	m.QueueID = 0 // RocketMQ: random % DLQ_NUMS_PER_GROUP
	*props = removeProperty(*props, message.PropertyDelayTimeLevel)
	return nil
}

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
