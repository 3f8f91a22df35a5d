package rebalance

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// clustering describes a strategy meant for clustering consumption and what it promises.
type clustering struct {
	name     string
	strategy Strategy
	// covered returns the queues of queues the strategy hands out, each to exactly one
	// member; the others go to nobody.
	covered func(queues []MessageQueue) []MessageQueue
	// balanced: the members' shares of the covered queues differ by at most one.
	balanced bool
	// check, if set, checks further properties of one scenario's shares.
	check func(t *testing.T, sc scenario, shares map[string][]MessageQueue)
}

func allQueues(qs []MessageQueue) []MessageQueue { return qs }

// inRooms returns a covered func keeping queues of brokers named "room@…" in rooms.
func inRooms(rooms ...string) func([]MessageQueue) []MessageQueue {
	return func(qs []MessageQueue) []MessageQueue {
		var out []MessageQueue
		for _, q := range qs {
			if room, ok := brokerMachineRoom(q.BrokerName); ok && slices.Contains(rooms, room) {
				out = append(out, q)
			}
		}
		return out
	}
}

func fnvHash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func clusteringStrategies() []clustering {
	return []clustering{
		{name: "Averagely", strategy: Averagely(), covered: allQueues, balanced: true},
		{name: "AveragelyByCircle", strategy: AveragelyByCircle(), covered: allQueues, balanced: true},
		{name: "ConsistentHash/default", strategy: ConsistentHash(0, nil), covered: allQueues},
		{name: "ConsistentHash/3-fnv", strategy: ConsistentHash(3, fnvHash), covered: allQueues},
		{name: "ByMachineRoom/hz-bj", strategy: ByMachineRoom([]string{"hz", "bj"}), covered: inRooms("hz", "bj"), balanced: true},
		{name: "ByMachineRoom/none", strategy: ByMachineRoom(nil), covered: inRooms(), balanced: true},
		{name: "MachineRoomNearby/AVG", strategy: MachineRoomNearby(nil, prefixResolver{}), covered: allQueues, check: checkNearby},
		{name: "MachineRoomNearby/AVG_BY_CIRCLE", strategy: MachineRoomNearby(AveragelyByCircle(), prefixResolver{}), covered: allQueues, check: checkNearby},
		{name: "MachineRoomNearby/CONSISTENT_HASH", strategy: MachineRoomNearby(ConsistentHash(0, nil), prefixResolver{}), covered: allQueues, check: checkNearby},
	}
}

// checkNearby checks MachineRoomNearby's locality: a queue whose room has consumers goes to
// one of them.
func checkNearby(t *testing.T, sc scenario, shares map[string][]MessageQueue) {
	t.Helper()
	var res prefixResolver
	staffed := make(map[string]bool)
	for _, c := range sc.clients {
		staffed[res.ConsumerRoom(c)] = true
	}
	for c, share := range shares {
		for _, q := range share {
			if room := res.BrokerRoom(q); staffed[room] && room != res.ConsumerRoom(c) {
				t.Errorf("%s (room %s) took %v of room %s, which has consumers", c, res.ConsumerRoom(c), q, room)
			}
		}
	}
}

// allocateAll runs s for every member of sc, checking what holds for each call: the inputs
// are left alone, and the share is sorted and drawn from the queues.
func allocateAll(t *testing.T, s Strategy, sc scenario) map[string][]MessageQueue {
	t.Helper()
	queues, clients := slices.Clone(sc.queues), slices.Clone(sc.clients)
	present := make(map[MessageQueue]bool)
	for _, q := range sc.queues {
		present[q] = true
	}
	shares := make(map[string][]MessageQueue)
	for _, c := range sc.clients {
		share := s.Allocate("group", c, queues, clients)
		if !slices.Equal(queues, sc.queues) || !slices.Equal(clients, sc.clients) {
			t.Fatalf("Allocate for %s modified its inputs", c)
		}
		if !slices.IsSortedFunc(share, CompareQueues) {
			t.Errorf("share of %s not sorted: %s", c, short(share))
		}
		for _, q := range share {
			if !present[q] {
				t.Errorf("share of %s holds %v, not among the queues", c, q)
			}
		}
		shares[c] = share
	}
	return shares
}

// checkClustering checks that the covered queues go to exactly one member each, nothing
// else goes to anyone, and, if promised, shares are within one of each other.
func checkClustering(t *testing.T, cs clustering, sc scenario, shares map[string][]MessageQueue) {
	t.Helper()
	count := make(map[MessageQueue]int)
	for _, share := range shares {
		for _, q := range share {
			count[q]++
		}
	}
	covered := cs.covered(sc.queues)
	for _, q := range covered {
		if count[q] != 1 {
			t.Errorf("%v went to %d members, want 1", q, count[q])
		}
		delete(count, q)
	}
	for q, n := range count {
		t.Errorf("%v went to %d members, want none", q, n)
	}
	if cs.balanced {
		lo, hi := len(covered), 0
		for _, c := range sc.clients {
			lo, hi = min(lo, len(shares[c])), max(hi, len(shares[c]))
		}
		if hi-lo > 1 {
			t.Errorf("shares range from %d to %d queues, want within one", lo, hi)
		}
	}
}

// TestClusteringProperties checks every clustering strategy on random groups (fixed seed):
// each queue goes to exactly one member, shares are balanced where promised, the answer does
// not depend on input order, and a client outside the group gets nothing.
func TestClusteringProperties(t *testing.T) {
	iterations := 400
	if testing.Short() {
		iterations = 50
	}
	for i, cs := range clusteringStrategies() {
		t.Run(cs.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(20261129, uint64(i)))
			for range iterations {
				sc := randomScenario(r)
				shares := allocateAll(t, cs.strategy, sc)
				checkClustering(t, cs, sc, shares)
				if cs.check != nil {
					cs.check(t, sc, shares)
				}
				for range 3 {
					qs, ids := shuffled(r, sc.queues), shuffled(r, sc.clients)
					for _, c := range sc.clients {
						got := cs.strategy.Allocate("group", c, qs, ids)
						checkQueues(t, "share of "+c+" with inputs shuffled", shares[c], got)
					}
				}
				for _, outsider := range []string{"", "hz-10.9.9.9@1"} {
					if got := cs.strategy.Allocate("group", outsider, sc.queues, sc.clients); got != nil {
						t.Errorf("outsider %q got %s, want nil", outsider, short(got))
					}
				}
				if t.Failed() {
					t.Fatalf("failing scenario: queues %s clients %q", short(sc.queues), sc.clients)
				}
			}
		})
	}
}

func TestClusteringEdgeCases(t *testing.T) {
	three := brokerQueues(3, "hz@broker-a")
	seven := []string{"hz-7", "hz-1", "sh-6", "hz-2", "gz-5", "hz-3", "sh-4"}
	for _, cs := range clusteringStrategies() {
		t.Run(cs.name, func(t *testing.T) {
			t.Run("no queues", func(t *testing.T) {
				for _, queues := range [][]MessageQueue{nil, {}} {
					for _, c := range seven {
						if got := cs.strategy.Allocate("group", c, queues, seven); got != nil {
							t.Errorf("%s got %s from no queues", c, short(got))
						}
					}
				}
			})
			t.Run("no clients", func(t *testing.T) {
				if got := cs.strategy.Allocate("group", "hz-1", three, nil); got != nil {
					t.Errorf("got %s with no client ids", short(got))
				}
			})
			t.Run("empty client id", func(t *testing.T) {
				// The official client gives an empty id nothing, even when listed.
				if got := cs.strategy.Allocate("group", "", three, []string{"", "hz-1"}); got != nil {
					t.Errorf("empty id got %s", short(got))
				}
			})
			t.Run("more clients than queues", func(t *testing.T) {
				sc := scenario{queues: three, clients: seven}
				checkClustering(t, cs, sc, allocateAll(t, cs.strategy, sc))
			})
			t.Run("one client", func(t *testing.T) {
				sc := scenario{queues: brokerQueues(4, "hz@broker-a", "broker-e", "sh@broker-c"), clients: []string{"sh-1"}}
				shares := allocateAll(t, cs.strategy, sc)
				checkQueues(t, "share", cs.covered(sortedQueues(sc.queues)), shares["sh-1"])
			})
		})
	}
}

func TestAveragelyMoreClientsThanQueues(t *testing.T) {
	// The first len(queues) sorted clients take one queue each, the rest nothing.
	queues := brokerQueues(3, "broker-a")
	clients := []string{"c5", "c4", "c3", "c2", "c1"}
	for i, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
		got := Averagely().Allocate("group", c, queues, clients)
		var want []MessageQueue
		if i < len(queues) {
			want = queues[i : i+1]
		}
		checkQueues(t, c, want, got)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		s    Strategy
		want string
	}{
		{Averagely(), "AVG"},
		{AveragelyByCircle(), "AVG_BY_CIRCLE"},
		{ByConfig(nil), "CONFIG"},
		{ByMachineRoom([]string{"hz"}), "MACHINE_ROOM"},
		{MachineRoomNearby(nil, prefixResolver{}), "MACHINE_ROOM_NEARBY-AVG"},
		{MachineRoomNearby(AveragelyByCircle(), prefixResolver{}), "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"},
		{ConsistentHash(0, nil), "CONSISTENT_HASH"},
	}
	for _, tt := range tests {
		if got := tt.s.Name(); got != tt.want {
			t.Errorf("Name() = %q, want %q", got, tt.want)
		}
	}
}

func TestByConfig(t *testing.T) {
	a, b := "broker-a", "broker-b"
	queues := brokerQueues(4, a, b)
	config := []MessageQueue{mq(b, 1), mq(a, 3), mq("broker-gone", 0), mq(a, 3), {Topic: "Other", BrokerName: a, QueueID: 0}}
	s := ByConfig(config)
	config[0] = mq(a, 0) // the strategy keeps its own copy

	clients := []string{"c2", "c1"}
	want := []MessageQueue{mq(a, 3), mq(b, 1)} // configured ∩ queues, sorted, once each
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range clients {
		for range 5 {
			qs, ids := shuffled(r, queues), shuffled(r, clients)
			got := s.Allocate("group", c, qs, ids)
			checkQueues(t, c, want, got)
			if len(got) > 0 {
				got[0] = mq("scribbled", 9) // the result is the caller's
			}
		}
	}
	for _, outsider := range []string{"", "c3"} {
		if got := s.Allocate("group", outsider, queues, clients); got != nil {
			t.Errorf("outsider %q got %s, want nil", outsider, short(got))
		}
	}
	if got := s.Allocate("group", "c1", nil, clients); got != nil {
		t.Errorf("got %s from no queues, want nil", short(got))
	}
	if got := ByConfig(nil).Allocate("group", "c1", queues, clients); got != nil {
		t.Errorf("empty config gave %s, want nil", short(got))
	}
}

// TestConcurrentUse runs strategies from many goroutines; go test -race reports sharing.
func TestConcurrentUse(t *testing.T) {
	sc := randomScenario(rand.New(rand.NewPCG(9, 9)))
	for _, cs := range clusteringStrategies() {
		want := allocateAll(t, cs.strategy, sc)
		done := make(chan struct{})
		for _, c := range sc.clients {
			go func() {
				defer func() { done <- struct{}{} }()
				if got := cs.strategy.Allocate("group", c, sc.queues, sc.clients); !slices.Equal(got, want[c]) {
					t.Errorf("%s: concurrent share of %s differs", cs.name, c)
				}
			}()
		}
		for range sc.clients {
			<-done
		}
	}
}
