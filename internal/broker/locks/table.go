package locks

import (
	"sync"
	"time"

	"github.com/mqgo/mq/internal/protocol"
)

// lockEntry is a queue lock held by one client of a group.
type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// Table holds the queue locks of orderly consumers (RocketMQ RebalanceLockManager): a lock
// is owned by (group, client id), granted when free, expired or already owned by the caller
// (a renewal), and expires maxLive after its last renewal. Locks survive their owner's
// connection; they only expire.
type Table struct {
	mu     sync.Mutex
	groups map[string]map[protocol.MessageQueue]*lockEntry
}

// NewTable returns a table without locks.
func NewTable() *Table {
	return &Table{groups: map[string]map[protocol.MessageQueue]*lockEntry{}}
}

// TryLock locks what it can of mqs for clientID and returns the queues now held by it, in
// request order.
func (m *Table) TryLock(group, clientID string, mqs []protocol.MessageQueue, now time.Time, maxLive time.Duration) []protocol.MessageQueue {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		g = map[protocol.MessageQueue]*lockEntry{}
		m.groups[group] = g
	}
	out := make([]protocol.MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := g[mq]
		switch {
		case e == nil:
			g[mq] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		case now.Sub(e.lastUpdate) > maxLive:
			e.clientID, e.lastUpdate = clientID, now
		default:
			continue
		}
		out = append(out, mq)
	}
	return out
}

// Unlock releases the queues of mqs that clientID holds.
func (m *Table) Unlock(group, clientID string, mqs []protocol.MessageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
		}
	}
	if g != nil && len(g) == 0 {
		delete(m.groups, group)
	}
}

// Expire forgets locks not renewed for maxLive (they are free already; this bounds memory).
func (m *Table) Expire(now time.Time, maxLive time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for group, g := range m.groups {
		for mq, e := range g {
			if now.Sub(e.lastUpdate) > maxLive {
				delete(g, mq)
			}
		}
		if len(g) == 0 {
			delete(m.groups, group)
		}
	}
}

// owner returns the client holding a live lock on mq, if any.
func (m *Table) owner(group string, mq protocol.MessageQueue, now time.Time, maxLive time.Duration) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.groups[group][mq]; e != nil && now.Sub(e.lastUpdate) <= maxLive {
		return e.clientID, true
	}
	return "", false
}
