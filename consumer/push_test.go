package consumer

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/rebalance"
)

// A group of three consumers splits the queues (each queue held by one member, the union is all
// of them, shares as Averagely computes) and consumes every message exactly once.
func TestClusteringGroupSharesQueues(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("shared", 5)
			var got seen
			var pcs []*PushConsumer
			for i := range 3 {
				tr := transportFor(t, n, kind)
				who := fmt.Sprintf("c%d", i)
				pcs = append(pcs, startConsumer(t, "shared", "*", got.recorder(who),
					fastOptions(t, n, tr, "g-shared", "inst-"+who)...))
			}
			// Wait until the members agree: disjoint shares covering all five queues.
			eventually(t, "a stable split", func() bool {
				var all []MessageQueue
				for _, pc := range pcs {
					held := heldQueues(pc, "shared")
					if len(held) < 1 || len(held) > 2 {
						return false
					}
					all = append(all, held...)
				}
				rebalance.SortQueues(all)
				return len(slices.Compact(all)) == 5 && len(all) == 5
			})
			// The shares are Averagely's over the sorted client ids.
			var ids []string
			for _, pc := range pcs {
				ids = append(ids, pc.p.clientID)
			}
			var queues []MessageQueue
			for i := range 5 {
				queues = append(queues, MessageQueue{Topic: "shared", BrokerName: "broker-a", QueueID: i})
			}
			for _, pc := range pcs {
				want := rebalance.Averagely().Allocate("g-shared", pc.p.clientID, queues, ids)
				held := heldQueues(pc, "shared")
				rebalance.SortQueues(held)
				if diff := cmp.Diff(want, held); diff != "" {
					t.Errorf("%s holds (-averagely +held):\n%s", pc.p.clientID, diff)
				}
			}

			want := a.sendN("shared", 5, 50, "m")
			eventually(t, "all messages", func() bool { return got.count() >= 50 })
			eventually(t, "every queue consumed to its end", func() bool {
				for _, pc := range pcs {
					if !settled(pc.p, "shared", 10) {
						return false
					}
				}
				return true
			})
			slices.Sort(want)
			if diff := cmp.Diff(want, got.bodies()); diff != "" {
				t.Errorf("consumed (-sent +got):\n%s", diff)
			}
			owner := map[int]string{}
			for _, s := range got.snapshot() {
				q := s.msg.Queue.QueueID
				if o, ok := owner[q]; ok && o != s.who {
					t.Errorf("queue %d consumed by %s and %s", q, o, s.who)
				}
				owner[q] = s.who
				if s.msg.Topic != "shared" || s.msg.Queue.BrokerName != "broker-a" || s.msg.MsgID == "" {
					t.Errorf("message fields: %v", s.msg)
				}
			}
		})
	}
}

// Broadcasting consumers each get every message and keep offsets in their own file.
func TestBroadcastingEachGetsAll(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("bcast", 3)
	dir := t.TempDir()
	var got [2]seen
	var pcs []*PushConsumer
	for i := range 2 {
		opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-bcast", fmt.Sprintf("b%d", i)),
			WithModel(Broadcasting), WithOffsetDir(dir))
		pcs = append(pcs, startConsumer(t, "bcast", "*", got[i].recorder("x"), opts...))
	}
	want := a.sendN("bcast", 3, 30, "b")
	slices.Sort(want)
	for i := range got {
		eventually(t, "every message at each consumer", func() bool { return got[i].count() >= 30 })
		eventually(t, "every queue consumed to its end", func() bool { return settled(pcs[i].p, "bcast", 10) })
	}
	for i := range got {
		if diff := cmp.Diff(want, got[i].bodies()); diff != "" {
			t.Errorf("consumer %d (-sent +got):\n%s", i, diff)
		}
	}
	// Each member's offsets are in its own file once persisted.
	for _, pc := range pcs {
		pc.Close()
		s, err := newLocalOffsetStore(dir, pc.ClientID(), "g-bcast")
		if err != nil {
			t.Fatal(err)
		}
		for q := range 3 {
			if off, err := s.fetch(context.Background(), MessageQueue{Topic: "bcast", BrokerName: "broker-a", QueueID: q}); err != nil || off != 10 {
				t.Errorf("%s queue %d: offset %d, %v; want 10", pc.ClientID(), q, off, err)
			}
		}
	}
}

// A message the listener fails on comes back from the retry topic under its original topic,
// with its reconsume count raised; a panic counts as a failure too.
func TestRetryLaterRedelivers(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("retry", 2)
			var got seen
			var calls atomic.Int32
			listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
				got.add("c", msgs)
				if msgs[0].ReconsumeTimes == 0 {
					if calls.Add(1)%2 == 0 {
						panic("boom")
					}
					return ConsumeRetryLater, nil
				}
				return ConsumeSuccess, nil
			}
			startConsumer(t, "retry", "*", listener, fastOptions(t, n, transportFor(t, n, kind), "g-retry", "r")...)
			a.sendN("retry", 2, 4, "r")
			eventually(t, "redeliveries", func() bool { return got.count() >= 8 })
			byBody := map[string][]*Message{}
			for _, s := range got.snapshot() {
				byBody[s.body] = append(byBody[s.body], s.msg)
			}
			for body, ms := range byBody {
				if len(ms) != 2 {
					t.Errorf("%s delivered %d times, want 2", body, len(ms))
					continue
				}
				first, second := ms[0], ms[1]
				if second.Topic != "retry" || second.Queue.Topic != RetryTopic("g-retry") || second.ReconsumeTimes != 1 {
					t.Errorf("redelivery of %s: topic %q queue topic %q reconsume %d", body, second.Topic,
						second.Queue.Topic, second.ReconsumeTimes)
				}
				if second.MsgID != first.MsgID {
					t.Errorf("redelivery of %s has msg id %q, first %q", body, second.MsgID, first.MsgID)
				}
			}
		})
	}
}

// An orderly consumer sees each queue's messages in offset order, retrying a suspended batch
// locally before the rest of its queue.
func TestOrderlyKeepsQueueOrder(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) { testOrderly(t, kind) })
	}
}

func testOrderly(t *testing.T, kind string) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("ordered", 3)
	var mu sync.Mutex
	seq := map[int][]int64{}
	suspended := map[int64]bool{}
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		m := msgs[0]
		if m.Queue.QueueID == 1 && m.QueueOffset == 3 && !suspended[m.QueueOffset] {
			suspended[m.QueueOffset] = true
			return SuspendCurrentQueueAMoment, nil
		}
		for _, m := range msgs {
			seq[m.Queue.QueueID] = append(seq[m.Queue.QueueID], m.QueueOffset)
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, transportFor(t, n, kind), "g-ordered", "o"),
		WithOrderly(true), WithSuspendDelay(20*time.Millisecond), WithConsumeGoroutines(3))
	pc := startConsumer(t, "ordered", "*", listener, opts...)
	for i := range 30 {
		a.send("ordered", int32(i%3), "", fmt.Sprintf("key-%d", i%3), fmt.Sprintf("o-%d", i))
	}
	eventually(t, "all messages in order", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seq[0])+len(seq[1])+len(seq[2]) >= 30
	})
	mu.Lock()
	for q, offs := range seq {
		want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		if diff := cmp.Diff(want, offs); diff != "" {
			t.Errorf("queue %d order (-want +got):\n%s", q, diff)
		}
	}
	mu.Unlock()
	for _, mq := range heldQueues(pc, "ordered") {
		pc.p.queuesMu.Lock()
		locked := pc.p.queues[mq].pq.locked.Load()
		pc.p.queuesMu.Unlock()
		if !locked {
			t.Errorf("%v consumed without its lock", mq)
		}
	}
}

// A consumer that restarts resumes after the last committed offset.
func TestOffsetResumedAfterRestart(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("resume", 2)
			a.sendN("resume", 2, 10, "first")
			var got1 seen
			tr := transportFor(t, n, kind)
			// Over TCP the periodic commits wait for the broker (WithSyncCommit); in-process they are
			// one-way. Either way Close persists synchronously.
			opts := append(fastOptions(t, n, tr, "g-resume", "r"), WithSyncCommit(kind == "tcp"))
			pc := startConsumer(t, "resume", "*", got1.recorder("1"), opts...)
			eventually(t, "first batch", func() bool { return got1.count() >= 10 })
			if err := pc.Close(); err != nil {
				t.Fatal(err)
			}
			a.sendN("resume", 2, 6, "second")
			var got2 seen
			pc2 := startConsumer(t, "resume", "*", got2.recorder("2"), opts...)
			eventually(t, "second batch", func() bool { return got2.count() >= 6 })
			eventually(t, "both queues consumed to their end", func() bool { return settled(pc2.p, "resume", 8) })
			want := []string{"second-0", "second-1", "second-2", "second-3", "second-4", "second-5"}
			if diff := cmp.Diff(want, got2.bodies()); diff != "" {
				t.Errorf("after restart (-want +got):\n%s", diff)
			}
		})
	}
}

// Pulls pause while a queue's cache is over its threshold, and resume once it drains.
func TestFlowControl(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("flow", 1)
	a.sendN("flow", 1, 60, "f")
	release := make(chan struct{})
	var got seen
	listener := func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		got.add("f", msgs)
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g-flow", "f"),
		WithPullBatchSize(4), WithPullThresholds(10, 1<<20), WithConsumeGoroutines(20))
	pc := startConsumer(t, "flow", "*", listener, opts...)
	mq := MessageQueue{Topic: "flow", BrokerName: "broker-a", QueueID: 0}
	var pq *processQueue
	eventually(t, "queue taken and cache filled", func() bool {
		pc.p.queuesMu.Lock()
		defer pc.p.queuesMu.Unlock()
		if qs := pc.p.queues[mq]; qs != nil {
			pq = qs.pq
			c, _, _ := pq.stats()
			return c > 10
		}
		return false
	})
	// Wall time: pulls that ignore the threshold show only as a cache that grows meanwhile,
	// over several 50 ms flow-control rounds.
	time.Sleep(200 * time.Millisecond)
	if c, _, _ := pq.stats(); c > 10+4 {
		t.Fatalf("%d messages cached, want at most the threshold plus one pull (14)", c)
	}
	close(release)
	eventually(t, "all consumed after release", func() bool { return got.count() >= 60 })
}

// Close leaves no goroutine behind, across restarts of consumers of both models.
func TestNoGoroutineLeak(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("leak", 2)
	a.sendN("leak", 2, 10, "l")
	tr := n.NewTransport()
	defer tr.Close()
	dir := t.TempDir()
	// Wall time: the node's own goroutines settle without a signal; counting them too early
	// would blame their late starters on the consumers.
	time.Sleep(100 * time.Millisecond)
	base := runtime.NumGoroutine()
	for i := range 3 {
		for _, orderly := range []bool{false, true} {
			var got seen
			opts := append(fastOptions(t, n, tr, "g-leak", "l"), WithOrderly(orderly), WithOffsetDir(dir))
			if i == 2 {
				opts = append(opts, WithModel(Broadcasting))
			}
			pc, err := NewPushConsumer(opts...)
			if err != nil {
				t.Fatal(err)
			}
			pc.Subscribe("leak", "*", got.recorder("x"))
			if err := pc.Start(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "queues taken", func() bool { return len(heldQueues(pc, "leak")) == 2 })
			if err := pc.Close(); err != nil {
				t.Fatal(err)
			}
			if err := pc.Close(); err != nil {
				t.Fatalf("second close: %v", err)
			}
		}
	}
	for range 2 {
		c, err := NewPullConsumer(fastOptions(t, n, tr, "g-leak-pull", "lp")...)
		if err != nil {
			t.Fatal(err)
		}
		c.Subscribe("leak", "*")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := c.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checkNoGoroutineLeak(t, base)
}

// Messages whose tag is not subscribed are filtered out; the others keep their fields.
func TestTagFilter(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("tags", 1)
	var got seen
	pc := startConsumer(t, "tags", "A || B", got.recorder("t"), fastOptions(t, n, transportFor(t, n, "inproc"), "g-tags", "t")...)
	for i, tag := range []string{"A", "C", "B", "", "A"} {
		a.send("tags", 0, tag, "k1 k2", fmt.Sprintf("t%d", i))
	}
	eventually(t, "matching messages", func() bool { return got.count() >= 3 })
	eventually(t, "the queue consumed to its end", func() bool { return settled(pc.p, "tags", 5) })
	if diff := cmp.Diff([]string{"t0", "t2", "t4"}, got.bodies()); diff != "" {
		t.Errorf("filtered (-want +got):\n%s", diff)
	}
	for _, s := range got.snapshot() {
		if diff := cmp.Diff([]string{"k1", "k2"}, s.msg.Keys); diff != "" || s.msg.Property(message.PropertyMaxOffset) == "" {
			t.Errorf("keys %v, max offset %q", s.msg.Keys, s.msg.Property(message.PropertyMaxOffset))
		}
	}
}
