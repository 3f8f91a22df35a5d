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
// consumer closes (RocketMQ ConsumeMessageOrderlyService.ConsumeRequest).
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
			return suspendTime(pc.cfg.suspendDelay)
		}
		if off := pq.commit(); off >= 0 {
			pc.p.store.update(qs.mq, off, false)
		}
	}
}

// suspendTime is how long a suspended orderly queue waits before it is consumed again:
// RocketMQ's submitConsumeRequestLater clamps suspendCurrentQueueTimeMillis into [10 ms, 30 s].
func suspendTime(d time.Duration) time.Duration {
	return min(max(d, 10*time.Millisecond), 30*time.Second)
}

// callOrderly runs the listener on msgs holding a consume slot and the queue's consume lock;
// ok is false when the consumer closed or the queue was dropped before the call began.
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
	if qs.pq.isDropped() {
		// A drop that took the consume lock between our checks may already have released the
		// broker lock: another client can own the queue now, so calling would break order.
		return 0, false
	}
	now := time.Now()
	markConsumeStart(msgs, now, nil)
	res := SuspendCurrentQueueAMoment
	var err error
	if sub := pc.p.subscriptionOf(msgs[0].Topic); sub != nil && sub.listener != nil {
		res, err = callListener(pc.consumeCtx, sub.listener, msgs)
		done := time.Now()
		pc.p.stats.consumed(qs.mq.Topic, len(msgs), err == nil && res == ConsumeSuccess, done.Sub(now), done)
	}
	if err != nil {
		pc.log.Debug().Str("topic", msgs[0].Topic).Err(err).Msg("orderly listener failed")
		res = SuspendCurrentQueueAMoment
	}
	return res, true
}

// reconsumeLocally decides what a failed orderly batch does (RocketMQ's checkReconsumeTimes):
// messages under the reconsume limit are retried locally (their count raised); those at the
// limit go to the dead-letter topic (send-back with delay level -1, else a resend the broker
// routes there), or are retried too if both fail. It reports whether the batch must be consumed again. The limit is unlimited
// unless the user set one, so by default nothing is moved aside.
func (pc *PushConsumer) reconsumeLocally(msgs []*Message) bool {
	limit := pc.maxReconsumeTimes()
	again := false
	for _, m := range msgs {
		if m.ReconsumeTimes >= limit {
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
				// Wake only a queue whose lock came back: waking every held queue would cut
				// short the wait of one its listener suspended.
				regained := !held[mq].pq.locked.Load()
				held[mq].pq.setLocked(now)
				if regained {
					held[mq].pq.notify()
				}
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
// lock once no listener call runs on the queue (RocketMQ's removeUnnecessaryMessageQueue waits
// up to a second for the consume lock). A listener call still running then keeps the lock
// until it returns: RocketMQ retries at each rebalance, mq waits for the call on a goroutine.
func (pc *PushConsumer) dropped(ctx context.Context, qs *queueState) {
	if !pc.lockedQueues() {
		return
	}
	if qs.pq.tryConsumeLock(time.Second) {
		pc.unlockDelay(ctx, qs)
		qs.pq.unlockConsume()
		return
	}
	pc.log.Warn().Str("topic", qs.mq.Topic).Int("queue_id", qs.mq.QueueID).
		Msg("dropped orderly queue still consuming; unlocking it once the listener returns")
	pc.p.goLoop(func() {
		select {
		case qs.pq.consumeSlot <- struct{}{}:
		case <-pc.p.ctx.Done():
			return // the call may still run: leave the lock to expire on the broker
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		pc.unlockDelay(ctx, qs)
		qs.pq.unlockConsume()
	})
}

// unlockDelay releases a dropped queue's broker lock, at once when its cache is empty, else
// after the unlock delay (RocketMQ's unlockDelay with UNLOCK_DELAY_TIME_MILLS). RocketMQ's
// drop commits the queue's offset one-way, so the delay presumably lets that commit land
// before a new owner reads it; mq commits synchronously on drop but keeps the delay, so a
// group mixing mq and Java clients hands busy queues over on one schedule. The caller holds
// the queue's consume lock.
func (pc *PushConsumer) unlockDelay(ctx context.Context, qs *queueState) {
	if !qs.pq.hasCached() {
		pc.unlockDropped(ctx, qs.mq)
		return
	}
	pc.p.goLoop(func() {
		// Close ends the wait early: no listener call runs on a dropped queue, so there is
		// nothing left to protect, and the next owner should not wait for the broker's expiry.
		sleep(pc.p.ctx, nil, pc.cfg.unlockDelay)
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		pc.unlockDropped(ctx, qs.mq)
	})
}

// unlockDropped releases the broker lock of a dropped queue unless a later rebalance gave the
// queue back to this consumer, whose new state holds the lock now. RocketMQ unlocks anyway and
// relocks at the next lock renewal, so the queue's consumption pauses meanwhile.
func (pc *PushConsumer) unlockDropped(ctx context.Context, mq MessageQueue) {
	pc.p.queuesMu.Lock()
	_, held := pc.p.queues[mq]
	pc.p.queuesMu.Unlock()
	if !held {
		pc.unlockQueues(ctx, []MessageQueue{mq})
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
