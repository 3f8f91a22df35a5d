package mq_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Issue 14's transactions with our producer: SendInTransaction commits, rolls back, or leaves
// a message unknown for the broker's check, in process and over TCP; consumers see exactly the
// committed messages, each once.

// txListener decides by body: "commit..." and "rollback..." at once, "unknown..." only when a
// broker checks, and then as decide says (when nil: "unknown-rollback..." rolls back, any
// other "unknown..." and a checked "commit..." commit).
type txListener struct {
	checks atomic.Int32
	decide func(*producer.CheckedMessage) producer.LocalTransactionState
}

func (l *txListener) ExecuteLocalTransaction(_ context.Context, m *producer.Message, _ any) producer.LocalTransactionState {
	switch {
	case strings.HasPrefix(string(m.Body), "commit"):
		return producer.CommitTransaction
	case strings.HasPrefix(string(m.Body), "rollback"):
		return producer.RollbackTransaction
	}
	return producer.UnknownTransaction
}

func (l *txListener) CheckLocalTransaction(_ context.Context, m *producer.CheckedMessage) producer.LocalTransactionState {
	l.checks.Add(1)
	if l.decide != nil {
		return l.decide(m)
	}
	switch {
	case strings.HasPrefix(string(m.Body), "unknown-rollback"):
		return producer.RollbackTransaction
	case strings.HasPrefix(string(m.Body), "unknown"), strings.HasPrefix(string(m.Body), "commit"):
		// A committed message is checked too when its END_TRANSACTION came late (past the
		// transaction timeout, or while the check loop held it): the local state says commit.
		return producer.CommitTransaction
	}
	return producer.RollbackTransaction
}

// txNodeOptions are a node's options with checks in milliseconds.
func txNodeOptions(t *testing.T, dir, listen string) mq.Options {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return mq.Options{
		Listen:       listen,
		Logger:       &l,
		Store:        config.Store{Dir: dir, SegmentBytes: 8 << 20},
		Transactions: config.Transactions{Timeout: 200 * time.Millisecond, CheckInterval: 50 * time.Millisecond},
		HA:           config.HA{Listen: "127.0.0.1:0"},
	}
}

// txProducer is a transactional producer of n, in process or over TCP.
func txProducer(t *testing.T, n *mq.Node, kind string, l producer.TransactionListener) *producer.Producer {
	t.Helper()
	// Heartbeats in milliseconds: a restarted broker learns of the producer, which it checks
	// half messages with, at the producer's next heartbeat (RocketMQ's period is 30 s).
	opts := []producer.Option{producer.WithGroup("tx-pg"), producer.WithTransactionListener(l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-tx"),
		producer.WithHeartbeatInterval(50 * time.Millisecond)}
	return kindProducer(t, n, kind, opts...)
}

func TestOurTransactionalProducer(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n, err := mq.StartNode(txNodeOptions(t, t.TempDir(), "127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Close() })
			const topic = "TxOurs"
			l := &txListener{}
			p := txProducer(t, n, kind, l)
			got := consumeCounting(t, n, topic, "tx-cg")
			ctx := context.Background()
			for _, body := range []string{"commit-1", "rollback-1", "unknown-1", "commit-2", "unknown-rollback"} {
				res, err := p.SendInTransaction(ctx, producer.NewMessage(topic, []byte(body)), nil)
				if err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				if res.Status != producer.SendOK || res.MsgID == "" {
					t.Fatalf("%s: %+v", body, res)
				}
			}
			got.waitExactly(t, "commit-1", "commit-2", "unknown-1")
			if l.checks.Load() < 2 {
				t.Fatalf("%d checks, want one per unknown message at least", l.checks.Load())
			}
			plain := txProducer(t, n, kind, nil)
			if _, err := plain.SendInTransaction(ctx, producer.NewMessage(topic, []byte("x")), nil); !errors.Is(err, producer.ErrNotTransactional) {
				t.Fatalf("SendInTransaction without a listener: %v", err)
			}
		})
	}
}

// A half message left unknown when its node stops is checked after the node comes back on its
// store and port, and delivered once when the check commits it; one committed before the stop
// is not delivered again.
func TestTransactionAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	n, err := mq.StartNode(txNodeOptions(t, dir, "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := n.Addr()
	const topic = "TxRestart"
	var resolve atomic.Bool // checks answer unknown until the node is back
	l := &txListener{decide: func(m *producer.CheckedMessage) producer.LocalTransactionState {
		if !resolve.Load() {
			return producer.UnknownTransaction
		}
		return producer.CommitTransaction
	}}
	p := txProducer(t, n, "tcp", l)
	ctx := context.Background()
	for _, body := range []string{"commit-before", "unknown-across"} {
		if _, err := p.SendInTransaction(ctx, producer.NewMessage(topic, []byte(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = mq.StartNode(txNodeOptions(t, dir, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	resolve.Store(true)
	got := consumeCounting(t, n, topic, "tx-restart-cg")
	got.waitExactly(t, "commit-before", "unknown-across")
}

// createTopicAndWait creates topic on n's broker and waits for its route.
func createTopicAndWait(t *testing.T, n *mq.Node, topic string) {
	t.Helper()
	if resp := adminRequest(t, n, nil, remoting.Credentials{}, createTopicRequest(topic)); resp.Code != remoting.Success {
		t.Fatalf("create %s: %d %s", topic, resp.Code, resp.Remark)
	}
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.InvokeSync(ctx, n.Addr(), route.BuildGetRouteInfo(topic))
		cancel()
		if err == nil && resp.Code == remoting.Success {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for %s", topic)
		}
	}
}

// consumeCounting creates topic and starts a counting consumer of it over TCP.
func consumeCounting(t *testing.T, n *mq.Node, topic, group string) *deliveries {
	t.Helper()
	createTopicAndWait(t, n, topic)
	return kindConsumer(t, n, "tcp", topic, group)
}
