package rebalance

import (
	"math/rand/v2"
	"testing"
)

func TestBrokerMachineRoom(t *testing.T) {
	// Java's brokerName.split("@") drops trailing empty fields; two must remain.
	tests := []struct {
		broker string
		room   string
		ok     bool
	}{
		{"hz@broker-a", "hz", true},
		{"broker-a", "", false},
		{"hz@", "", false},      // Java: ["hz"]
		{"hz@@", "", false},     // Java: ["hz"]
		{"a@b@c", "", false},    // three fields
		{"a@b@", "a", true},     // Java: ["a", "b"]
		{"@broker-a", "", true}, // Java: ["", "broker-a"]: room ""
		{"@", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		room, ok := brokerMachineRoom(tt.broker)
		if room != tt.room || ok != tt.ok {
			t.Errorf("brokerMachineRoom(%q) = %q, %v; want %q, %v", tt.broker, room, ok, tt.room, tt.ok)
		}
	}
}

// TestByMachineRoomJavaSplit checks ByMachineRoom against a split worked out by hand from
// Java's AllocateMessageQueueByMachineRoom: eligible queues e = 7, clients c = 3, so each
// takes the block of e/c = 2 at index*2, and the first e%c = 1 client also takes eligible
// queue 2*3+0 = 6.
func TestByMachineRoomJavaSplit(t *testing.T) {
	a, b := "hz@broker-a", "hz@broker-b"
	queues := append(append(brokerQueues(4, a), brokerQueues(3, b)...),
		append(brokerQueues(2, "sh@broker-c"), mq("broker-e", 0))...)
	clients := []string{"c3", "c1", "c2"}
	want := map[string][]MessageQueue{
		"c1": {mq(a, 0), mq(a, 1), mq(b, 2)},
		"c2": {mq(a, 2), mq(a, 3)},
		"c3": {mq(b, 0), mq(b, 1)},
	}
	s := ByMachineRoom([]string{"hz", "gz", "hz"})
	r := rand.New(rand.NewPCG(11, 11))
	for _, c := range clients {
		got := s.Allocate("group", c, shuffled(r, queues), shuffled(r, clients))
		checkQueues(t, c, want[c], got)
	}
}

// TestMachineRoomNearby checks a hand-worked case with Averagely inside. Rooms: hz (queues
// and consumers hz-1, hz-2), sh (queues and consumer sh-1), bj and none (queues only).
//
//	hz queues a0..a3 among hz-1, hz-2:    hz-1 a0 a1, hz-2 a2 a3
//	sh queues c0 c1 among sh-1:           sh-1 c0 c1
//	bj queues d0..d2 among all three:     hz-1 d0, hz-2 d1, sh-1 d2
//	none queue e0 among all three:        hz-1 e0
func TestMachineRoomNearby(t *testing.T) {
	a, c, d, e := "hz@broker-a", "sh@broker-c", "bj@broker-d", "broker-e"
	queues := append(append(brokerQueues(4, a), brokerQueues(2, c)...),
		append(brokerQueues(3, d), mq(e, 0))...)
	clients := []string{"sh-1", "hz-2", "hz-1"}
	want := map[string][]MessageQueue{ // sorted: "bj@…" < "broker-e" < "hz@…" < "sh@…"
		"hz-1": {mq(d, 0), mq(e, 0), mq(a, 0), mq(a, 1)},
		"hz-2": {mq(d, 1), mq(a, 2), mq(a, 3)},
		"sh-1": {mq(d, 2), mq(c, 0), mq(c, 1)},
	}
	s := MachineRoomNearby(Averagely(), prefixResolver{})
	r := rand.New(rand.NewPCG(13, 13))
	for _, id := range clients {
		got := s.Allocate("group", id, shuffled(r, queues), shuffled(r, clients))
		checkQueues(t, id, want[id], got)
	}
}

// blankResolver is prefixResolver, except that it knows no room for one broker or client.
type blankResolver struct {
	prefixResolver
	broker, client string
}

func (r blankResolver) BrokerRoom(q MessageQueue) string {
	if q.BrokerName == r.broker {
		return ""
	}
	return r.prefixResolver.BrokerRoom(q)
}

func (r blankResolver) ConsumerRoom(id string) string {
	if id == r.client {
		return ""
	}
	return r.prefixResolver.ConsumerRoom(id)
}

func TestMachineRoomNearbyUnknownRoom(t *testing.T) {
	// RocketMQ throws when a room is unknown; we give every member nothing.
	queues := brokerQueues(2, "hz@broker-a", "sh@broker-c")
	clients := []string{"hz-1", "sh-1", "x-1"}
	for _, res := range []blankResolver{{broker: "sh@broker-c"}, {client: "x-1"}} {
		s := MachineRoomNearby(nil, res)
		for _, id := range clients {
			if got := s.Allocate("group", id, queues, clients); got != nil {
				t.Errorf("resolver %+v: %s got %s, want nil", res, id, short(got))
			}
		}
	}
}

func TestMachineRoomNearbyNeedsResolver(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MachineRoomNearby(nil, nil) did not panic")
		}
	}()
	MachineRoomNearby(nil, nil)
}
