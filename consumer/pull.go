package consumer

import (
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// pullLoop pulls one queue until it is dropped or the consumer closes (seed 003,
// DefaultMQPushConsumerImpl.pullMessage and its callback).
func (pc *PushConsumer) pullLoop(qs *queueState) {
	pq := qs.pq
	for !pq.isDropped() && !pc.isClosing() {
		if d := pc.pullPause(qs); d > 0 {
			sleep(pc.ctx, pq.done, d)
			continue
		}
		res, addr, err := pc.pullOnce(qs)
		if pq.isDropped() || pc.isClosing() {
			return
		}
		if err != nil {
			pc.log.Debug().Str("topic", qs.mq.Topic).Int("queue_id", qs.mq.QueueID).Str("addr", addr).Err(err).Msg("pull failed")
			if pc.pullFailed(qs, addr, err) {
				continue // another address of the broker name (a slave when the master died)
			}
			sleep(pc.ctx, pq.done, pc.cfg.pullErrorDelay)
			continue
		}
		pq.lastPullTime.Store(time.Now().UnixNano())
		if !pc.handlePull(qs, res) {
			return
		}
	}
}

// pullPause returns how long to wait before the next pull: flow control when the queue's cache
// is too large (or spans too many offsets, concurrent) or, orderly, while its lock is not held.
func (pc *PushConsumer) pullPause(qs *queueState) time.Duration {
	if pc.cfg.poll {
		pc.queuesMu.Lock()
		paused := pc.paused[qs.mq]
		pc.queuesMu.Unlock()
		if paused {
			return pc.cfg.flowControlDelay
		}
	}
	count, bytes, span := qs.pq.stats()
	if count > pc.cfg.pullThresholdMsgs || bytes > pc.cfg.pullThresholdBytes {
		return pc.cfg.flowControlDelay
	}
	if !pc.cfg.orderly && span > pc.cfg.maxSpan {
		return pc.cfg.flowControlDelay
	}
	if pc.cfg.orderly && pc.cfg.model == Clustering && !qs.pq.locked.Load() {
		return pc.cfg.pullErrorDelay
	}
	return 0
}

// pullOnce sends one long-polling pull for the queue's next offset to the address pullTarget
// picks, which it returns with the answer. The commit-offset bit is set only towards a master:
// a slave must not take offsets.
func (pc *PushConsumer) pullOnce(qs *queueState) (*pullResult, string, error) {
	mq := qs.mq
	sub := pc.subscriptionOf(mq.Topic)
	if sub == nil {
		return nil, "", ErrNoSubscription
	}
	addr, slave := pc.pullTarget(qs)
	qs.fromSlave = slave
	var commit int64
	if pc.cfg.model == Clustering && !slave {
		if off, ok := pc.store.read(mq); ok && off > 0 {
			commit = off
		}
	}
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: pc.cfg.group, Topic: mq.Topic, QueueID: int32(mq.QueueID),
		QueueOffset: qs.nextOffset, MaxMsgNums: int32(pc.cfg.pullBatchSize), CommitOffset: commit,
		SuspendTimeoutMillis: pc.cfg.pullSuspend.Milliseconds(), ExpressionType: protocol.ExpressionTag,
		BrokerName: mq.BrokerName}
	if pc.cfg.subscriptionInPull {
		h.Subscription = sub.expr
	}
	h.SysFlag = protocol.BuildPullSysFlag(commit > 0, true, pc.cfg.subscriptionInPull, false)
	res, err := pullMessage(pc.ctx, pc.inst.Transport(), addr, h, pc.cfg.pullSuspend+pc.cfg.pullTimeout)
	return res, addr, err
}

// handlePull applies a pull's answer; false means the queue was given up (offset moved).
func (pc *PushConsumer) handlePull(qs *queueState, res *pullResult) bool {
	mq, pq := qs.mq, qs.pq
	qs.brokerID = res.header.SuggestWhichBrokerID
	if qs.fromSlave && res.code != remoting.Success && res.header.NextBeginOffset < qs.nextOffset {
		// A slave behind its master (async replication) does not know the offset yet: keep
		// it and ask again (RocketMQ slaves answer so with offsetCheckInSlave off) rather than
		// move the queue, and its committed offset, backwards.
		return true
	}
	switch res.code {
	case remoting.Success:
		msgs, err := decodeMessages(res.body, mq)
		if err != nil {
			pc.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("undecodable pull body")
		}
		qs.nextOffset = res.header.NextBeginOffset
		msgs = pc.filter(msgs, res.header)
		if added := pq.put(msgs); len(added) > 0 {
			pc.submit(qs, added)
		}
	case remoting.PullNotFound, remoting.PullRetryImmediately:
		qs.nextOffset = res.header.NextBeginOffset
		if count, _, _ := pq.stats(); count == 0 {
			pc.store.update(mq, qs.nextOffset, true)
		}
	case remoting.PullOffsetMoved:
		qs.nextOffset = res.header.NextBeginOffset
		pc.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Int64("offset", qs.nextOffset).
			Msg("pull offset illegal; dropping the queue and correcting its offset")
		pq.drop()
		if sleep(pc.ctx, nil, pc.cfg.offsetIllegalDelay) {
			pc.store.update(mq, qs.nextOffset, false)
			pc.queuesMu.Lock()
			if pc.queues[mq] == qs {
				delete(pc.queues, mq)
			}
			pc.queuesMu.Unlock()
			if err := pc.store.persist(pc.ctx, []MessageQueue{mq}, true); err != nil {
				pc.log.Warn().Err(err).Msg("persist corrected offset")
			}
			pc.store.remove(mq)
		}
		return false
	}
	return true
}

// filter keeps the messages the subscription's tags match (brokers filter by tag hash, which
// may let others through), shows retried messages under their original topic, and records the
// queue's offset range on each, as the official client does.
func (pc *PushConsumer) filter(msgs []*Message, h protocol.PullMessageResponseHeader) []*Message {
	if len(msgs) == 0 {
		return nil
	}
	sub := pc.subscriptionOf(msgs[0].Queue.Topic)
	retry := RetryTopic(pc.cfg.group)
	minOff, maxOff := strconv.FormatInt(h.MinOffset, 10), strconv.FormatInt(h.MaxOffset, 10)
	out := msgs[:0]
	for _, m := range msgs {
		if sub != nil && !sub.matches(m.Tags) {
			continue
		}
		restoreRetryTopic(m, retry)
		m.Properties[message.PropertyMinOffset] = minOff
		m.Properties[message.PropertyMaxOffset] = maxOff
		out = append(out, m)
	}
	return out
}
