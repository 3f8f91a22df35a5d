package broker

import (
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
	m.Properties = message.SetProperty(props, message.PropertyCluster, s.opts.Broker.ClusterName)
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
	if _, err := s.topics.CreateIfAbsent(dlq, dlqQueueNums, dlqPerm, 0); err != nil {
		return sendResponse(remoting.TopicNotExist, s.topicsFullRemark(dlq))
	}
	m.Topic = dlq
	m.QueueID = 0 // RocketMQ: random % DLQ_NUMS_PER_GROUP
	*props = message.RemoveProperty(*props, message.PropertyDelayTimeLevel)
	return nil
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
	return reconsumeTimes <= 0 || message.DelayLevel(props) <= 0
}
