package rebalance

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestConsistentHashMatchesOfficialClient checks shares the official Go client's
// AllocateByConsistentHash (rocketmq-client-go v2.1.3-0.20251226070945-2173d070fd1b, ring from
// stathat.com/c/consistent v1.0.0) gave for these inputs when run once by hand. CRC-32 rings
// cannot be worked out on paper; these pin the ring layout, the hash and the lookup rule.
func TestConsistentHashMatchesOfficialClient(t *testing.T) {
	a, b := "broker-a", "broker-b"
	queues := brokerQueues(4, a, b)
	clients := []string{"10.0.0.1@100", "10.0.0.2@200", "10.0.0.3@300"}
	tests := []struct {
		virtualNodes int
		want         map[string][]MessageQueue
	}{
		{10, map[string][]MessageQueue{
			"10.0.0.1@100": {mq(a, 0)},
			"10.0.0.2@200": {mq(a, 2), mq(a, 3), mq(b, 2)},
			"10.0.0.3@300": {mq(a, 1), mq(b, 0), mq(b, 1), mq(b, 3)},
		}},
		{3, map[string][]MessageQueue{
			"10.0.0.1@100": {mq(b, 0), mq(b, 2), mq(b, 3)},
			"10.0.0.2@200": {mq(a, 0), mq(a, 2), mq(a, 3)},
			"10.0.0.3@300": {mq(a, 1), mq(b, 1)},
		}},
	}
	r := rand.New(rand.NewPCG(17, 17))
	for _, tt := range tests {
		s := ConsistentHash(tt.virtualNodes, nil)
		for _, c := range clients {
			got := s.Allocate("group", c, shuffled(r, queues), shuffled(r, clients))
			checkQueues(t, c, tt.want[c], got)
		}
	}
}

// tableHash hashes by table lookup, 0 for strings it does not know.
type tableHash map[string]uint32

func (h tableHash) hash(s string) uint32 { return h[s] }

func TestConsistentHashRing(t *testing.T) {
	q1, q2, q3 := mq("broker-a", 1), mq("broker-a", 2), mq("broker-a", 3)
	h := tableHash{
		"0c1": 10, "0c2": 20, // one point each
		q1.String(): 10, // on c1's point: the first point strictly after is c2's
		q2.String(): 15, // between: c2
		q3.String(): 25, // after the last point: wraps to c1
	}
	s := ConsistentHash(1, h.hash)
	queues, clients := []MessageQueue{q1, q2, q3}, []string{"c2", "c1"}
	checkQueues(t, "c1", []MessageQueue{q3}, s.Allocate("group", "c1", queues, clients))
	checkQueues(t, "c2", []MessageQueue{q1, q2}, s.Allocate("group", "c2", queues, clients))

	// Points that hash alike belong to the client placed last, the greatest id.
	same := ConsistentHash(4, func(string) uint32 { return 7 })
	for _, c := range clients {
		var want []MessageQueue
		if c == "c2" {
			want = queues
		}
		checkQueues(t, "all points on one spot: "+c, want, same.Allocate("group", c, queues, clients))
	}
}

func TestConsistentHashDefaultVirtualNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 19))
	def := ConsistentHash(DefaultVirtualNodes, nil)
	for range 50 {
		sc := randomScenario(r)
		for _, vn := range []int{0, -1} {
			s := ConsistentHash(vn, nil)
			for _, c := range sc.clients {
				checkQueues(t, c, def.Allocate("group", c, sc.queues, sc.clients), s.Allocate("group", c, sc.queues, sc.clients))
			}
		}
	}
}

// owners returns who takes each queue.
func owners(s Strategy, queues []MessageQueue, clients []string) map[MessageQueue]string {
	own := make(map[MessageQueue]string)
	for _, c := range clients {
		for _, q := range s.Allocate("group", c, queues, clients) {
			own[q] = c
		}
	}
	return own
}

// TestConsistentHashMovesLittle checks the point of a consistent hash: when a member joins,
// a queue either stays where it was or moves to the newcomer; when one leaves, only its
// queues move.
func TestConsistentHashMovesLittle(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	s := ConsistentHash(0, nil)
	for range 200 {
		sc := randomScenario(r)
		before := owners(s, sc.queues, sc.clients)
		newcomer := "gz-10.1.1.1@42"
		after := owners(s, sc.queues, append(slices.Clone(sc.clients), newcomer))
		for q, was := range before {
			if now := after[q]; now != was && now != newcomer {
				t.Fatalf("join: %v moved from %s to %s", q, was, now)
			}
		}
		leaver := sc.clients[r.IntN(len(sc.clients))]
		rest := slices.DeleteFunc(slices.Clone(sc.clients), func(c string) bool { return c == leaver })
		if len(rest) == 0 {
			continue
		}
		after = owners(s, sc.queues, rest)
		for q, was := range before {
			if was != leaver && after[q] != was {
				t.Fatalf("leave of %s: %v moved from %s to %s", leaver, q, was, after[q])
			}
		}
	}
}
