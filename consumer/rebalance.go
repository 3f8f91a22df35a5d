package consumer

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/route"
)

// readableQueues lists the queues of topic a consumer may read, from its route: for each
// readable queue data, queue ids 0..readQueueNums-1, sorted.
func readableQueues(r *route.TopicRouteData, topic string) []MessageQueue {
	var out []MessageQueue
	for _, qd := range r.QueueDatas {
		if !route.IsReadable(qd.Perm) {
			continue
		}
		for i := range int(qd.ReadQueueNums) {
			out = append(out, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	rebalance.SortQueues(out)
	return out
}

// diffQueues compares the queues held with the queues wanted: add are wanted and not held,
// drop are held and not wanted. Both come out sorted.
func diffQueues(held, want []MessageQueue) (add, drop []MessageQueue) {
	for _, q := range want {
		if !slices.Contains(held, q) {
			add = append(add, q)
		}
	}
	for _, q := range held {
		if !slices.Contains(want, q) {
			drop = append(drop, q)
		}
	}
	rebalance.SortQueues(add)
	rebalance.SortQueues(drop)
	return add, drop
}

// rebalanceLoop rebalances at start, every rebalance interval and when asked.
func (pc *PushConsumer) rebalanceLoop() {
	t := time.NewTicker(pc.cfg.rebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.ctx.Done():
			return
		case <-t.C:
		case <-pc.rebalanceNow:
		}
		pc.rebalanceOnce()
	}
}

// rebalanceOnce recomputes the queues of every subscribed topic and adjusts the queue table.
func (pc *PushConsumer) rebalanceOnce() {
	changed := false
	for _, topic := range pc.SubscribedTopics() {
		if pc.isClosing() {
			return
		}
		want, err := pc.allocate(topic)
		if err != nil {
			if !isRetryTopic(topic) {
				pc.log.Warn().Str("topic", topic).Err(err).Msg("rebalance skipped a topic")
			}
			continue
		}
		if pc.updateQueues(topic, want) {
			changed = true
		}
	}
	if changed && !pc.isClosing() {
		ctx, cancel := context.WithTimeout(pc.ctx, 3*time.Second)
		pc.inst.SendHeartbeatToAllBrokers(ctx)
		cancel()
	}
}

// allocate returns the queues of topic this client should hold now.
func (pc *PushConsumer) allocate(topic string) ([]MessageQueue, error) {
	ctx, cancel := context.WithTimeout(pc.ctx, 3*time.Second)
	defer cancel()
	r, err := pc.inst.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	queues := readableQueues(r, topic)
	if pc.manual != nil {
		var mine []MessageQueue
		for _, q := range pc.manual[topic] {
			if slices.Contains(queues, q) {
				mine = append(mine, q)
			}
		}
		return mine, nil
	}
	if pc.cfg.model == Broadcasting {
		return queues, nil
	}
	ids, err := consumerIDs(ctx, pc.inst.Transport(), pc.inst.AnyBrokerAddrOfTopic(topic), pc.cfg.group)
	if err != nil {
		return nil, err
	}
	return pc.cfg.strategy.Allocate(pc.cfg.group, pc.clientID, queues, ids), nil
}

// updateQueues makes the queues of topic held equal want: drops the others, adds the new
// ones. It reports whether anything changed.
func (pc *PushConsumer) updateQueues(topic string, want []MessageQueue) bool {
	var held []MessageQueue
	for _, mq := range pc.assigned() {
		if mq.Topic == topic {
			held = append(held, mq)
		}
	}
	add, drop := diffQueues(held, want)
	for _, mq := range drop {
		pc.dropQueue(mq)
	}
	added := 0
	for _, mq := range add {
		if pc.isClosing() {
			break
		}
		if pc.addQueue(mq) {
			added++
		}
	}
	if len(drop) > 0 || added > 0 {
		pc.log.Info().Str("topic", topic).Int("added", added).Int("dropped", len(drop)).
			Int("held", len(held)-len(drop)+added).Msg("rebalanced")
	}
	return len(drop) > 0 || added > 0
}

// addQueue takes mq: locks it (orderly clustering), works out its start offset and starts its
// pull loop. A queue it cannot take now is retried at the next rebalance.
func (pc *PushConsumer) addQueue(mq MessageQueue) bool {
	ctx, cancel := context.WithTimeout(pc.ctx, 3*time.Second)
	defer cancel()
	pq := newProcessQueue(mq)
	if pc.cfg.orderly && pc.cfg.model == Clustering {
		locked, err := lockBatch(ctx, pc.inst.Transport(), pc.inst.MasterAddr(mq.BrokerName), pc.cfg.group, pc.clientID, []MessageQueue{mq})
		if err != nil || !slices.Contains(locked, mq) {
			pc.log.Debug().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("queue not locked; not taken")
			return false
		}
		pq.setLocked(time.Now())
	}
	pc.store.remove(mq)
	off, err := pc.startOffset(ctx, mq)
	if err != nil {
		pc.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("no start offset; queue not taken")
		return false
	}
	qs := &queueState{mq: mq, pq: pq, nextOffset: off}
	pc.queuesMu.Lock()
	pc.queues[mq] = qs
	pc.queuesMu.Unlock()
	pc.goLoop(func() { pc.pullLoop(qs) })
	if pc.cfg.orderly {
		pc.goConsumer(func() { pc.orderlyLoop(qs) })
	}
	return true
}

// startOffset is where consumption of a newly taken queue begins: the stored offset, else the
// consume-from-where rule (docs/protocol.md §10.3).
func (pc *PushConsumer) startOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	off, err := pc.store.fetch(ctx, mq)
	if err == nil && off >= 0 {
		return off, nil
	}
	if err != nil && !errors.Is(err, ErrOffsetNotFound) {
		return 0, err
	}
	tr, addr := pc.inst.Transport(), pc.inst.AdminAddr(mq.BrokerName)
	retry := isRetryTopic(mq.Topic)
	switch pc.cfg.from {
	case FromFirstOffset:
		return 0, nil
	case FromTimestamp:
		if retry {
			return getMaxOffset(ctx, tr, addr, mq)
		}
		return searchOffset(ctx, tr, addr, mq, pc.cfg.fromTime)
	default:
		if retry {
			return 0, nil
		}
		return getMaxOffset(ctx, tr, addr, mq)
	}
}

// dropQueue gives mq up: its pulls and consumption stop, its offset is persisted and, for an
// orderly clustering consumer, its broker lock released once no listener call holds it.
func (pc *PushConsumer) dropQueue(mq MessageQueue) {
	pc.queuesMu.Lock()
	qs := pc.queues[mq]
	delete(pc.queues, mq)
	pc.queuesMu.Unlock()
	if qs == nil {
		return
	}
	qs.pq.drop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := pc.store.persist(ctx, []MessageQueue{mq}, true); err != nil {
		pc.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("persist offset of dropped queue")
	}
	pc.store.remove(mq)
	if pc.cfg.orderly && pc.cfg.model == Clustering {
		// Unlock only when no listener call is running on the queue; otherwise the broker
		// lock expires by itself and the next owner waits for it.
		if qs.pq.tryConsumeLock(time.Second) {
			pc.unlockQueues(ctx, []MessageQueue{mq})
			qs.pq.unlockConsume()
		}
	}
}

// unlockQueues releases the broker locks of mqs, per broker.
func (pc *PushConsumer) unlockQueues(ctx context.Context, mqs []MessageQueue) {
	for broker, qs := range byBroker(mqs) {
		if err := unlockBatch(ctx, pc.inst.Transport(), pc.inst.MasterAddr(broker), pc.cfg.group, pc.clientID, qs); err != nil {
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

// persistLoop writes the offsets of the held queues every persist interval.
func (pc *PushConsumer) persistLoop() {
	t := time.NewTicker(pc.cfg.persistInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(pc.ctx, 3*time.Second)
		if err := pc.store.persist(ctx, pc.assigned(), false); err != nil && !pc.isClosing() {
			pc.log.Warn().Err(err).Msg("persist offsets")
		}
		cancel()
	}
}
