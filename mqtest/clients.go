package mqtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

var clientSeq atomic.Int64

// transport returns the helpers' clients' transport, under the cluster's fault injector: an
// in-process one when cfg.InProcess, TCP otherwise.
func (c *Cluster) transport() remoting.Transport {
	if !c.cfg.InProcess {
		return c.clientFaults(remoting.NewClient(remoting.ClientOptions{Logger: &c.log}))
	}
	for _, n := range append(c.NameServerNodes(), c.Brokers()...) {
		if mn := n.Current(); mn != nil {
			return c.clientFaults(mn.NewTransport())
		}
	}
	return nil
}

// NewProducer returns a started producer of this cluster with fast route refresh and
// heartbeats (100 ms, 200 ms), its own client instance and the cluster's logger; opts come last
// and override these. t.Cleanup closes it. Call from the test's goroutine.
func (c *Cluster) NewProducer(opts ...producer.Option) *producer.Producer {
	c.t.Helper()
	base := []producer.Option{producer.WithNameServers(c.NameServerAddrs()...), producer.WithLogger(&c.log),
		producer.WithInstanceName(fmt.Sprintf("mqtest-p%d", clientSeq.Add(1))),
		producer.WithPollNameServerInterval(clientRoutePeriod), producer.WithHeartbeatInterval(clientHeartbeat)}
	if tr := c.transport(); tr != nil {
		base = append(base, producer.WithOwnedTransport(tr))
	}
	p, err := producer.New(append(base, opts...)...)
	if err != nil {
		c.t.Fatalf("mqtest: producer: %v", err)
	}
	c.t.Cleanup(func() { p.Close() })
	return p
}

// consumerBase is the consumers' fast defaults: group "mqtest" (override with WithGroup),
// consume from the first offset (so messages sent before Start are seen), rebalance every
// 100 ms, persist offsets every 100 ms, retry a failed pull after 50 ms, refresh routes every
// 100 ms, heartbeats every 200 ms, its own client instance, and pulls held at most 2 s and
// answered within 2 s more: a pull in flight when its broker is killed may go unanswered, and
// its queue waits that long before it pulls elsewhere.
func (c *Cluster) consumerBase() []consumer.Option {
	base := []consumer.Option{consumer.WithNameServers(c.NameServerAddrs()...), consumer.WithLogger(&c.log),
		consumer.WithGroup("mqtest"), consumer.WithInstanceName(fmt.Sprintf("mqtest-c%d", clientSeq.Add(1))),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithRebalanceInterval(100 * time.Millisecond), consumer.WithPersistInterval(100 * time.Millisecond),
		consumer.WithPullErrorDelay(defaultConsumerDelay), consumer.WithSendBackRetryDelay(defaultConsumerDelay),
		consumer.WithPullSuspend(2 * time.Second), consumer.WithPullTimeout(4 * time.Second),
		consumer.WithPollNameServerInterval(clientRoutePeriod), consumer.WithHeartbeatInterval(clientHeartbeat)}
	if tr := c.transport(); tr != nil {
		base = append(base, consumer.WithOwnedTransport(tr))
	}
	return base
}

// NewPushConsumer returns a push consumer of this cluster with consumerBase's fast defaults;
// opts come last and override them. Subscribe, then Start. t.Cleanup closes it.
func (c *Cluster) NewPushConsumer(opts ...consumer.Option) *consumer.PushConsumer {
	c.t.Helper()
	pc, err := consumer.NewPushConsumer(append(c.consumerBase(), opts...)...)
	if err != nil {
		c.t.Fatalf("mqtest: push consumer: %v", err)
	}
	c.t.Cleanup(func() { pc.Close() })
	return pc
}

// NewPullConsumer is NewPushConsumer's lite pull counterpart: Subscribe or Assign, Start, Poll.
func (c *Cluster) NewPullConsumer(opts ...consumer.Option) *consumer.PullConsumer {
	c.t.Helper()
	pc, err := consumer.NewPullConsumer(append(c.consumerBase(), opts...)...)
	if err != nil {
		c.t.Fatalf("mqtest: pull consumer: %v", err)
	}
	c.t.Cleanup(func() { pc.Close() })
	return pc
}

// CreateTopic creates topic with queues read and write queues on every running master and
// waits until every running name server's route has them for every group and every running
// slave has copied its master's topics (WaitSlavesSynced), so slaves serve the topic too.
// Call from the test's goroutine.
func (c *Cluster) CreateTopic(topic string, queues int) {
	c.t.Helper()
	if err := c.createTopic(remoting.Credentials{}, topic, queues); err != nil {
		c.t.Fatal(err)
	}
}

// CreateTopicAs is CreateTopic with each UPDATE_AND_CREATE_TOPIC signed by creds, as
// RocketMQ's admin tools sign with an ACL account: brokers with ACL on take it from an admin
// account only.
func (c *Cluster) CreateTopicAs(creds remoting.Credentials, topic string, queues int) {
	c.t.Helper()
	if err := c.createTopic(creds, topic, queues); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) createTopic(creds remoting.Credentials, topic string, queues int) error {
	tr := remoting.Transport(remoting.NewClient(remoting.ClientOptions{Logger: &c.log}))
	defer tr.Close()
	for _, m := range c.Masters() {
		if !m.Running() {
			continue
		}
		h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: names.TopicAutoCreate, ReadQueueNums: int32(queues),
			WriteQueueNums: int32(queues), Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
		req := remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)
		creds.Sign(req)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := tr.InvokeSync(ctx, m.Addr(), req)
		cancel()
		if err == nil {
			err = remoting.ErrorFromResponse(resp)
		}
		if err != nil {
			return fmt.Errorf("mqtest: create topic %s on %s: %w", topic, m, err)
		}
	}
	if !poll(DefaultWaitTimeout, func() bool { return c.hasTopic(topic, queues) }) {
		return fmt.Errorf("mqtest: route of topic %s incomplete after %v", topic, DefaultWaitTimeout)
	}
	return c.waitSlavesSynced()
}

// hasTopic reports whether every running name server routes topic to every group with
// queues queues.
func (c *Cluster) hasTopic(topic string, queues int) bool {
	for _, ns := range c.nameServers {
		nsn := ns.wiring()
		if nsn == nil {
			continue
		}
		r, ok := nsn.NameServer().TopicRoute(topic)
		if !ok {
			return false
		}
		have := map[string]bool{}
		for _, qd := range r.QueueDatas {
			if int(qd.ReadQueueNums) == queues && int(qd.WriteQueueNums) == queues {
				have[qd.BrokerName] = true
			}
		}
		for _, m := range c.Masters() {
			if m.Running() && !have[m.BrokerName] {
				return false
			}
		}
	}
	return true
}
