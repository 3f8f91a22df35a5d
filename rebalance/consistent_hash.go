package rebalance

import (
	"hash/crc32"
	"slices"
	"sort"
	"strconv"
)

// DefaultVirtualNodes is the number of points each client gets on ConsistentHash's ring when
// the caller asks for none, RocketMQ's default (AllocateMessageQueueConsistentHash()).
const DefaultVirtualNodes = 10

// ConsistentHash returns RocketMQ's AllocateMessageQueueConsistentHash ("CONSISTENT_HASH"). Each
// client id is placed on a ring of uint32 hashes at virtualNodes points; a queue goes to the
// client owning the first point after the hash of the queue's String form, wrapping round
// after the largest point. Adding or removing a member moves only the queues that member
// gains or loses, which suits consumers that keep per-queue state; the price is that shares
// are uneven (nothing bounds them), and a member may take no queue at all.
//
// The ring is built exactly as the official Go client's AllocateByConsistentHash builds it
// (through stathat.com/c/consistent), so members running either client agree:
//
//   - point i of client id c (i = 0 … virtualNodes-1) is hash(strconv.Itoa(i) + c), e.g.
//     "0" + c, "1" + c, …;
//   - clients are placed in sorted order, and when two points hash alike the later one
//     placed owns it;
//   - a queue hashing to h goes to the first point strictly greater than h, or to the
//     smallest point if none is greater.
//
// A nil hash means CRC-32 (IEEE) of the string's bytes, the Go client's hash. virtualNodes <= 0 means
// DefaultVirtualNodes (the Go client, given 0, divides by zero; Java allows 0 and allocates
// nothing).
//
// The Java client builds a different ring — MD5-based hash (the first four digest bytes, big
// endian), points keyed c + "-" + i, a queue going to the first point greater than or equal
// to its hash — so Java and Go members using CONSISTENT_HASH in one group already disagree
// upstream; passing an MD5-based hash here would not make this strategy match Java either.
// We follow the Go client, the one docs/protocol.md asks us to interoperate with.
//
// Every queue goes to exactly one member. hash must be a pure function; it may be called
// concurrently.
func ConsistentHash(virtualNodes int, hash func(string) uint32) Strategy {
	if virtualNodes <= 0 {
		virtualNodes = DefaultVirtualNodes
	}
	if hash == nil {
		hash = crc32Hash
	}
	return consistentHash{virtualNodes: virtualNodes, hash: hash}
}

// crc32Hash is the Go client's ring hash: CRC-32 (IEEE polynomial) of the string's bytes.
func crc32Hash(s string) uint32 { return crc32.ChecksumIEEE([]byte(s)) }

type consistentHash struct {
	virtualNodes int
	hash         func(string) uint32
}

func (consistentHash) Name() string { return NameConsistentHash }

func (s consistentHash) Allocate(_, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	qs, ids, _, ok := prepare(currentClientID, queues, clientIDs)
	if !ok {
		return nil
	}
	owner, points := s.ring(ids)
	var out []MessageQueue
	for _, q := range qs {
		h := s.hash(q.String())
		i := sort.Search(len(points), func(i int) bool { return points[i] > h })
		if i == len(points) {
			i = 0
		}
		if owner[points[i]] == currentClientID {
			out = append(out, q)
		}
	}
	return out
}

// ring places every client's virtual nodes and returns who owns each point and the points
// in ascending order. ids must be sorted: placement order decides who owns a shared point.
func (s consistentHash) ring(ids []string) (owner map[uint32]string, points []uint32) {
	owner = make(map[uint32]string, len(ids)*s.virtualNodes)
	for _, id := range ids {
		for i := range s.virtualNodes {
			owner[s.hash(strconv.Itoa(i)+id)] = id
		}
	}
	points = make([]uint32, 0, len(owner))
	for p := range owner {
		points = append(points, p)
	}
	slices.Sort(points)
	return owner, points
}
