// Package rebalance holds the queue allocation strategies of RocketMQ 4.x clustering
// consumers: how the members of a consumer group split a topic's message queues among
// themselves without talking to each other.
//
// At every rebalance (every 20 s, at start, and when the broker sends
// NOTIFY_CONSUMER_IDS_CHANGED) a member fetches the group's client ids from a broker
// (GET_CONSUMER_LIST_BY_GROUP) and the topic's queues from its route, runs its Strategy, and
// pulls from the queues it was given, dropping the others. Members agree because they run
// the same deterministic function over the same lists; a member whose lists are stale for a
// round may briefly overlap with another, which RocketMQ accepts (at-least-once delivery).
// See docs/protocol.md §5.2.
//
// The package is pure: no goroutines, I/O, locks, clock or logging, and only the standard
// library. The consumer package owns the rebalance loop and calls in.
//
// # Contract
//
// Every Strategy sorts copies of its inputs itself (queues by topic, broker name and queue
// id; client ids bytewise, as the official Go client does), so the order the lists arrive in
// never matters. A client that is not in the id list, or has an empty id, gets nil. The
// result is a new, sorted slice of queues drawn from the input. See Strategy for the rest.
//
// # Strategies
//
// With Q the sorted queues and C the sorted client ids:
//
//	Averagely()               "AVG"            client i takes one contiguous block of Q; the
//	                                           first len(Q)%len(C) clients take one more.
//	AveragelyByCircle()       "AVG_BY_CIRCLE"  client i takes Q[i], Q[i+len(C)], …
//	ByConfig(qs)              "CONFIG"         the client takes the configured qs present in Q.
//	ByMachineRoom(rooms)      "MACHINE_ROOM"   only queues of brokers named "room@…" with room
//	                                           in rooms, split among all of C in blocks plus a
//	                                           dealt-out tail.
//	MachineRoomNearby(s, r)   "MACHINE_ROOM_NEARBY-" + s.Name()
//	                                           each room's queues split with s among that
//	                                           room's consumers; rooms without consumers
//	                                           split with s among all of C.
//	ConsistentHash(n, h)      "CONSISTENT_HASH" each client on a hash ring at n points; a queue
//	                                           goes to the next point after its hash.
//
// Guarantees, for members that see the same lists and are configured alike:
//
//	strategy            each queue to exactly one member      shares within one
//	AVG                 yes                                   yes
//	AVG_BY_CIRCLE       yes                                   yes
//	CONFIG              no: each member lists its own queues  no
//	MACHINE_ROOM        yes, for queues in the rooms; others  yes
//	                    go to nobody
//	MACHINE_ROOM_NEARBY yes, if its inner strategy is         within each room only
//	                    AVG, AVG_BY_CIRCLE or CONSISTENT_HASH
//	CONSISTENT_HASH     yes                                   no (a member may get none);
//	                                                          a join or leave moves only
//	                                                          the queues it must
//
// # Compatibility with the official clients
//
// AVG, AVG_BY_CIRCLE and CONSISTENT_HASH give the same shares as the official Go client
// (github.com/apache/rocketmq-client-go/v2, consumer/strategy.go) given the same lists, so a
// group may mix its members with ours. AVG and AVG_BY_CIRCLE also match the Java client.
// CONSISTENT_HASH follows the Go client's ring (CRC-32, stathat.com/c/consistent), which the
// Java client's (MD5) does not match. MACHINE_ROOM and MACHINE_ROOM_NEARBY follow the Java
// client: the Go client's AllocateByMachineRoom indexes the wrong list whenever some queues
// are outside the configured rooms, and its AllocateByMachineNearby is just AVG. CONFIG
// differs from both by checking membership and dropping configured queues that are not in
// the topic's list. The constructors' comments give the details.
//
// # Usage
//
//	s := rebalance.Averagely()
//	mine := s.Allocate(group, clientID, routeQueues, consumerIDs)
package rebalance
