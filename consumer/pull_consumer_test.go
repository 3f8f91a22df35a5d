package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/node"
)

func startPullConsumer(t *testing.T, n *node.Node, group string, setup func(*PullConsumer), opts ...Option) *PullConsumer {
	t.Helper()
	c, err := NewPullConsumer(append(fastOptions(t, n, transportFor(t, n, "inproc"), group, "p"), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	setup(c)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pollBodies polls until want messages came or the deadline passes.
func pollBodies(t *testing.T, c *PullConsumer, want int, wait time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(wait)
	for len(got) < want {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		msgs, err := c.Poll(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, string(m.Body))
		}
	}
	slices.Sort(got)
	return got
}

// A subscribed pull consumer gets every message; with auto-commit a restarted one goes on after
// what the first polled.
func TestPullConsumerSubscribeAutoCommit(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("lite", 2)
	want := a.sendN("lite", 2, 10, "a")
	slices.Sort(want)
	c := startPullConsumer(t, n, "g-lite", func(c *PullConsumer) { c.Subscribe("lite", "*") })
	if diff := cmp.Diff(want, pollBodies(t, c, 10, 20*time.Second)); diff != "" {
		t.Fatalf("polled (-want +got):\n%s", diff)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	a.sendN("lite", 2, 4, "b")
	c2 := startPullConsumer(t, n, "g-lite", func(c *PullConsumer) { c.Subscribe("lite", "*") })
	got := pollBodies(t, c2, 4, 20*time.Second)
	if extra := pollBodies(t, c2, 1, 300*time.Millisecond); len(extra) > 0 {
		got = append(got, extra...)
	}
	if diff := cmp.Diff([]string{"b-0", "b-1", "b-2", "b-3"}, got); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
}

// An assigned queue with manual commit: Seek re-reads, SeekToEnd skips, Pause holds back,
// Commit persists only what was polled.
func TestPullConsumerAssignSeekPause(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("assigned", 2)
	a.sendN("assigned", 2, 8, "x") // x-0, x-2, x-4, x-6 in queue 0
	q0 := MessageQueue{Topic: "assigned", BrokerName: "broker-a", QueueID: 0}
	c := startPullConsumer(t, n, "g-assigned", func(c *PullConsumer) { c.Assign(q0) }, WithAutoCommit(false))
	if diff := cmp.Diff([]string{"x-0", "x-2", "x-4", "x-6"}, pollBodies(t, c, 4, 20*time.Second)); diff != "" {
		t.Fatalf("polled (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]MessageQueue{q0}, c.Assignment()); diff != "" {
		t.Errorf("assignment (-want +got):\n%s", diff)
	}
	if off, ok := c.Committed(q0); ok && off != 0 {
		t.Errorf("committed %d before Commit", off)
	}
	if err := c.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if off, _ := c.Committed(q0); off != 4 {
		t.Errorf("committed %d after Commit, want 4", off)
	}

	if err := c.Seek(q0, 2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"x-4", "x-6"}, pollBodies(t, c, 2, 20*time.Second)); diff != "" {
		t.Errorf("after Seek(2) (-want +got):\n%s", diff)
	}
	if err := c.SeekToBegin(context.Background(), q0); err != nil {
		t.Fatal(err)
	}
	if got := pollBodies(t, c, 4, 20*time.Second); len(got) != 4 {
		t.Errorf("after SeekToBegin: %v", got)
	}
	if err := c.SeekToEnd(context.Background(), q0); err != nil {
		t.Fatal(err)
	}
	if got := pollBodies(t, c, 1, 300*time.Millisecond); len(got) != 0 {
		t.Errorf("after SeekToEnd polled %v", got)
	}

	c.Pause(q0)
	a.send("assigned", 0, "", "", "late")
	if got := pollBodies(t, c, 1, 500*time.Millisecond); len(got) != 0 {
		t.Errorf("paused queue polled %v", got)
	}
	c.Resume(q0)
	if diff := cmp.Diff([]string{"late"}, pollBodies(t, c, 1, 20*time.Second)); diff != "" {
		t.Errorf("after Resume (-want +got):\n%s", diff)
	}
	other := MessageQueue{Topic: "assigned", BrokerName: "broker-a", QueueID: 1}
	if err := c.Seek(other, 0); !errors.Is(err, ErrNotAssigned) {
		t.Errorf("Seek of an unassigned queue: %v", err)
	}
}

// The lite pull consumer has RocketMQ's DefaultLitePullConsumer defaults where they differ from
// the push consumer's, and the caller's options still win.
func TestPullConsumerLiteDefaults(t *testing.T) {
	c, err := NewPullConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.p.cfg; got.pullBatchSize != 10 || got.pullSuspend != 20*time.Second || !got.subscriptionInPull {
		t.Errorf("lite defaults: batch %d suspend %v subscription in pull %v, want 10, 20s, true",
			got.pullBatchSize, got.pullSuspend, got.subscriptionInPull)
	}
	c2, err := NewPullConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithPullBatchSize(5))
	if err != nil {
		t.Fatal(err)
	}
	if c2.p.cfg.pullBatchSize != 5 {
		t.Errorf("WithPullBatchSize(5) gave %d", c2.p.cfg.pullBatchSize)
	}
	p, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if p.p.cfg.pullBatchSize != DefaultPullBatchSize || p.p.cfg.pullSuspend != DefaultPullSuspend {
		t.Errorf("push defaults changed: batch %d suspend %v", p.p.cfg.pullBatchSize, p.p.cfg.pullSuspend)
	}
}
