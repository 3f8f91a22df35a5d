package rebalance

import (
	"cmp"
	"slices"
	"strconv"
)

// MessageQueue names one queue of a topic on one broker (a master/slave set), as RocketMQ's
// MessageQueue does. It is a comparable value type and can key maps. It is the module's one
// queue type: the producer, the consumer and the wire bodies that carry queues (lock batches,
// admin statistics) all use it, and its JSON form is RocketMQ's.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// String formats q exactly as RocketMQ's MessageQueue.toString and the official Go client's
// MessageQueue.String do:
//
//	MessageQueue [topic=T, brokerName=B, queueId=N]
//
// ConsistentHash hashes this text to place a queue on its ring, so the format is part of the
// allocation: do not change it.
func (q MessageQueue) String() string {
	return "MessageQueue [topic=" + q.Topic + ", brokerName=" + q.BrokerName +
		", queueId=" + strconv.Itoa(q.QueueID) + "]"
}

// CompareQueues orders queues by topic, then broker name, then queue id, the order RocketMQ
// clients sort a topic's queues into before allocating them. Strings compare bytewise
// (strings.Compare), as the official Go client does. It returns a negative number, zero or a
// positive number, as cmp.Compare does, so it can be passed to slices.SortFunc.
func CompareQueues(a, b MessageQueue) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(a.QueueID, b.QueueID)
}

// SortQueues sorts qs in place into the order of CompareQueues.
func SortQueues(qs []MessageQueue) {
	slices.SortFunc(qs, CompareQueues)
}
