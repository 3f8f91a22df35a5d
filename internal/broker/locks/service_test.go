package locks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// start starts a broker core with the lock service; mutate may change its options.
func start(t *testing.T, mutate func(*broker.Options)) *brokertest.Broker {
	t.Helper()
	return brokertest.Start(t, brokertest.Config{Mutate: mutate, Attach: func(b *broker.Broker) error {
		b.Attach(New(b))
		return nil
	}})
}

func lockCmd(code int32, group, client string, mqs ...protocol.MessageQueue) *remoting.Command {
	body, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: client, MQSet: mqs})
	return remoting.NewRequest(code, nil, body)
}

func lockMQ(t *testing.T, tr remoting.Transport, addr, group, client string, mqs ...protocol.MessageQueue) []protocol.MessageQueue {
	t.Helper()
	resp := brokertest.Invoke(t, tr, addr, lockCmd(remoting.LockBatchMQ, group, client, mqs...))
	if resp.Code != remoting.Success {
		t.Fatalf("lock code %d %s", resp.Code, resp.Remark)
	}
	var body protocol.LockBatchResponseBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.LockOKMQSet
}

func unlockMQ(t *testing.T, tr remoting.Transport, addr, group, client string, mqs ...protocol.MessageQueue) {
	t.Helper()
	if resp := brokertest.Invoke(t, tr, addr, lockCmd(remoting.UnlockBatchMQ, group, client, mqs...)); resp.Code != remoting.Success {
		t.Fatalf("unlock code %d", resp.Code)
	}
}

func TestQueueLocks(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Periods.RebalanceLockMaxLiveTime = 500 * time.Millisecond })
	q := func(id int) protocol.MessageQueue {
		return protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: id}
	}
	a, b := tb.TCP, tb.InProc
	if diff := cmp.Diff([]protocol.MessageQueue{q(0), q(1)}, lockMQ(t, a, tb.Addr, "g", "A", q(0), q(1))); diff != "" {
		t.Fatalf("A lock (-want +got):\n%s", diff)
	}
	// B is refused A's queues but gets a free one; the answer names exactly what it got.
	if diff := cmp.Diff([]protocol.MessageQueue{q(2)}, lockMQ(t, b, tb.Addr, "g", "B", q(0), q(2))); diff != "" {
		t.Fatalf("B lock (-want +got):\n%s", diff)
	}
	// Another group is independent.
	if got := lockMQ(t, b, tb.Addr, "other", "B", q(0)); len(got) != 1 {
		t.Fatalf("other group lock %v", got)
	}
	// B cannot unlock A's queue.
	unlockMQ(t, b, tb.Addr, "g", "B", q(0))
	if got := lockMQ(t, b, tb.Addr, "g", "B", q(0)); len(got) != 0 {
		t.Fatalf("B took A's lock after a foreign unlock: %v", got)
	}
	// A unlocks: B may take it.
	unlockMQ(t, a, tb.Addr, "g", "A", q(0))
	if got := lockMQ(t, b, tb.Addr, "g", "B", q(0)); len(got) != 1 {
		t.Fatalf("B lock after A's unlock: %v", got)
	}
	// A's q(1) lock expires without renewal; renewing keeps B's.
	brokertest.Eventually(t, "A's lock expired", func() bool {
		lockMQ(t, b, tb.Addr, "g", "B", q(0), q(2))
		return len(lockMQ(t, b, tb.Addr, "g", "B", q(1))) == 1
	})
	if got := lockMQ(t, a, tb.Addr, "g", "A", q(0), q(1), q(2)); len(got) != 0 {
		t.Fatalf("A took B's renewed locks: %v", got)
	}
	// A closed connection does not release locks (they expire).
	tb.InProc.CloseConn(tb.Addr)
	if got := lockMQ(t, a, tb.Addr, "g", "A", q(0)); len(got) != 0 {
		t.Fatalf("lock released on close: %v", got)
	}
	if resp := brokertest.Invoke(t, a, tb.Addr, remoting.NewRequest(remoting.LockBatchMQ, nil, []byte("x"))); resp.Code != remoting.SystemError {
		t.Errorf("bad body code %d", resp.Code)
	}
}
