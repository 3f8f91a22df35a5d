package producer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// fakeClock is a settable clock for the fault strategy.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func testRoute(brokers ...string) *route.TopicRouteData {
	r := &route.TopicRouteData{}
	// Listed out of order on purpose: queues are sorted by broker name.
	for i := len(brokers) - 1; i >= 0; i-- {
		b := brokers[i]
		r.QueueDatas = append(r.QueueDatas, route.QueueData{BrokerName: b, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
		r.BrokerDatas = append(r.BrokerDatas, route.BrokerData{BrokerName: b, BrokerAddrs: map[int64]string{0: b + ":1"}})
	}
	return r
}

// testProducer is a Producer with no instance, for selection tests.
func testProducer(clock *fakeClock, fault bool) *Producer {
	cfg := defaultConfig()
	cfg.now = clock.now
	cfg.faultTolerance = fault
	cfg.nameServers = []string{"127.0.0.1:9876"}
	return &Producer{cfg: cfg, fault: newFaultTolerance(fault, clock.now), pubs: map[string]*publishInfo{}}
}

func newPI(r *route.TopicRouteData) *publishInfo {
	pi := buildPublishInfo("T", r, 0)
	pi.counter = new(atomic.Uint32)
	return pi
}

func brokersOf(p *Producer, pi *publishInfo, n int, avoid string) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, p.selectQueue(pi, avoid).BrokerName)
	}
	return out
}

func TestBuildPublishInfo(t *testing.T) {
	r := testRoute("b", "a")
	r.QueueDatas = append(r.QueueDatas, route.QueueData{BrokerName: "ro", WriteQueueNums: 4, Perm: 4})
	r.QueueDatas = append(r.QueueDatas, route.QueueData{BrokerName: "nomaster", WriteQueueNums: 4, Perm: 6})
	r.BrokerDatas = append(r.BrokerDatas, route.BrokerData{BrokerName: "nomaster", BrokerAddrs: map[int64]string{1: "s:1"}})
	pi := buildPublishInfo("T", r, 0)
	want := []MessageQueue{{Topic: "T", BrokerName: "a", QueueID: 0}, {Topic: "T", BrokerName: "a", QueueID: 1}, {Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	if diff := cmp.Diff(want, pi.queues); diff != "" {
		t.Fatalf("queues (-want +got):\n%s", diff)
	}
	capped := buildPublishInfo("T", &route.TopicRouteData{
		QueueDatas:  []route.QueueData{{BrokerName: "a", WriteQueueNums: 8, ReadQueueNums: 8, Perm: 7}},
		BrokerDatas: []route.BrokerData{{BrokerName: "a", BrokerAddrs: map[int64]string{0: "a:1"}}}}, 4)
	if len(capped.queues) != 4 {
		t.Fatalf("TBW102 route not capped at 4: %v", capped.queues)
	}
	ordered := buildPublishInfo("T", &route.TopicRouteData{OrderTopicConf: "b:2;a:1;junk"}, 0)
	if diff := cmp.Diff([]MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 1}, {Topic: "T", BrokerName: "a", QueueID: 0}}, ordered.queues); diff != "" {
		t.Fatalf("orderTopicConf (-want +got):\n%s", diff)
	}
}

func TestSelectRoundRobin(t *testing.T) {
	p := testProducer(newFakeClock(), true)
	pi := newPI(testRoute("a", "b"))
	seen := map[MessageQueue]int{}
	for i := 0; i < 40; i++ {
		seen[p.selectQueue(pi, "")]++
	}
	for _, q := range pi.queues {
		if seen[q] != 10 {
			t.Fatalf("round robin uneven: %v", seen)
		}
	}
}

// TestRoundRobinStartsAtRandom: each topic's first publish info starts its round robin where
// the producer's source says (RocketMQ's ThreadLocalIndex starts at a random int), so
// producers started together do not all send to the same queue first.
func TestRoundRobinStartsAtRandom(t *testing.T) {
	firstQueues := func(p *Producer) map[MessageQueue]int {
		seen := map[MessageQueue]int{}
		for i := range 64 {
			topic := fmt.Sprint("T", i)
			pi, _ := p.storePublishInfo(topic, newPI(testRoute("a", "b")), nil)
			seen[p.selectQueue(pi, "")]++
		}
		return seen
	}
	seeded := testProducer(newFakeClock(), false)
	seeded.cfg.queueStart = rand.New(rand.NewPCG(17, 4)).Uint32
	if seen := firstQueues(seeded); len(seen) != 4 {
		t.Fatalf("first queues of 64 topics from a seeded source: %v, want all 4 queues", seen)
	}
	// The default source: 64 first picks all on one of 4 queues has probability 4^-63.
	if seen := firstQueues(testProducer(newFakeClock(), false)); len(seen) < 2 {
		t.Fatalf("first queues of 64 topics with the default source: %v", seen)
	}
	// A rebuilt route keeps its counter: the round robin goes on where it was.
	p := testProducer(newFakeClock(), false)
	p.cfg.queueStart = func() uint32 { return 2 }
	pi, _ := p.storePublishInfo("T", newPI(testRoute("a", "b")), nil)
	if q := p.selectQueue(pi, ""); q != pi.queues[3] {
		t.Fatalf("first queue %v, want the one after the start (%v)", q, pi.queues[3])
	}
	pi, _ = p.storePublishInfo("T", newPI(testRoute("a", "b")), pi)
	if q := p.selectQueue(pi, ""); q != pi.queues[0] {
		t.Fatalf("after a rebuild %v, want %v", q, pi.queues[0])
	}
}

func TestSelectAvoidsFailedBroker(t *testing.T) {
	for _, fault := range []bool{false, true} {
		t.Run(fmt.Sprint("fault=", fault), func(t *testing.T) {
			p := testProducer(newFakeClock(), fault)
			pi := newPI(testRoute("a", "b"))
			for _, b := range brokersOf(p, pi, 20, "a") {
				if b != "b" {
					t.Fatalf("retry went to the broker that just failed")
				}
			}
			// Only the last failed broker is avoided (RocketMQ's lastBrokerName): with three
			// brokers, a third attempt after a and b failed may go back to a.
			three := newPI(testRoute("a", "b", "c"))
			seen := map[string]bool{}
			for _, b := range brokersOf(p, three, 12, "b") {
				seen[b] = true
			}
			if diff := cmp.Diff(map[string]bool{"a": true, "c": true}, seen); diff != "" {
				t.Fatalf("brokers after b failed (-want +got):\n%s", diff)
			}
			// The only broker failed: still its queue, not a panic.
			for _, b := range brokersOf(p, newPI(testRoute("a")), 4, "a") {
				if b != "a" {
					t.Fatal(b)
				}
			}
		})
	}
}

func TestFaultIsolationWithFakeClock(t *testing.T) {
	clock := newFakeClock()
	p := testProducer(clock, true)
	pi := newPI(testRoute("a", "b", "c"))
	p.fault.update("b", 0, true) // failed: 600 s
	for _, b := range brokersOf(p, pi, 30, "") {
		if b == "b" {
			t.Fatal("isolated broker selected")
		}
	}
	clock.add(599 * time.Second)
	if p.fault.available("b") {
		t.Fatal("b back before 600 s")
	}
	clock.add(time.Second)
	if !p.fault.available("b") {
		t.Fatal("b still isolated after 600 s")
	}
	// A slow answer (1 s) isolates for 60 s; a fast one ends the isolation.
	p.fault.update("a", time.Second, false)
	if p.fault.available("a") {
		t.Fatal("slow broker not isolated")
	}
	clock.add(59 * time.Second)
	if p.fault.available("a") {
		t.Fatal("slow broker back too early")
	}
	p.fault.update("a", 10*time.Millisecond, false)
	if !p.fault.available("a") {
		t.Fatal("fast answer did not end the isolation")
	}
	// Everything isolated: the broker that comes back first is used.
	p.fault.update("a", 0, true)
	p.fault.update("b", 2*time.Second, false) // 120 s
	p.fault.update("c", time.Second, false)   // 60 s
	for _, b := range brokersOf(p, pi, 6, "") {
		if b != "c" {
			t.Fatalf("picked %s, want the broker back soonest (c)", b)
		}
	}
	// Off: nothing is recorded, and so nothing is skipped.
	off := testProducer(clock, false)
	off.fault.update("a", 0, true)
	if !off.fault.available("a") {
		t.Fatal("fault tolerance off recorded a failure")
	}
	seen := map[string]bool{}
	for _, b := range brokersOf(off, pi, 6, "") {
		seen[b] = true
	}
	if !seen["a"] {
		t.Fatal("fault tolerance off still skipped a")
	}
}

func TestIsolationTable(t *testing.T) {
	for _, c := range []struct {
		latency, want time.Duration
	}{
		{0, 0}, {49 * time.Millisecond, 0}, {100 * time.Millisecond, 0}, {549 * time.Millisecond, 0},
		{550 * time.Millisecond, 30 * time.Second}, {time.Second, 60 * time.Second},
		{2 * time.Second, 120 * time.Second}, {3 * time.Second, 180 * time.Second},
		{15 * time.Second, 600 * time.Second}, {failureLatency, 600 * time.Second},
	} {
		if got := isolationFor(c.latency); got != c.want {
			t.Errorf("isolationFor(%v) = %v, want %v", c.latency, got, c.want)
		}
	}
}

func TestOrderedSelection(t *testing.T) {
	clock := newFakeClock()
	p := testProducer(clock, true)
	pi := newPI(testRoute("a", "b"))
	msg := NewMessage("T", []byte("x"))
	// Hash: same key, same queue; Java's String.hashCode.
	for _, key := range []string{"order-1", "order-2", "k"} {
		q1, err := p.selectOrdered(pi, msg, HashSelector(), key, StrictOrder)
		if err != nil {
			t.Fatal(err)
		}
		want := int(message.JavaStringHash(key)) % 4
		if want < 0 {
			want = -want
		}
		if q1 != pi.queues[want] {
			t.Fatalf("hash of %q picked %v, want %v", key, q1, pi.queues[want])
		}
	}
	onB1 := SelectorFunc(func(qs []MessageQueue, _ *Message, _ any) MessageQueue { return qs[3] })
	p.fault.update("b", 0, true)
	if q, _ := p.selectOrdered(pi, msg, onB1, nil, StrictOrder); q.BrokerName != "b" {
		t.Fatalf("strict order left its queue: %v", q)
	}
	if q, _ := p.selectOrdered(pi, msg, onB1, nil, FailoverOrder); q != pi.queues[0] {
		t.Fatalf("failover order went to %v, want the next available queue %v", q, pi.queues[0])
	}
	bad := SelectorFunc(func([]MessageQueue, *Message, any) MessageQueue {
		return MessageQueue{Topic: "T", BrokerName: "zz", QueueID: 9}
	})
	if _, err := p.selectOrdered(pi, msg, bad, nil, StrictOrder); !errors.Is(err, ErrSelector) {
		t.Fatalf("foreign queue: %v", err)
	}
	panicky := SelectorFunc(func([]MessageQueue, *Message, any) MessageQueue { panic("boom") })
	if _, err := p.selectOrdered(pi, msg, panicky, nil, StrictOrder); !errors.Is(err, ErrSelector) {
		t.Fatalf("panicking selector: %v", err)
	}
	r := RandomSelector().Select(pi.queues, msg, nil)
	if indexOf(pi.queues, r) < 0 {
		t.Fatalf("random selector %v", r)
	}
}

func TestValidation(t *testing.T) {
	p := testProducer(newFakeClock(), true)
	p.cfg.maxMessageSize = 16
	cases := []struct {
		name string
		msg  *Message
		rule string
	}{
		{"nil", nil, "nil"},
		{"empty topic", NewMessage("", []byte("x")), "topic is empty"},
		{"long topic", NewMessage(strings.Repeat("t", 128), []byte("x")), "exceeds 127"},
		{"bad char", NewMessage("a b", []byte("x")), "outside"},
		{"bad char dot", NewMessage("a.b", []byte("x")), "outside"},
		{"TBW102", NewMessage("TBW102", []byte("x")), "reserved"},
		{"schedule", NewMessage("SCHEDULE_TOPIC_XXXX", []byte("x")), "reserved"},
		{"rmq sys", NewMessage("RMQ_SYS_TRACE_TOPIC", []byte("x")), "reserved"},
		{"rmq sys lower", NewMessage("rmq_sys_x", []byte("x")), "reserved"},
		{"empty body", NewMessage("T", nil), "body of the message to T is empty"},
		{"big body", NewMessage("T", make([]byte, 17)), "exceeds the max message size"},
		{"negative delay", NewMessage("T", []byte("x")).WithDelayTimeLevel(-1), "negative"},
		{"property separator", NewMessage("T", []byte("x")).WithProperty("a", "b\x01"), "separator"},
		{"key separator", NewMessage("T", []byte("x")).WithKeys("a\x02"), "separator"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.validate(c.msg)
			if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("got %v, want an ErrInvalidMessage about %q", err, c.rule)
			}
		})
	}
	for _, ok := range []string{"T", "%RETRY%g", "a|b", "A-z_0", strings.Repeat("t", 127)} {
		if err := p.validate(NewMessage(ok, []byte("x"))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if err := p.validateBatch([]*Message{NewMessage("A", []byte("x")), NewMessage("B", []byte("x"))}); err == nil {
		t.Error("batch with two topics accepted")
	}
	if err := p.validateBatch([]*Message{NewMessage("A", []byte("x")).WithDelayTimeLevel(2)}); err == nil {
		t.Error("delayed batch accepted")
	}
}

var uniqRE = regexp.MustCompile(`^[0-9A-F]{20}[0-9a-f]{12}$`)

func TestUniqIDUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 20000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[g] = append(ids[g], newUniqID())
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, l := range ids {
		for i, id := range l {
			if !uniqRE.MatchString(id) {
				t.Fatalf("malformed id %q", id)
			}
			if seen[id] {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = true
			if i > 0 && id <= l[i-1] {
				t.Fatalf("ids of one goroutine not increasing: %s then %s", l[i-1], id)
			}
		}
	}
	// More than 65,536 ids in one millisecond still never repeat.
	burst := map[string]bool{}
	for range 70000 {
		id := uniqIDAt(1)
		if burst[id] {
			t.Fatalf("duplicate in a burst: %s", id)
		}
		burst[id] = true
	}
}

func TestUniqIDLayout(t *testing.T) {
	id := newUniqID()
	if len(id) != 32 || id[:20] != uniqPrefix() {
		t.Fatalf("id %q, prefix %q", id, uniqPrefix())
	}
}

func TestPropertiesEncoding(t *testing.T) {
	m := NewMessage("T", []byte("x")).WithTags("tagA").WithKeys("k1", "k2").WithDelayTimeLevel(3).
		WithProperty("user", "v").WithProperty(message.PropertyTags, "ignored")
	var sb strings.Builder
	m.appendProperties(&sb, "ID")
	got := message.UnmarshalProperties([]byte(sb.String()))
	want := map[string]string{"TAGS": "tagA", "KEYS": "k1 k2", "DELAY": "3", "user": "v", "UNIQ_KEY": "ID"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("properties (-want +got):\n%s", diff)
	}
	// A user UNIQ_KEY is kept.
	sb.Reset()
	NewMessage("T", []byte("x")).WithProperty(message.PropertyUniqKey, "MINE").appendProperties(&sb, "")
	if v, _ := message.PropertyValueString(sb.String(), message.PropertyUniqKey); v != "MINE" {
		t.Fatalf("user UNIQ_KEY replaced: %q", sb.String())
	}
}

func TestSendErrorUnwrap(t *testing.T) {
	busy := &remoting.ResponseError{Code: remoting.SystemBusy, Remark: "busy"}
	se := &SendError{Topic: "T", Attempts: []Attempt{
		{Queue: MessageQueue{Topic: "T", BrokerName: "a", QueueID: 0}, Addr: "a:1", Err: remoting.ErrTimeout},
		{Queue: MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}, Addr: "b:1", Err: busy}}}
	if !errors.Is(se, remoting.ErrTimeout) {
		t.Fatal("errors.Is misses the first attempt")
	}
	var re *remoting.ResponseError
	if !errors.As(se, &re) || re.Code != remoting.SystemBusy {
		t.Fatal("errors.As misses the response error")
	}
	if s := se.Error(); !strings.Contains(s, "broker a (a:1)") || !strings.Contains(s, "2 attempt(s)") {
		t.Fatal(s)
	}
	if retryable(busy) || !retryable(remoting.ErrTimeout) ||
		!retryable(&remoting.ResponseError{Code: remoting.TopicNotExist}) {
		t.Fatal("retryable classification")
	}
}

func TestCompression(t *testing.T) {
	p := testProducer(newFakeClock(), true)
	body := []byte(strings.Repeat("abc", 2000))
	pr := p.encode(NewMessage("T", body))
	if pr.sysFlag&message.FlagCompressed == 0 || len(pr.body) >= len(body) {
		t.Fatalf("body of %d bytes not compressed", len(body))
	}
	small := p.encode(NewMessage("T", []byte("abc")))
	if small.sysFlag != 0 {
		t.Fatal("small body compressed")
	}
}

func TestOptionsValidated(t *testing.T) {
	_, err := New(WithGroup("bad group"), WithRetries(-1))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "name server") ||
		!strings.Contains(err.Error(), "group") || !strings.Contains(err.Error(), "retries") {
		t.Fatalf("options: %v", err)
	}
}
