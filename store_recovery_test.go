package mq

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

// A node closed cleanly whose ConsumeQueue file is then deleted (issue 32): the next start
// rebuilds the queue from the CommitLog, and a consumer receives every message at the queue
// offset it was sent to.
func TestNodeRebuildsLostConsumeQueueFile(t *testing.T) {
	const topic, total = "CQGapTopic", 200
	opts := testOptions(t)
	opts.DisableBroker = false
	opts.Store.SegmentBytes = 1 << 20
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.NewProducer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type at struct {
		qid int
		off int64
	}
	sent := map[at]string{}
	for i := range total {
		body := fmt.Sprintf("message %d", i)
		res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		sent[at{res.Queue.QueueID, res.QueueOffset}] = body
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// Each queue's only file (300,000 units) is its last; lose queue 0's.
	lost := filepath.Join(opts.Store.Dir, "consumequeue", topic, "0", fmt.Sprintf("%020d", 0))
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	n, err = StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	rep := n.Broker().Store().RecoveryReport()
	if !rep.Clean || !slices.Contains(rep.RebuiltQueues, topic+"/0") {
		t.Fatalf("recovery report: %+v", rep)
	}

	c, err := n.NewPushConsumer(consumer.WithGroup("cqgap-group"), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[at]string{}
	done := make(chan struct{})
	closed := false
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[at{m.Queue.QueueID, m.QueueOffset}] = string(m.Body)
		}
		if len(got) == total && !closed {
			closed = true
			close(done)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("consumed %d of %d messages", len(got), total)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, body := range sent {
		if got[k] != body {
			t.Fatalf("queue %d offset %d: consumed %q, sent %q", k.qid, k.off, got[k], body)
		}
	}
}
