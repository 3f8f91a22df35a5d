package rebalance

import (
	"slices"
	"strings"
)

// ByMachineRoom returns RocketMQ's AllocateMessageQueueByMachineRoom ("MACHINE_ROOM"), for
// deployments whose broker names say where the broker runs: "room@brokerName".
//
// Only queues of brokers in one of consumerRooms are allocated; queues of other brokers, and
// of brokers whose name has no room, go to nobody. Client ids are not parsed: the eligible
// queues, in sorted order, are shared among all sorted client ids. With e eligible queues and
// c clients, the client at position i takes the block of e/c queues starting at i*(e/c), and
// the first e%c clients take one more each from the tail (client i takes the queue at
// (e/c)*c + i). Eligible queues go to exactly one member each and shares differ by at most
// one — the blocks are not those of Averagely. Every member must be configured with the same
// rooms, or they may take a queue twice.
//
// A broker name is in room R when splitting it at "@" as Java's String.split("@") does —
// empty fields at the end dropped — yields exactly two fields, the first being R. So
// "hz@broker-a" is in room "hz", while "broker-a", "hz@" and "a@b@c" have no room.
//
// This follows the Java client. The official Go client's AllocateByMachineRoom differs: it
// takes the blocks from the full queue list instead of the eligible ones (so it may hand out
// queues outside consumerRooms, or a queue twice, whenever some queues are not eligible), and
// splits with strings.Split (so "hz@" is in room "hz"). A group mixing our members with Go
// client members using this strategy is consistent only when every queue is eligible.
func ByMachineRoom(consumerRooms []string) Strategy {
	rooms := make(map[string]struct{}, len(consumerRooms))
	for _, r := range consumerRooms {
		rooms[r] = struct{}{}
	}
	return byMachineRoom{rooms: rooms}
}

type byMachineRoom struct {
	rooms map[string]struct{} // never modified after construction
}

func (byMachineRoom) Name() string { return NameByMachineRoom }

func (s byMachineRoom) Allocate(_, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	qs, ids, index, ok := prepare(currentClientID, queues, clientIDs)
	if !ok {
		return nil
	}
	eligible := qs[:0] // filter in place: qs is our copy
	for _, q := range qs {
		if room, ok := brokerMachineRoom(q.BrokerName); ok {
			if _, want := s.rooms[room]; want {
				eligible = append(eligible, q)
			}
		}
	}
	size, extra := len(eligible)/len(ids), len(eligible)%len(ids)
	out := slices.Clone(eligible[index*size : (index+1)*size])
	if index < extra {
		out = append(out, eligible[size*len(ids)+index])
	}
	// out is sorted: the tail queue comes after every block.
	return result(out)
}

// brokerMachineRoom returns the room of a broker named "room@name", with Java's
// brokerName.split("@") rule: trailing empty fields are dropped, and exactly two must remain.
func brokerMachineRoom(brokerName string) (room string, ok bool) {
	fields := strings.Split(brokerName, "@")
	for len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields) != 2 {
		return "", false
	}
	return fields[0], true
}

// MachineRoomResolver tells MachineRoomNearby where brokers and consumers run, as RocketMQ's
// AllocateMachineRoomNearby.MachineRoomResolver does. Both methods must be pure functions of
// their argument and return the same answer on every member of a group; they may be called
// concurrently. An empty room means "unknown" and makes the allocation fail (see
// MachineRoomNearby).
type MachineRoomResolver interface {
	// BrokerRoom returns the machine room of the broker serving q.
	BrokerRoom(q MessageQueue) string
	// ConsumerRoom returns the machine room of the client clientID.
	ConsumerRoom(clientID string) string
}

// MachineRoomNearby returns RocketMQ's AllocateMachineRoomNearby
// ("MACHINE_ROOM_NEARBY-" + inner's name): it keeps consumption inside a machine room when
// it can. The queues of each room are allocated with inner among the consumers in the same
// room; the queues of a room with no consumer are allocated with inner among all consumers.
// A client's result is the union of its share of its own room's queues and its shares of
// the queues of every room without consumers.
//
// If inner is a clustering strategy (Averagely, AveragelyByCircle, ConsistentHash), every
// queue goes to exactly one member, and queues of a room that has consumers go only to those
// consumers. Load is balanced per room only: a room with many queues and one consumer gives
// that consumer all of them.
//
// A nil inner means Averagely. resolver must not be nil: MachineRoomNearby panics if it is,
// since no allocation is possible without one (RocketMQ throws at construction too).
//
// If the resolver returns an empty room for any queue or client id, RocketMQ throws from
// allocate, and its RebalanceImpl logs that and keeps whatever queues the consumer held.
// Allocate has no error to return; it returns nil to every member instead, so the consumer
// drops its queues of the topic until the resolver knows every room. That stops consumption
// rather than risk two members keeping the same queue from an older split.
func MachineRoomNearby(inner Strategy, resolver MachineRoomResolver) Strategy {
	if resolver == nil {
		panic("rebalance: MachineRoomNearby needs a MachineRoomResolver")
	}
	if inner == nil {
		inner = Averagely()
	}
	return machineRoomNearby{inner: inner, resolver: resolver}
}

type machineRoomNearby struct {
	inner    Strategy
	resolver MachineRoomResolver
}

func (s machineRoomNearby) Name() string { return NameMachineRoomNearby + "-" + s.inner.Name() }

func (s machineRoomNearby) Allocate(group, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	qs, ids, _, ok := prepare(currentClientID, queues, clientIDs)
	if !ok {
		return nil
	}
	queuesIn, ok := groupByRoom(qs, s.resolver.BrokerRoom)
	if !ok {
		return nil
	}
	clientsIn, ok := groupByRoom(ids, s.resolver.ConsumerRoom)
	if !ok {
		return nil
	}
	home := s.resolver.ConsumerRoom(currentClientID)
	out := s.inner.Allocate(group, currentClientID, queuesIn[home], clientsIn[home])
	for _, room := range sortedKeys(queuesIn) {
		if _, staffed := clientsIn[room]; staffed {
			continue // home, or another room's consumers take them
		}
		out = append(out, s.inner.Allocate(group, currentClientID, queuesIn[room], ids)...)
	}
	SortQueues(out)
	return result(out)
}

// groupByRoom groups xs by room, keeping their order. ok is false if any room is empty.
func groupByRoom[T any](xs []T, roomOf func(T) string) (rooms map[string][]T, ok bool) {
	rooms = make(map[string][]T)
	for _, x := range xs {
		r := roomOf(x)
		if r == "" {
			return nil, false
		}
		rooms[r] = append(rooms[r], x)
	}
	return rooms, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
