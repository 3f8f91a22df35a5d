package interop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/rs/zerolog"
)

// bodyListener decides each transaction by the message body: "commit" and "rollback" at once,
// "unknown" only when the broker checks (then commit).
type bodyListener struct{ checks atomic.Int32 }

func (*bodyListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *bodyListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	if string(m.Body) == "unknown" {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

// TestOfficialTransactionalProducer: the official Go client's transactional producer against
// our node; consumers see exactly the committed messages, the UNKNOWN one after a check.
func TestOfficialTransactionalProducer(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{
		Listen:       "127.0.0.1:0",
		Logger:       &l,
		Store:        config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		Transactions: config.Transactions{Timeout: 300 * time.Millisecond, CheckInterval: 100 * time.Millisecond},
		HA:           config.HA{Listen: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	const topic = "TxTopic"
	createTopic(t, n, topic, 2)

	listener := &bodyListener{}
	tp, err := rocketmq.NewTransactionProducer(listener, producer.WithNsResolver(resolver(n)),
		producer.WithGroupName("pg-official-tx"), producer.WithInstanceName(uniqueInstance(t.Name())))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("transactional send of %s: %v %v", body, res, err)
		}
	}

	got := newCollector()
	startPushConsumer(t, n, "cg-official-tx", topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, got)
	got.waitFor(t, "the committed and the checked message", func(m []*primitive.MessageExt) bool { return len(m) >= 2 })
	if diff := cmp.Diff([]string{"commit", "unknown"}, bodies(settle(got))); diff != "" {
		t.Fatalf("delivered (-want +got):\n%s", diff)
	}
	if listener.checks.Load() == 0 {
		t.Error("the UNKNOWN transaction was delivered without a check")
	}
}

// gatedListener leaves every transaction unknown, and answers checks with a commit once open.
type gatedListener struct {
	open   atomic.Bool
	checks atomic.Int32
}

func (*gatedListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (l *gatedListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	if l.open.Load() {
		return primitive.CommitMessageState
	}
	return primitive.UnkonwnState
}

// TestOfficialTransactionAcrossRestart: the official transactional producer prepares, the node
// restarts on its store and port before the transaction is decided, and the check after the
// restart commits it: delivered once.
func TestOfficialTransactionAcrossRestart(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	dir := t.TempDir()
	// A check with no producer connected counts toward CheckMax, as in RocketMQ, and the
	// official client can take seconds to reach the restarted broker: a request it wrote on
	// a connection the restart closed (before its reader saw the close) waits out its 3 s
	// timeout while holding the client's route lock. 15 checks 100 ms apart would give the
	// message up first on a loaded machine, so the budget here is the test's own deadline.
	opts := mq.Options{
		Listen:       "127.0.0.1:0",
		Logger:       &l,
		Store:        config.Store{Dir: dir, SegmentBytes: 8 << 20},
		Transactions: config.Transactions{Timeout: 300 * time.Millisecond, CheckInterval: 100 * time.Millisecond, CheckMax: 1000},
		HA:           config.HA{Listen: "127.0.0.1:0"},
	}
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	const topic = "TxRestartOfficial"
	createTopic(t, n, topic, 1)
	listener := &gatedListener{}
	instance := uniqueInstance(t.Name())
	tp, err := rocketmq.NewTransactionProducer(listener, producer.WithNsResolver(resolver(n)),
		producer.WithGroupName("pg-official-tx-restart"), producer.WithInstanceName(instance))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("across"))); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("transactional send: %v %v", res, err)
	}
	addr := n.Addr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Listen = addr
	n, err = mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	listener.open.Store(true)
	// A consumer on the producer's instance makes the shared client heartbeat at once, so the
	// restarted broker knows the producer group before the client's next 30 s heartbeat.
	got := newCollector()
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("cg-official-tx-restart"),
		consumer.WithInstance(instance), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	got.waitFor(t, "the message committed by a check after the restart", func(m []*primitive.MessageExt) bool { return len(m) >= 1 })
	if b := bodies(settle(got)); len(b) != 1 || b[0] != "across" {
		t.Fatalf("delivered %v, want [across] once", b)
	}
}
