package rebalance_test

import (
	"fmt"
	"strings"

	"github.com/mqgo/mq/rebalance"
)

// Every member of a group runs the same strategy over the same queues and client ids and
// keeps only its own share; together the shares cover every queue once.
func ExampleAveragely() {
	var queues []rebalance.MessageQueue
	for _, broker := range []string{"broker-b", "broker-a"} {
		for id := range 4 {
			queues = append(queues, rebalance.MessageQueue{Topic: "TopicTest", BrokerName: broker, QueueID: id})
		}
	}
	clients := []string{"10.0.0.3@300", "10.0.0.1@100", "10.0.0.2@200"}

	s := rebalance.Averagely()
	for _, c := range []string{"10.0.0.1@100", "10.0.0.2@200", "10.0.0.3@300"} {
		fmt.Print(c, ":")
		for _, q := range s.Allocate("group", c, queues, clients) {
			fmt.Printf(" %s/%d", q.BrokerName, q.QueueID)
		}
		fmt.Println()
	}
	// Output:
	// 10.0.0.1@100: broker-a/0 broker-a/1 broker-a/2
	// 10.0.0.2@200: broker-a/3 broker-b/0 broker-b/1
	// 10.0.0.3@300: broker-b/2 broker-b/3
}

// Queues of brokers in a room with consumers stay in that room; here the only consumer in
// "hz" takes all of hz's queues, and the "bj" queues, which have no consumer nearby, are
// shared by everyone.
func ExampleMachineRoomNearby() {
	queues := []rebalance.MessageQueue{
		{Topic: "T", BrokerName: "hz@broker-a", QueueID: 0},
		{Topic: "T", BrokerName: "hz@broker-a", QueueID: 1},
		{Topic: "T", BrokerName: "sh@broker-b", QueueID: 0},
		{Topic: "T", BrokerName: "sh@broker-b", QueueID: 1},
		{Topic: "T", BrokerName: "bj@broker-c", QueueID: 0},
		{Topic: "T", BrokerName: "bj@broker-c", QueueID: 1},
	}
	clients := []string{"hz@10.0.0.1@1", "sh@10.0.1.1@1", "sh@10.0.1.2@1"}

	s := rebalance.MachineRoomNearby(rebalance.Averagely(), atPrefix{})
	fmt.Println(s.Name())
	for _, c := range clients {
		fmt.Print(c, ":")
		for _, q := range s.Allocate("group", c, queues, clients) {
			fmt.Printf(" %s/%d", q.BrokerName, q.QueueID)
		}
		fmt.Println()
	}
	// Output:
	// MACHINE_ROOM_NEARBY-AVG
	// hz@10.0.0.1@1: bj@broker-c/0 hz@broker-a/0 hz@broker-a/1
	// sh@10.0.1.1@1: bj@broker-c/1 sh@broker-b/0
	// sh@10.0.1.2@1: sh@broker-b/1
}

// atPrefix is a MachineRoomResolver for names that start with "room@".
type atPrefix struct{}

func (atPrefix) BrokerRoom(q rebalance.MessageQueue) string { return roomOf(q.BrokerName) }
func (atPrefix) ConsumerRoom(clientID string) string        { return roomOf(clientID) }

func roomOf(name string) string {
	room, _, found := strings.Cut(name, "@")
	if !found {
		return "" // unknown: Allocate then gives nobody anything
	}
	return room
}
