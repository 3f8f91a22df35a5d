package consumer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mqconfig "github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// End-to-end tests of the SimpleConsumer against a whole node with its POP service
// (internal/broker/pop), in-process and over TCP. The node revives unacknowledged messages
// every 50 ms, so a message comes back soon after its invisible time.

// popNode is a node whose POP service revives often.
func popNode(t *testing.T) *node.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := node.Start(node.Options{Options: mqconfig.Options{
		Listen:  "127.0.0.1:0",
		Logger:  &l,
		Store:   mqconfig.Store{Dir: t.TempDir(), SegmentBytes: 4 << 20},
		Periods: mqconfig.Periods{RegisterNameServerPeriod: 200 * time.Millisecond},
		Pop:     mqconfig.Pop{ReviveInterval: 50 * time.Millisecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// simpleOptions are what the tests' simple consumers share: a short await, from the first
// offset (the topics are filled before the group first pops).
func simpleOptions(t *testing.T, n *node.Node, tr remoting.Transport, group string, extra ...Option) []Option {
	l := testLogger(t)
	opts := []Option{WithNameServers(n.Addr()), WithGroup(group), WithInstanceName(group), WithLogger(&l),
		WithConsumeFrom(FromFirstOffset, time.Time{}), WithAwaitDuration(300 * time.Millisecond)}
	if tr != nil {
		opts = append(opts, WithTransport(tr))
	}
	return append(opts, extra...)
}

// startSimple builds, subscribes and starts a simple consumer closed at cleanup.
func startSimple(t *testing.T, topics map[string]MessageSelector, opts ...Option) *SimpleConsumer {
	t.Helper()
	sc, err := NewSimpleConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for topic, sel := range topics {
		if err := sc.Subscribe(topic, sel); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

// receiveUntil receives (batches of up to 32, invisible for invisible) until done says so, or
// fails the test after 20 s.
func receiveUntil(t *testing.T, sc *SimpleConsumer, invisible time.Duration, got func(*MessageView), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("timed out receiving")
		}
		views, err := sc.Receive(context.Background(), MaxReceiveMessageNum, invisible)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range views {
			got(v)
		}
	}
}

// TestSimpleConsumerReceivesEachOnceWhenAcked: a pre-filled topic of 4 queues is received
// whole, each message once, when each is acknowledged; receiving on past the invisible time
// (and several revive rounds) brings none back.
func TestSimpleConsumerReceivesEachOnceWhenAcked(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleOnce", 4)
			want := a.sendN("SimpleOnce", 4, 60, "m")
			sc := startSimple(t, map[string]MessageSelector{"SimpleOnce": ByTag("*")},
				simpleOptions(t, n, transportFor(t, n, kind), "simple-once-"+kind)...)
			ctx := context.Background()
			count := map[string]int{}
			receiveUntil(t, sc, time.Second, func(v *MessageView) {
				count[string(v.Body)]++
				if v.Topic != "SimpleOnce" || v.DeliveryAttempt() != 1 || v.ReceiptHandle() == "" {
					t.Errorf("view %s: topic %q, attempt %d, handle %q", v.Body, v.Topic, v.DeliveryAttempt(), v.ReceiptHandle())
				}
				if err := sc.Ack(ctx, v); err != nil {
					t.Fatal(err)
				}
			}, func() bool { return len(count) == len(want) })
			// Well past the invisible time: an acknowledged message never comes back.
			wantNoneBack(t, sc, count)
			got := slices.Sorted(func(yield func(string) bool) {
				for b := range count {
					if !yield(b) {
						return
					}
				}
			})
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("received (-want +got):\n%s", diff)
			}
		})
	}
}

// wantNoneBack receives for 2 s, well past the 1 s invisible time of the messages counted in
// count (and several revive rounds), adding what comes, and fails unless each was received
// exactly once: an acknowledged message never comes back.
func wantNoneBack(t *testing.T, sc *SimpleConsumer, count map[string]int) {
	t.Helper()
	until := time.Now().Add(2 * time.Second)
	for time.Now().Before(until) {
		views, err := sc.Receive(context.Background(), MaxReceiveMessageNum, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range views {
			count[string(v.Body)]++
		}
	}
	for body, c := range count {
		if c != 1 {
			t.Errorf("%s received %d times", body, c)
		}
	}
}

// TestSimpleConsumerUnackedComesBack: a message received and not acknowledged is handed out
// again after its invisible time, with its delivery attempt raised; acknowledged then, it stays
// away.
func TestSimpleConsumerUnackedComesBack(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleBack", 1)
			a.send("SimpleBack", 0, "", "", "lonely")
			sc := startSimple(t, map[string]MessageSelector{"SimpleBack": ByTag("*")},
				simpleOptions(t, n, transportFor(t, n, kind), "simple-back-"+kind)...)
			ctx := context.Background()
			var first, again *MessageView
			receiveUntil(t, sc, 500*time.Millisecond, func(v *MessageView) { first = v }, func() bool { return first != nil })
			receiveUntil(t, sc, 30*time.Second, func(v *MessageView) {
				if string(v.Body) != "lonely" {
					t.Fatalf("received %s", v.Body)
				}
				again = v
			}, func() bool { return again != nil })
			if again.DeliveryAttempt() != 2 || first.DeliveryAttempt() != 1 {
				t.Errorf("delivery attempts %d then %d, want 1 then 2", first.DeliveryAttempt(), again.DeliveryAttempt())
			}
			if again.ReceiptHandle() == first.ReceiptHandle() {
				t.Errorf("the message came back under its first handle %q", first.ReceiptHandle())
			}
			if err := sc.Ack(ctx, again); err != nil {
				t.Fatal(err)
			}
			assertNothingFor(t, sc, 1500*time.Millisecond)
		})
	}
}

// assertNothingFor receives for d (invisible 1 s) and fails on any message.
func assertNothingFor(t *testing.T, sc *SimpleConsumer, d time.Duration) {
	t.Helper()
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		views, err := sc.Receive(context.Background(), MaxReceiveMessageNum, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range views {
			t.Errorf("%s came back (attempt %d)", v.Body, v.DeliveryAttempt())
		}
	}
}

// TestSimpleConsumerChangeInvisibleDuration: a change lengthens a message's invisible time past
// its first one (it does not come back meanwhile), gives the view a new handle that
// acknowledges it while the old one no longer changes anything, and a change that shortens it
// brings it back early.
func TestSimpleConsumerChangeInvisibleDuration(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleChange", 1)
			a.send("SimpleChange", 0, "", "", "long")
			a.send("SimpleChange", 0, "", "", "short")
			sc := startSimple(t, map[string]MessageSelector{"SimpleChange": ByTag("*")},
				simpleOptions(t, n, transportFor(t, n, kind), "simple-change-"+kind)...)
			ctx := context.Background()
			views := map[string]*MessageView{}
			receiveUntil(t, sc, 500*time.Millisecond, func(v *MessageView) { views[string(v.Body)] = v },
				func() bool { return len(views) == 2 })
			long, short := views["long"], views["short"]
			old := long.ReceiptHandle()
			if err := sc.ChangeInvisibleDuration(ctx, long, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if long.ReceiptHandle() == old {
				t.Fatal("the change left the view's handle as it was")
			}
			if until := long.InvisibleUntil(); time.Until(until) < 20*time.Second {
				t.Errorf("invisible until %v, not about 30 s from now", until)
			}
			// The old handle changes nothing any more: the broker answers NO_MESSAGE.
			stale := &MessageView{Message: long.Message, wireTopic: long.wireTopic}
			stale.handle.Store(newReceipt(mustParse(t, old)))
			var re *remoting.ResponseError
			if err := sc.ChangeInvisibleDuration(ctx, stale, time.Second); !errors.As(err, &re) || re.Code != remoting.NoMessage {
				t.Errorf("change through the old handle: %v, want NO_MESSAGE", err)
			}
			// "short" gets 30 s as well, then 1 ms: it comes back early, "long" does not.
			if err := sc.ChangeInvisibleDuration(ctx, short, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := sc.ChangeInvisibleDuration(ctx, short, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var back *MessageView
			receiveUntil(t, sc, 30*time.Second, func(v *MessageView) {
				if string(v.Body) != "short" {
					t.Fatalf("%s came back within its changed invisible time", v.Body)
				}
				back = v
			}, func() bool { return back != nil })
			for _, v := range []*MessageView{long, back} {
				if err := sc.Ack(ctx, v); err != nil {
					t.Fatal(err)
				}
			}
			assertNothingFor(t, sc, 1500*time.Millisecond)
		})
	}
}

func mustParse(t *testing.T, handle string) protocol.ExtraInfo {
	t.Helper()
	info, err := protocol.ParseExtraInfo(handle)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestSimpleConsumerFiltersAndTopics: tag and SQL92 selectors are the broker's to apply; the
// subscribed topics take turns; a topic subscribed after Start is received too, an
// unsubscribed one no more.
func TestSimpleConsumerFiltersAndTopics(t *testing.T) {
	n := popNode(t)
	a := newAdmin(t, n)
	for _, topic := range []string{"SimpleTagged", "SimpleSQL", "SimpleLater"} {
		a.createTopic(topic, 2)
	}
	a.send("SimpleTagged", 0, "TagA", "", "a1")
	a.send("SimpleTagged", 1, "TagB", "", "b1")
	a.send("SimpleTagged", 1, "TagA", "", "a2")
	p := newTestProducer(t, n)
	for i, color := range []string{"red", "blue", "red"} {
		msg := producer.NewMessage("SimpleSQL", fmt.Appendf(nil, "%s-%d", color, i)).WithProperty("color", color)
		if _, err := p.SendSync(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	a.send("SimpleLater", 0, "", "", "later")
	sc := startSimple(t, map[string]MessageSelector{"SimpleTagged": ByTag("TagA"), "SimpleSQL": BySQL92("color = 'red'")},
		simpleOptions(t, n, nil, "simple-filters")...)
	got := map[string]string{}
	record := func(v *MessageView) {
		got[string(v.Body)] = v.Topic
		if err := sc.Ack(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	receiveUntil(t, sc, 5*time.Second, record, func() bool { return len(got) >= 4 })
	assertNothingFor(t, sc, 700*time.Millisecond) // TagB and blue stay filtered out
	want := map[string]string{"a1": "SimpleTagged", "a2": "SimpleTagged", "red-0": "SimpleSQL", "red-2": "SimpleSQL"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
	if err := sc.Subscribe("SimpleLater", ByTag("*")); err != nil {
		t.Fatal(err)
	}
	if err := sc.Unsubscribe("SimpleTagged"); err != nil {
		t.Fatal(err)
	}
	a.send("SimpleTagged", 0, "TagA", "", "a3")
	receiveUntil(t, sc, 5*time.Second, record, func() bool { return got["later"] != "" })
	assertNothingFor(t, sc, 700*time.Millisecond)
	if _, ok := got["a3"]; ok {
		t.Error("a message of an unsubscribed topic was received")
	}
	if err := sc.Subscribe("SimpleNoSuchTopic", ByTag("*")); err == nil {
		t.Error("subscribing after Start to a topic the name servers do not know succeeded")
	}
}

// TestSimpleConsumerMessageGroup: a FIFO message's group, set by the producer, shows in the
// view.
func TestSimpleConsumerMessageGroup(t *testing.T) {
	n := popNode(t)
	a := newAdmin(t, n)
	a.createTopic("SimpleGroups", 4)
	p := newTestProducer(t, n)
	for _, g := range []string{"order-1", "order-2"} {
		if _, err := p.SendSync(context.Background(), producer.NewMessage("SimpleGroups", []byte(g)).WithMessageGroup(g)); err != nil {
			t.Fatal(err)
		}
	}
	sc := startSimple(t, map[string]MessageSelector{"SimpleGroups": ByTag("*")}, simpleOptions(t, n, nil, "simple-groups")...)
	got := map[string]string{}
	receiveUntil(t, sc, 5*time.Second, func(v *MessageView) { got[string(v.Body)] = v.MessageGroup() },
		func() bool { return len(got) == 2 })
	if diff := cmp.Diff(map[string]string{"order-1": "order-1", "order-2": "order-2"}, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

// newTestProducer is a producer of n over TCP, closed at cleanup.
func newTestProducer(t *testing.T, n *node.Node) *producer.Producer {
	t.Helper()
	l := testLogger(t)
	p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithGroup("simple-pg"), producer.WithLogger(&l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestSimpleConsumerLifecycle: the calls a simple consumer refuses in each state, and options
// it cannot work with.
func TestSimpleConsumerLifecycle(t *testing.T) {
	n := popNode(t)
	newAdmin(t, n).createTopic("SimpleLife", 1)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opt  Option
		want string
	}{
		{"negative await", WithAwaitDuration(-time.Second), "await duration out of range"},
		{"huge await", WithAwaitDuration(time.Hour), "await duration out of range"},
		{"no request timeout", WithRequestTimeout(0), "request timeout must be positive"},
		{"broadcasting", WithModel(Broadcasting), "clustering mode only"},
		{"from a timestamp", WithConsumeFrom(FromTimestamp, time.Now()), "not a timestamp"},
	} {
		if _, err := NewSimpleConsumer(simpleOptions(t, n, nil, "simple-life", c.opt)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := NewSimpleConsumer(WithNameServers(n.Addr())); err == nil {
		t.Error("a simple consumer without a group was built")
	}
	// A transport handed over is closed when the options are refused.
	owned := n.NewTransport()
	if _, err := NewSimpleConsumer(simpleOptions(t, n, nil, "simple-life", WithOwnedTransport(owned), WithModel(Broadcasting))...); err == nil {
		t.Fatal("broadcasting simple consumer built")
	}
	if _, err := owned.InvokeSync(ctx, n.Addr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, nil, nil)); !errors.Is(err, remoting.ErrClosed) {
		t.Errorf("the owned transport of a refused consumer: %v, want it closed", err)
	}

	sc, err := NewSimpleConsumer(simpleOptions(t, n, nil, "simple-life")...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Receive(ctx, 1, time.Second); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Receive before Start: %v", err)
	}
	if err := sc.Start(); !errors.Is(err, ErrNoSubscription) {
		t.Errorf("Start without a subscription: %v", err)
	}
	if err := sc.Subscribe("bad topic!", ByTag("*")); err == nil {
		t.Error("subscribed to an invalid topic name")
	}
	if err := sc.Subscribe("SimpleLife", BySQL92("")); err == nil {
		t.Error("subscribed with an empty SQL92 expression")
	}
	if err := sc.Subscribe("SimpleLife", ByTag("*")); err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v", err)
	}
	for _, c := range []struct {
		n   int32
		d   time.Duration
		msg string
	}{{0, time.Second, "maxMessageNum must be positive"}, {-3, time.Second, "maxMessageNum"}, {1, 0, "at least 1ms"}, {1, -time.Second, "at least 1ms"}} {
		if _, err := sc.Receive(ctx, c.n, c.d); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Receive(%d, %v): %v", c.n, c.d, err)
		}
	}
	if err := sc.Ack(ctx, nil); err == nil {
		t.Error("Ack(nil) succeeded")
	}
	if err := sc.Ack(ctx, &MessageView{Message: &Message{}}); err == nil {
		t.Error("Ack of a view without a handle succeeded")
	}
	// An invisible time the broker does not allow is its answer, not a hang.
	var re *remoting.ResponseError
	if _, err := sc.Receive(ctx, 1, 24*time.Hour); !errors.As(err, &re) || re.Code != remoting.InvalidParameter {
		t.Errorf("Receive invisible 24 h: %v, want INVALID_PARAMETER", err)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := sc.Receive(ctx, 1, time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Receive after Close: %v", err)
	}
	if err := sc.Subscribe("SimpleLife", ByTag("*")); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}

	failed, err := NewSimpleConsumer(simpleOptions(t, n, nil, "simple-life-2")...)
	if err != nil {
		t.Fatal(err)
	}
	failed.Subscribe("SimpleNoSuchTopic", ByTag("*"))
	if err := failed.Start(); err == nil {
		t.Fatal("Start with a topic the name servers do not know succeeded")
	}
	if _, err := failed.Receive(ctx, 1, time.Second); !errors.Is(err, ErrStartFailed) {
		t.Errorf("Receive after a failed Start: %v", err)
	}
	if err := failed.Start(); !errors.Is(err, ErrStartFailed) {
		t.Errorf("Start after a failed Start: %v", err)
	}
	failed.Close()
}

// TestSimpleConsumerCloseEndsAWaitingReceive: Close cancels a Receive the broker holds (long
// polling with nothing to hand out) and returns once it ended, leaving no goroutine of the
// consumer or its client instance behind.
func TestSimpleConsumerCloseEndsAWaitingReceive(t *testing.T) {
	n := popNode(t)
	newAdmin(t, n).createTopic("SimpleEmpty", 1)
	sc := startSimple(t, map[string]MessageSelector{"SimpleEmpty": ByTag("*")},
		simpleOptions(t, n, nil, "simple-close", WithAwaitDuration(MaxAwaitDuration))...)
	errc := make(chan error, 1)
	go func() {
		_, err := sc.Receive(context.Background(), 1, time.Second)
		errc <- err
	}()
	// Let the pop reach the broker and park there; Close must end it either way.
	time.Sleep(200 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- sc.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close waits for a Receive parked at the broker instead of ending it")
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("a Receive cut by Close returned no error")
		}
	default:
		t.Fatal("Close returned while a Receive still waited")
	}
	// Only the consumer's and its client instance's goroutines count: the node's own (a pop it
	// parked ends when it sees the connection gone) are not the consumer's to stop.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		var left []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if (strings.Contains(g, "mq/consumer.") || strings.Contains(g, "mq/internal/client.")) && !strings.Contains(g, "testing.tRunner") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the consumer outlived Close:\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}
}

// TestSimpleConsumerGroupShares: three members of one group (each its own client instance)
// receive and acknowledge concurrently; together they get every message of the topic once,
// with no rebalancing between them. The group and topic are in a namespace, which views do not
// show.
func TestSimpleConsumerGroupShares(t *testing.T) {
	n := popNode(t)
	a := newAdmin(t, n)
	a.createTopic("ns%SimpleShared", 4)
	want := a.sendN("ns%SimpleShared", 4, 90, "s")
	type got struct {
		body, topic string
	}
	results := make(chan got, 2*len(want))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 3)
	var members sync.WaitGroup
	for i := range 3 {
		sc := startSimple(t, map[string]MessageSelector{"SimpleShared": ByTag("*")},
			simpleOptions(t, n, nil, "simple-shared", WithNamespace("ns"), WithInstanceName(fmt.Sprintf("member-%d", i)))...)
		members.Add(1)
		go func() {
			defer members.Done()
			for ctx.Err() == nil {
				views, err := sc.Receive(ctx, 8, 10*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						errc <- err
					}
					return
				}
				for _, v := range views {
					if err := sc.Ack(ctx, v); err != nil && ctx.Err() == nil {
						errc <- err
						return
					}
					select {
					case results <- got{string(v.Body), v.Topic}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	count := map[string]int{}
	deadline := time.After(20 * time.Second)
	for len(count) < len(want) {
		select {
		case g := <-results:
			count[g.body]++
			if g.topic != "SimpleShared" {
				t.Errorf("%s shows topic %q", g.body, g.topic)
			}
		case err := <-errc:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(count), len(want))
		}
	}
	// Anything handed out twice shows up within a few more receives.
	time.Sleep(500 * time.Millisecond)
	cancel()
	members.Wait()
	close(results)
	for g := range results {
		count[g.body]++
	}
	for body, c := range count {
		if c != 1 {
			t.Errorf("%s received %d times", body, c)
		}
	}
}

// TestSimpleConsumerAckAsync: messages acknowledged with AckAsync, the receiving loop going on
// at once, are each received once and stay away past their invisible time; every done gets
// nil, Close returns only after the dones ran, and AckAsync refuses a view it did not hand out
// and a closed consumer without calling done.
func TestSimpleConsumerAckAsync(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleAsync", 4)
			want := a.sendN("SimpleAsync", 4, 60, "m")
			sc := startSimple(t, map[string]MessageSelector{"SimpleAsync": ByTag("*")},
				simpleOptions(t, n, transportFor(t, n, kind), "simple-async-"+kind)...)
			ctx := context.Background()
			count := map[string]int{}
			var dones asyncDones
			received := 0
			receiveUntil(t, sc, time.Second, func(v *MessageView) {
				received++
				count[string(v.Body)]++
				if err := sc.AckAsync(ctx, v, dones.done); err != nil {
					t.Fatal(err)
				}
			}, func() bool { return len(count) == len(want) })
			wantNoneBack(t, sc, count)
			if err := sc.AckAsync(ctx, &MessageView{}, dones.done); err == nil {
				t.Error("AckAsync of a view never received: nil error")
			}
			if err := sc.Close(); err != nil {
				t.Fatal(err)
			}
			dones.check(t, received)
			var v MessageView
			v.handle.Store(newReceipt(protocol.ExtraInfo{}))
			if err := sc.AckAsync(ctx, &v, func(error) { t.Error("done called for a refused AckAsync") }); !errors.Is(err, ErrClosed) {
				t.Errorf("AckAsync after Close: %v, want ErrClosed", err)
			}
		})
	}
}
