package mq

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/probes"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Consumer cluster tests: a name service node and two broker nodes (broker-a, broker-b), the
// topic with 8 queues on each, consumers and producer in-process and over TCP.

const (
	ccQueuesPerBroker = 8
	ccQueues          = 2 * ccQueuesPerBroker
	ccPullBatch       = consumer.DefaultPullBatchSize
)

type consCluster struct {
	ns, a, b  *Node
	transport string
}

func startConsNode(t *testing.T, opts Options) *Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	levels := make([]time.Duration, 18)
	for i := range levels {
		levels[i] = 20 * time.Millisecond
	}
	opts.Listen = "127.0.0.1:0"
	opts.Store.Dir = t.TempDir()
	opts.Store.SegmentBytes = 16 << 20
	opts.Logger = &l
	opts.Timers.DelayLevels = levels
	opts.Periods.RegisterNameServerPeriod = 100 * time.Millisecond
	opts.Periods.FlushConsumerOffsetInterval = 100 * time.Millisecond
	opts.Periods.RebalanceLockMaxLiveTime = 3 * time.Second
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func startConsCluster(t *testing.T, transport string) *consCluster {
	t.Helper()
	c := &consCluster{transport: transport, ns: startConsNode(t, Options{DisableBroker: true})}
	c.a = startConsNode(t, Options{DisableNameServer: true, NameServers: []string{c.ns.Addr()}, Broker: config.Broker{Name: "broker-a"}})
	c.b = startConsNode(t, Options{DisableNameServer: true, NameServers: []string{c.ns.Addr()}, Broker: config.Broker{Name: "broker-b"}})
	return c
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createTopic creates topic with 8 queues on both brokers and waits for the full route.
func (c *consCluster) createTopic(t *testing.T, topic string) {
	t.Helper()
	tr := c.ns.NewTransport()
	defer tr.Close()
	invoke := func(addr string, req *remoting.Command) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := tr.InvokeSync(ctx, addr, req)
		if err != nil {
			t.Fatalf("request %d to %s: %v", req.Code, addr, err)
		}
		return resp
	}
	for _, n := range []*Node{c.a, c.b} {
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: ccQueuesPerBroker,
			WriteQueueNums: ccQueuesPerBroker, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
		resp := invoke(n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
		if resp.Code != remoting.Success {
			t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
		}
	}
	waitUntil(t, 10*time.Second, "route of "+topic, func() bool {
		resp := invoke(c.ns.Addr(), route.BuildGetRouteInfo(topic))
		if resp.Code != remoting.Success {
			return false
		}
		r, err := route.DecodeRouteInfoResponse(resp)
		if err != nil || len(r.QueueDatas) != 2 {
			return false
		}
		for _, q := range r.QueueDatas {
			if q.ReadQueueNums != ccQueuesPerBroker || q.WriteQueueNums != ccQueuesPerBroker {
				return false
			}
		}
		return true
	})
}

func (c *consCluster) producer(t *testing.T) *producer.Producer {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := []producer.Option{producer.WithNameServers(c.ns.Addr()), producer.WithLogger(&l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-p"),
		producer.WithPollNameServerInterval(100 * time.Millisecond)}
	if c.transport == "inproc" {
		opts = append(opts, producer.WithOwnedTransport(c.ns.NewTransport()))
	}
	p, err := producer.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// consumerOptions are the short periods the cluster tests run with; instance is made unique
// per test, since client instances are shared process-wide by client id.
func (c *consCluster) consumerOptions(t *testing.T, group, instance string) []consumer.Option {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := []consumer.Option{consumer.WithNameServers(c.ns.Addr()), consumer.WithGroup(group),
		consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-" + instance),
		consumer.WithRebalanceInterval(100 * time.Millisecond), consumer.WithPersistInterval(50 * time.Millisecond),
		consumer.WithPullSuspend(500 * time.Millisecond), consumer.WithPullErrorDelay(50 * time.Millisecond),
		consumer.WithLockInterval(100 * time.Millisecond), consumer.WithSuspendDelay(10 * time.Millisecond),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithLogger(&l)}
	if c.transport == "inproc" {
		opts = append(opts, consumer.WithOwnedTransport(c.ns.NewTransport()))
	}
	return opts
}

func (c *consCluster) consumer(t *testing.T, group, instance, topic string, l consumer.Listener, extra ...consumer.Option) *consumer.PushConsumer {
	t.Helper()
	pc, err := consumer.NewPushConsumer(append(c.consumerOptions(t, group, instance), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", l); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// tally counts what listeners consumed, by body.
type tally struct {
	mu     sync.Mutex
	times  map[string]int
	byWho  map[string]int
	owners map[consumer.MessageQueue]map[string]bool
	msgs   []*consumer.Message
}

func newTally() *tally {
	return &tally{times: map[string]int{}, byWho: map[string]int{}, owners: map[consumer.MessageQueue]map[string]bool{}}
}

func (ta *tally) add(who string, msgs []*consumer.Message) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	for _, m := range msgs {
		ta.times[string(m.Body)]++
		ta.byWho[who]++
		if ta.owners[m.Queue] == nil {
			ta.owners[m.Queue] = map[string]bool{}
		}
		ta.owners[m.Queue][who] = true
		ta.msgs = append(ta.msgs, m)
	}
}

func (ta *tally) listener(who string) consumer.Listener {
	return func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		ta.add(who, msgs)
		return consumer.ConsumeSuccess, nil
	}
}

// unique is how many distinct bodies were consumed; dups how many deliveries beyond the first.
func (ta *tally) unique() int {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return len(ta.times)
}

func (ta *tally) dups() int {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	d := 0
	for _, n := range ta.times {
		d += n - 1
	}
	return d
}

// moved counts, over all queues, the consumers beyond the first that consumed from a queue.
func (ta *tally) moved() int {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	m := 0
	for _, who := range ta.owners {
		m += len(who) - 1
	}
	return m
}

func (ta *tally) missing(bodies []string) []string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var out []string
	for _, b := range bodies {
		if ta.times[b] == 0 {
			out = append(out, b)
		}
	}
	return out
}

// messages is the message count of the large scenarios: 10,000; 3,000 under -short, and
// over TCP under the race detector (where a synchronous send costs about 3 ms of CPU, and the
// whole file should still run in seconds).
func (c *consCluster) messages() int {
	if testing.Short() || (raceEnabled && c.transport == "tcp") {
		return 3000
	}
	return 10000
}

// raceEnabled reports whether the test binary was built with -race.
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}()

// sendPaced sends bodies with workers goroutines, at most rate messages a second overall (0:
// as fast as possible), counting into sent. It returns the first error.
func sendPaced(ctx context.Context, p *producer.Producer, topic string, bodies []string, workers, rate int, sent *atomic.Int64) error {
	return sendGated(ctx, p, topic, bodies, workers, rate, sent, nil)
}

// sendGate holds back the bodies from index at on until open is closed.
type sendGate struct {
	at   int
	open chan struct{}
}

// sendGated is sendPaced that sends no body at or past a gate's index before the gate opens,
// so a test can pin an event between two parts of one stream of sends.
func sendGated(ctx context.Context, p *producer.Producer, topic string, bodies []string, workers, rate int,
	sent *atomic.Int64, gates []sendGate) error {
	var next atomic.Int64
	errs := make(chan error, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) {
					return
				}
				for _, g := range gates {
					if i < int64(g.at) {
						continue
					}
					select {
					case <-g.open:
					case <-ctx.Done():
						errs <- ctx.Err()
						return
					}
				}
				if rate > 0 {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
						time.Sleep(d)
					}
				}
				if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(bodies[i]))); err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				if sent != nil {
					sent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func makeBodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return out
}

func splitStable(pcs []*consumer.PushConsumer, topic string) bool {
	return probes.SplitStable(pcs, topic, ccQueues)
}

func eachConsTransport(t *testing.T, f func(t *testing.T, c *consCluster)) {
	for _, tr := range []string{"inproc", "tcp"} {
		t.Run(tr, func(t *testing.T) { f(t, startConsCluster(t, tr)) })
	}
}

// Three members of a group share 16 queues on two brokers: every message is consumed once,
// and each queue is owned by exactly one member.
func TestConsumerClusterGroupShares(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group = "CShare", "cg-share"
		c.createTopic(t, topic)
		p := c.producer(t)
		ta := newTally()
		var pcs []*consumer.PushConsumer
		for i := range 3 {
			who := fmt.Sprintf("c%d", i)
			pcs = append(pcs, c.consumer(t, group, who, topic, ta.listener(who)))
		}
		waitUntil(t, 10*time.Second, "a stable split of 16 queues", func() bool { return splitStable(pcs, topic) })
		bodies := makeBodies("m", c.messages())
		start := time.Now()
		if err := sendPaced(context.Background(), p, topic, bodies, 8, 0, nil); err != nil {
			t.Fatal(err)
		}
		sendTime := time.Since(start)
		waitUntil(t, 30*time.Second, "every message consumed", func() bool { return ta.unique() >= len(bodies) })
		t.Logf("%d messages: sent in %v, consumed in %v; per consumer %v; duplicates %d",
			len(bodies), sendTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), ta.byWho, ta.dups())
		if m := ta.missing(bodies); len(m) > 0 {
			t.Fatalf("%d messages never consumed, e.g. %v", len(m), m[:min(5, len(m))])
		}
		// The membership never changed while messages flowed: nothing may be consumed twice.
		if d := ta.dups(); d != 0 {
			t.Errorf("%d duplicates with a stable membership", d)
		}
		if !splitStable(pcs, topic) {
			t.Errorf("queues not owned exactly once at the end")
		}
		for q, who := range ta.owners {
			if len(who) != 1 {
				t.Errorf("queue %v consumed by %v", q, who)
			}
		}
		for i, pc := range pcs {
			n := 0
			for _, q := range pc.Assignment() {
				if q.Topic == topic {
					n++
				}
			}
			if n < ccQueues/3 || n > ccQueues/3+1 {
				t.Errorf("consumer %d holds %d queues", i, n)
			}
		}
	})
}

// A fourth member joins and one leaves while messages are being sent: nothing is lost, and the
// duplicates (consumed by the old owner but not yet committed when the new owner read the
// offset) stay within the in-flight window of the queues that moved. Gates in the stream of
// sends pin each membership change between two parts of it, however fast the machine.
func TestConsumerClusterJoinLeaveWhileSending(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group = "CMove", "cg-move"
		c.createTopic(t, topic)
		p := c.producer(t)
		ta := newTally()
		var pcs []*consumer.PushConsumer
		for i := range 3 {
			who := fmt.Sprintf("c%d", i)
			pcs = append(pcs, c.consumer(t, group, who, topic, ta.listener(who)))
		}
		waitUntil(t, 10*time.Second, "a stable split of 16 queues", func() bool { return splitStable(pcs, topic) })
		bodies := makeBodies("m", c.messages())
		n := len(bodies)
		joined := sendGate{at: n / 2, open: make(chan struct{})}
		left := sendGate{at: 5 * n / 6, open: make(chan struct{})}
		var sent atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		sendErr := make(chan error, 1)
		// Paced so that messages also flow while the membership changes: about 2 s for 10,000.
		go func() { sendErr <- sendGated(ctx, p, topic, bodies, 8, 5000, &sent, []sendGate{joined, left}) }()
		sending := true
		defer func() {
			if sending { // a failed wait below: stop the senders before the test ends
				cancel()
				<-sendErr
			}
		}()
		waitUntil(t, 20*time.Second, "a third sent", func() bool { return sent.Load() >= int64(n/3) })
		pcs = append(pcs, c.consumer(t, group, "c3", topic, ta.listener("c3")))
		waitUntil(t, 10*time.Second, "a split over four", func() bool { return splitStable(pcs, topic) })
		atJoin := sent.Load()
		close(joined.open)
		waitUntil(t, 20*time.Second, "two thirds sent", func() bool { return sent.Load() >= int64(2*n/3) })
		if err := pcs[0].Close(); err != nil {
			t.Fatal(err)
		}
		pcs = pcs[1:]
		atLeave := sent.Load()
		close(left.open)
		err := <-sendErr
		sending = false
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if atJoin < int64(n/3) || atJoin > int64(joined.at) || atLeave < int64(2*n/3) || atLeave > int64(left.at) {
			t.Fatalf("joined after %d sent, left after %d; want within [%d, %d] and [%d, %d]",
				atJoin, atLeave, n/3, joined.at, 2*n/3, left.at)
		}
		waitUntil(t, 30*time.Second, "every message consumed", func() bool { return ta.unique() >= len(bodies) })
		waitUntil(t, 10*time.Second, "a split over three", func() bool { return splitStable(pcs, topic) })
		time.Sleep(200 * time.Millisecond) // room for late duplicates to show up
		if m := ta.missing(bodies); len(m) > 0 {
			t.Fatalf("%d messages lost, e.g. %v", len(m), m[:min(5, len(m))])
		}
		dups, moved := ta.dups(), ta.moved()
		t.Logf("%d messages; joined after %d sent, left after %d; per consumer %v; %d queue moves; %d duplicates",
			len(bodies), atJoin, atLeave, ta.byWho, moved, dups)
		if moved == 0 {
			t.Errorf("no queue changed hands, though a member joined and one left")
		}
		if limit := ccPullBatch * moved; dups > limit {
			t.Errorf("%d duplicates, more than pull batch %d x %d queue moves", dups, ccPullBatch, moved)
		}
	})
}

// Broadcasting: each of three members gets every message.
func TestConsumerClusterBroadcasting(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group = "CBroad", "cg-broad"
		c.createTopic(t, topic)
		p := c.producer(t)
		dir := t.TempDir()
		var tallies []*tally
		var pcs []*consumer.PushConsumer
		for i := range 3 {
			ta := newTally()
			tallies = append(tallies, ta)
			pcs = append(pcs, c.consumer(t, group, fmt.Sprintf("b%d", i), topic, ta.listener("b"),
				consumer.WithModel(consumer.Broadcasting), consumer.WithOffsetDir(dir)))
		}
		for _, pc := range pcs {
			waitUntil(t, 10*time.Second, "every queue taken", func() bool { return len(pc.Assignment()) == ccQueues })
		}
		bodies := makeBodies("b", c.messages()/5)
		if err := sendPaced(context.Background(), p, topic, bodies, 8, 0, nil); err != nil {
			t.Fatal(err)
		}
		for i, ta := range tallies {
			waitUntil(t, 30*time.Second, fmt.Sprintf("member %d consumed everything", i), func() bool { return ta.unique() >= len(bodies) })
		}
		time.Sleep(100 * time.Millisecond)
		for i, ta := range tallies {
			if m := ta.missing(bodies); len(m) > 0 {
				t.Errorf("member %d missed %d messages", i, len(m))
			}
			if d := ta.dups(); d != 0 {
				t.Errorf("member %d got %d duplicates", i, d)
			}
		}
	})
}

// Orderly: 20 keys sent with HashSelector by key, a listener that sometimes suspends the queue,
// and a third member joining mid-stream. Per key, messages are consumed in send order (a
// redelivery may repeat a suffix, never skip or reorder).
func TestConsumerClusterOrderlyThroughRebalance(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group, keys = "COrder", "cg-order", 20
		c.createTopic(t, topic)
		p := c.producer(t)
		perKey := c.messages() / 100 // 100 per key, 30 under -short or race over TCP
		var mu sync.Mutex
		seq := map[int][]int{} // key -> sequence numbers in consumption order
		suspended := map[string]bool{}
		byWho := map[string]int{}
		var suspends int
		listener := func(who string) consumer.Listener {
			return func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					var k, s int
					if _, err := fmt.Sscanf(string(m.Body), "k%d-%d", &k, &s); err != nil {
						return consumer.ConsumeSuccess, err
					}
					if s%7 == 3 && !suspended[string(m.Body)] {
						suspended[string(m.Body)] = true
						suspends++
						return consumer.SuspendCurrentQueueAMoment, nil
					}
				}
				for _, m := range msgs {
					var k, s int
					fmt.Sscanf(string(m.Body), "k%d-%d", &k, &s)
					seq[k] = append(seq[k], s)
					byWho[who]++
				}
				return consumer.ConsumeSuccess, nil
			}
		}
		orderly := consumer.WithOrderly(true)
		pcs := []*consumer.PushConsumer{
			c.consumer(t, group, "o0", topic, listener("o0"), orderly),
			c.consumer(t, group, "o1", topic, listener("o1"), orderly),
		}
		waitUntil(t, 10*time.Second, "a stable split of 16 queues", func() bool { return splitStable(pcs, topic) })
		ctx := context.Background()
		total := keys * perKey
		for i := range total {
			if i == total/3 {
				pcs = append(pcs, c.consumer(t, group, "o2", topic, listener("o2"), orderly))
			}
			k, s := i%keys, i/keys
			key := fmt.Sprintf("key-%d", k)
			m := producer.NewMessage(topic, fmt.Appendf(nil, "k%d-%d", k, s)).WithKeys(key)
			if _, err := p.SendOrdered(ctx, m, producer.HashSelector(), key, producer.StrictOrder); err != nil {
				t.Fatal(err)
			}
			if i%keys == 0 {
				time.Sleep(time.Millisecond) // spread the sends over the join
			}
		}
		waitUntil(t, 30*time.Second, "every key consumed to its end", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for k := range keys {
				if s := seq[k]; len(s) == 0 || maxInts(s) < perKey-1 {
					return false
				}
			}
			return true
		})
		waitUntil(t, 10*time.Second, "a split over three", func() bool { return splitStable(pcs, topic) })
		mu.Lock()
		defer mu.Unlock()
		dups := 0
		for k := range keys {
			high := -1
			for i, s := range seq[k] {
				switch {
				case s == high+1:
					high = s
				case s <= high:
					dups++
				default:
					t.Fatalf("key %d: %d consumed after %d (position %d of %v)", k, s, high, i, seq[k])
				}
			}
		}
		t.Logf("%d messages over %d keys; %d suspends; per consumer %v; %d redelivered", total, keys, suspends, byWho, dups)
		if byWho["o2"] == 0 {
			t.Errorf("the member that joined consumed nothing: %v", byWho)
		}
	})
}

func maxInts(s []int) int {
	m := s[0]
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// RECONSUME_LATER: the message comes back from the group's retry topic with its original topic
// and a reconsume count.
func TestConsumerClusterRetryLater(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group = "CRetry", "cg-retry"
		c.createTopic(t, topic)
		p := c.producer(t)
		var mu sync.Mutex
		done := map[string]*consumer.Message{}
		failed := 0
		pc := c.consumer(t, group, "r", topic, func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				var i int
				fmt.Sscanf(string(m.Body), "r-%d", &i)
				if i%10 == 0 && m.ReconsumeTimes == 0 {
					failed++
					return consumer.ConsumeRetryLater, nil
				}
				done[string(m.Body)] = m
			}
			return consumer.ConsumeSuccess, nil
		})
		waitUntil(t, 10*time.Second, "the topic's queues", func() bool { return splitStable([]*consumer.PushConsumer{pc}, topic) })
		bodies := makeBodies("r", 100)
		if err := sendPaced(context.Background(), p, topic, bodies, 4, 0, nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, "every message consumed, the failed ones from the retry topic", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(done) >= len(bodies)
		})
		mu.Lock()
		defer mu.Unlock()
		if failed < 10 {
			t.Errorf("%d failures, want at least 10", failed)
		}
		for i, b := range bodies {
			m := done[b]
			if i%10 != 0 {
				continue
			}
			if m.Queue.Topic != consumer.RetryTopic(group) || m.Topic != topic || m.ReconsumeTimes < 1 {
				t.Errorf("%s redelivered from %v as topic %s, reconsume times %d", b, m.Queue, m.Topic, m.ReconsumeTimes)
			}
		}
	})
}

// An offset persisted before a restart is where the restarted member resumes.
func TestConsumerClusterResumesFromOffset(t *testing.T) {
	eachConsTransport(t, func(t *testing.T, c *consCluster) {
		const topic, group = "CResume", "cg-resume"
		c.createTopic(t, topic)
		p := c.producer(t)
		first := newTally()
		pc := c.consumer(t, group, "r", topic, first.listener("first"))
		b1 := makeBodies("first", 500)
		if err := sendPaced(context.Background(), p, topic, b1, 4, 0, nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, "first batch", func() bool { return first.unique() >= len(b1) })
		if err := pc.Close(); err != nil {
			t.Fatal(err)
		}
		b2 := makeBodies("second", 500)
		if err := sendPaced(context.Background(), p, topic, b2, 4, 0, nil); err != nil {
			t.Fatal(err)
		}
		second := newTally()
		c.consumer(t, group, "r", topic, second.listener("second"))
		waitUntil(t, 20*time.Second, "second batch", func() bool { return second.unique() >= len(b2) })
		time.Sleep(200 * time.Millisecond) // room for stray redeliveries
		if m := second.missing(b2); len(m) > 0 {
			t.Errorf("%d of the second batch missing", len(m))
		}
		if again := len(b1) - len(second.missing(b1)); again > 0 {
			t.Errorf("%d messages of the first batch consumed again after the restart", again)
		}
	})
}

// A push consumer started and closed 100 times leaves no goroutine of this module behind:
// none of the consumer or its client instance while the nodes run, and none at all once they
// are closed.
func TestConsumerRestartLeavesNoGoroutines(t *testing.T) {
	for _, tr := range []string{"inproc", "tcp"} {
		t.Run(tr, func(t *testing.T) { testConsumerRestartLeavesNoGoroutines(t, tr) })
	}
}

func testConsumerRestartLeavesNoGoroutines(t *testing.T, transport string) {
	c := startConsCluster(t, transport)
	const topic, group = "CLeak", "cg-leak"
	c.createTopic(t, topic)
	p := c.producer(t)
	bodies := makeBodies("l", 64)
	if err := sendPaced(context.Background(), p, topic, bodies, 4, 0, nil); err != nil {
		t.Fatal(err)
	}
	p.Close()
	ta := newTally()
	start := func() *consumer.PushConsumer {
		t.Helper()
		pc, err := consumer.NewPushConsumer(c.consumerOptions(t, group, "leak")...)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Subscribe(topic, "*", ta.listener("leak")); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	for i := range 100 {
		pc := start()
		if i%10 == 0 { // now and then, wait until it pulls, so pull loops run when it closes
			waitUntil(t, 10*time.Second, "queues assigned", func() bool { return len(pc.Assignment()) > 0 })
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	// More than 64 deliveries is possible and correct: Close skips consume requests still
	// queued, so a worker may have consumed offset 2 of a queue while 0 and 1 were skipped; the
	// committed offset stays 0 and the next start consumes offset 2 again (at-least-once). Never
	// fewer: one more member, started after them all, gets whatever no earlier one committed,
	// so together they consumed every message.
	pc := start()
	waitUntil(t, 10*time.Second, "every message consumed across the restarts", func() bool {
		return len(ta.missing(bodies)) == 0
	})
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries of %d messages over 101 starts", len(bodies)+ta.dups(), len(bodies))
	waitUntil(t, 5*time.Second, "no consumer or client instance goroutines", func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "github.com/mqgo/mq/consumer.") || strings.Contains(g, "github.com/mqgo/mq/internal/client.") {
				return false
			}
		}
		return true
	})
	for _, n := range []*Node{c.a, c.b, c.ns} {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	assertNoModuleGoroutines(t)
}
