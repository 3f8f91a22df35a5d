package rebalance

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMessageQueueString(t *testing.T) {
	q := MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueID: 3}
	// RocketMQ's MessageQueue.toString; ConsistentHash hashes this text.
	const want = "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]"
	if got := q.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestSortQueues(t *testing.T) {
	want := []MessageQueue{
		{Topic: "A", BrokerName: "broker-b", QueueID: 5},
		{Topic: "B", BrokerName: "broker-a", QueueID: 0},
		{Topic: "B", BrokerName: "broker-a", QueueID: 2},
		{Topic: "B", BrokerName: "broker-a", QueueID: 10}, // numeric, not textual, order
		{Topic: "B", BrokerName: "broker-b", QueueID: 1},
		{Topic: "a", BrokerName: "broker-a", QueueID: 0}, // bytewise: upper case first
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		got := shuffled(r, want)
		SortQueues(got)
		checkQueues(t, "sorted", want, got)
	}
	if !slices.IsSortedFunc(want, CompareQueues) {
		t.Error("CompareQueues disagrees with SortQueues")
	}
	if c := CompareQueues(want[1], want[1]); c != 0 {
		t.Errorf("CompareQueues(q, q) = %d, want 0", c)
	}
}
