package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// ourConsumer starts one of our push consumers over TCP against n.
func ourConsumer(t *testing.T, n *mq.Node, group, instance, topic, expr string, l mqconsumer.Listener) *mqconsumer.PushConsumer {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	pc, err := mqconsumer.NewPushConsumer(mqconsumer.WithNameServers(n.Addr()), mqconsumer.WithGroup(group),
		mqconsumer.WithInstanceName(instance), mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}),
		mqconsumer.WithRebalanceInterval(time.Second), mqconsumer.WithPullSuspend(2*time.Second), mqconsumer.WithLogger(&log))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, expr, l); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// The official producer's messages reach our push consumer with the ids the producer was
// given, tags, keys and properties intact, and a compressed body inflated.
func TestOfficialProducerToOurConsumer(t *testing.T) {
	n := startNode(t)
	createTopic(t, n, "ToOurs", 2)
	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type sent struct{ msgID, offsetID, body string }
	var want []sent
	big := strings.Repeat("compress me ", 1000) // over the producer's 4 KiB compression threshold
	for i := range 10 {
		body := fmt.Sprintf("m-%d", i)
		if i == 9 {
			body = big
		}
		m := primitive.NewMessage("ToOurs", []byte(body))
		m.WithTag("TagA")
		m.WithKeys([]string{"k1", fmt.Sprintf("k-%d", i)})
		m.WithProperty("color", "blue")
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send: %v %v", res, err)
		}
		want = append(want, sent{msgID: res.MsgID, offsetID: res.OffsetMsgID, body: body})
	}
	var mu sync.Mutex
	got := map[string]*mqconsumer.Message{}
	ourConsumer(t, n, "cg-to-ours", "ours", "ToOurs", "TagA", func(_ context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.MsgID] = m
		}
		return mqconsumer.ConsumeSuccess, nil
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d messages", k, len(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, w := range want {
		m := got[w.msgID]
		if m == nil {
			t.Errorf("message %d (id %s) not consumed", i, w.msgID)
			continue
		}
		if string(m.Body) != w.body || m.Compressed {
			t.Errorf("message %d: body of %d bytes (compressed %v), want %d bytes", i, len(m.Body), m.Compressed, len(w.body))
		}
		if m.OffsetMsgID != w.offsetID || m.Topic != "ToOurs" || m.Tags != "TagA" || m.Property("color") != "blue" {
			t.Errorf("message %d: offset id %s (want %s), topic %s, tags %s, color %q", i, m.OffsetMsgID, w.offsetID,
				m.Topic, m.Tags, m.Property("color"))
		}
		if diff := cmp.Diff([]string{"k1", fmt.Sprintf("k-%d", i)}, m.Keys); diff != "" {
			t.Errorf("message %d keys (-want +got):\n%s", i, diff)
		}
	}
}

// groupIDs asks the broker for the client ids of group.
func groupIDs(t *testing.T, n *mq.Node, group string) []string {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.GetConsumerListByGroup,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil))
	if err != nil || resp.Code != remoting.Success {
		return nil
	}
	var body protocol.GetConsumerListByGroupResponseBody
	json.Unmarshal(resp.Body, &body)
	return body.ConsumerIDList
}

// Two official consumers and two of ours in one group split the queues exactly as the official
// AllocateByAveragely does, so no message is consumed twice and each queue has one consumer.
func TestMixedGroupSharesQueues(t *testing.T) {
	n := startNode(t)
	const topic, group, queues = "Mixed", "cg-mixed", 8
	createTopic(t, n, topic, queues)
	type delivery struct {
		who   string
		queue int
		body  string
	}
	var mu sync.Mutex
	var got []delivery
	record := func(who string, queue int, body string) {
		mu.Lock()
		got = append(got, delivery{who, queue, body})
		mu.Unlock()
	}
	var officials []interface{ Shutdown() error }
	for _, inst := range []string{"official-1", "official-2"} {
		officials = append(officials, startConsumer(t, n, group, inst, topic, "*", func(m *primitive.MessageExt) consumer.ConsumeResult {
			record(inst, m.Queue.QueueId, string(m.Body))
			return consumer.ConsumeSuccess
		}))
	}
	ours := map[string]*mqconsumer.PushConsumer{}
	for _, inst := range []string{"ours-1", "ours-2"} {
		ours[inst] = ourConsumer(t, n, group, inst, topic, "*", func(_ context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
			for _, m := range msgs {
				record(inst, m.Queue.QueueID, string(m.Body))
			}
			return mqconsumer.ConsumeSuccess, nil
		})
	}
	// The official client races with itself when a NOTIFY_CONSUMER_IDS_CHANGED arrives while it
	// shuts down (rmqClient.Shutdown against the rebalance it triggers), which -race reports. So
	// the official members leave first, one at a time, before ours close (cleanups run last
	// registered first) and after each other has handled the notification.
	t.Cleanup(func() {
		for _, c := range officials {
			c.Shutdown()
			time.Sleep(500 * time.Millisecond)
		}
	})
	var ids []string
	deadline := time.Now().Add(20 * time.Second)
	for ids = groupIDs(t, n, group); len(ids) != 4; ids = groupIDs(t, n, group) {
		if time.Now().After(deadline) {
			t.Fatalf("group members: %v", ids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var all []rebalance.MessageQueue
	for i := range queues {
		all = append(all, rebalance.MessageQueue{Topic: topic, BrokerName: mq.DefaultBrokerName, QueueID: i})
	}
	share := map[string][]int{} // instance name -> queue ids Averagely gives it
	for _, id := range ids {
		inst := id[strings.LastIndex(id, "@")+1:]
		for _, q := range rebalance.Averagely().Allocate(group, id, all, ids) {
			share[inst] = append(share[inst], q.QueueID)
		}
	}
	// Our members hold exactly their shares (the official ones rebalance on the same
	// notification); give everyone a moment to settle before producing.
	for inst, pc := range ours {
		for {
			var held []int
			for _, q := range pc.Assignment() {
				if q.Topic == topic {
					held = append(held, q.QueueID)
				}
			}
			slices.Sort(held)
			if slices.Equal(held, share[inst]) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %v, Averagely gives it %v (ids %v)", inst, held, share[inst], ids)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)

	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i := range 64 {
		body := fmt.Sprintf("mixed-%d", i)
		m := primitive.NewMessage(topic, []byte(body))
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
		want = append(want, body)
	}
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= len(want) {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("consumed %d of %d", k, len(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // room for duplicates
	mu.Lock()
	defer mu.Unlock()
	var bodiesGot []string
	for _, d := range got {
		bodiesGot = append(bodiesGot, d.body)
		if !slices.Contains(share[d.who], d.queue) {
			t.Errorf("%s consumed from queue %d, outside its Averagely share %v", d.who, d.queue, share[d.who])
		}
	}
	slices.Sort(want)
	slices.Sort(bodiesGot)
	if diff := cmp.Diff(want, bodiesGot); diff != "" {
		t.Errorf("consumed (-sent +got):\n%s", diff)
	}
	for inst := range share {
		if !slices.ContainsFunc(got, func(d delivery) bool { return d.who == inst }) {
			t.Errorf("%s consumed nothing", inst)
		}
	}
}
