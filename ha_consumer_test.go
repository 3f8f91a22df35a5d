package mq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// Consumer failover to a slave (issue 7): an async master and its slave, a consumer that has
// read part of a topic, the master killed. The consumer goes on from the slave: every
// acknowledged message the slave has is consumed; those acknowledged but not replicated yet
// are the only ones that may be missing, and the test reports how many. When the master is
// back, new messages are consumed too.
func TestHAConsumerFailoverToSlave(t *testing.T) {
	for _, inproc := range []bool{false, true} {
		name := "tcp"
		if inproc {
			name = "inproc"
		}
		t.Run(name, func(t *testing.T) { testFailoverToSlave(t, inproc) })
	}
}

func testFailoverToSlave(t *testing.T, inproc bool) {
	const (
		topic       = "Failover"
		queues      = 4
		before      = 400 // sent (and acknowledged) before the kill
		gateAt      = 40  // consumed before the kill
		threshold   = 8   // per-queue cache limit, so most messages stay on the broker
		pullBatch   = 4
		afterReturn = 40 // sent after the master is back
	)
	start := time.Now()
	phase := func(what string) { t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what) }
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1, InProcess: inproc})
	c.CreateTopic(topic, queues)
	slave := c.Slaves()[0]

	p := c.NewProducer(producer.WithRetries(0))
	acked := make(map[string]producer.SendResult, before)
	for i := range before {
		body := fmt.Sprintf("before-%d", i)
		res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		acked[body] = *res
	}

	var (
		mu       sync.Mutex
		seen     = map[string]int{}
		consumed atomic.Int64
		gate     = make(chan struct{})
		openOnce sync.Once
	)
	open := func() { openOnce.Do(func() { close(gate) }) }
	cons := c.NewPushConsumer(consumer.WithGroup("failover"), consumer.WithPullBatchSize(pullBatch),
		consumer.WithPullThresholds(threshold, 1<<30), consumer.WithConsumeBatchSize(1))
	t.Cleanup(open) // runs before the consumer's Close
	err := cons.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		if consumed.Load() >= gateAt {
			<-gate
		}
		mu.Lock()
		for _, m := range msgs {
			seen[string(m.Body)]++
		}
		mu.Unlock()
		consumed.Add(int64(len(msgs)))
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	mqtest.Eventually(t, "the first messages consumed", func() bool { return consumed.Load() >= gateAt })

	phase("killing the master")
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}
	atKill := consumed.Load()
	// What the slave has now is all it will ever have of the master's log.
	ss := slave.Current().Broker().Store()
	onSlave, missing := 0, 0
	for _, r := range acked {
		if r.QueueOffset < ss.MaxOffsetInQueue(topic, int32(r.Queue.QueueID)) {
			onSlave++
		} else {
			missing++
		}
	}
	t.Logf("at the kill: %d consumed, %d of %d acknowledged messages on the slave, %d acknowledged but not replicated",
		atKill, onSlave, before, missing)
	open()

	var notYet []string
	defer func() {
		if t.Failed() {
			for q := range queues {
				t.Logf("queue %d: slave max offset %d", q, ss.MaxOffsetInQueue(topic, int32(q)))
			}
			t.Logf("replicated, not consumed: %v", notYet)
		}
	}()
	mqtest.Eventually(t, "every replicated acknowledged message consumed from the slave", func() bool {
		mu.Lock()
		defer mu.Unlock()
		notYet = notYet[:0]
		for body, r := range acked {
			if seen[body] == 0 && r.QueueOffset < ss.MaxOffsetInQueue(topic, int32(r.Queue.QueueID)) {
				notYet = append(notYet, fmt.Sprintf("%s@%d/%d", body, r.Queue.QueueID, r.QueueOffset))
			}
		}
		return len(notYet) == 0
	})
	phase("replicated messages consumed")
	mu.Lock()
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	mu.Unlock()
	t.Logf("after the kill: %d consumed in all (%d more than at the kill; at most %d were cached then), %d redelivered",
		consumed.Load(), consumed.Load()-atKill, queues*(threshold+pullBatch), dups)

	// The master comes back: sends work again and the consumer reads the new messages.
	if err := c.Restart(c.Master(0)); err != nil {
		t.Fatal(err)
	}
	phase("master restarted")
	for i := range afterReturn {
		body := fmt.Sprintf("after-%d", i)
		mqtest.Eventually(t, "send "+body+" after the master's return", func() bool {
			_, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
			return err == nil
		})
	}
	phase("sent after the return")
	mqtest.Eventually(t, "messages sent after the master's return consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range afterReturn {
			if seen[fmt.Sprintf("after-%d", i)] == 0 {
				return false
			}
		}
		return true
	})
	phase("consumed after the return")
}
