package registrar

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// TestRegisterSchedule runs the registration loop on synctest's clock with the schedule that
// the default Periods give: the first periodic round 10 s after start, then every
// registerNameServerPeriod clamped to [10 s, 60 s]; a topic change's round runs at once and
// leaves the clock alone.
func TestRegisterSchedule(t *testing.T) {
	cases := []struct {
		name   string
		period time.Duration
		want   []time.Duration // the periodic rounds, from start
	}{
		{"1 ms is raised to 10 s", time.Millisecond, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}},
		{"default 30 s", 0, []time.Duration{10 * time.Second, 40 * time.Second, 70 * time.Second}},
		{"2 min is cut to 60 s", 2 * time.Minute, []time.Duration{10 * time.Second, 70 * time.Second, 130 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := config.Periods{RegisterNameServerPeriod: c.period}
				p.EnsureDefaults()
				s := NewSchedule(p.RegisterNameServerPeriodMin, p.RegisterNameServerPeriod)
				got := runSchedule(t, s, c.want[len(c.want)-1])
				want := []scheduledRound{{3 * time.Second, false}}
				for _, at := range c.want {
					want = append(want, scheduledRound{at, true})
				}
				if !slices.Equal(got, want) {
					t.Fatalf("rounds %v, want %v", got, want)
				}
			})
		})
	}
}

// TestNewScheduleFloorWins: a floor above the 60 s ceiling is the period, as in RocketMQ's
// max(10 s, min(period, 60 s)).
func TestNewScheduleFloorWins(t *testing.T) {
	if got, want := NewSchedule(90*time.Second, 30*time.Second), (Schedule{90 * time.Second, 90 * time.Second}); got != want {
		t.Errorf("schedule %+v, want %+v", got, want)
	}
}

type scheduledRound struct {
	at       time.Duration // since the loop started
	periodic bool
}

// runSchedule runs runRegisterLoop in the caller's synctest bubble until until, signalling a
// topic change 3 s in, and returns the rounds it ran.
func runSchedule(t *testing.T, s Schedule, until time.Duration) []scheduledRound {
	t.Helper()
	start := time.Now()
	var got []scheduledRound
	now := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runRegisterLoop(ctx, s, now, func(periodic bool) {
			got = append(got, scheduledRound{time.Since(start), periodic})
		})
	}()
	time.Sleep(3 * time.Second)
	now <- struct{}{}
	time.Sleep(until - 3*time.Second + time.Second/2)
	cancel()
	<-done
	return got
}

// recordingNameServers answers every request itself, as many name servers would, and records
// what each was sent.
type recordingNameServers struct {
	remoting.Transport // nil: only InvokeSync is called
	mu                 sync.Mutex
	sent               []sentRequest
}

type sentRequest struct {
	addr   string
	code   int32
	haAddr string
	topics int // REGISTER_BROKER: the topics its body carries
}

func (n *recordingNameServers) InvokeSync(_ context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	s := sentRequest{addr: addr, code: req.Code}
	if req.Code == remoting.RegisterBroker {
		var h protocol.RegisterBrokerRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return nil, err
		}
		body, err := route.DecodeRegisterBrokerBody(req.Body, h.Compressed)
		if err != nil {
			return nil, err
		}
		s.haAddr, s.topics = h.HAServerAddr, len(body.TopicConfigSerializeWrapper.TopicConfigTable)
	}
	n.mu.Lock()
	n.sent = append(n.sent, s)
	n.mu.Unlock()
	return remoting.NewResponseFor(req, remoting.Success, ""), nil
}

func (n *recordingNameServers) take() []sentRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.sent
	n.sent = nil
	slices.SortStableFunc(out, func(a, b sentRequest) int { return cmp.Compare(a.addr, b.addr) })
	return out
}

// table is a topic table of n topics whose changes are all pending.
func table(n int) (whole func() route.TopicConfigSerializeWrapper, pending func() []string,
	increment func([]string) route.TopicConfigSerializeWrapper, increments *[]int) {
	all := map[string]route.TopicConfig{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("T%05d", i)
		all[name] = route.TopicConfig{TopicName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		names = append(names, name)
	}
	var mu sync.Mutex
	var sizes []int
	whole = func() route.TopicConfigSerializeWrapper {
		return route.TopicConfigSerializeWrapper{TopicConfigTable: all, DataVersion: route.DataVersion{Counter: 1}}
	}
	pending = func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := names
		names = nil
		return out
	}
	increment = func(ns []string) route.TopicConfigSerializeWrapper {
		mu.Lock()
		sizes = append(sizes, len(ns))
		mu.Unlock()
		t := map[string]route.TopicConfig{}
		for _, n := range ns {
			t[n] = all[n]
		}
		return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: route.DataVersion{Counter: 2}}
	}
	return whole, pending, increment, &sizes
}

// TestRegistrarRounds drives a Registrar on its own against two name servers: the first round
// registers the whole table with each, carrying the HA address and handing each answer to
// Registered; a topic change of 1,801 topics registers them in requests of at most 800 and
// returns once that round ended; stopping unregisters from each.
func TestRegistrarRounds(t *testing.T) {
	ns := &recordingNameServers{}
	whole, pending, increment, sizes := table(1801)
	var answers atomic.Int32
	r := New(Config{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911",
		NameServers: []string{"ns1:9876", "ns2:9876"}, Transport: ns,
		Schedule: NewSchedule(time.Hour, time.Hour), Log: zerolog.Nop(),
		WholeTopics: whole, TakePendingTopics: pending, IncrementTopics: increment,
		HAAddr:     func() string { return "127.0.0.1:10912" },
		Registered: func(*route.RegisterBrokerResult) { answers.Add(1) },
	})
	r.RegisterFirst(t.Context())
	if n := answers.Load(); n != 2 {
		t.Errorf("%d answers handed to Registered after the first round, want 2", n)
	}
	want := []sentRequest{{"ns1:9876", remoting.RegisterBroker, "127.0.0.1:10912", 1801},
		{"ns2:9876", remoting.RegisterBroker, "127.0.0.1:10912", 1801}}
	if got := ns.take(); !slices.Equal(got, want) {
		t.Fatalf("first round sent %+v, want %+v", got, want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	r.RegisterChanged()
	if got := *sizes; !slices.Equal(got, []int{800, 800, 201}) {
		t.Errorf("increment requests of %v topics, want [800 800 201]", got)
	}
	got := ns.take()
	if len(got) != 6 {
		t.Fatalf("topic change sent %+v, want three REGISTER_BROKER to each name server", got)
	}
	var carried int
	for _, s := range got {
		if s.code != remoting.RegisterBroker {
			t.Fatalf("topic change sent code %d", s.code)
		}
		carried += s.topics
	}
	if n := answers.Load(); n != 8 {
		t.Errorf("%d answers handed to Registered after the change, want 8", n)
	}
	if carried != 2*1801 {
		t.Errorf("topic change carried %d topics to two name servers, want %d", carried, 2*1801)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := ns.take(), []sentRequest{{addr: "ns1:9876", code: remoting.UnregisterBroker},
		{addr: "ns2:9876", code: remoting.UnregisterBroker}}; !slices.Equal(got, want) {
		t.Errorf("stopping sent %+v, want %+v", got, want)
	}
	// Stopped, a change no longer waits for a round.
	r.RegisterChanged()
}

// TestRegistrarWithoutNameServers: with no name server nothing is sent and a topic change
// does not wait.
func TestRegistrarWithoutNameServers(t *testing.T) {
	ns := &recordingNameServers{}
	whole, pending, increment, _ := table(1)
	r := New(Config{Transport: ns, Schedule: NewSchedule(time.Millisecond, time.Millisecond), Log: zerolog.Nop(),
		WholeTopics: whole, TakePendingTopics: pending, IncrementTopics: increment,
		HAAddr: func() string { return "" }, Registered: func(*route.RegisterBrokerResult) {}})
	r.RegisterFirst(t.Context())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	r.RegisterChanged()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ns.take(); len(got) != 0 {
		t.Errorf("sent %+v without name servers", got)
	}
}

// permsSeen is a name server that records the permissions REGISTER_BROKER bodies give topics.
type permsSeen struct {
	recordingNameServers
	mu    sync.Mutex
	perms map[int32]int // permission -> topics registered with it
}

func (n *permsSeen) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.RegisterBroker {
		var h protocol.RegisterBrokerRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return nil, err
		}
		body, err := route.DecodeRegisterBrokerBody(req.Body, h.Compressed)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		for _, tc := range body.TopicConfigSerializeWrapper.TopicConfigTable {
			n.perms[tc.Perm]++
		}
		n.mu.Unlock()
	}
	return n.recordingNameServers.InvokeSync(ctx, addr, req)
}

func (n *permsSeen) take() map[int32]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.perms
	n.perms = map[int32]int{}
	return out
}

// TestRegistrarBrokerPermission: a broker that is not both readable and writable registers
// every topic with its own permission, in whole and incremental rounds alike; read and write
// (or no Permission) registers each topic's own.
func TestRegistrarBrokerPermission(t *testing.T) {
	ns := &permsSeen{perms: map[int32]int{}}
	whole, pending, increment, _ := table(3)
	var perm atomic.Int32
	perm.Store(route.PermRead)
	r := New(Config{ClusterName: "c", BrokerName: "b", BrokerAddr: "127.0.0.1:10911",
		NameServers: []string{"ns1:9876"}, Transport: ns, Schedule: NewSchedule(time.Hour, time.Hour),
		Log: zerolog.Nop(), WholeTopics: whole, TakePendingTopics: pending, IncrementTopics: increment,
		Permission: perm.Load, HAAddr: func() string { return "" }, Registered: func(*route.RegisterBrokerResult) {}})
	r.RegisterFirst(t.Context())
	if got := ns.take(); got[route.PermRead] != 3 || len(got) != 1 {
		t.Fatalf("whole round registered permissions %v, want 3 topics at %d", got, route.PermRead)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	perm.Store(route.PermWrite)
	r.RegisterChanged()
	if got := ns.take(); got[route.PermWrite] != 3 || len(got) != 1 {
		t.Errorf("incremental round registered permissions %v, want 3 topics at %d", got, route.PermWrite)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	tables := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{
		"A": {TopicName: "A", Perm: route.PermRead}, "B": {TopicName: "B", Perm: route.PermReadWrite | route.PermInherit}}}
	for _, p := range []func() int32{nil, func() int32 { return route.PermReadWrite }} {
		r := New(Config{Permission: p})
		got := r.withPermission(route.TopicConfigSerializeWrapper{TopicConfigTable: maps.Clone(tables.TopicConfigTable)})
		if got.TopicConfigTable["A"].Perm != route.PermRead || got.TopicConfigTable["B"].Perm != route.PermReadWrite|route.PermInherit {
			t.Errorf("a read-write broker changed its topics' permissions: %v", got.TopicConfigTable)
		}
	}
}
