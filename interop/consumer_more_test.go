package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/google/go-cmp/cmp"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// More consume interop: our producer to the official push consumer in BROADCASTING and ORDERLY
// mode, and the official producer to our lite pull consumer.

// uniqueInstance names an official client instance uniquely per run: a broadcasting official
// consumer keeps its offsets under $HOME/.rocketmq_client_go/<clientId>/, which outlives the
// test's node, and must not be picked up by the next run.
func uniqueInstance(name string) string {
	return fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
}

// removeOfficialOffsets deletes what a broadcasting official consumer of group with this
// instance name stored under the official client's offset directory
// (<dir>/<group>/<ip>@<instance>/offset.json, the arguments being swapped in the client), and
// the group's directory once empty.
func removeOfficialOffsets(t *testing.T, group, instance string) {
	dir := os.Getenv("rocketmq.client.localOffsetStoreDir")
	if dir == "" {
		dir = filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go")
	}
	for _, pattern := range []string{filepath.Join(dir, group, "*@"+instance), filepath.Join(dir, "*@"+instance)} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				t.Logf("removing %s: %v", m, err)
			}
		}
	}
	os.Remove(filepath.Join(dir, group)) // fails while another instance's offsets are there
	os.Remove(dir)
}

// Every member of a BROADCASTING official group gets every message our producer sent.
func TestOurProducerOfficialBroadcasting(t *testing.T) {
	n := startNode(t)
	const topic, group = "OursBroadcast", "cg-official-broadcast"
	createTopic(t, n, topic, 4)
	p := newOurProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i := range 40 {
		body := fmt.Sprintf("b-%02d", i)
		if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
		want = append(want, body)
	}
	var members []*collector
	var consumers []rocketmq.PushConsumer
	for i := range 2 {
		inst := uniqueInstance(fmt.Sprintf("official-bc-%d", i))
		got := newCollector()
		c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName(group),
			consumer.WithInstance(inst), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithConsumerModel(consumer.BroadCasting))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				got.add(msgs...)
				return consumer.ConsumeSuccess, nil
			}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeOfficialOffsets(t, group, inst) })
		members = append(members, got)
		consumers = append(consumers, c)
	}
	for i, got := range members {
		msgs := got.waitFor(t, fmt.Sprintf("member %d: every message", i), func(m []*primitive.MessageExt) bool {
			return len(slices.Compact(bodies(m))) >= len(want)
		})
		if diff := cmp.Diff(want, slices.Compact(bodies(msgs))); diff != "" {
			t.Errorf("member %d (-sent +got):\n%s", i, diff)
		}
	}
	// Everything was consumed: shut down one at a time.
	for _, c := range consumers {
		if err := c.Shutdown(); err != nil {
			t.Error(err)
		}
	}
}

// An ORDERLY official consumer sees each key's messages, sent by our producer with
// HashSelector, in send order. It takes about 3 s: the official client locks a new queue
// before it creates the queue's process queue, so the lock is not recorded, its first pull
// finds the queue "not locked in broker" and waits _PullDelayTimeWhenError (3 s) until its
// lockAll has run.
func TestOurProducerOfficialOrderly(t *testing.T) {
	n := startNode(t)
	const topic, group, keys, perKey = "OursOrderly", "cg-official-orderly", 5, 20
	createTopic(t, n, topic, 4)
	p := newOurProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	queueOf := map[int]int{}
	for i := range keys * perKey {
		k, s := i%keys, i/keys
		key := fmt.Sprintf("key-%d", k)
		m := producer.NewMessage(topic, fmt.Appendf(nil, "k%d-%d", k, s)).WithKeys(key)
		res, err := p.SendOrdered(ctx, m, producer.HashSelector(), key, producer.StrictOrder)
		if err != nil {
			t.Fatal(err)
		}
		if q, ok := queueOf[k]; ok && q != res.Queue.QueueID {
			t.Fatalf("key %d went to queues %d and %d", k, q, res.Queue.QueueID)
		}
		queueOf[k] = res.Queue.QueueID
	}
	got := newCollector()
	suspended := map[string]bool{}
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName(group),
		consumer.WithInstance("official-orderly"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering), consumer.WithConsumerOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if string(m.Body) == "k0-7" && !suspended[string(m.Body)] {
					suspended[string(m.Body)] = true
					return consumer.SuspendCurrentQueueAMoment, nil
				}
			}
			got.add(msgs...)
			return consumer.ConsumeSuccess, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	msgs := got.waitFor(t, "every message", func(m []*primitive.MessageExt) bool { return len(m) >= keys*perKey })
	seq := map[int][]int{}
	for _, m := range msgs {
		var k, s int
		if _, err := fmt.Sscanf(string(m.Body), "k%d-%d", &k, &s); err != nil {
			t.Fatal(err)
		}
		seq[k] = append(seq[k], s)
	}
	for k := range keys {
		want := make([]int, perKey)
		for i := range want {
			want[i] = i
		}
		if diff := cmp.Diff(want, seq[k]); diff != "" {
			t.Errorf("key %d order (-sent +consumed):\n%s", k, diff)
		}
	}
	waitOffsetsCommitted(t, c, topic)
	if err := c.Shutdown(); err != nil {
		t.Error(err)
	}
}

// waitOffsetsCommitted waits until the official consumer's committed offsets caught up, so it
// shuts down with nothing in progress.
func waitOffsetsCommitted(t *testing.T, c rocketmq.PushConsumer, topic string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if d, ok := c.GetOffsetDiffMap()[topic]; ok && d == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumed offsets never caught up: %v", c.GetOffsetDiffMap())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Our lite pull consumer receives everything the official producer sent, with its ids.
func TestOfficialProducerOurPullConsumer(t *testing.T) {
	n := startNode(t)
	const topic = "OfficialToPull"
	createTopic(t, n, topic, 4)
	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := map[string]string{} // body -> msg id
	for i := range 50 {
		body := fmt.Sprintf("p-%02d", i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag("TagP")
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send: %v %v", res, err)
		}
		want[body] = res.MsgID
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := mqconsumer.NewPullConsumer(mqconsumer.WithNameServers(n.Addr()), mqconsumer.WithGroup("cg-our-pull"),
		mqconsumer.WithInstanceName("our-pull"), mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}),
		mqconsumer.WithRebalanceInterval(200*time.Millisecond), mqconsumer.WithPullSuspend(time.Second),
		mqconsumer.WithLogger(&log))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "TagP"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[string]string{}
	dups := 0
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < len(want) {
		pctx, cancel := context.WithDeadline(context.Background(), deadline)
		msgs, err := c.Poll(pctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("polled %d of %d messages", len(got), len(want))
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Topic != topic || m.Tags != "TagP" {
				t.Errorf("message %s: topic %s tags %s", m.Body, m.Topic, m.Tags)
			}
			if _, ok := got[string(m.Body)]; ok {
				dups++
			}
			got[string(m.Body)] = m.MsgID
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("polled body -> msg id (-sent +got):\n%s", diff)
	}
	if dups > 0 {
		t.Errorf("%d messages polled twice", dups)
	}
}
