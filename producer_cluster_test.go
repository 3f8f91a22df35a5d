package mq_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Producer cluster tests: a name service node and two broker nodes (broker-a, broker-b) on
// port 0, the producer in-process and over TCP.

type prodCluster struct {
	ns, a, b *mq.Node
}

func startProdNode(t *testing.T, opts mq.Options) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	opts.Listen = "127.0.0.1:0"
	opts.Store.Dir = t.TempDir()
	opts.Store.SegmentBytes = 8 << 20
	opts.Logger = &l
	opts.Periods.RegisterNameServerPeriod = 100 * time.Millisecond
	opts.Periods.RegisterNameServerPeriodMin = 100 * time.Millisecond // else 10 s, beyond the 2 s expiry
	opts.Periods.ScanNotActiveBrokerInterval = 100 * time.Millisecond
	opts.Periods.BrokerChannelExpiredTime = 2 * time.Second
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func startProdCluster(t *testing.T) *prodCluster {
	t.Helper()
	c := &prodCluster{ns: startProdNode(t, mq.Options{DisableBroker: true})}
	c.a = startProdNode(t, mq.Options{DisableNameServer: true, NameServers: []string{c.ns.Addr()}, Broker: config.Broker{Name: "broker-a"}})
	c.b = startProdNode(t, mq.Options{DisableNameServer: true, NameServers: []string{c.ns.Addr()}, Broker: config.Broker{Name: "broker-b"}})
	// Auto-created topics go only to the brokers of TBW102's route at the first send: wait
	// until both brokers registered it.
	tr := c.ns.NewTransport()
	defer tr.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := tr.InvokeSync(ctx, c.ns.Addr(), route.BuildGetRouteInfo("TBW102"))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			if r, err := route.DecodeTopicRouteData(resp.Body); err == nil && len(r.BrokerDatas) == 2 {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("TBW102 never had both brokers")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newTestProducer makes a producer in-process (through a node transport) or over TCP.
func newTestProducer(t *testing.T, c *prodCluster, transport string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	base := []producer.Option{producer.WithNameServers(c.ns.Addr()), producer.WithLogger(&l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_")),
		producer.WithPollNameServerInterval(100 * time.Millisecond),
		producer.WithHeartbeatInterval(200 * time.Millisecond)}
	if transport == "inproc" {
		base = append(base, producer.WithOwnedTransport(c.ns.NewTransport()))
	}
	p, err := producer.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func eachTransport(t *testing.T, f func(t *testing.T, transport string)) {
	for _, tr := range []string{"inproc", "tcp"} {
		t.Run(tr, func(t *testing.T) { f(t, tr) })
	}
}

// waitBothBrokers creates topic with 4 queues on both brokers, then sends until the producer has
// reached both. (Auto-creation through TBW102 would put the topic only on the brokers the first
// sends happened to reach before the real route, registered at once, replaced the borrowed one;
// that path is tested on its own.)
func waitBothBrokers(t *testing.T, c *prodCluster, p *producer.Producer, topic string) {
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
	for _, n := range []*mq.Node{c.a, c.b} {
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4,
			WriteQueueNums: 4, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
		if resp := invoke(n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic,
			remoting.EncodeHeader(h), nil)); resp.Code != remoting.Success {
			t.Fatalf("create topic on %s: %d %s", n.BrokerAddr(), resp.Code, resp.Remark)
		}
	}
	ctx := context.Background()
	seen := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(seen) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("topic %s never reached both brokers: %v", topic, seen)
		}
		res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("warmup")))
		if err != nil {
			t.Fatal(err)
		}
		seen[res.Queue.BrokerName] = true
	}
}

func TestProducerSpreadsOverBrokers(t *testing.T) {
	c := startProdCluster(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := newTestProducer(t, c, transport)
		topic := "Spread_" + transport
		waitBothBrokers(t, c, p, topic)
		time.Sleep(300 * time.Millisecond) // the real route (4 queues on each broker) replaces TBW102's
		queues := map[producer.MessageQueue]int{}
		brokers := map[string]int{}
		for i := 0; i < 64; i++ {
			res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(fmt.Sprint(i))).WithTags("t"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != producer.SendOK || res.MsgID == "" || res.OffsetMsgID == "" || res.Attempts != 1 {
				t.Fatalf("result %v", res)
			}
			queues[res.Queue]++
			brokers[res.Queue.BrokerName]++
		}
		if len(brokers) != 2 || len(queues) < 8 {
			t.Fatalf("not spread: brokers %v, %d queues %v", brokers, len(queues), queues)
		}
		if d := brokers["broker-a"] - brokers["broker-b"]; d > 2 || d < -2 {
			t.Fatalf("round robin uneven: %v", brokers)
		}
	})
}

func TestProducerBrokerDownIsolated(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		c := startProdCluster(t)
		// No route refresh: broker-b stays in the route after it is gone (as it does for up to
		// 30 s against a real name server), so the sends must find out by themselves.
		p := newTestProducer(t, c, transport, producer.WithPollNameServerInterval(time.Hour),
			producer.WithLatencyFaultTolerance(true))
		topic := "Down_" + transport
		waitBothBrokers(t, c, p, topic)
		c.b.Close()
		ctx := context.Background()
		// Async sends first: those that picked broker-b are retried on broker-a.
		var wg sync.WaitGroup
		var asyncRetried atomic.Int32
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			if err := p.SendAsync(ctx, producer.NewMessage(topic, []byte("async")), func(r *producer.SendResult, err error) {
				defer wg.Done()
				if err == nil && r.Queue.BrokerName != "broker-a" {
					err = fmt.Errorf("stored on %s", r.Queue.BrokerName)
				}
				if err == nil && r.Attempts > 1 {
					asyncRetried.Add(1)
				}
				errs <- err
			}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if asyncRetried.Load() == 0 {
			t.Fatal("no async send was retried; round robin should have sent one to broker-b first")
		}
		retried := 0
		for i := 0; i < 50; i++ {
			res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(fmt.Sprint(i))))
			if err != nil {
				t.Fatalf("send %d with broker-b down: %v", i, err)
			}
			if res.Queue.BrokerName != "broker-a" {
				t.Fatalf("send %d stored on %s", i, res.Queue.BrokerName)
			}
			if res.Attempts > 1 {
				retried++
			}
		}
		if retried > 1 {
			t.Fatalf("%d of 50 sends needed a retry; isolation should leave at most the first", retried)
		}
		// Every broker down: the error says so and names the attempts.
		c.a.Close()
		_, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("lost")))
		var se *producer.SendError
		if !errors.As(err, &se) || !se.AllBrokersFailed || len(se.Attempts) == 0 {
			t.Fatalf("every broker down: %v", err)
		}
		if !strings.Contains(err.Error(), "every broker of the topic failed") {
			t.Fatalf("error text: %v", err)
		}
	})
}

func TestProducerSendsWithNameServerDown(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		c := startProdCluster(t)
		p := newTestProducer(t, c, transport)
		topic := "NsDown_" + transport
		waitBothBrokers(t, c, p, topic)
		c.ns.Close()
		time.Sleep(300 * time.Millisecond) // several failed route refreshes
		for i := 0; i < 20; i++ {
			if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("x"))); err != nil {
				t.Fatalf("send %d with the name service down: %v", i, err)
			}
		}
		// A topic never seen has no route, and the error names the name servers tried.
		_, err := p.SendSync(context.Background(), producer.NewMessage("Unseen", []byte("x")))
		if !errors.Is(err, producer.ErrNoRoute) || !strings.Contains(err.Error(), c.ns.Addr()) ||
			!strings.Contains(err.Error(), "no route info for topic Unseen") {
			t.Fatalf("unseen topic with the name service down: %v", err)
		}
	})
}

func TestProducerOrderedPerKey(t *testing.T) {
	c := startProdCluster(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := newTestProducer(t, c, transport)
		topic := "Ordered_" + transport
		waitBothBrokers(t, c, p, topic)
		time.Sleep(300 * time.Millisecond)
		type sent struct {
			q   producer.MessageQueue
			off int64
		}
		byKey := map[string][]sent{}
		for i := 0; i < 60; i++ {
			key := fmt.Sprintf("order-%d", i%6)
			for _, ord := range []producer.Ordering{producer.StrictOrder, producer.FailoverOrder} {
				res, err := p.SendOrdered(context.Background(), producer.NewMessage(topic, []byte(key)).WithKeys(key),
					producer.HashSelector(), key, ord)
				if err != nil {
					t.Fatal(err)
				}
				byKey[key] = append(byKey[key], sent{res.Queue, res.QueueOffset})
			}
		}
		queues := map[producer.MessageQueue]bool{}
		for key, s := range byKey {
			for i := 1; i < len(s); i++ {
				if s[i].q != s[0].q {
					t.Fatalf("key %s moved from %v to %v", key, s[0].q, s[i].q)
				}
				if s[i].off <= s[i-1].off {
					t.Fatalf("key %s offsets out of order: %d then %d", key, s[i-1].off, s[i].off)
				}
			}
			queues[s[0].q] = true
		}
		if len(queues) < 2 {
			t.Fatalf("6 keys hashed to %d queue(s)", len(queues))
		}
	})
}

func TestProducerOrderedWhenBrokerDown(t *testing.T) {
	c := startProdCluster(t)
	// RocketMQ's one attempt for a strict send: without the wait for an unreachable broker.
	// The route must still name broker-b once it is down: closing unregisters it, and a route
	// refresh in between would leave the selector only broker-a's queues to pick from.
	p := newTestProducer(t, c, "inproc", producer.WithLatencyFaultTolerance(true),
		producer.WithRetryUnreachableUntilTimeout(false), producer.WithPollNameServerInterval(time.Hour))
	topic := "OrderedDown"
	waitBothBrokers(t, c, p, topic)
	time.Sleep(300 * time.Millisecond)
	onB := producer.SelectorFunc(func(qs []producer.MessageQueue, _ *producer.Message, _ any) producer.MessageQueue {
		for _, q := range qs {
			if q.BrokerName == "broker-b" {
				return q
			}
		}
		t.Errorf("the route lost broker-b: %v", qs)
		return qs[0]
	})
	ctx := context.Background()
	res, err := p.SendOrdered(ctx, producer.NewMessage(topic, []byte("1")), onB, nil, producer.StrictOrder)
	if err != nil || res.Queue.BrokerName != "broker-b" {
		t.Fatalf("%v %v", res, err)
	}
	c.b.Close()
	// Strict: the error comes back, one attempt, no retry elsewhere.
	_, err = p.SendOrdered(ctx, producer.NewMessage(topic, []byte("2")), onB, nil, producer.StrictOrder)
	var se *producer.SendError
	if !errors.As(err, &se) || len(se.Attempts) != 1 || se.Attempts[0].Queue.BrokerName != "broker-b" {
		t.Fatalf("strict order with its broker down: %v", err)
	}
	// Failover: broker-b is isolated now, so the message moves to the next queue.
	res, err = p.SendOrdered(ctx, producer.NewMessage(topic, []byte("3")), onB, nil, producer.FailoverOrder)
	if err != nil || res.Queue.BrokerName != "broker-a" {
		t.Fatalf("failover order with its broker down: %v %v", res, err)
	}
}

func TestProducerValidationAndNoRoute(t *testing.T) {
	c := startProdCluster(t)
	p := newTestProducer(t, c, "tcp", producer.WithAutoCreateTopic(false))
	ctx := context.Background()
	for _, m := range []*producer.Message{
		producer.NewMessage("", []byte("x")),
		producer.NewMessage("bad topic", []byte("x")),
		producer.NewMessage("TBW102", []byte("x")),
		producer.NewMessage("T", nil),
	} {
		if _, err := p.SendSync(ctx, m); !errors.Is(err, producer.ErrInvalidMessage) {
			t.Fatalf("%v: %v", m, err)
		}
	}
	_, err := p.SendSync(ctx, producer.NewMessage("NeverCreated", []byte("x")))
	if !errors.Is(err, producer.ErrNoRoute) || !strings.Contains(err.Error(), "no route info for topic NeverCreated") {
		t.Fatalf("no route: %v", err)
	}
	var re *remoting.ResponseError
	_ = errors.As(err, &re)
}

func TestProducerBatchAndCompression(t *testing.T) {
	c := startProdCluster(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := newTestProducer(t, c, transport)
		topic := "Batch_" + transport
		waitBothBrokers(t, c, p, topic)
		msgs := make([]*producer.Message, 10)
		for i := range msgs {
			msgs[i] = producer.NewMessage(topic, []byte(fmt.Sprint(i))).WithKeys(fmt.Sprint("k", i))
		}
		res, err := p.SendBatch(context.Background(), msgs...)
		if err != nil {
			t.Fatal(err)
		}
		if ids := strings.Split(res.MsgID, ","); len(ids) != 10 {
			t.Fatalf("batch ids %q", res.MsgID)
		}
		if ids := strings.Split(res.OffsetMsgID, ","); len(ids) != 10 {
			t.Fatalf("batch offset ids %q", res.OffsetMsgID)
		}
		big := make([]byte, 64<<10)
		for i := range big {
			big[i] = byte(i % 7)
		}
		if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, big)); err != nil {
			t.Fatal(err)
		}
		if err := p.SendOneway(context.Background(), producer.NewMessage(topic, []byte("oneway"))); err != nil {
			t.Fatal(err)
		}
	})
}

func TestProducerAsyncCallbackPanicAndClose(t *testing.T) {
	c := startProdCluster(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := newTestProducer(t, c, transport)
		topic := "Close_" + transport
		waitBothBrokers(t, c, p, topic)
		ctx := context.Background()
		// A panicking callback is recovered; the producer keeps working.
		if err := p.SendAsync(ctx, producer.NewMessage(topic, []byte("boom")), func(*producer.SendResult, error) {
			panic("callback panic")
		}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		done := 0
		for i := 0; i < 50; i++ {
			if err := p.SendAsync(ctx, producer.NewMessage(topic, []byte("a")), func(_ *producer.SendResult, err error) {
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				done++
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		}
		// Close waits for the callbacks in flight.
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n := done
		mu.Unlock()
		if n != 50 {
			t.Fatalf("Close returned with %d of 50 callbacks run", n)
		}
		if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("late"))); !errors.Is(err, producer.ErrClosed) {
			t.Fatalf("send after Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
	// Nothing of the producers or their client instances outlives them.
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "mq/internal/client.") && !strings.Contains(stacks, "mq/producer.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("producer goroutines left after Close:\n%s", stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProducerNamespace(t *testing.T) {
	c := startProdCluster(t)
	p := newTestProducer(t, c, "inproc", producer.WithNamespace("ns1"), producer.WithGroup("pg"))
	res, err := p.SendSync(context.Background(), producer.NewMessage("Spaced", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Queue.Topic != "Spaced" {
		t.Fatalf("result topic %q, want it without the namespace", res.Queue.Topic)
	}
	tr := c.ns.NewTransport()
	defer tr.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := tr.InvokeSync(ctx, c.ns.Addr(), route.BuildGetRouteInfo("ns1%Spaced"))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker never created ns1%Spaced")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProducerAsyncBackpressure(t *testing.T) {
	c := startProdCluster(t)
	p := newTestProducer(t, c, "inproc", producer.WithMaxAsyncInFlight(1))
	topic := "Backpressure"
	waitBothBrokers(t, c, p, topic)
	release := make(chan struct{})
	ran := make(chan struct{}, 2)
	cb := func(*producer.SendResult, error) { <-release; ran <- struct{}{} }
	if err := p.SendAsync(context.Background(), producer.NewMessage(topic, []byte("1")), cb); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.SendAsync(ctx, producer.NewMessage(topic, []byte("2")), cb); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second async send with one in flight allowed: %v", err)
	}
	close(release)
	<-ran
	if err := p.SendAsync(context.Background(), producer.NewMessage(topic, []byte("3")), cb); err != nil {
		t.Fatal(err)
	}
	<-ran
}

func TestProducerAutoCreateThroughTBW102(t *testing.T) {
	c := startProdCluster(t)
	// No refresh: every send below uses the route borrowed from TBW102 (8 queues per broker),
	// capped at the default topic queue count, 4.
	p := newTestProducer(t, c, "tcp", producer.WithPollNameServerInterval(time.Hour))
	brokers := map[string]bool{}
	for i := 0; i < 16; i++ {
		res, err := p.SendSync(context.Background(), producer.NewMessage("AutoCreated", []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Queue.QueueID >= producer.DefaultTopicQueueNums {
			t.Fatalf("queue %v beyond the default topic queue count", res.Queue)
		}
		brokers[res.Queue.BrokerName] = true
	}
	if len(brokers) != 2 {
		t.Fatalf("borrowed route used brokers %v", brokers)
	}
}
