package consumer

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// orderlyLoop consumes one queue in offset order, one listener call at a time, while this
// client holds the queue's broker lock (clustering). It runs until the queue is dropped or the
// consumer closes (seed 003, ConsumeMessageOrderlyService.ConsumeRequest).
func (pc *PushConsumer) orderlyLoop(qs *queueState) {
	pq := qs.pq
	var delay time.Duration = -1
	for {
		var timer *time.Timer
		var tc <-chan time.Time
		if delay >= 0 {
			timer = time.NewTimer(delay)
			tc = timer.C
		}
		select {
		case <-pq.wake:
		case <-tc:
		case <-pc.p.ctx.Done():
		case <-pq.done:
		}
		if timer != nil {
			timer.Stop()
		}
		if pq.isDropped() || pc.p.isClosing() {
			return
		}
		delay = pc.orderlyTurn(qs)
	}
}

// orderlyTurn consumes what the queue holds for at most the turn limit and returns when to
// look again (-1: when woken).
func (pc *PushConsumer) orderlyTurn(qs *queueState) time.Duration {
	pq := qs.pq
	begin := time.Now()
	for {
		if pq.isDropped() || pc.p.isClosing() {
			return -1
		}
		if pc.p.cfg.model == Clustering && (!pq.locked.Load() || pq.lockExpired(time.Now(), pc.cfg.lockExpiry)) {
			if !pc.relock(qs) {
				return pc.p.cfg.pullErrorDelay
			}
		}
		if time.Since(begin) > pc.cfg.maxOrderlyTurn {
			return 10 * time.Millisecond
		}
		msgs := pq.take(pc.cfg.consumeBatchSize)
		if len(msgs) == 0 {
			return -1
		}
		res, ok := pc.callOrderly(qs, msgs)
		if !ok {
			pq.putBack(msgs)
			return -1
		}
		if pq.isDropped() {
			return -1 // not committed: the next owner consumes these again
		}
		if res != ConsumeSuccess && pc.reconsumeLocally(msgs) {
			pq.putBack(msgs)
			return pc.cfg.suspendDelay
		}
		if off := pq.commit(); off >= 0 {
			pc.p.store.update(qs.mq, off, false)
		}
	}
}

// callOrderly runs the listener on msgs holding a consume slot and the queue's consume lock;
// ok is false when the consumer closed while waiting for a slot.
func (pc *PushConsumer) callOrderly(qs *queueState, msgs []*Message) (ConsumeResult, bool) {
	select {
	case pc.slots <- struct{}{}:
	case <-pc.p.ctx.Done():
		return 0, false
	case <-qs.pq.done:
		return 0, false
	}
	defer func() { <-pc.slots }()
	qs.pq.lockConsume()
	defer qs.pq.unlockConsume()
	now := time.Now()
	for _, m := range msgs {
		markConsumeStart(m, now)
	}
	res := SuspendCurrentQueueAMoment
	var err error
	if sub := pc.p.subscriptionOf(msgs[0].Topic); sub != nil && sub.listener != nil {
		res, err = callListener(pc.consumeCtx, sub.listener, msgs)
	}
	if err != nil {
		pc.log.Debug().Str("topic", msgs[0].Topic).Err(err).Msg("orderly listener failed")
		res = SuspendCurrentQueueAMoment
	}
	return res, true
}

// reconsumeLocally decides what a failed orderly batch does: messages under the reconsume
// limit are retried locally (their count raised); those at the limit go to the dead-letter
// topic (send-back with delay level -1), or are retried too if that fails. It reports whether
// the batch must be consumed again.
func (pc *PushConsumer) reconsumeLocally(msgs []*Message) bool {
	again := false
	for _, m := range msgs {
		if m.ReconsumeTimes >= pc.cfg.maxReconsumeTimes {
			m.Properties[message.PropertyReconsumeTime] = strconv.Itoa(int(m.ReconsumeTimes))
			if err := pc.sendBackOne(m, -1); err == nil {
				continue
			} else {
				pc.log.Warn().Str("msg_id", m.MsgID).Err(err).Msg("send to DLQ failed; consuming again")
			}
		}
		m.ReconsumeTimes++
		again = true
	}
	return again
}

// relock tries to lock the queue again after its lock was lost or expired.
func (pc *PushConsumer) relock(qs *queueState) bool {
	ctx, cancel := context.WithTimeout(pc.p.ctx, time.Second)
	defer cancel()
	locked, err := lockBatch(ctx, pc.p.inst.Transport(), pc.p.inst.MasterAddr(qs.mq.BrokerName), pc.p.cfg.group, pc.p.clientID, []MessageQueue{qs.mq})
	if err != nil || len(locked) == 0 {
		qs.pq.locked.Store(false)
		return false
	}
	qs.pq.setLocked(time.Now())
	return true
}

// lockLoop renews the broker locks of every held queue each lock interval (orderly
// clustering); queues whose lock was refused stop consuming until it comes back.
func (pc *PushConsumer) lockLoop() {
	if pc.p.cfg.model != Clustering {
		return
	}
	t := time.NewTicker(pc.cfg.lockInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.p.ctx.Done():
			return
		case <-t.C:
		}
		pc.lockAll()
	}
}

func (pc *PushConsumer) lockAll() {
	held := map[MessageQueue]*queueState{}
	for _, qs := range pc.p.states() {
		held[qs.mq] = qs
	}
	mqs := make([]MessageQueue, 0, len(held))
	for mq := range held {
		mqs = append(mqs, mq)
	}
	for broker, qs := range byBroker(mqs) {
		ctx, cancel := context.WithTimeout(pc.p.ctx, time.Second)
		locked, err := lockBatch(ctx, pc.p.inst.Transport(), pc.p.inst.MasterAddr(broker), pc.p.cfg.group, pc.p.clientID, qs)
		cancel()
		if err != nil {
			pc.log.Warn().Str("broker", broker).Err(err).Msg("renew queue locks")
			continue
		}
		ok := make(map[MessageQueue]bool, len(locked))
		for _, mq := range locked {
			ok[mq] = true
		}
		now := time.Now()
		for _, mq := range qs {
			if ok[mq] {
				held[mq].pq.setLocked(now)
				held[mq].pq.notify()
			} else {
				held[mq].pq.locked.Store(false)
			}
		}
	}
}

// admit implements queueService: an orderly clustering consumer takes a queue only once the
// broker locked it for this client.
func (pc *PushConsumer) admit(ctx context.Context, pq *processQueue) bool {
	if !pc.lockedQueues() {
		return true
	}
	mq := pq.mq
	locked, err := lockBatch(ctx, pc.p.inst.Transport(), pc.p.inst.MasterAddr(mq.BrokerName), pc.p.cfg.group, pc.p.clientID, []MessageQueue{mq})
	if err != nil || !slices.Contains(locked, mq) {
		pc.log.Debug().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("queue not locked; not taken")
		return false
	}
	pq.setLocked(time.Now())
	return true
}

// taken implements queueService: an orderly consumer starts the queue's consume loop.
func (pc *PushConsumer) taken(qs *queueState) {
	if pc.cfg.orderly {
		pc.goConsumer(func() { pc.orderlyLoop(qs) })
	}
}

// dropped implements queueService: an orderly clustering consumer releases the queue's broker
// lock, but only when no listener call is running on the queue; otherwise the lock expires by
// itself and the next owner waits for it.
func (pc *PushConsumer) dropped(ctx context.Context, qs *queueState) {
	if pc.lockedQueues() && qs.pq.tryConsumeLock(time.Second) {
		pc.unlockQueues(ctx, []MessageQueue{qs.mq})
		qs.pq.unlockConsume()
	}
}

// closeQueues implements queueService: at Close an orderly clustering consumer releases the
// locks of every queue it held, once their offsets are persisted.
func (pc *PushConsumer) closeQueues(ctx context.Context, held []MessageQueue) {
	if pc.lockedQueues() {
		pc.unlockQueues(ctx, held)
	}
}

// unlockQueues releases the broker locks of mqs, per broker.
func (pc *PushConsumer) unlockQueues(ctx context.Context, mqs []MessageQueue) {
	for broker, qs := range byBroker(mqs) {
		if err := unlockBatch(ctx, pc.p.inst.Transport(), pc.p.inst.MasterAddr(broker), pc.p.cfg.group, pc.p.clientID, qs); err != nil {
			pc.log.Warn().Str("broker", broker).Err(err).Msg("unlock queues")
		}
	}
}

func byBroker(mqs []MessageQueue) map[string][]MessageQueue {
	m := map[string][]MessageQueue{}
	for _, mq := range mqs {
		m[mq.BrokerName] = append(m[mq.BrokerName], mq)
	}
	return m
}
