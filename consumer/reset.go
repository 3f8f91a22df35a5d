package consumer

import (
	"context"
	"time"

	"github.com/mqgo/mq/internal/protocol"
)

// Admin requests a broker relays to a consumer: RESET_CONSUMER_CLIENT_OFFSET (220) and
// GET_CONSUMER_STATUS_FROM_CLIENT (221). The client instance hands them to the puller
// registered for the group (internal/client/admin_codes.go).

const (
	// resetPersistTimeout bounds the write of the reset offsets to their brokers, as the other
	// offset writes of the puller are bounded.
	resetPersistTimeout = 3 * time.Second
	// resetOrderlyWait is how long an orderly queue's consumption waits after a reset for a
	// listener call still running on the dropped cache: RocketMQ's reset pause.
	resetOrderlyWait = 10 * time.Second
)

// ResetOffset moves the held queues of topic named in offsets to their new offsets, as
// RocketMQ's push consumer does on 220: each queue's cache is dropped (listener calls still
// running on it can no longer commit), its offset is set in memory and written to its broker,
// and its pulls resume from there. Queues not held are left to whichever member holds them,
// which was told too. Only push consumers move: a lite pull consumer's position is its
// caller's (Seek), as RocketMQ resets push consumers only.
//
// Unlike RocketMQ (which pauses the consumer for ten seconds between dropping and storing, for
// listener calls to finish), the new position is taken at once: a dropped cache's listener
// calls check for the drop before they commit. An orderly queue waits (up to RocketMQ's pause)
// only for a listener call still running on it, to keep one call at a time per queue.
func (p *puller) ResetOffset(topic string, offsets map[protocol.MessageQueue]int64) {
	if p.consumeType != protocol.ConsumePassively || !p.isStarted() || p.isClosing() {
		return
	}
	var moved, olds []*queueState
	for _, old := range p.states() {
		off, ok := offsets[old.mq]
		if old.mq.Topic != topic || !ok || off < 0 {
			continue
		}
		qs, err := p.seek(old.mq, off)
		if err != nil {
			continue // given up by a rebalance meanwhile
		}
		// An orderly queue stays locked on its broker: the new cache inherits the lock.
		if old.pq.locked.Load() {
			qs.pq.setLocked(time.Unix(0, old.pq.lastLockTime.Load()))
		}
		moved, olds = append(moved, qs), append(olds, old)
	}
	if len(moved) == 0 {
		return
	}
	mqs := make([]MessageQueue, len(moved))
	for i, qs := range moved {
		mqs[i] = qs.mq
	}
	ctx, cancel := context.WithTimeout(p.ctx, resetPersistTimeout)
	defer cancel()
	if err := p.store.persist(ctx, mqs, true); err != nil {
		p.log.Warn().Str("topic", topic).Err(err).Msg("reset offsets not written to the broker")
	}
	pc, push := p.svc.(*PushConsumer)
	for i, qs := range moved {
		p.pullQueue(qs)
		if !push || !pc.cfg.orderly {
			p.svc.taken(qs)
			continue
		}
		// One listener call at a time per orderly queue: the new cache's consumption starts once
		// a call still running on the dropped one is over.
		old := olds[i].pq
		p.goLoop(func() {
			t := time.NewTimer(resetOrderlyWait)
			defer t.Stop()
			select {
			case old.consumeSlot <- struct{}{}:
				old.unlockConsume()
			case <-t.C:
				p.log.Warn().Str("topic", qs.mq.Topic).Int("queue_id", qs.mq.QueueID).
					Msg("listener still running on a reset orderly queue; consuming from the new offset anyway")
			case <-p.ctx.Done():
				return
			}
			p.svc.taken(qs)
		})
	}
	p.log.Info().Str("topic", topic).Int("queues", len(moved)).Msg("offsets reset")
}

// ConsumeStatus answers 221: the in-memory offsets of the held queues of topic, as RocketMQ's
// consumer answers its offset store's table for the topic.
func (p *puller) ConsumeStatus(topic string) map[protocol.MessageQueue]int64 {
	out := map[protocol.MessageQueue]int64{}
	if !p.isStarted() {
		return out
	}
	for _, mq := range p.assigned() {
		if mq.Topic != topic {
			continue
		}
		if off, ok := p.store.read(mq); ok {
			out[mq] = off
		}
	}
	return out
}
