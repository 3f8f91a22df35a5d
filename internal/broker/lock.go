package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// lockEntry is a queue lock held by one client of a group.
type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// lockManager holds the queue locks of orderly consumers (RocketMQ RebalanceLockManager): a lock
// is owned by (group, client id), granted when free, expired or already owned by the caller
// (a renewal), and expires maxLive after its last renewal. Locks survive their owner's
// connection; they only expire.
type lockManager struct {
	mu     sync.Mutex
	groups map[string]map[protocol.MessageQueue]*lockEntry
}

func newLockManager() *lockManager {
	return &lockManager{groups: map[string]map[protocol.MessageQueue]*lockEntry{}}
}

// tryLock locks what it can of mqs for clientID and returns the queues now held by it, in
// request order.
func (m *lockManager) tryLock(group, clientID string, mqs []protocol.MessageQueue, now time.Time, maxLive time.Duration) []protocol.MessageQueue {
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

// unlock releases the queues of mqs that clientID holds.
func (m *lockManager) unlock(group, clientID string, mqs []protocol.MessageQueue) {
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

// expire forgets locks not renewed for maxLive (they are free already; this bounds memory).
func (m *lockManager) expire(now time.Time, maxLive time.Duration) {
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
func (m *lockManager) owner(group string, mq protocol.MessageQueue, now time.Time, maxLive time.Duration) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.groups[group][mq]; e != nil && now.Sub(e.lastUpdate) <= maxLive {
		return e.clientID, true
	}
	return "", false
}

func decodeLockBody(req *remoting.Command) (*protocol.LockBatchRequestBody, error) {
	var body protocol.LockBatchRequestBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "lock body: " + err.Error()}
	}
	if err := checkLockNames(&body); err != nil {
		return nil, err
	}
	return &body, nil
}

// processLockBatch answers LOCK_BATCH_MQ with the requested queues the caller now holds.
func (cm *clientManager) processLockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := decodeLockBody(req)
	if err != nil {
		return nil, err
	}
	locked := cm.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet, cm.now(),
		cm.opts.Periods.RebalanceLockMaxLiveTime)
	out, err := json.Marshal(protocol.LockBatchResponseBody{LockOKMQSet: locked})
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = out
	return resp, nil
}

// processUnlockBatch releases the caller's locks among the requested queues.
func (cm *clientManager) processUnlockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := decodeLockBody(req)
	if err != nil {
		return nil, err
	}
	cm.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return remoting.NewResponse(remoting.Success, ""), nil
}
