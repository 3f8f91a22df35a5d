package mq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// Consumer failover to a slave (issue 7): an async master and its slave, a consumer that has
// read part of a topic, the master killed. Async replication may lose an acknowledged but
// unreplicated tail, so what the slave must serve is derived from its CommitLog at the kill:
// every acknowledged message whole on the slave is consumed from it. When the master is back,
// consumption goes on from it: the tail the slave lacked (the master kept it) and new
// messages, so in the end every acknowledged message was consumed.
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
	acked := make([]sentAck, 0, before) // in send order, so in CommitLog order
	for i := range before {
		body := fmt.Sprintf("before-%d", i)
		res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, sentAck{phy, body})
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

	// So that the failover has something to serve: the consumer holds at most
	// queues*(threshold+pullBatch) = 48 messages, the slave at least half the run.
	ss := slave.Current().Broker().Store()
	mqtest.Eventually(t, "the slave replicating half the run", func() bool {
		return ss.MaxPhyOffset() >= acked[before/2].phy
	})
	phase("killing the master")
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}
	atKill := consumed.Load()
	// What the slave has now is all it will ever have of the master's log: the acknowledged
	// messages whole in it are a prefix of the run, and all that lie below its end.
	end := ss.MaxPhyOffset()
	onSlave := 0
	for i, a := range acked {
		if err := checkRecord(ss, a, topic); err != nil {
			if i+1 < len(acked) && acked[i+1].phy <= end {
				t.Fatalf("below the slave's end %d: %v", end, err)
			}
			break
		}
		onSlave++
	}
	for _, a := range acked[onSlave:] {
		if checkRecord(ss, a, topic) == nil {
			t.Fatalf("%s is on the slave, but %s before it is not", a.body, acked[onSlave].body)
		}
	}
	t.Logf("at the kill: %d consumed, %d of %d acknowledged messages on the slave, %d acknowledged but not replicated",
		atKill, onSlave, before, before-onSlave)
	if onSlave < before/2 {
		t.Fatalf("the slave holds %d acknowledged messages, though its end reached message %d", onSlave, before/2)
	}
	open()

	var notYet []string
	defer func() {
		if t.Failed() {
			for q := range queues {
				t.Logf("queue %d: slave max offset %d", q, ss.MaxOffsetInQueue(topic, int32(q)))
			}
			t.Logf("not consumed: %v", notYet)
		}
	}()
	unconsumed := func(want []sentAck) bool {
		mu.Lock()
		defer mu.Unlock()
		notYet = notYet[:0]
		for _, a := range want {
			if seen[a.body] == 0 {
				notYet = append(notYet, a.body)
			}
		}
		return len(notYet) == 0
	}
	mqtest.Eventually(t, "every acknowledged message on the slave consumed from it",
		func() bool { return unconsumed(acked[:onSlave]) })
	phase("replicated messages consumed")
	mu.Lock()
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	mu.Unlock()
	t.Logf("after the kill: %d consumed in all (%d more than at the kill; at most %d were cached then), %d redelivered",
		consumed.Load(), consumed.Load()-atKill, queues*(threshold+pullBatch), dups)

	// The master comes back: sends work again, and the consumer reads the new messages and the
	// tail the slave never had.
	if err := c.Restart(c.Master(0)); err != nil {
		t.Fatal(err)
	}
	phase("master restarted")
	for i := range afterReturn {
		body := fmt.Sprintf("after-%d", i)
		mqtest.Eventually(t, "send "+body+" after the master's return", func() bool {
			_, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
			if err == nil {
				acked = append(acked, sentAck{body: body})
			}
			return err == nil
		})
	}
	phase("sent after the return")
	mqtest.Eventually(t, "every acknowledged message consumed after the master's return",
		func() bool { return unconsumed(acked) })
	phase("consumed after the return")
}
