package mq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// countingTransport counts the pulls sent to each address.
type countingTransport struct {
	remoting.Transport
	mu    sync.Mutex
	pulls map[string]int
}

func (c *countingTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.PullMessage {
		c.mu.Lock()
		c.pulls[addr]++
		c.mu.Unlock()
	}
	return c.Transport.InvokeSync(ctx, addr, req)
}

func (c *countingTransport) count(addr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pulls[addr]
}

// Slave reads by suggestion (issue 7): with slave reading on and a one-byte "far behind"
// threshold, the master sends the consumer to the slave; it consumes everything from there
// and its offsets reach the master.
func TestHASlaveReadBySuggestion(t *testing.T) {
	const (
		topic = "SlaveRead"
		n     = 200
	)
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1, Options: func(o *mq.Options) {
		o.HA.SlaveReadEnable = true
		o.Store.AccessMessageInMemoryMaxBytes = 1
	}})
	c.CreateTopic(topic, 2)
	p := c.NewProducer()
	for i := range n {
		if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	master, slave := c.Master(0), c.Slaves()[0]
	mqtest.Eventually(t, "slave caught up", func() bool {
		return slave.Current().Broker().Store().MaxPhyOffset() == master.Current().Broker().Store().MaxPhyOffset()
	})

	tr := &countingTransport{Transport: remoting.NewClient(remoting.ClientOptions{}), pulls: map[string]int{}}
	t.Cleanup(func() { tr.Transport.Close() })
	var consumed atomic.Int64
	cons := c.NewPushConsumer(consumer.WithGroup("slave_read"), consumer.WithTransport(tr), consumer.WithPullBatchSize(8))
	err := cons.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		consumed.Add(int64(len(msgs)))
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	mqtest.Eventually(t, "every message consumed", func() bool { return consumed.Load() >= n })
	if got := tr.count(slave.Addr()); got == 0 {
		t.Fatalf("no pull went to the slave (master got %d)", tr.count(master.Addr()))
	}
	t.Logf("pulls: master %d, slave %d", tr.count(master.Addr()), tr.count(slave.Addr()))

	admin := remoting.NewClient(remoting.ClientOptions{})
	defer admin.Close()
	masterOffset := func(q int32) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h := &protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "slave_read", Topic: topic, QueueID: q}
		resp, err := admin.InvokeSync(ctx, master.Addr(), remoting.NewRequest(remoting.QueryConsumerOffset, remoting.EncodeHeader(h), nil))
		if err != nil || resp.Code != remoting.Success {
			return -1
		}
		var oh protocol.OffsetResponseHeader
		if oh.Decode(resp.ExtFields) != nil {
			return -1
		}
		return oh.Offset
	}
	ms := master.Current().Broker().Store()
	mqtest.Eventually(t, "the consumer's offsets on the master", func() bool {
		for q := range int32(2) {
			if masterOffset(q) != ms.MaxOffsetInQueue(topic, q) {
				return false
			}
		}
		return true
	})
}
