package rebalance

import (
	"slices"
)

// Strategy names, as RocketMQ's AllocateMessageQueueStrategy.getName returns them. A consumer
// reports its strategy's name to tools (consumer running info), so they are part of the
// protocol's vocabulary.
const (
	NameAveragely         = "AVG"
	NameAveragelyByCircle = "AVG_BY_CIRCLE"
	NameByConfig          = "CONFIG"
	NameByMachineRoom     = "MACHINE_ROOM"
	// NameMachineRoomNearby is the prefix of a MachineRoomNearby strategy's name; the full name
	// appends "-" and the inner strategy's name ("MACHINE_ROOM_NEARBY-AVG"), as RocketMQ does.
	NameMachineRoomNearby = "MACHINE_ROOM_NEARBY"
	NameConsistentHash    = "CONSISTENT_HASH"
)

// Strategy decides which queues of a topic one member of a clustering consumer group takes.
// Every member runs the same Strategy over the same inputs and takes only its own share, so
// no queue is consumed twice without the members ever talking to each other.
//
// Allocate returns the queues that the client currentClientID takes, given all queues of the
// topic and the client ids of every member of group. Its contract:
//
//   - Input order does not matter. Allocate sorts copies of its inputs itself — queues with
//     CompareQueues (topic, broker name, queue id), client ids bytewise — which is the order
//     the official Go client sorts into before allocating. The same multiset of inputs in any
//     order gives the same answer. Allocate never modifies queues or clientIDs.
//   - Duplicates are not removed: a repeated queue or client id counts as many times as it
//     appears, as in the official client (removing them would make us split differently from
//     a Go client handed the same list). Callers should not pass duplicates.
//   - If currentClientID is empty or not in clientIDs, or clientIDs is empty, Allocate returns
//     nil.
//   - The answer is deterministic: a pure function of the arguments and the strategy's
//     configuration — no clock, randomness, or state kept between calls. Members that see the
//     same queues and client ids (and are configured alike) compute consistent shares.
//   - The result is a new slice owned by the caller, sorted by CompareQueues, and holds only
//     elements of queues. It is nil when the client takes nothing.
//
// Strategies built by this package are safe for concurrent use. The group argument does not
// change any built-in strategy's answer; it is passed on for strategies that want it.
type Strategy interface {
	// Name returns the strategy's RocketMQ name, such as "AVG".
	Name() string
	// Allocate returns the queues currentClientID takes; see the Strategy contract.
	Allocate(group, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue
}

// member reports whether currentClientID may be allocated anything: it must be non-empty and
// in clientIDs. The official client returns nothing otherwise.
func member(currentClientID string, clientIDs []string) bool {
	return currentClientID != "" && slices.Contains(clientIDs, currentClientID)
}

// prepare checks membership and returns sorted copies of queues and clientIDs and the index
// of currentClientID's first occurrence in the sorted ids. ok is false when the client takes
// nothing because it is not a member or there are no queues.
func prepare(currentClientID string, queues []MessageQueue, clientIDs []string) (
	qs []MessageQueue, ids []string, index int, ok bool,
) {
	if len(queues) == 0 || !member(currentClientID, clientIDs) {
		return nil, nil, 0, false
	}
	qs = sortedQueues(queues)
	ids = slices.Clone(clientIDs)
	slices.Sort(ids)
	return qs, ids, slices.Index(ids, currentClientID), true
}

// sortedQueues returns a sorted copy of qs.
func sortedQueues(qs []MessageQueue) []MessageQueue {
	c := slices.Clone(qs)
	SortQueues(c)
	return c
}

// result returns qs as an allocation result: nil when empty, otherwise a slice the caller owns.
func result(qs []MessageQueue) []MessageQueue {
	if len(qs) == 0 {
		return nil
	}
	return slices.Clone(qs)
}
