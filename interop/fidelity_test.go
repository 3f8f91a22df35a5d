package interop

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// What the official client sees where RocketMQ 4.9's semantics are the point (issue 17).

// startPushConsumer starts an official push consumer of topic from the first offset with
// selector, handing every message to got.
func startPushConsumer(t *testing.T, n *mq.Node, group, topic string, selector consumer.MessageSelector,
	got *collector) rocketmq.PushConsumer {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName(group),
		consumer.WithInstance(uniqueInstance(t.Name()+group)), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, selector, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	return c
}

// settle gives a message that should not be delivered time to show up, then returns what c
// holds. Only absence is checked after it: a slow machine can hide a bug, never fail the test.
func settle(c *collector) []*primitive.MessageExt {
	time.Sleep(time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.msgs...)
}

// TestOfficialSQL92Subscription: the official client's SQL92 subscriptions deliver exactly the
// messages whose properties match, push and pull, filtered on the broker; a selector that does
// not compile reaches its pull consumer as the broker's SUBSCRIPTION_PARSE_FAILED. (The official
// Go client never sends CHECK_CLIENT_CONFIG: its CheckClientInBroker is empty.)
func TestOfficialSQL92Subscription(t *testing.T) {
	n := startNode(t)
	const topic = "Sql"
	createTopic(t, n, topic, 1)
	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i := range 8 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i)))
		m.WithProperty("a", strconv.Itoa(i))
		m.WithProperty("color", []string{"red", "blue"}[i%2])
		if i%3 == 0 {
			m.WithTag("TagX")
		}
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
		if i > 2 && (i%2 == 0 || i%3 == 0) {
			want = append(want, string(m.Body))
		}
	}
	sql := consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 2 AND (color = 'red' OR TAGS IN ('TagX'))"}

	filtered := newCollector()
	startPushConsumer(t, n, "cg-sql-push", topic, sql, filtered)
	filtered.waitFor(t, "the matching messages", func(m []*primitive.MessageExt) bool { return len(m) >= len(want) })
	if got := bodies(settle(filtered)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("push consumer got %v, want exactly %v", got, want)
	}

	pc, err := rocketmq.NewPullConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("cg-sql-pull"),
		consumer.WithInstance(uniqueInstance(t.Name()+"pull")))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, sql); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Shutdown() })
	queue := &primitive.MessageQueue{Topic: topic, BrokerName: mq.DefaultBrokerName, QueueId: 0}
	res, err := pc.PullFrom(ctx, queue, 0, 32)
	if err != nil {
		t.Fatalf("SQL92 pull: %v", err)
	}
	var pulled []string
	for _, m := range res.GetMessageExts() {
		pulled = append(pulled, string(m.Body))
	}
	if fmt.Sprint(pulled) != fmt.Sprint(want) {
		t.Fatalf("pull consumer got %v, want exactly %v", pulled, want)
	}

	bad, err := rocketmq.NewPullConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("cg-sql-bad"),
		consumer.WithInstance(uniqueInstance(t.Name()+"bad")))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a >"}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Shutdown() })
	if res, err := bad.PullFrom(ctx, queue, 0, 32); err == nil {
		t.Fatalf("a selector that does not compile pulled %v", res)
	}
}

// sendRaw sends one message with the raw protocol, as no official client would: the sysFlag
// and properties are exactly the test's.
func sendRaw(t *testing.T, n *mq.Node, topic, body string, sysFlag int32, props map[string]string) {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg-raw", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, SysFlag: sysFlag, BornTimestamp: time.Now().UnixMilli(),
		Properties: message.MarshalProperties(props)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(&h), []byte(body)))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("send %s: %v %v", body, resp, err)
	}
}

// rollbackListener rolls every local transaction back.
type rollbackListener struct{}

func (rollbackListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.RollbackMessageState
}

func (rollbackListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.RollbackMessageState
}

// TestOfficialConsumerNeverSeesPreparedMessages: half messages (sysFlag prepared, TRAN_MSG, or
// both, as the official transaction producer sends them) are stored but never delivered; the
// plain message sent after them is.
func TestOfficialConsumerNeverSeesPreparedMessages(t *testing.T) {
	n := startNode(t)
	const topic = "Half"
	createTopic(t, n, topic, 1)
	sendRaw(t, n, topic, "prepared-flag", message.TransactionPreparedType, map[string]string{"UNIQ_KEY": "h1"})
	sendRaw(t, n, topic, "prepared-property", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg-raw", "UNIQ_KEY": "h2"})
	sendRaw(t, n, topic, "prepared-both", message.TransactionPreparedType,
		map[string]string{"TRAN_MSG": "true", "PGROUP": "pg-raw", "UNIQ_KEY": "h3"})

	tp, err := rocketmq.NewTransactionProducer(rollbackListener{}, producer.WithNsResolver(resolver(n)),
		producer.WithGroupName("pg-tx"), producer.WithInstanceName(uniqueInstance(t.Name()+"tx")))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("rolled-back")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("transactional send: %v %v", res, err)
	}

	sendRaw(t, n, topic, "plain", 0, map[string]string{"UNIQ_KEY": "p1"})
	got := newCollector()
	startPushConsumer(t, n, "cg-half", topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, got)
	got.waitFor(t, "the plain message", func(m []*primitive.MessageExt) bool { return len(m) > 0 })
	msgs := settle(got)
	if diff := cmp.Diff([]string{"plain"}, bodies(msgs)); diff != "" {
		t.Fatalf("delivered (-want +got):\n%s", diff)
	}
	if msgs[0].QueueOffset != 0 {
		t.Errorf("plain message at queue offset %d, want 0: half messages take no queue offset", msgs[0].QueueOffset)
	}
}
