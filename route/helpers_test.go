package route

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

var fakeChannelSeq atomic.Uint64

// fakeChannel is a remoting.Channel that records what is written to it.
type fakeChannel struct {
	id     uint64
	remote string
	closed atomic.Bool

	mu        sync.Mutex
	responses []*remoting.Command
	notify    chan struct{}
}

func newFakeChannel(remote string) *fakeChannel {
	return &fakeChannel{id: fakeChannelSeq.Add(1) + 1000, remote: remote, notify: make(chan struct{}, 64)}
}

func (c *fakeChannel) ID() uint64         { return c.id }
func (c *fakeChannel) RemoteAddr() string { return c.remote }
func (c *fakeChannel) LocalAddr() string  { return "127.0.0.1:9876" }
func (c *fakeChannel) Closed() bool       { return c.closed.Load() }
func (c *fakeChannel) Close() error       { c.closed.Store(true); return nil }

func (c *fakeChannel) WriteResponse(resp *remoting.Command) error {
	if c.Closed() {
		return remoting.ErrConnClosed
	}
	c.mu.Lock()
	c.responses = append(c.responses, resp)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

func (c *fakeChannel) InvokeSync(context.Context, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}

func (c *fakeChannel) InvokeAsync(context.Context, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}

func (c *fakeChannel) InvokeOneway(*remoting.Command) error { return remoting.ErrClosed }

// response waits for the response to the request with the given opaque.
func (c *fakeChannel) response(t *testing.T, opaque int32) *remoting.Command {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		for _, r := range c.responses {
			if r.Opaque == opaque {
				c.mu.Unlock()
				return r
			}
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-deadline:
			t.Fatalf("no response to opaque %d", opaque)
		}
	}
}

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testLogger(t *testing.T) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	return &l
}

// newTestNameServer returns a name server on a fake clock.
func newTestNameServer(t *testing.T, opts Options) (*NameServer, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	opts.now = clk.Now
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	return NewNameServer(opts), clk
}

// call runs req through the processor for its code, turning an error into the response the
// dispatcher would send.
func call(t *testing.T, ns *NameServer, ch remoting.Channel, req *remoting.Command) *remoting.Command {
	t.Helper()
	p, ok := ns.processors()[req.Code]
	if !ok {
		t.Fatalf("no processor for code %d", req.Code)
	}
	resp, err := p(context.Background(), ch, req)
	if err != nil {
		return remoting.ErrorResponse(err)
	}
	if resp == nil {
		t.Fatalf("code %d: nil response and nil error", req.Code)
	}
	return resp
}

// waitFor polls cond until it holds or the deadline passes. It is for tests on a real socket
// (a gnet server), which cannot run in a synctest bubble: socket I/O never blocks durably, so
// synctest.Wait would not return. In-memory tests use synctest.Wait instead.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// brokerSpec describes a test broker.
type brokerSpec struct {
	cluster, name, addr string
	id                  int64
	topics              []TopicConfig
	version             DataVersion
	compress            bool
}

func (b brokerSpec) request() *remoting.Command {
	table := make(map[string]TopicConfig, len(b.topics))
	for _, tc := range b.topics {
		table[tc.TopicName] = tc
	}
	return BuildRegisterBroker(&RegisterBrokerRequest{
		ClusterName: b.cluster, BrokerName: b.name, BrokerAddr: b.addr, HAServerAddr: haAddr(b.addr),
		BrokerID: b.id, Compress: b.compress,
		Body: RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			TopicConfigTable: table, DataVersion: b.version}},
	})
}

func haAddr(addr string) string { return addr[:len(addr)-2] + "12" } // 10911 -> 10912

func register(t *testing.T, ns *NameServer, ch remoting.Channel, b brokerSpec) *RegisterBrokerResult {
	t.Helper()
	res, err := DecodeRegisterBrokerResult(call(t, ns, ch, b.request()))
	if err != nil {
		t.Fatalf("register %s: %v", b.addr, err)
	}
	return res
}

func topic(name string, queues, perm int32) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm}
}

// routeBody asks for topic's route and returns the body, or fails unless the code is want.
func routeBody(t *testing.T, ns *NameServer, topicName string, want int32) string {
	t.Helper()
	resp := call(t, ns, newFakeChannel("client:1"), BuildGetRouteInfo(topicName))
	if resp.Code != want {
		t.Fatalf("route %s: code %d (%s), want %d", topicName, resp.Code, resp.Remark, want)
	}
	return string(resp.Body)
}
