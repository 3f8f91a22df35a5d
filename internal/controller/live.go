package controller

import (
	"math"
	"sync"
	"time"

	"github.com/mqgo/mq/remoting"
)

// liveKey names a broker: broker ids are unique within a broker name, and the controller keys
// its groups by broker name, as RocketMQ's does.
type liveKey struct {
	brokerName string
	id         int64
}

// BrokerLive is what the last heartbeat of a broker said (RocketMQ's BrokerLiveInfo).
type BrokerLive struct {
	Cluster       string
	BrokerName    string
	BrokerID      int64
	Addr          string
	LastHeartbeat time.Time
	Timeout       time.Duration
	Epoch         int32
	MaxOffset     int64
	ConfirmOffset int64
	// ElectionPriority: lower wins among brokers at the same epoch and offset.
	ElectionPriority int32
	// ch is the connection the heartbeats came on, for NOTIFY_BROKER_ROLE_CHANGED; nil for a
	// heartbeat through the Go API or a broker the leader has not heard from yet.
	ch remoting.Channel
}

func (b *BrokerLive) alive(now time.Time) bool { return !now.After(b.LastHeartbeat.Add(b.Timeout)) }

// liveTable is the heartbeat table of one controller (RocketMQ's DefaultBrokerHeartbeatManager):
// not replicated; only the leader acts on it. It holds registered brokers only, so its size is
// bounded by the replicated state's.
type liveTable struct {
	mu sync.Mutex
	m  map[liveKey]*BrokerLive
}

func newLiveTable() *liveTable { return &liveTable{m: map[liveKey]*BrokerLive{}} }

// heartbeat records one. The epoch and offsets only move forward, as RocketMQ keeps them: a
// heartbeat sent before a later one may arrive after it.
func (t *liveTable) heartbeat(hb BrokerLive, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := liveKey{hb.BrokerName, hb.BrokerID}
	prev, ok := t.m[k]
	if !ok {
		hb.LastHeartbeat = now
		t.m[k] = &hb
		return
	}
	prev.LastHeartbeat = now
	prev.Timeout = hb.Timeout
	prev.ElectionPriority = hb.ElectionPriority
	prev.Addr = hb.Addr
	prev.Cluster = hb.Cluster
	if hb.ch != nil {
		prev.ch = hb.ch
	}
	if hb.Epoch > prev.Epoch || hb.Epoch == prev.Epoch && hb.MaxOffset > prev.MaxOffset {
		prev.Epoch, prev.MaxOffset, prev.ConfirmOffset = hb.Epoch, hb.MaxOffset, hb.ConfirmOffset
	}
}

// refreshAll gives every registered broker a fresh deadline: a new leader has not been judging
// heartbeats, and must not call dead a master whose heartbeats went to the old one. Entries of
// brokers no longer registered are dropped.
func (t *liveTable) refreshAll(groups []Group, now time.Time, timeout time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := make(map[liveKey]*BrokerLive, len(t.m))
	for i := range groups {
		g := &groups[i]
		for id, r := range g.Replicas {
			k := liveKey{g.BrokerName, id}
			b, ok := t.m[k]
			if !ok {
				b = &BrokerLive{Cluster: g.Cluster, BrokerName: g.BrokerName, BrokerID: id, Addr: r.Addr,
					Epoch: -1, MaxOffset: -1, ConfirmOffset: -1, ElectionPriority: math.MaxInt32}
			}
			b.LastHeartbeat = now
			b.Timeout = max(b.Timeout, timeout)
			keep[k] = b
		}
	}
	t.m = keep
}

// expire drops the brokers whose heartbeats stopped (RocketMQ's scanNotActiveBroker).
func (t *liveTable) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, b := range t.m {
		if !b.alive(now) {
			delete(t.m, k)
		}
	}
}

func (t *liveTable) get(brokerName string, id int64) (BrokerLive, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.m[liveKey{brokerName, id}]
	if !ok {
		return BrokerLive{}, false
	}
	return *b, true
}

func (t *liveTable) alive(brokerName string, id int64, now time.Time) bool {
	b, ok := t.get(brokerName, id)
	return ok && b.alive(now)
}

// forget drops a broker (CLEAN_BROKER_DATA) or a whole group (ids empty).
func (t *liveTable) forget(brokerName string, ids []int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.m {
		if k.brokerName != brokerName {
			continue
		}
		if len(ids) == 0 {
			delete(t.m, k)
			continue
		}
		for _, id := range ids {
			if k.id == id {
				delete(t.m, k)
			}
		}
	}
}
