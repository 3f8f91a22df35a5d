package mq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// A consumer that takes its queues while the master is down reads their offsets from the slave
// (RocketMQ's findBrokerAddressInAdmin: the master, else a slave) and consumes what the slave
// holds. Before, the offset read went to the master only, no queue was taken, and nothing was
// consumed until the master returned (seen as a rare failure of TestHAConsumerFailoverToSlave
// when a rebalance re-took queues after the kill).
func TestHAConsumerStartsWhileMasterDown(t *testing.T) {
	for _, inproc := range []bool{false, true} {
		name := "tcp"
		if inproc {
			name = "inproc"
		}
		t.Run(name, func(t *testing.T) {
			const topic, sent = "LateStart", 40
			c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1, InProcess: inproc})
			c.CreateTopic(topic, 4)
			p := c.NewProducer(producer.WithRetries(0))
			for i := range sent {
				if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(fmt.Sprintf("late-%d", i)))); err != nil {
					t.Fatal(err)
				}
			}
			master := c.Master(0).Current().Broker().Store()
			slave := c.Slaves()[0].Current().Broker().Store()
			mqtest.Eventually(t, "the slave has every message", func() bool {
				return slave.MaxPhyOffset() >= master.MaxPhyOffset() && slave.DispatchedPhyOffset() >= master.MaxPhyOffset()
			})
			if err := c.KillMaster(0); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			seen := map[string]bool{}
			cons := c.NewPushConsumer(consumer.WithGroup("late"), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
			err := cons.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					seen[string(m.Body)] = true
				}
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cons.Start(); err != nil {
				t.Fatal(err)
			}
			mqtest.Eventually(t, "every message consumed from the slave", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) == sent
			})
		})
	}
}
