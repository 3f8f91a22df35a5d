package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mqconfig "github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// testNode runs a whole node (name service and broker) with short delay levels, so retries
// come back in milliseconds.
func testNode(t *testing.T) *node.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	levels := make([]time.Duration, 18)
	for i := range levels {
		levels[i] = 20 * time.Millisecond
	}
	n, err := node.Start(node.Options{Options: mqconfig.Options{
		Listen:  "127.0.0.1:0",
		Logger:  &l,
		Store:   mqconfig.Store{Dir: t.TempDir(), SegmentBytes: 4 << 20},
		Periods: mqconfig.Periods{RegisterNameServerPeriod: 200 * time.Millisecond},
		Timers:  mqconfig.Timers{DelayLevels: levels},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// transports are the two ways tests reach a node.
var transports = []string{"inproc", "tcp"}

// transportFor returns the in-process transport of n (closed at cleanup), or nil for TCP (the
// client instance then dials).
func transportFor(t *testing.T, n *node.Node, kind string) remoting.Transport {
	t.Helper()
	if kind == "tcp" {
		return nil
	}
	tr := n.NewTransport()
	t.Cleanup(func() { tr.Close() })
	return tr
}

// admin is a raw-protocol helper for setting up topics and producing messages.
type admin struct {
	t  *testing.T
	n  *node.Node
	tr remoting.Transport
}

func newAdmin(t *testing.T, n *node.Node) *admin {
	tr := n.NewTransport()
	t.Cleanup(func() { tr.Close() })
	return &admin{t: t, n: n, tr: tr}
}

func (a *admin) invoke(addr string, req *remoting.Command) *remoting.Command {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := a.tr.InvokeSync(ctx, addr, req)
	if err != nil {
		a.t.Fatalf("request %d: %v", req.Code, err)
	}
	return resp
}

// createTopic creates a topic with the given queue count and waits for its route.
func (a *admin) createTopic(topic string, queues int32) {
	a.t.Helper()
	h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "defaultTopic", ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	resp := a.invoke(a.n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	if resp.Code != remoting.Success {
		a.t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	eventually(a.t, "route of "+topic, func() bool {
		resp := a.invoke(a.n.Addr(), route.BuildGetRouteInfo(topic))
		if resp.Code != remoting.Success {
			return false
		}
		r, err := route.DecodeRouteInfoResponse(resp)
		return err == nil && len(r.QueueDatas) > 0 && r.QueueDatas[0].ReadQueueNums == queues
	})
}

// send stores one message in a queue and returns its queue offset.
func (a *admin) send(topic string, queueID int32, tag, key, body string) int64 {
	a.t.Helper()
	props := map[string]string{message.PropertyUniqKey: fmt.Sprintf("U-%s-%d-%s", topic, queueID, body), "WAIT": "true"}
	if tag != "" {
		props[message.PropertyTags] = tag
	}
	if key != "" {
		props[message.PropertyKeys] = key
	}
	h := &protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		Properties: message.MarshalProperties(props), MaxReconsumeTimes: -1}
	resp := a.invoke(a.n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), []byte(body)))
	if resp.Code != remoting.Success {
		a.t.Fatalf("send: %d %s", resp.Code, resp.Remark)
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		a.t.Fatal(err)
	}
	return rh.QueueOffset
}

// sendN sends n messages round robin over queues; bodies are prefix-i.
func (a *admin) sendN(topic string, queues int32, n int, prefix string) []string {
	a.t.Helper()
	var bodies []string
	for i := range n {
		b := fmt.Sprintf("%s-%d", prefix, i)
		a.send(topic, int32(i)%queues, "", "", b)
		bodies = append(bodies, b)
	}
	return bodies
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		// Wall time: cond reads state that goroutines of a real node and consumer change,
		// which signal nothing a test could wait on.
		time.Sleep(10 * time.Millisecond)
	}
}

// settled reports whether p holds queues of topic and each of them is consumed up to end: its
// cache is empty and its committed offset is end. A message of those queues that was going to
// be consumed (again) has been by then, since a queue's offset passes a message only once its
// consumption is over.
func settled(p *puller, topic string, end int64) bool {
	held := heldBy(p, topic)
	for _, mq := range held {
		p.queuesMu.Lock()
		qs := p.queues[mq]
		p.queuesMu.Unlock()
		if qs == nil {
			return false
		}
		if count, _, _ := qs.pq.stats(); count > 0 {
			return false
		}
		if off, ok := p.store.read(mq); !ok || off != end {
			return false
		}
	}
	return len(held) > 0
}

// brokerOffset is the offset of group on mq the broker has stored (-1 when none).
func (a *admin) brokerOffset(group string, mq MessageQueue) int64 {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	off, err := queryConsumerOffset(ctx, a.tr, a.n.BrokerAddr(), group, mq)
	if errors.Is(err, ErrOffsetNotFound) {
		return -1
	}
	if err != nil {
		a.t.Fatal(err)
	}
	return off
}

// seen records what listeners got.
type seen struct {
	mu   sync.Mutex
	msgs []seenMsg
}

type seenMsg struct {
	who  string
	msg  *Message
	body string
}

func (s *seen) add(who string, msgs []*Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.msgs = append(s.msgs, seenMsg{who: who, msg: m, body: string(m.Body)})
	}
}

func (s *seen) snapshot() []seenMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

func (s *seen) bodies() []string {
	var out []string
	for _, m := range s.snapshot() {
		out = append(out, m.body)
	}
	slices.Sort(out)
	return out
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// recorder is a listener that records and succeeds.
func (s *seen) recorder(who string) Listener {
	return func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		s.add(who, msgs)
		return ConsumeSuccess, nil
	}
}

// fastOptions are the short periods tests run with.
func fastOptions(t *testing.T, n *node.Node, tr remoting.Transport, group, instance string) []Option {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := []Option{WithNameServers(n.Addr()), WithGroup(group), WithInstanceName(instance),
		WithRebalanceInterval(200 * time.Millisecond), WithPersistInterval(100 * time.Millisecond),
		WithPullSuspend(time.Second), WithPullErrorDelay(50 * time.Millisecond), WithLogger(&l),
		WithConsumeFrom(FromFirstOffset, time.Time{})}
	if tr != nil {
		opts = append(opts, WithTransport(tr))
	}
	return opts
}

// startConsumer builds, subscribes and starts a push consumer closed at cleanup.
func startConsumer(t *testing.T, topic, expr string, l Listener, opts ...Option) *PushConsumer {
	t.Helper()
	pc, err := NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, expr, l); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// heldQueues lists the queues of topic pc holds.
func heldQueues(pc *PushConsumer, topic string) []MessageQueue { return heldBy(pc.p, topic) }

// heldBy lists the queues of topic p holds.
func heldBy(p *puller, topic string) []MessageQueue {
	var out []MessageQueue
	for _, mq := range p.assigned() {
		if mq.Topic == topic {
			out = append(out, mq)
		}
	}
	rebalance.SortQueues(out) // assigned() is in map order
	return out
}

// checkNoGoroutineLeak fails when goroutines started after base are still running after a
// grace period.
func checkNoGoroutineLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d before, %d after\n%s", base, runtime.NumGoroutine(), filterStacks(string(buf[:n])))
		}
		time.Sleep(20 * time.Millisecond) // wall time: a goroutine's exit signals nothing
	}
}

// filterStacks keeps the goroutine stacks that mention this package or the client instance.
func filterStacks(all string) string {
	var keep []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "mq/consumer") || strings.Contains(g, "mq/internal/client") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

var testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")

func testRecord(topic, body string) *message.Message {
	return &message.Message{Topic: topic, Body: []byte(body), BornHost: testStoreHost, StoreHost: testStoreHost,
		Properties: message.MarshalProperties(map[string]string{"TAGS": "t"})}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// startedPuller is a puller on inst as start leaves it, without its loops: offsets on the
// broker, its context live until the test ends (then every goroutine it ran is waited for).
func startedPuller(t *testing.T, cfg pullerConfig, svc queueService, inst instance) *puller {
	t.Helper()
	p := newPuller(cfg, protocol.ConsumePassively, svc)
	p.inst, p.clientID = inst, inst.ClientID()
	p.store = newRemoteOffsetStore(cfg.group, inst, false, testLogger(t))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { p.cancel(); p.loops.Wait() })
	return p
}
