package rebalance

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAveragelyMatchesOfficialClient checks Averagely against splits worked out by hand from
// the official Go client's AllocateByAveragely (consumer/strategy.go), which the Go client
// runs on queues sorted by topic, broker name and queue id and on client ids sorted with
// sort.Strings. With q queues, c clients, mod = q%c and client index i:
//
//	averageSize = 1                 if q <= c
//	            = q/c + 1           if mod > 0 && i < mod
//	            = q/c               otherwise
//	startIndex  = i*averageSize     if mod > 0 && i < mod
//	            = i*averageSize+mod otherwise
//	take min(averageSize, q-startIndex) queues from startIndex.
//
// Inputs are given unsorted on purpose; the expected shares are in sorted order.
func TestAveragelyMatchesOfficialClient(t *testing.T) {
	a, b := "broker-a", "broker-b"
	tests := []struct {
		name    string
		queues  []MessageQueue
		clients []string
		want    map[string][]MessageQueue // client -> share; absent means nothing
	}{
		{
			// mod = 2: clients 0 and 1 take 3 (start 0, 3), client 2 takes 2 (start 2*2+2 = 6).
			name:    "8 queues 3 clients",
			queues:  []MessageQueue{mq(b, 3), mq(a, 0), mq(b, 0), mq(a, 2), mq(b, 1), mq(a, 3), mq(b, 2), mq(a, 1)},
			clients: []string{"10.0.0.3@300", "10.0.0.1@100", "10.0.0.2@200"},
			want: map[string][]MessageQueue{
				"10.0.0.1@100": {mq(a, 0), mq(a, 1), mq(a, 2)},
				"10.0.0.2@200": {mq(a, 3), mq(b, 0), mq(b, 1)},
				"10.0.0.3@300": {mq(b, 2), mq(b, 3)},
			},
		},
		{
			// mod = 2, size 2: starts 0, 3, 6, 8.
			name:    "10 queues 4 clients",
			queues:  brokerQueues(5, b, a),
			clients: []string{"d", "c", "b", "a"},
			want: map[string][]MessageQueue{
				"a": {mq(a, 0), mq(a, 1), mq(a, 2)},
				"b": {mq(a, 3), mq(a, 4), mq(b, 0)},
				"c": {mq(b, 1), mq(b, 2)},
				"d": {mq(b, 3), mq(b, 4)},
			},
		},
		{
			// q < c: averageSize 1; clients 0..2 start at 0..2; clients 3 and 4 start at
			// 3+3 and 4+3, past the end, and take nothing.
			name:    "3 queues 5 clients",
			queues:  brokerQueues(3, a),
			clients: []string{"e", "d", "c", "b", "a"},
			want: map[string][]MessageQueue{
				"a": {mq(a, 0)},
				"b": {mq(a, 1)},
				"c": {mq(a, 2)},
			},
		},
		{
			name:    "4 queues 4 clients",
			queues:  brokerQueues(2, b, a),
			clients: []string{"c2", "c4", "c1", "c3"},
			want: map[string][]MessageQueue{
				"c1": {mq(a, 0)}, "c2": {mq(a, 1)}, "c3": {mq(b, 0)}, "c4": {mq(b, 1)},
			},
		},
		{
			// mod = 1: client 0 takes 4, client 1 starts at 1*3+1 = 4.
			name:    "7 queues 2 clients",
			queues:  brokerQueues(7, a),
			clients: []string{"y", "x"},
			want: map[string][]MessageQueue{
				"x": {mq(a, 0), mq(a, 1), mq(a, 2), mq(a, 3)},
				"y": {mq(a, 4), mq(a, 5), mq(a, 6)},
			},
		},
		{
			// Queue ids sort as numbers: 10 and 11 come last. mod = 2, size 2: starts 0, 3,
			// 6, 8, 10.
			name:    "12 queues 5 clients",
			queues:  []MessageQueue{mq(a, 10), mq(a, 2), mq(a, 11), mq(a, 1), mq(a, 0), mq(a, 3), mq(a, 9), mq(a, 4), mq(a, 8), mq(a, 5), mq(a, 7), mq(a, 6)},
			clients: []string{"c5", "c3", "c1", "c4", "c2"},
			want: map[string][]MessageQueue{
				"c1": {mq(a, 0), mq(a, 1), mq(a, 2)},
				"c2": {mq(a, 3), mq(a, 4), mq(a, 5)},
				"c3": {mq(a, 6), mq(a, 7)},
				"c4": {mq(a, 8), mq(a, 9)},
				"c5": {mq(a, 10), mq(a, 11)},
			},
		},
		{
			// Client ids sort bytewise: "10.0.0.10@1" < "10.0.0.9@1". mod = 1.
			name:    "client ids sort as strings",
			queues:  brokerQueues(3, a),
			clients: []string{"10.0.0.9@1", "10.0.0.10@1"},
			want: map[string][]MessageQueue{
				"10.0.0.10@1": {mq(a, 0), mq(a, 1)},
				"10.0.0.9@1":  {mq(a, 2)},
			},
		},
		{
			name:    "one client takes all",
			queues:  brokerQueues(3, b, a),
			clients: []string{"only"},
			want: map[string][]MessageQueue{
				"only": {mq(a, 0), mq(a, 1), mq(a, 2), mq(b, 0), mq(b, 1), mq(b, 2)},
			},
		},
		{
			name:    "no queues",
			clients: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range tt.clients {
				got := Averagely().Allocate("group", c, tt.queues, tt.clients)
				checkQueues(t, c, tt.want[c], got)
			}
		})
	}
}

// rocketMQAverageRange is the official clients' averagely arithmetic, written as they state
// it (see TestAveragelyMatchesOfficialClient), returning the indices client index takes.
func rocketMQAverageRange(queues, clients, index int) []int {
	mod := queues % clients
	averageSize := queues / clients
	switch {
	case queues <= clients:
		averageSize = 1
	case mod > 0 && index < mod:
		averageSize++
	}
	startIndex := index*averageSize + mod
	if mod > 0 && index < mod {
		startIndex = index * averageSize
	}
	var out []int
	for i := 0; i < min(averageSize, queues-startIndex); i++ {
		out = append(out, (startIndex+i)%queues)
	}
	return out
}

// TestAverageBlockMatchesRocketMQFormula checks our block arithmetic against RocketMQ's
// formula for every small case.
func TestAverageBlockMatchesRocketMQFormula(t *testing.T) {
	for queues := 0; queues <= 64; queues++ {
		for clients := 1; clients <= 20; clients++ {
			for index := range clients {
				start, n := averageBlock(queues, clients, index)
				var got []int
				for i := start; i < start+n; i++ {
					got = append(got, i)
				}
				want := rocketMQAverageRange(queues, clients, index)
				if !slices.Equal(want, got) {
					t.Fatalf("queues=%d clients=%d index=%d: got %v, want %v", queues, clients, index, got, want)
				}
			}
		}
	}
}

// TestAveragelyByCircleDealsRoundRobin checks the circle deal on a hand-worked case.
func TestAveragelyByCircleDealsRoundRobin(t *testing.T) {
	a := "broker-a"
	queues := brokerQueues(8, a)
	clients := []string{"c3", "c1", "c2"}
	want := map[string][]MessageQueue{
		"c1": {mq(a, 0), mq(a, 3), mq(a, 6)},
		"c2": {mq(a, 1), mq(a, 4), mq(a, 7)},
		"c3": {mq(a, 2), mq(a, 5)},
	}
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range clients {
		got := AveragelyByCircle().Allocate("group", c, shuffled(r, queues), clients)
		checkQueues(t, c, want[c], got)
	}
}
