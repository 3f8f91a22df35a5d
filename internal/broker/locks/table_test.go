package locks

import (
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
)

func TestLockManagerExpire(t *testing.T) {
	m := NewTable()
	now := time.Now()
	q := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	m.TryLock("g", "A", []protocol.MessageQueue{q}, now.Add(-time.Minute), time.Second)
	m.TryLock("h", "B", []protocol.MessageQueue{q}, now, time.Second)
	m.Expire(now, time.Second)
	if _, ok := m.groups["g"]; ok {
		t.Error("expired group kept")
	}
	if owner, ok := m.owner("h", q, now, time.Second); !ok || owner != "B" {
		t.Errorf("live lock: %q %v", owner, ok)
	}
}
