package broker

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

func TestSuspendTimeClamped(t *testing.T) {
	pu := &puller{Broker: &Broker{opts: Options{Limits: config.Limits{MaxLongPollingSuspend: 60 * time.Second}}}}
	cases := []struct {
		millis int64
		want   time.Duration
	}{
		{math.MinInt64, 0},
		{-1, 0},
		{0, 0},
		{15000, 15 * time.Second},
		{59999, 59999 * time.Millisecond},
		{60000, 60 * time.Second},
		{120000, 60 * time.Second}, // an honest client asking 2 min still long-polls, for 1
		{1 << 50, 60 * time.Second},
		{math.MaxInt64 / int64(time.Millisecond), 60 * time.Second},
		{math.MaxInt64, 60 * time.Second},
	}
	for _, c := range cases {
		if got := pu.suspendTime(c.millis); got != c.want {
			t.Errorf("suspendTime(%d) = %v, want %v", c.millis, got, c.want)
		}
	}
}

// TestLongPollSuspendCapped: a pull asking 2^50 ms (which, multiplied out unchecked, wraps to
// about 20 years) is answered by its own deadline, MaxLongPollingSuspend, with no close event
// and no message: PULL_NOT_FOUND at its offset.
func TestLongPollSuspendCapped(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxLongPollingSuspend = 50 * time.Millisecond })
	addTopic(tb, "T", 2)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	putMsgs(t, tb, "T", 1, 3, "", "m")
	queue := map[string]int32{"tcp": 0, "inproc": 1}
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			q := queue[name]
			offset := tb.Store().MaxOffsetInQueue("T", q)
			h := pullHeader("g", "T", q, offset)
			h.SuspendTimeoutMillis = 1 << 50
			done := asyncPull(t, tr, tb.Addr, h)
			select {
			case resp := <-done:
				r := decodePull(t, resp)
				if r.code != remoting.PullNotFound || r.hdr.NextBeginOffset != offset {
					t.Fatalf("code %d (%s) next %d, want PULL_NOT_FOUND at %d", r.code, r.remark, r.hdr.NextBeginOffset, offset)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a pull asking 2^50 ms was not answered by MaxLongPollingSuspend")
			}
			if n := tb.pull.hold.Count(); n != 0 {
				t.Errorf("%d pulls still parked", n)
			}
		})
	}
}

// parkPulls parks n pulls over tr, one per queue from firstQueue, and waits until the hold has
// want pulls in all.
func parkPulls(t *testing.T, tb *testBroker, tr remoting.Transport, group string, firstQueue int32, n, want int) []<-chan *remoting.Command {
	t.Helper()
	var dones []<-chan *remoting.Command
	for i := range int32(n) {
		dones = append(dones, asyncPull(t, tr, tb.Addr, pullHeader(group, "T", firstQueue+i, 0)))
	}
	eventually(t, "pulls parked", func() bool { return tb.pull.hold.Count() == want })
	return dones
}

// wantHoldFull checks that a pull over tr on queue is answered at once with SYSTEM_BUSY naming
// limit, and that it was not parked.
func wantHoldFull(t *testing.T, tb *testBroker, tr remoting.Transport, group string, queue int32, limit string) {
	t.Helper()
	before := tb.pull.hold.Count()
	select {
	case resp := <-asyncPull(t, tr, tb.Addr, pullHeader(group, "T", queue, 0)):
		if resp.Code != remoting.SystemBusy || !strings.Contains(resp.Remark, limit) {
			t.Errorf("over the cap: code %d %q, want SYSTEM_BUSY naming %s", resp.Code, resp.Remark, limit)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a pull over %s was parked instead of answered", limit)
	}
	if n := tb.pull.hold.Count(); n != before {
		t.Errorf("hold went from %d to %d pulls", before, n)
	}
}

// wantWoken fills the queues the pulls wait on and checks every pull is answered SUCCESS.
func wantWoken(t *testing.T, tb *testBroker, dones []<-chan *remoting.Command, firstQueue int32) {
	t.Helper()
	for i, done := range dones {
		q := firstQueue + int32(i)
		putMsgs(t, tb, "T", q, 1, "", "m")
		select {
		case resp := <-done:
			if r := decodePull(t, resp); r.code != remoting.Success || len(r.msgs) != 1 || r.msgs[0].QueueID != q {
				t.Errorf("queue %d: code %d (%s) msgs %d", q, r.code, r.remark, len(r.msgs))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("queue %d: parked pull not woken", q)
		}
	}
}

func TestHeldPullsPerConnectionCap(t *testing.T) {
	for _, name := range []string{"tcp", "inproc"} {
		t.Run(name, func(t *testing.T) {
			tb := startTestBroker(t, func(o *Options) {
				o.Limits.MaxHeldPullsPerConnection = 3
				o.Limits.MaxHeldPulls = 100
			})
			addTopic(tb, "T", 8)
			capped, other := remoting.Transport(tb.TCP), remoting.Transport(tb.InProc)
			if name == "inproc" {
				capped, other = other, capped
			}
			wiretest.Heartbeat(t, capped, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
			a := parkPulls(t, tb, capped, "g", 0, 3, 3)
			wantHoldFull(t, tb, capped, "g", 3, "MaxHeldPullsPerConnection 3")
			b := parkPulls(t, tb, other, "g", 4, 3, 6) // another connection parks its own three
			wantHoldFull(t, tb, other, "g", 7, "MaxHeldPullsPerConnection 3")

			// Slots come back when pulls leave: one woken pull makes room for one more.
			wantWoken(t, tb, a[:1], 0)
			a = append(a[1:], parkPulls(t, tb, capped, "g", 3, 1, 6)...)
			wantHoldFull(t, tb, capped, "g", 7, "MaxHeldPullsPerConnection")
			wantWoken(t, tb, a, 1)
			wantWoken(t, tb, b, 4)
			if n := tb.pull.hold.Count(); n != 0 {
				t.Errorf("%d pulls still parked", n)
			}
		})
	}
}

func TestHeldPullsTotalCap(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		o.Limits.MaxHeldPullsPerConnection = 3
		o.Limits.MaxHeldPulls = 4
	})
	addTopic(tb, "T", 8)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	third := newTCPClient(t)
	a := parkPulls(t, tb, tb.TCP, "g", 0, 3, 3)
	b := parkPulls(t, tb, tb.InProc, "g", 3, 1, 4)
	wantHoldFull(t, tb, tb.InProc, "g", 4, "MaxHeldPulls 4")
	wantHoldFull(t, tb, third, "g", 5, "MaxHeldPulls 4")
	wantWoken(t, tb, b, 3)
	c := parkPulls(t, tb, third, "g", 5, 1, 4) // the slot b left is free again
	wantWoken(t, tb, a, 0)
	wantWoken(t, tb, c, 5)
}

// holdTestChannel is a connection the dispatcher never saw: no close event will ever come
// for it, as when the event is lost. It records the responses written to it.
type holdTestChannel struct {
	id     uint64
	closed atomic.Bool
	resps  chan *remoting.Command
}

func (c *holdTestChannel) ID() uint64         { return c.id }
func (c *holdTestChannel) RemoteAddr() string { return "10.0.0.9:1" }
func (c *holdTestChannel) LocalAddr() string  { return "10.0.0.1:10911" }
func (c *holdTestChannel) WriteResponse(resp *remoting.Command) error {
	c.resps <- resp
	return nil
}
func (c *holdTestChannel) InvokeSync(context.Context, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}
func (c *holdTestChannel) InvokeAsync(context.Context, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}
func (c *holdTestChannel) InvokeOneway(*remoting.Command) error { return nil }
func (c *holdTestChannel) Close() error                         { c.closed.Store(true); return nil }
func (c *holdTestChannel) Closed() bool                         { return c.closed.Load() }

// TestHeldPullsExpireWithoutCloseEvent: pulls asking 2^40 ms from connections whose close
// event never reaches the broker leave the hold by their capped deadline and give their
// slots back; the closed connection is not written to, the open one is answered.
func TestHeldPullsExpireWithoutCloseEvent(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		o.Limits.MaxLongPollingSuspend = 30 * time.Millisecond
		o.Limits.MaxHeldPulls = 2
	})
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	h := pullHeader("g", "T", 0, 0)
	h.SuspendTimeoutMillis = 1 << 40
	lost := &holdTestChannel{id: 1 << 62, resps: make(chan *remoting.Command, 1)}
	open := &holdTestChannel{id: 1<<62 + 1, resps: make(chan *remoting.Command, 1)}
	for _, ch := range []*holdTestChannel{lost, open} {
		if resp, err := tb.pull.processPull(context.Background(), ch, pullCmd(h)); resp != nil || err != nil {
			t.Fatalf("pull not parked: %v %v", resp, err)
		}
	}
	lost.Close()
	eventually(t, "parked pulls expired", func() bool { return tb.pull.hold.Count() == 0 })
	select {
	case resp := <-open.resps:
		if resp.Code != remoting.PullNotFound {
			t.Errorf("expired pull answered %d %q", resp.Code, resp.Remark)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("expired pull of an open connection not answered")
	}
	select {
	case resp := <-lost.resps:
		t.Errorf("a closed connection was written a response: %d", resp.Code)
	default:
	}
	c := tb.pull.hold.Census()
	if slots, chans := c.Slots, c.Channels; slots != 0 || chans != 0 {
		t.Errorf("hold keeps %d slots over %d connections after every pull left", slots, chans)
	}
}

// TestPullWithBodyRefused: a pull carrying a body (a pull has none) is answered SYSTEM_ERROR
// naming it, on both transports, and never parked: it cannot make the hold keep megabytes.
func TestPullWithBodyRefused(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			for _, size := range []int{1, 1 << 20} {
				req := pullCmd(pullHeader("g", "T", 0, tb.Store().MaxOffsetInQueue("T", 0)))
				req.Body = make([]byte, size)
				resp := invoke(t, tr, tb.Addr, req)
				if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "PULL_MESSAGE takes no body") {
					t.Errorf("pull with a %d-byte body: %d %q, want SYSTEM_ERROR naming the body", size, resp.Code, resp.Remark)
				}
			}
			if n := tb.pull.hold.Count(); n != 0 {
				t.Errorf("%d pulls with bodies parked", n)
			}
		})
	}
}

// TestParkedPullKeepsNoExtras parks a pull that carries a large unknown header field and a
// remark: the hold keeps neither, nor the extension fields at all (it keeps the decoded
// header), and the woken pull is still answered.
func TestParkedPullKeepsNoExtras(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			h := pullHeader("g", "T", 0, tb.Store().MaxOffsetInQueue("T", 0))
			req := pullCmd(h)
			req.Remark = strings.Repeat("r", 1<<10)
			req.ExtFields["padding"] = strings.Repeat("p", 8<<10)
			done := make(chan *remoting.Command, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.InvokeAsync(ctx, tb.Addr, req, func(resp *remoting.Command, err error) {
				if err != nil {
					resp = remoting.NewResponse(-1, err.Error())
				}
				done <- resp
			}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "pull parked", func() bool { return tb.pull.hold.Count() == 1 })
			p := tb.pull.hold.Next()
			held, slots, total := *p.Request, p.Slots, tb.pull.hold.Census().Slots
			if held.Body != nil || held.Remark != "" || held.ExtFields != nil {
				t.Errorf("parked pull keeps a %d-byte body, a %d-byte remark and %d extension fields",
					len(held.Body), len(held.Remark), len(held.ExtFields))
			}
			if held.Opaque != req.Opaque || held.Code != remoting.PullMessage {
				t.Errorf("parked request opaque %d code %d, want %d %d", held.Opaque, held.Code, req.Opaque, remoting.PullMessage)
			}
			if slots != 1 || total != 1 {
				t.Errorf("an honest pull takes %d slots (hold %d), want 1", slots, total)
			}
			putMsgs(t, tb, "T", 0, 1, "", name)
			if r := decodePull(t, <-done); r.code != remoting.Success || len(r.bodies) != 1 || r.bodies[0] != name+"-0" {
				t.Fatalf("woken pull: code %d (%s) bodies %v", r.code, r.remark, r.bodies)
			}
		})
	}
}

// TestHeldPullWithHugeSubscriptionRefused: a pull carrying a subscription expression of 13,000
// tags would keep more than a megabyte while parked (the compiled tag set); it takes as many
// slots as it keeps KiB, more than this connection may hold, so it is answered SYSTEM_BUSY
// instead of parked.
func TestHeldPullWithHugeSubscriptionRefused(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxHeldPullsPerConnection = 64 })
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	h := pullHeader("g", "T", 0, 0)
	h.SysFlag |= protocol.PullFlagSubscription
	h.Subscription = strings.Repeat("t||", 13000) // 39 KB: under the remoting header limit
	resp := <-asyncPull(t, tb.TCP, tb.Addr, h)
	if resp.Code != remoting.SystemBusy || !strings.Contains(resp.Remark, "MaxHeldPullsPerConnection") {
		t.Errorf("code %d %q, want SYSTEM_BUSY naming MaxHeldPullsPerConnection", resp.Code, resp.Remark)
	}
	if n := tb.pull.hold.Count(); n != 0 {
		t.Errorf("%d pulls parked", n)
	}
}

func createTopicCmd(topic string, read, write, perm int32) *remoting.Command {
	h := goAdminCreate(topic)
	h.ReadQueueNums, h.WriteQueueNums, h.Perm = read, write, perm
	return remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)
}

func TestTopicQueueNumsCapped(t *testing.T) {
	tb := startTestBroker(t, nil)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			refused := []struct {
				read, write, perm int32
				remark            string
			}{
				{1025, 8, 6, "readQueueNums 1025 is out of range [1, 1024]"},
				{8, 1025, 6, "writeQueueNums 1025 is out of range [1, 1024]"},
				{8, math.MaxInt32, 6, "writeQueueNums 2147483647"},
				{math.MinInt32, 8, 6, "readQueueNums -2147483648"},
				{0, 8, 6, "readQueueNums 0"},
				{8, 0, 6, "writeQueueNums 0"},
				{8, 8, 8, "perm 8 is out of range [0, 7]"},
				{8, 8, -1, "perm -1"},
			}
			topic := "Capped_" + name
			for _, c := range refused {
				resp := invoke(t, tr, tb.Addr, createTopicCmd(topic, c.read, c.write, c.perm))
				if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.remark) {
					t.Errorf("read %d write %d perm %d: %d %q, want SYSTEM_ERROR with %q", c.read, c.write, c.perm,
						resp.Code, resp.Remark, c.remark)
				}
				if _, ok := tb.topics.Get(topic); ok {
					t.Fatalf("read %d write %d perm %d: topic created", c.read, c.write, c.perm)
				}
			}
			wantOK(t, invoke(t, tr, tb.Addr, createTopicCmd(topic, 1024, 1024, int32(route.PermReadWrite|route.PermInherit))))
			if tc, _ := tb.topics.Get(topic); tc.ReadQueueNums != 1024 || tc.WriteQueueNums != 1024 {
				t.Fatalf("stored %+v", tc)
			}
			// An update of an existing topic is held to the same bounds and leaves it as it was.
			if resp := invoke(t, tr, tb.Addr, createTopicCmd(topic, 1024, 1025, 6)); resp.Code != remoting.SystemError {
				t.Errorf("update to 1025 write queues: %d %q", resp.Code, resp.Remark)
			}
			if tc, _ := tb.topics.Get(topic); tc.WriteQueueNums != 1024 {
				t.Errorf("refused update changed the topic: %+v", tc)
			}
			// GET_TOPIC_STATS_INFO visits the 1024 queues: internal/broker/admin's TestTopicStatsOfCappedTopic.
		})
	}
}

// TestSendAutoCreateQueueNumsClamped: a send auto-creating a topic may ask any
// defaultTopicQueueNums; like RocketMQ the topic gets no more than TBW102's write queues.
func TestSendAutoCreateQueueNumsClamped(t *testing.T) {
	tb := startTestBroker(t, nil)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			topic := "Auto_" + name
			h := wiretest.SendHeader(topic, 0, nil)
			h.DefaultTopicQueueNums = math.MaxInt32
			wiretest.WantSendOK(t, invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON)))
			tc, ok := tb.topics.Get(topic)
			if !ok || tc.ReadQueueNums != DefaultTopicQueueNums || tc.WriteQueueNums != DefaultTopicQueueNums {
				t.Errorf("auto-created %+v, want %d queues (TBW102's)", tc, DefaultTopicQueueNums)
			}
		})
	}
}

// TestLoadedQueueNumsClamped: topics and groups stored with counts above MaxQueueNums (by an
// older build, or by hand) are clamped when the broker loads them, and the fix is persisted.
func TestLoadedQueueNumsClamped(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "Huge", ReadQueueNums: math.MaxInt32, WriteQueueNums: 2000, Perm: 6})
	tb.topics.Update(TopicConfig{TopicName: "Fine", ReadQueueNums: 1024, WriteQueueNums: 3, Perm: 6})
	gc := NewSubscriptionGroupConfig("g")
	gc.RetryQueueNums = math.MaxInt32
	tb.groups.Update(gc)
	dir := tb.Dir
	tb.Stop(t)
	for range 2 { // the second start reads what the first wrote back
		tb = startTestBrokerIn(t, dir, nil)
		if tc, _ := tb.topics.Get("Huge"); tc.ReadQueueNums != 1024 || tc.WriteQueueNums != 1024 {
			t.Errorf("loaded %+v, want 1024 queues", tc)
		}
		if tc, _ := tb.topics.Get("Fine"); tc.ReadQueueNums != 1024 || tc.WriteQueueNums != 3 {
			t.Errorf("a topic within the cap changed: %+v", tc)
		}
		if gc, _ := tb.groups.Get("g"); gc.RetryQueueNums != 1024 {
			t.Errorf("loaded retryQueueNums %d, want 1024", gc.RetryQueueNums)
		}
		tb.Stop(t)
	}
}

func TestLimitOptionsValidated(t *testing.T) {
	base := func() Options {
		o := testOptions(t, t.TempDir())
		o.BrokerAddr = "127.0.0.1:10911"
		return o
	}
	for _, c := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"queue cap below the schedule topic", func(o *Options) { o.Limits.MaxQueueNums = 17 }, "MaxQueueNums 17"},
		{"default queues above the cap", func(o *Options) { o.Limits.MaxQueueNums, o.DefaultTopicQueueNums = 32, 33 }, "DefaultTopicQueueNums 33"},
	} {
		o := base()
		c.mutate(&o)
		err := o.withDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	o := base()
	o.Limits.MaxHeldPulls = 10
	if o = o.withDefaults(); o.Limits.MaxHeldPullsPerConnection != 10 {
		t.Errorf("MaxHeldPulls 10 leaves MaxHeldPullsPerConnection %d", o.Limits.MaxHeldPullsPerConnection)
	}
	o = base().withDefaults()
	if err := o.validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if o.Limits.MaxLongPollingSuspend != 60*time.Second || o.Limits.MaxHeldPullsPerConnection != 4096 || o.Limits.MaxHeldPulls != 65536 ||
		o.Limits.MaxQueueNums != 1024 {
		t.Errorf("defaults %v %d %d %d", o.Limits.MaxLongPollingSuspend, o.Limits.MaxHeldPullsPerConnection, o.Limits.MaxHeldPulls, o.Limits.MaxQueueNums)
	}
}
