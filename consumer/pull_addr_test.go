package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// docs/protocol.md §3.1.4's pull address rule, plus avoiding an address that just failed.
func TestSelectPullAddr(t *testing.T) {
	both := map[int64]string{0: "m", 1: "s1"}
	two := map[int64]string{0: "m", 1: "s1", 2: "s2"}
	for _, c := range []struct {
		name      string
		addrs     map[int64]string
		suggested int64
		avoid     string
		want      string
		wantID    int64
	}{
		{"master by default", both, 0, "", "m", 0},
		{"suggested slave", both, 1, "", "s1", 1},
		{"suggested second slave", two, 2, "", "s2", 2},
		{"suggested id missing: id+1", map[int64]string{0: "m", 2: "s2"}, 1, "", "s2", 2},
		{"suggested id and id+1 missing: lowest", map[int64]string{0: "m"}, 3, "", "m", 0},
		{"master gone from route: slave", map[int64]string{1: "s1"}, 0, "", "s1", 1},
		{"master gone, slaves 2 and 3: lowest", map[int64]string{3: "s3", 2: "s2"}, 0, "", "s2", 2},
		{"master failed: slave", both, 0, "m", "s1", 1},
		{"slave failed: master", both, 1, "s1", "m", 0},
		{"master failed, two slaves: lowest slave", two, 0, "m", "s1", 1},
		{"failed address only one left: keep it", map[int64]string{0: "m"}, 0, "m", "m", 0},
		{"avoid something else", both, 0, "s1", "m", 0},
		{"no addresses", map[int64]string{}, 0, "", "", 0},
		{"nil addresses", nil, 1, "m", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, id := selectPullAddr(c.addrs, c.suggested, c.avoid)
			if got != c.want || id != c.wantID {
				t.Errorf("selectPullAddr(%v, %d, %q) = %q, %d; want %q, %d", c.addrs, c.suggested, c.avoid, got, id, c.want, c.wantID)
			}
		})
	}
}

func TestIsTransportError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{context.DeadlineExceeded, true},
		{&remoting.ResponseError{Code: remoting.SystemBusy}, false},
		{fmt.Errorf("wrapped: %w", &remoting.ResponseError{Code: remoting.SystemError}), false},
		{ErrNoBroker, false},
		{context.Canceled, false},
	} {
		if got := isTransportError(c.err); got != c.want {
			t.Errorf("isTransportError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// pullTransport plays a master "m" and a slave "s": each answers PULL_NOT_FOUND with a
// suggested broker id and the next offset, or fails like a dead node; it records every pull.
type pullTransport struct {
	fakeTransport
	mu      sync.Mutex
	dead    map[string]bool
	suggest map[string]int64
	next    map[string]int64 // nextBeginOffset answered
	code    map[string]int32 // the answer's code, PULL_NOT_FOUND when absent
	pulls   []pullSeen
}

type pullSeen struct {
	Addr   string
	Commit bool
	Offset int64
}

func (f *pullTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code != remoting.PullMessage {
		return f.fakeTransport.InvokeSync(ctx, addr, req)
	}
	var h protocol.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, pullSeen{Addr: addr, Commit: h.HasCommitOffset(), Offset: h.QueueOffset})
	if f.dead[addr] {
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused", addr)
	}
	code, ok := f.code[addr]
	if !ok {
		code = remoting.PullNotFound
	}
	resp := remoting.NewResponse(code, "")
	next, ok := f.next[addr]
	if !ok {
		next = h.QueueOffset
	}
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{SuggestWhichBrokerID: f.suggest[addr],
		NextBeginOffset: next, MaxOffset: next})
	return resp, nil
}

// routeInstance is fakeInstance with a route of broker "b": master "m", slave "s".
type routeInstance struct{ fakeInstance }

func (routeInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return &route.TopicRouteData{BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: "m", 1: "s"}}}}, nil
}

// cachedRouteInstance has the route of routeInstance in its cache, and no name server to
// fetch one from.
type cachedRouteInstance struct{ fakeInstance }

func (cachedRouteInstance) CachedTopicRoute(string) *route.TopicRouteData {
	return &route.TopicRouteData{BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: "m", 1: "s"}}}}
}

func (cachedRouteInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return nil, errors.New("no name server")
}

// A pull's addresses come from the cached route when there is one, and from the route a fetch
// answers otherwise; with neither, from the instance's broker table.
func TestBrokerAddrsOfRoute(t *testing.T) {
	cfg := defaultConfig()
	cfg.group = "g"
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	want := map[int64]string{0: "m", 1: "s"}
	for name, inst := range map[string]instance{"cached": cachedRouteInstance{}, "fetched": routeInstance{}} {
		p := startedPuller(t, cfg.pullerConfig, nil, inst)
		if got := p.brokerAddrsOf(mq, 1); !maps.Equal(got, want) {
			t.Errorf("%s route: addresses %v, want %v", name, got, want)
		}
	}
	p := startedPuller(t, cfg.pullerConfig, nil, fakeInstance{})
	if got := p.brokerAddrsOf(mq, 1); !maps.Equal(got, map[int64]string{0: "addr", 1: "addr", 2: "addr"}) {
		t.Errorf("no route: addresses %v, want the instance's table", got)
	}
}

// The pull path: the suggestion is followed, the commit-offset bit goes only to the master, a
// dead master sends the pulls to the slave at once (and is avoided for the failover hold), and
// a slave behind the consumer does not move the offset back.
func TestPullFollowsSuggestionAndFailsOver(t *testing.T) {
	tr := &pullTransport{fakeTransport: fakeTransport{answers: map[int32]int64{}}, dead: map[string]bool{},
		suggest: map[string]int64{"m": 1, "s": 0}, next: map[string]int64{}}
	inst := routeInstance{fakeInstance{tr: tr}}
	cfg := defaultConfig()
	cfg.group, cfg.failoverHold = "g", time.Hour
	p := startedPuller(t, cfg.pullerConfig, nil, inst)
	p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	p.store.update(mq, 5, false)
	qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: 5}

	step := func() (string, error) {
		t.Helper()
		res, addr, err := p.pullOnce(qs)
		if err == nil {
			p.handlePull(qs, &res)
		}
		return addr, err
	}
	// 1: master, with the commit bit; it suggests the slave.
	if addr, err := step(); err != nil || addr != "m" {
		t.Fatalf("first pull to %q: %v", addr, err)
	}
	// 2: slave, no commit bit; it suggests the master again.
	if addr, err := step(); err != nil || addr != "s" {
		t.Fatalf("second pull to %q: %v", addr, err)
	}
	// 3: master dies: the pull fails, the slave is worth trying at once.
	tr.dead["m"] = true
	addr, err := step()
	if addr != "m" || !isTransportError(err) {
		t.Fatalf("third pull to %q: %v", addr, err)
	}
	if !p.pullFailed(qs, addr, err) {
		t.Fatal("pullFailed offered no other address")
	}
	// 4: slave although it suggests the master (avoided for the hold); the slave is behind
	// (answers next offset 3): the queue keeps offset 5.
	tr.next["s"] = 3
	if addr, err := step(); err != nil || addr != "s" {
		t.Fatalf("fourth pull to %q: %v", addr, err)
	}
	if qs.nextOffset != 5 {
		t.Fatalf("next offset %d after a lagging slave's answer, want 5", qs.nextOffset)
	}
	if addr, err := step(); err != nil || addr != "s" {
		t.Fatalf("fifth pull to %q: %v", addr, err)
	}
	// 6: the hold is over and the master back: pulls return to it.
	tr.dead["m"] = false
	qs.failedUntil = time.Time{}
	if addr, err := step(); err != nil || addr != "m" {
		t.Fatalf("sixth pull to %q: %v", addr, err)
	}
	want := []pullSeen{{"m", true, 5}, {"s", false, 5}, {"m", true, 5}, {"s", false, 5}, {"s", false, 5}, {"m", true, 5}}
	if diff := cmp.Diff(want, tr.pulls); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
	}
}

// slaveOnlyInstance routes broker "b" to its slave "s" alone: the master is away.
type slaveOnlyInstance struct{ fakeInstance }

func (slaveOnlyInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return &route.TopicRouteData{BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{1: "s"}}}}, nil
}

// idleService is a queue service that never holds pulls back.
type idleService struct{ queueService }

func (idleService) pullHold(*queueState, int64) time.Duration { return 0 }

// A slave that does not hold the offset asked yet answers PULL_RETRY_IMMEDIATELY at once and
// suggests the master. With the master in the route the next pull goes there at once; with
// the master away, pulling the slave again at once would spin for as long as the master stays
// away, so the queue waits the pull error delay between pulls. internal/sim found the spin
// (seed 2: a consumer left on a lagging slave stopped the simulated clock).
func TestPullWaitsForLaggingSlaveWithoutMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &pullTransport{fakeTransport: fakeTransport{answers: map[int32]int64{}}, dead: map[string]bool{},
			suggest: map[string]int64{"s": 0}, next: map[string]int64{},
			code: map[string]int32{"s": remoting.PullRetryImmediately}}
		mq := MessageQueue{Topic: "T", BrokerName: "b"}
		qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: 5, brokerID: 1}
		// A loop that spins never lets the simulated clock move: end it after far more pulls
		// than the 10 s can hold, so the count below fails instead of the test hanging.
		spin := &spinLimit{pullTransport: tr, limit: 100, stop: qs.pq.drop}
		cfg := defaultConfig()
		cfg.group, cfg.pullErrorDelay = "g", time.Second
		p := startedPuller(t, cfg.pullerConfig, idleService{}, slaveOnlyInstance{fakeInstance{tr: spin}})
		p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.pullLoop(qs)
		}()
		time.Sleep(10*time.Second - time.Millisecond)
		qs.pq.drop()
		<-done
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.pulls) != 10 {
			t.Fatalf("%d pulls of the lagging slave in 10 s, want one per pull error delay (10)", len(tr.pulls))
		}
		for _, pl := range tr.pulls {
			if pl.Addr != "s" || pl.Offset != 5 {
				t.Fatalf("pull %+v: want the slave at offset 5", pl)
			}
		}
	})
}

// spinLimit calls stop once more than limit pulls went through it.
type spinLimit struct {
	*pullTransport
	limit int
	stop  func()
}

func (s *spinLimit) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	resp, err := s.pullTransport.InvokeSync(ctx, addr, req)
	s.mu.Lock()
	n := len(s.pulls)
	s.mu.Unlock()
	if n > s.limit {
		s.stop()
	}
	return resp, err
}

// With the master in the route, the slave's PULL_RETRY_IMMEDIATELY sends the next pull to the
// master at once, as RocketMQ's client does.
func TestPullGoesToMasterAfterLaggingSlave(t *testing.T) {
	tr := &pullTransport{fakeTransport: fakeTransport{answers: map[int32]int64{}}, dead: map[string]bool{},
		suggest: map[string]int64{"s": 0, "m": 0}, next: map[string]int64{},
		code: map[string]int32{"s": remoting.PullRetryImmediately}}
	cfg := defaultConfig()
	cfg.group = "g"
	p := startedPuller(t, cfg.pullerConfig, idleService{}, routeInstance{fakeInstance{tr: tr}})
	p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
	mq := MessageQueue{Topic: "T", BrokerName: "b"}
	qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: 5, brokerID: 1}
	res, addr, err := p.pullOnce(qs)
	if err != nil || addr != "s" {
		t.Fatalf("first pull to %q: %v", addr, err)
	}
	p.handlePull(qs, &res)
	if p.pullsAgainInVain(qs, &res, 5, addr) {
		t.Fatal("the queue waits although the master is in the route")
	}
	if next, slave := p.pullTarget(qs); next != "m" || slave {
		t.Fatalf("next pull to %q (slave %v), want the master", next, slave)
	}
}

// A dead master and an unreachable slave both fail a pull at once. The first failure moves to
// the other address at once; the second, failing too, waits the failed-pull delay: moving on at
// once every time spun between the two with no wait at all (internal/sim, seed 11: the
// simulated clock stood still while the master was down and the consumer cut from the slave).
func TestPullBetweenFailingAddressesWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &pullTransport{fakeTransport: fakeTransport{answers: map[int32]int64{}},
			dead: map[string]bool{"m": true, "s": true}, suggest: map[string]int64{}, next: map[string]int64{}}
		mq := MessageQueue{Topic: "T", BrokerName: "b"}
		qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: 5}
		spin := &spinLimit{pullTransport: tr, limit: 1000, stop: qs.pq.drop}
		cfg := defaultConfig()
		cfg.group, cfg.pullErrorDelay = "g", time.Second
		p := startedPuller(t, cfg.pullerConfig, idleService{}, routeInstance{fakeInstance{tr: spin}})
		p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.pullLoop(qs)
		}()
		time.Sleep(10 * time.Second)
		qs.pq.drop()
		<-done
		tr.mu.Lock()
		defer tr.mu.Unlock()
		// Failed pulls wait 20 ms doubling to 500 ms: about 25 waits in 10 s, each after a
		// pull of one address or, right after a first failure, of both.
		if n := len(tr.pulls); n > 60 {
			t.Fatalf("%d pulls in 10 s between two addresses that fail at once: it spins", n)
		}
		seen := map[string]bool{}
		for _, pl := range tr.pulls {
			seen[pl.Addr] = true
		}
		if !seen["m"] || !seen["s"] {
			t.Fatalf("pulls went to %v: want both addresses tried", seen)
		}
	})
}

// masterOnlyInstance routes broker "b" to "m" alone, as its master.
type masterOnlyInstance struct{ fakeInstance }

func (masterOnlyInstance) TopicRoute(context.Context, string) (*route.TopicRouteData, error) {
	return &route.TopicRouteData{BrokerDatas: []route.BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: "m"}}}}, nil
}

// A master that just became a slave (controller mode) stays the queue's master in the route
// until the next refresh, and answers PULL_RETRY_IMMEDIATELY for an offset its copy does not
// hold: the queue waits the pull error delay between pulls rather than asking it again at once
// (internal/sim, seed 76: the spin stopped the simulated clock, so the route never refreshed).
func TestPullWaitsForDemotedMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &pullTransport{fakeTransport: fakeTransport{answers: map[int32]int64{}}, dead: map[string]bool{},
			suggest: map[string]int64{"m": 0}, next: map[string]int64{},
			code: map[string]int32{"m": remoting.PullRetryImmediately}}
		mq := MessageQueue{Topic: "T", BrokerName: "b"}
		qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: 2}
		spin := &spinLimit{pullTransport: tr, limit: 100, stop: qs.pq.drop}
		cfg := defaultConfig()
		cfg.group, cfg.pullErrorDelay = "g", time.Second
		p := startedPuller(t, cfg.pullerConfig, idleService{}, masterOnlyInstance{fakeInstance{tr: spin}})
		p.mu.subs = map[string]*subscription{"T": newSubscription("T", "*", nil)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.pullLoop(qs)
		}()
		time.Sleep(10*time.Second - time.Millisecond)
		qs.pq.drop()
		<-done
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.pulls) != 10 {
			t.Fatalf("%d pulls in 10 s of a master answering PULL_RETRY_IMMEDIATELY, want one per pull error delay (10)", len(tr.pulls))
		}
	})
}
