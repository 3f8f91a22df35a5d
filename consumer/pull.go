package consumer

import (
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// pullLoop pulls one queue until it is dropped or the consumer closes (RocketMQ
// DefaultMQPushConsumerImpl.pullMessage and its callback).
func (p *puller) pullLoop(qs *queueState) {
	pq := qs.pq
	for !pq.isDropped() && !p.isClosing() {
		if d := p.pullPause(qs); d > 0 {
			sleep(p.ctx, pq.done, d)
			continue
		}
		begin, asked := time.Now(), qs.nextOffset
		res, addr, err := p.pullOnce(qs)
		if pq.isDropped() || p.isClosing() {
			return
		}
		if err != nil {
			p.log.Debug().Str("topic", qs.mq.Topic).Int("queue_id", qs.mq.QueueID).Str("addr", addr).Err(err).Msg("pull failed")
			if p.pullFailed(qs, addr, err) {
				continue // another address of the broker name (a slave when the master died)
			}
			sleep(p.ctx, pq.done, p.failedPullDelay(qs, err))
			continue
		}
		qs.retry = pullRetry{}
		now := time.Now()
		pq.lastPullTime.Store(now.UnixNano())
		p.stats.pullAnswered(qs.mq.Topic, now.Sub(begin), now)
		found, keep := p.handlePull(qs, &res)
		if !keep {
			return
		}
		if p.pullsAgainInVain(qs, &res, asked, addr) {
			sleep(p.ctx, pq.done, p.cfg.pullErrorDelay)
			continue
		}
		if found && p.cfg.pullInterval > 0 {
			sleep(p.ctx, pq.done, p.cfg.pullInterval)
		}
	}
}

// pullsAgainInVain reports whether a broker answered at once that it cannot serve the offset
// asked yet (PULL_RETRY_IMMEDIATELY, or a slave's answer before the offset), the queue did not
// move, and the next pull would go to the same address again: a slave that lacks the offset
// with no master in the route to ask instead, or a master that just became a slave and stays
// the queue's master in the route until the next route refresh. Pulling again at once would
// only spin, one round trip after another, until replication or the route changes. RocketMQ's
// client pulls again at once (docs/rocketmq-differences.md); the loop then waits the pull
// error delay instead.
func (p *puller) pullsAgainInVain(qs *queueState, res *pullResult, asked int64, addr string) bool {
	if res.code == remoting.Success || res.code == remoting.PullNotFound || qs.nextOffset != asked {
		return false
	}
	next, _ := p.pullTarget(qs)
	return next == addr
}

// pullPause returns how long to wait before the next pull: flow control while the queue's
// cache holds too many messages or bytes, then whatever the consumer's service asks (a span
// too wide, an orderly queue without its lock, a paused queue).
func (p *puller) pullPause(qs *queueState) time.Duration {
	count, bytes, span := qs.pq.stats()
	if count > p.cfg.pullThresholdMsgs || bytes > p.cfg.pullThresholdBytes {
		return p.cfg.flowControlDelay
	}
	return p.svc.pullHold(qs, span)
}

// pullOnce sends one long-polling pull for the queue's next offset to the address pullTarget
// picks, which it returns with the answer. The commit-offset bit is set only towards a master:
// a slave must not take offsets.
func (p *puller) pullOnce(qs *queueState) (pullResult, string, error) {
	mq := qs.mq
	sub := p.subscriptionOf(mq.Topic)
	if sub == nil {
		return pullResult{}, "", ErrNoSubscription
	}
	addr, slave := p.pullTarget(qs)
	qs.fromSlave, qs.pulledFrom = slave, addr
	var commit int64
	if p.cfg.model == Clustering && !slave {
		if off, ok := p.store.read(mq); ok && off > 0 {
			commit = off
		}
	}
	// Without the subscription in the pull, the broker filters with the one heartbeats
	// registered, and SubVersion tells it whether that one is recent enough.
	// The header is encoded before the request leaves, so the queue's one serves every pull.
	h := &qs.pullHeader
	*h = protocol.PullMessageRequestHeader{ConsumerGroup: p.cfg.group, Topic: mq.Topic, QueueID: int32(mq.QueueID),
		QueueOffset: qs.nextOffset, MaxMsgNums: int32(p.cfg.pullBatchSize), CommitOffset: commit,
		SuspendTimeoutMillis: p.cfg.pullSuspend.Milliseconds(), SubVersion: sub.version,
		ExpressionType: sub.exprType, BrokerName: mq.BrokerName}
	if p.cfg.subscriptionInPull {
		h.Subscription = sub.expr
	}
	h.SysFlag = protocol.BuildPullSysFlag(commit > 0, true, p.cfg.subscriptionInPull, false)
	res, err := pullMessage(p.ctx, p.inst.Transport(), addr, h, p.cfg.pullTimeout)
	return res, addr, err
}

// handlePull applies a pull's answer. found reports messages for the consumer (after
// filtering); keep is false when the queue was given up (offset moved).
func (p *puller) handlePull(qs *queueState, res *pullResult) (found, keep bool) {
	mq, pq := qs.mq, qs.pq
	qs.brokerID = res.header.SuggestWhichBrokerID
	if qs.fromSlave && res.code != remoting.Success && res.header.NextBeginOffset < qs.nextOffset {
		// A slave behind its master (async replication) does not know the offset yet: keep
		// it and ask again (RocketMQ slaves answer so with offsetCheckInSlave off) rather than
		// move the queue, and its committed offset, backwards.
		return false, true
	}
	switch res.code {
	case remoting.Success:
		msgs, err := decodeMessages(res.body, mq)
		if err != nil {
			p.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("undecodable pull body")
		}
		qs.nextOffset = res.header.NextBeginOffset
		msgs = p.filter(qs, msgs, res.header)
		found = len(msgs) > 0
		if found {
			p.stats.pullFound(mq.Topic, len(msgs))
		}
		if added := pq.put(msgs); len(added) > 0 {
			p.svc.submit(qs, added)
		}
	case remoting.PullNotFound, remoting.PullRetryImmediately:
		qs.nextOffset = res.header.NextBeginOffset
		if count, _, _ := pq.stats(); count == 0 {
			p.store.update(mq, qs.nextOffset, true)
		}
	case remoting.PullOffsetMoved:
		qs.nextOffset = res.header.NextBeginOffset
		p.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Int64("offset", qs.nextOffset).
			Str("broker", qs.pulledFrom).Msg("pull offset illegal; dropping the queue and correcting its offset")
		pq.drop()
		if sleep(p.ctx, nil, p.cfg.offsetIllegalDelay) {
			p.store.update(mq, qs.nextOffset, false)
			p.queuesMu.Lock()
			if p.queues[mq] == qs {
				delete(p.queues, mq)
			}
			p.queuesMu.Unlock()
			if err := p.store.persist(p.ctx, []MessageQueue{mq}, true); err != nil {
				p.log.Warn().Err(err).Msg("persist corrected offset")
			}
			p.store.remove(mq)
		}
		return false, false
	}
	return found, true
}

// filter keeps the messages the subscription's tags match (brokers filter by tag hash, which
// may let others through), shows retried messages under their original topic and every
// message without the namespace, and records the queue's offset range on each, as the official
// client does.
func (p *puller) filter(qs *queueState, msgs []*Message, h protocol.PullMessageResponseHeader) []*Message {
	if len(msgs) == 0 {
		return nil
	}
	sub := p.subscriptionOf(msgs[0].Queue.Topic)
	retry := RetryTopic(p.cfg.group)
	minOff, maxOff := qs.minOffset.of(h.MinOffset), qs.maxOffset.of(h.MaxOffset)
	out := msgs[:0]
	for _, m := range msgs {
		if sub != nil && !sub.matches(m.Tags) {
			continue
		}
		restoreRetryTopic(m, retry)
		m.Topic = names.WithoutNamespace(p.cfg.namespace, m.Topic)
		m.Properties[message.PropertyMinOffset] = minOff
		m.Properties[message.PropertyMaxOffset] = maxOff
		out = append(out, m)
	}
	return out
}
