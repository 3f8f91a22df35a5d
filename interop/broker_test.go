package interop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// startNode runs a whole node (name service and broker) with short delay levels, so retries
// come back in milliseconds.
func startNode(t *testing.T) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	levels := make([]time.Duration, 18)
	for i := range levels {
		levels[i] = 50 * time.Millisecond
	}
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), Logger: &l,
		SegmentBytes: 8 << 20, DelayLevels: levels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func resolver(n *mq.Node) primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{n.Addr()})
}

func newProducer(t *testing.T, n *mq.Node) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(n)), producer.WithGroupName("pg"),
		producer.WithInstanceName(t.Name()+"-producer"), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// waitRoute waits until the name service has a route for topic (a broker registers a new topic
// promptly, but asynchronously).
func waitRoute(t *testing.T, n *mq.Node, topic string) {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.InvokeSync(ctx, n.Addr(), route.BuildGetRouteInfo(topic))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for %s", topic)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createTopic creates a topic on the node's broker with the official admin client.
func createTopic(t *testing.T, n *mq.Node, topic string, queues int) {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(resolver(n)))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(n.BrokerAddr()),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, n, topic)
}

// collector gathers what a push consumer's listener saw.
type collector struct {
	mu   sync.Mutex
	msgs []*primitive.MessageExt
	more chan struct{}
}

func newCollector() *collector { return &collector{more: make(chan struct{}, 1)} }

func (c *collector) add(msgs ...*primitive.MessageExt) {
	c.mu.Lock()
	c.msgs = append(c.msgs, msgs...)
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the messages seen, or fails after 20 s.
func (c *collector) waitFor(t *testing.T, what string, cond func([]*primitive.MessageExt) bool) []*primitive.MessageExt {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		snapshot := append([]*primitive.MessageExt(nil), c.msgs...)
		c.mu.Unlock()
		if cond(snapshot) {
			return snapshot
		}
		select {
		case <-c.more:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; have %d messages: %v", what, len(snapshot), bodies(snapshot))
		}
	}
}

func bodies(msgs []*primitive.MessageExt) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	sort.Strings(out)
	return out
}

func startConsumer(t *testing.T, n *mq.Node, group, instance, topic, expr string,
	listen func(*primitive.MessageExt) consumer.ConsumeResult) rocketmq.PushConsumer {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName(group),
		consumer.WithInstance(instance), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if r := listen(m); r != consumer.ConsumeSuccess {
					return r, nil
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOfficialProducerSendModesAndPushConsumer(t *testing.T) {
	n := startNode(t)
	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const topic = "SendModes"

	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("sync")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("SendSync: %v %v", res, err)
	}
	if res.OffsetMsgID == "" || res.MessageQueue == nil || res.MessageQueue.BrokerName != mq.DefaultBrokerName {
		t.Fatalf("send result %+v", res)
	}
	asyncDone := make(chan error, 1)
	if err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
		if err == nil && r.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", r.Status)
		}
		asyncDone <- err
	}, primitive.NewMessage(topic, []byte("async"))); err != nil {
		t.Fatal(err)
	}
	if err := <-asyncDone; err != nil {
		t.Fatalf("SendAsync: %v", err)
	}
	if err := p.SendOneWay(ctx, primitive.NewMessage(topic, []byte("oneway"))); err != nil {
		t.Fatalf("SendOneWay: %v", err)
	}
	batch := []*primitive.Message{primitive.NewMessage(topic, []byte("batch-1")),
		primitive.NewMessage(topic, []byte("batch-2")), primitive.NewMessage(topic, []byte("batch-3"))}
	if res, err := p.SendSync(ctx, batch...); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch SendSync: %v %v", res, err)
	}

	waitRoute(t, n, topic)
	got := newCollector()
	c := startConsumer(t, n, "cg-modes", "modes", topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		got.add(m)
		return consumer.ConsumeSuccess
	})
	defer c.Shutdown()
	want := []string{"async", "batch-1", "batch-2", "batch-3", "oneway", "sync"}
	msgs := got.waitFor(t, "all six messages", func(m []*primitive.MessageExt) bool { return len(m) >= len(want) })
	if diff := cmp.Diff(want, bodies(msgs)); diff != "" {
		t.Errorf("consumed bodies (-want +got):\n%s", diff)
	}
	for _, m := range msgs {
		if m.Topic != topic || m.GetProperty("CLUSTER") != mq.DefaultClusterName {
			t.Errorf("message %q: topic %q, CLUSTER %q", m.Body, m.Topic, m.GetProperty("CLUSTER"))
		}
	}
}

func TestOfficialConsumerFiltersByTag(t *testing.T) {
	n := startNode(t)
	p := newProducer(t, n)
	const topic = "Tags"
	createTopic(t, n, topic, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i, tag := range []string{"TagA", "TagB", "标签", "TagA", "TagC", "标签", "TagB", "TagA"} {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%d-%s", i, tag)))
		m.WithTag(tag)
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
		if tag == "TagA" || tag == "标签" {
			want = append(want, string(m.Body))
		}
	}
	sort.Strings(want)
	got := newCollector()
	c := startConsumer(t, n, "cg-tags", "tags", topic, "TagA || 标签", func(m *primitive.MessageExt) consumer.ConsumeResult {
		got.add(m)
		return consumer.ConsumeSuccess
	})
	defer c.Shutdown()
	msgs := got.waitFor(t, "tagged messages", func(m []*primitive.MessageExt) bool { return len(m) >= len(want) })
	// Give a wrongly delivered message a moment to show up before comparing.
	time.Sleep(200 * time.Millisecond)
	got.mu.Lock()
	msgs = append(msgs[:0], got.msgs...)
	got.mu.Unlock()
	if diff := cmp.Diff(want, bodies(msgs)); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}
}

func TestOfficialConsumerRetryLater(t *testing.T) {
	n := startNode(t)
	p := newProducer(t, n)
	const topic, group = "Retry", "cg-retry"
	createTopic(t, n, topic, 2)
	// The consumer looks up its retry topic's route once at start and then every 30 s, so the
	// topic exists before it starts, as it would on a broker the group used before.
	createTopic(t, n, "%RETRY%"+group, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("r%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	got := newCollector()
	c := startConsumer(t, n, group, "retry", topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		got.add(m)
		if m.ReconsumeTimes == 0 {
			return consumer.ConsumeRetryLater
		}
		return consumer.ConsumeSuccess
	})
	defer c.Shutdown()
	msgs := got.waitFor(t, "every message twice", func(m []*primitive.MessageExt) bool {
		retried := 0
		for _, x := range m {
			if x.ReconsumeTimes == 1 {
				retried++
			}
		}
		return retried >= 3
	})
	for _, m := range msgs {
		if m.ReconsumeTimes == 1 && (m.Topic != topic || !strings.HasPrefix(string(m.Body), "r")) {
			t.Errorf("redelivered message: topic %q body %q", m.Topic, m.Body)
		}
	}
}

func TestOfficialConsumerOffsetsSurviveRestart(t *testing.T) {
	n := startNode(t)
	p := newProducer(t, n)
	const topic, group = "Offsets", "cg-offsets"
	createTopic(t, n, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(prefix string) {
		for i := range 5 {
			if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("%s%d", prefix, i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("first-")
	first := newCollector()
	c1 := startConsumer(t, n, group, "offsets-1", topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		first.add(m)
		return consumer.ConsumeSuccess
	})
	first.waitFor(t, "first five", func(m []*primitive.MessageExt) bool { return len(m) >= 5 })
	// The client advances its in-memory offset after the listener returns; shut down only once
	// it has, or the restart rightly redelivers the last messages.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if diff, ok := c1.GetOffsetDiffMap()[topic]; ok && diff == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumed offsets never caught up: %v", c1.GetOffsetDiffMap())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c1.Shutdown(); err != nil { // persists offsets to the broker
		t.Fatal(err)
	}
	send("second-")
	second := newCollector()
	c2 := startConsumer(t, n, group, "offsets-2", topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
		second.add(m)
		return consumer.ConsumeSuccess
	})
	defer c2.Shutdown()
	msgs := second.waitFor(t, "second five", func(m []*primitive.MessageExt) bool { return len(m) >= 5 })
	time.Sleep(200 * time.Millisecond)
	second.mu.Lock()
	msgs = append(msgs[:0], second.msgs...)
	second.mu.Unlock()
	if diff := cmp.Diff([]string{"second-0", "second-1", "second-2", "second-3", "second-4"}, bodies(msgs)); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}
}
