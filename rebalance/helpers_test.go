package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const testTopic = "TopicTest"

// mq returns queue id of broker in testTopic.
func mq(broker string, id int) MessageQueue {
	return MessageQueue{Topic: testTopic, BrokerName: broker, QueueID: id}
}

// brokerQueues returns queues 0…n-1 of each broker, in order.
func brokerQueues(n int, brokers ...string) []MessageQueue {
	var qs []MessageQueue
	for _, b := range brokers {
		for i := range n {
			qs = append(qs, mq(b, i))
		}
	}
	return qs
}

// short formats queues as "broker/id" for failure messages.
func short(qs []MessageQueue) string {
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = fmt.Sprintf("%s/%s/%d", q.Topic, q.BrokerName, q.QueueID)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func checkQueues(t *testing.T, what string, want, got []MessageQueue) {
	t.Helper()
	if !slices.Equal(want, got) {
		t.Errorf("%s:\nwant %s\ngot  %s", what, short(want), short(got))
	}
}

// Rooms used by generated scenarios. Brokers of broker-e have no room in their name;
// machine room "gz" has consumers but no brokers, "bj" brokers but maybe no consumers.
var (
	scenarioBrokers = []string{"hz@broker-a", "hz@broker-b", "sh@broker-c", "bj@broker-d", "broker-e"}
	scenarioRooms   = []string{"hz", "sh", "gz"}
)

// scenario is one group's view of a topic: its queues and its members' client ids, in the
// (unsorted) order they arrived in.
type scenario struct {
	queues  []MessageQueue
	clients []string
}

// randomScenario makes up to 40 distinct queues over one or two topics and 1 to 12
// distinct client ids of the form "room-ip@pid".
func randomScenario(r *rand.Rand) scenario {
	var sc scenario
	nq, nc := r.IntN(41), 1+r.IntN(12)
	seenQ := make(map[MessageQueue]bool)
	for len(sc.queues) < nq {
		q := MessageQueue{
			Topic:      fmt.Sprintf("T%d", r.IntN(2)),
			BrokerName: scenarioBrokers[r.IntN(len(scenarioBrokers))],
			QueueID:    r.IntN(16),
		}
		if !seenQ[q] {
			seenQ[q] = true
			sc.queues = append(sc.queues, q)
		}
	}
	seenC := make(map[string]bool)
	for len(sc.clients) < nc {
		c := fmt.Sprintf("%s-10.0.%d.%d@%d", scenarioRooms[r.IntN(len(scenarioRooms))], r.IntN(3), r.IntN(20), r.IntN(5000))
		if !seenC[c] {
			seenC[c] = true
			sc.clients = append(sc.clients, c)
		}
	}
	return sc
}

// shuffled returns a shuffled copy of xs.
func shuffled[T any](r *rand.Rand, xs []T) []T {
	c := slices.Clone(xs)
	r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	return c
}

// prefixResolver resolves rooms from names: a broker "room@name" is in room, a broker
// without "@" in "none"; a client "room-rest" is in room.
type prefixResolver struct{}

func (prefixResolver) BrokerRoom(q MessageQueue) string {
	if room, ok := brokerMachineRoom(q.BrokerName); ok {
		return room
	}
	return "none"
}

func (prefixResolver) ConsumerRoom(clientID string) string {
	room, _, _ := strings.Cut(clientID, "-")
	return room
}
