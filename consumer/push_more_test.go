package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

// maxOffset asks the broker for a queue's max offset.
func (a *admin) maxOffset(topic string, queueID int) int64 {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	off, err := getMaxOffset(ctx, a.tr, a.n.BrokerAddr(), MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: queueID})
	if err != nil {
		a.t.Fatal(err)
	}
	return off
}

// A listener call that outlives the consume timeout has its message sent back, so the queue's
// offset moves on and the message comes again from the retry topic.
func TestConsumeTimeoutSendsBack(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("slow", 1)
	var got seen
	listener := func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
		got.add("s", msgs)
		if msgs[0].ReconsumeTimes == 0 && string(msgs[0].Body) == "s-0" {
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-slow", "s"), WithConsumeTimeout(200*time.Millisecond))
	pc := startConsumer(t, "slow", "*", listener, opts...)
	a.sendN("slow", 1, 3, "s")
	eventually(t, "the slow message redelivered", func() bool {
		for _, s := range got.snapshot() {
			if s.body == "s-0" && s.msg.ReconsumeTimes == 1 {
				return true
			}
		}
		return false
	})
	mq := MessageQueue{Topic: "slow", BrokerName: "broker-a", QueueID: 0}
	eventually(t, "offset past the slow message", func() bool {
		off, ok := pc.p.store.read(mq)
		return ok && off == 3
	})
}

// An orderly listener that keeps suspending a message retries it locally up to the maximum,
// then the message goes to the dead-letter topic and the queue moves on in order.
func TestOrderlyGivesUpToDLQ(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("poison", 1)
	var attempts atomic.Int32
	var got seen
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		if string(msgs[0].Body) == "p-1" {
			attempts.Add(1)
			return SuspendCurrentQueueAMoment, fmt.Errorf("poison")
		}
		got.add("o", msgs)
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-poison", "p"),
		WithOrderly(true), WithSuspendDelay(10*time.Millisecond), WithMaxReconsumeTimes(3))
	startConsumer(t, "poison", "*", listener, opts...)
	a.sendN("poison", 1, 3, "p")
	eventually(t, "the rest of the queue", func() bool { return got.count() >= 2 })
	if diff := cmp.Diff([]string{"p-0", "p-2"}, got.bodies()); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}
	if got := attempts.Load(); got != 4 {
		t.Errorf("poison message tried %d times, want 1 + 3 local retries", got)
	}
	eventually(t, "message in the DLQ", func() bool { return a.maxOffset(DLQTopic("g-poison"), 0) == 1 })
}

// A pull answered OFFSET_MOVED drops the queue, stores the broker's offset and takes the queue
// again from there.
func TestOffsetIllegalCorrects(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("moved", 1)
	a.sendN("moved", 1, 4, "m")
	mq := MessageQueue{Topic: "moved", BrokerName: "broker-a", QueueID: 0}
	// The group's stored offset lies past the end of the queue. The broker takes a commit
	// only for a group it holds (RocketMQ 5): an operator creates it first.
	created := a.invoke(n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil,
		[]byte(`{"groupName":"g-moved","consumeEnable":true}`)))
	if created.Code != remoting.Success {
		t.Fatalf("create group: %d %s", created.Code, created.Remark)
	}
	resp := a.invoke(n.BrokerAddr(), updateOffsetRequest("g-moved", mq, 100))
	if resp.Code != remoting.Success {
		t.Fatalf("update offset: %d %s", resp.Code, resp.Remark)
	}
	var got seen
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-moved", "m"),
		optionFunc(func(c *config) { c.offsetIllegalDelay = 50 * time.Millisecond }))
	startConsumer(t, "moved", "*", got.recorder("m"), opts...)
	eventually(t, "messages after the correction", func() bool { return got.count() >= 4 })
	if diff := cmp.Diff([]string{"m-0", "m-1", "m-2", "m-3"}, got.bodies()); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}
}

// ConsumeMessageDirectly runs the listener on one record and reports its result.
func TestConsumeMessageDirectly(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("direct", 1)
	var got seen
	pc := startConsumer(t, "direct", "*", got.recorder("d"), fastOptions(t, n, transportFor(t, n, "inproc"), "g-direct", "d")...)
	resp := pc.ConsumeMessageDirectly(record(t, testRecord("direct", "hi"), 0, 0))
	if resp.Code != remoting.Success || string(resp.Body) == "" {
		t.Fatalf("answer %d %q", resp.Code, resp.Remark)
	}
	var r consumeDirectlyResult
	mustJSON(t, resp.Body, &r)
	if r.ConsumeResult != 0 || got.count() != 1 {
		t.Errorf("result %+v, %d calls", r, got.count())
	}
	if resp := pc.ConsumeMessageDirectly([]byte("junk")); resp.Code == remoting.Success {
		t.Error("junk body answered success")
	}
}

// Close waits for listener calls in progress and cancels their context after the close timeout;
// a call that then fails still hands its message back to the broker (retry topic), so the
// queue's offset moves on without losing it.
func TestCloseCancelsSlowListener(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("stuck", 1)
	started := make(chan struct{})
	var cancelled atomic.Bool
	listener := func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
		close(started)
		<-ctx.Done()
		cancelled.Store(true)
		return ConsumeRetryLater, ctx.Err()
	}
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-stuck", "s"), WithCloseTimeout(100*time.Millisecond))
	pc := startConsumer(t, "stuck", "*", listener, opts...)
	a.sendN("stuck", 1, 1, "s")
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("listener not called")
	}
	begin := time.Now()
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if !cancelled.Load() {
		t.Error("the listener's context was not cancelled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	off, err := queryConsumerOffset(ctx, a.tr, n.BrokerAddr(), "g-stuck", MessageQueue{Topic: "stuck", BrokerName: "broker-a", QueueID: 0})
	if err != nil && !errors.Is(err, ErrOffsetNotFound) {
		t.Fatal(err)
	}
	if off != 1 {
		t.Errorf("committed offset %d, want 1", off)
	}
	eventually(t, "the message in the retry topic", func() bool { return a.maxOffset(RetryTopic("g-stuck"), 0) == 1 })
}

// Two orderly members of a group never consume one queue at the same time, while the second
// joins and the queues move: a queue changes hands only through its broker lock.
func TestOrderlyLockExclusive(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("excl", 4)
	type call struct {
		who        string
		queue      int
		start, end time.Time
		offsets    []int64
	}
	var mu sync.Mutex
	var calls []call
	listener := func(who string) Listener {
		return func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
			c := call{who: who, queue: msgs[0].Queue.QueueID, start: time.Now()}
			// Wall time: two members' calls on one queue can only be seen overlapping if
			// each call lasts a while.
			time.Sleep(2 * time.Millisecond)
			for _, m := range msgs {
				c.offsets = append(c.offsets, m.QueueOffset)
			}
			c.end = time.Now()
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
			return ConsumeSuccess, nil
		}
	}
	opts := func(inst string) []Option {
		return append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-excl", inst), WithOrderly(true))
	}
	startConsumer(t, "excl", "*", listener("c1"), opts("c1")...)
	for i := range 40 {
		if i == 12 {
			startConsumer(t, "excl", "*", listener("c2"), opts("c2")...)
		}
		a.send("excl", int32(i%4), "", "", fmt.Sprintf("e-%d", i))
		// Wall time: spread the sends so that the queues move while messages flow.
		time.Sleep(5 * time.Millisecond)
	}
	eventually(t, "every offset consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		seen := map[[2]int64]bool{}
		for _, c := range calls {
			for _, o := range c.offsets {
				seen[[2]int64{int64(c.queue), o}] = true
			}
		}
		return len(seen) == 40
	})
	mu.Lock()
	defer mu.Unlock()
	whoSeen := map[string]bool{}
	for i, x := range calls {
		whoSeen[x.who] = true
		for _, y := range calls[i+1:] {
			if x.queue == y.queue && x.who != y.who && x.start.Before(y.end) && y.start.Before(x.end) {
				t.Errorf("queue %d consumed by %s and %s at once", x.queue, x.who, y.who)
			}
		}
	}
	if !whoSeen["c2"] {
		t.Error("the second member never consumed")
	}
}

// With the periodic rebalance out of the way, a member joining or leaving reaches the others
// through NOTIFY_CONSUMER_IDS_CHANGED (the client instance calls Rebalance).
func TestRebalanceOnNotify(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("notify", 4)
			var got seen
			opts := func(inst string) []Option {
				return append(fastOptions(t, n, transportFor(t, n, kind), "g-notify", inst), WithRebalanceInterval(time.Hour))
			}
			c1 := startConsumer(t, "notify", "*", got.recorder("1"), opts("n1")...)
			eventually(t, "first member takes every queue", func() bool { return len(heldQueues(c1, "notify")) == 4 })
			c2 := startConsumer(t, "notify", "*", got.recorder("2"), opts("n2")...)
			eventually(t, "the queues split on notification", func() bool {
				return len(heldQueues(c1, "notify")) == 2 && len(heldQueues(c2, "notify")) == 2
			})
			c2.Close()
			eventually(t, "the first member takes them back", func() bool { return len(heldQueues(c1, "notify")) == 4 })
		})
	}
}
