package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
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
func (p *puller) rebalanceLoop() {
	t := time.NewTicker(p.cfg.rebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		case <-p.rebalanceNow:
		}
		p.rebalanceOnce()
	}
}

// rebalanceOnce recomputes the queues of every subscribed topic and adjusts the queue table.
func (p *puller) rebalanceOnce() {
	changed := false
	for _, topic := range p.SubscribedTopics() {
		if p.isClosing() {
			return
		}
		want, err := p.allocate(topic)
		switch {
		case err == nil:
			p.routeFound(topic)
		case isRetryTopic(topic):
			continue
		case isTopicNotExist(err):
			p.noteNoRoute(topic, err) // a topic created after Start: taken once it exists
			continue
		default:
			p.log.Warn().Str("topic", topic).Err(err).Msg("rebalance skipped a topic")
			continue
		}
		if p.updateQueues(topic, want) {
			changed = true
		}
	}
	if changed && !p.isClosing() {
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
		p.inst.SendHeartbeatToAllBrokers(ctx)
		cancel()
	}
}

// allocateFunc picks the queues of topic a client holds among its readable queues.
type allocateFunc func(ctx context.Context, topic string, readable []MessageQueue) ([]MessageQueue, error)

// allocateTimeout bounds one topic's allocation: the route, the member list and, when the
// broker did not know this client, a heartbeat round and the list again.
const allocateTimeout = 3 * requestTimeout

// allocate returns the queues of topic this client should hold now.
func (p *puller) allocate(topic string) ([]MessageQueue, error) {
	ctx, cancel := context.WithTimeout(p.ctx, allocateTimeout)
	defer cancel()
	r, err := p.inst.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	return p.pickQueues(ctx, topic, readableQueues(r, topic))
}

// shareInGroup is the group's rebalance: every queue when broadcasting, else this client's
// share by the strategy over the group's client ids.
func (p *puller) shareInGroup(ctx context.Context, topic string, readable []MessageQueue) ([]MessageQueue, error) {
	if p.cfg.model == Broadcasting {
		return readable, nil
	}
	ids, err := p.groupMembers(ctx, topic)
	if err != nil {
		return nil, err
	}
	return p.cfg.strategy.Allocate(p.cfg.group, p.clientID, readable, ids), nil
}

// groupMembers returns the group's client ids as a broker of topic knows them. A broker that
// answers "no consumer for this group", or a list without this client, has lost our
// registration: it restarted, or our heartbeats stopped reaching it. Allocating by its answer
// would keep our queues (RocketMQ skips the topic on the error) or give them all up while the
// others, not knowing of us, take our share; either way the broker cannot notify us of
// changes. So we heartbeat every broker at once (every group of the instance; the broker then
// notifies the other members) and ask again, and allocate by that answer as RocketMQ would.
// RocketMQ 4.9 sends no heartbeat here and waits for its next one (30 s).
func (p *puller) groupMembers(ctx context.Context, topic string) ([]string, error) {
	ids, err := consumerIDs(ctx, p.inst.Transport(), p.inst.AnyBrokerAddrOfTopic(topic), p.cfg.group)
	if err == nil && slices.Contains(ids, p.clientID) || err != nil && !isNoConsumerAnswer(err) {
		return ids, err
	}
	p.log.Info().Str("topic", topic).Err(err).Msg("broker does not know this consumer; heartbeat now")
	p.inst.SendHeartbeatToAllBrokers(ctx)
	return consumerIDs(ctx, p.inst.Transport(), p.inst.AnyBrokerAddrOfTopic(topic), p.cfg.group)
}

// isNoConsumerAnswer reports whether err is a broker's answer to GET_CONSUMER_LIST_BY_GROUP for
// a group it has no member of (SYSTEM_ERROR "no consumer for this group").
func isNoConsumerAnswer(err error) bool {
	var re *remoting.ResponseError
	return errors.As(err, &re) && re.Code == remoting.SystemError && strings.HasPrefix(re.Remark, "no consumer for this group")
}

// updateQueues makes the queues of topic held equal want: drops the others, adds the new
// ones. It reports whether anything changed.
func (p *puller) updateQueues(topic string, want []MessageQueue) bool {
	var held []MessageQueue
	for _, mq := range p.assigned() {
		if mq.Topic == topic {
			held = append(held, mq)
		}
	}
	add, drop := diffQueues(held, want)
	for _, mq := range drop {
		p.dropQueue(mq)
	}
	added := 0
	for _, mq := range add {
		if p.isClosing() {
			break
		}
		if p.addQueue(mq) {
			added++
		}
	}
	if len(drop) > 0 || added > 0 {
		p.log.Info().Str("topic", topic).Int("added", added).Int("dropped", len(drop)).
			Int("held", len(held)-len(drop)+added).Msg("rebalanced")
	}
	return len(drop) > 0 || added > 0
}

// addQueue takes mq: lets the service admit it (an orderly consumer locks it), works out its
// start offset and starts its pull loop. A queue it cannot take now is retried at the next
// rebalance.
func (p *puller) addQueue(mq MessageQueue) bool {
	ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
	defer cancel()
	pq := newProcessQueue(mq)
	if !p.svc.admit(ctx, pq) {
		return false
	}
	p.store.remove(mq)
	off, err := p.startOffset(ctx, mq)
	if err != nil {
		p.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("no start offset; queue not taken")
		return false
	}
	qs := &queueState{mq: mq, pq: pq, nextOffset: off}
	p.queuesMu.Lock()
	p.queues[mq] = qs
	p.queuesMu.Unlock()
	p.pullQueue(qs)
	p.svc.taken(qs)
	return true
}

// startOffset is where consumption of a newly taken queue begins: the stored offset, else the
// consume-from-where rule (docs/protocol.md §10.3).
func (p *puller) startOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	off, err := p.store.fetch(ctx, mq)
	if err == nil && off >= 0 {
		return off, nil
	}
	if err != nil && !errors.Is(err, ErrOffsetNotFound) {
		return 0, err
	}
	tr, addr := p.inst.Transport(), p.inst.AdminAddr(mq.BrokerName)
	retry := isRetryTopic(mq.Topic)
	switch p.cfg.from {
	case FromFirstOffset:
		return 0, nil
	case FromTimestamp:
		if retry {
			return getMaxOffset(ctx, tr, addr, mq)
		}
		return searchOffset(ctx, tr, addr, mq, p.cfg.fromTime)
	default:
		if retry {
			return 0, nil
		}
		return getMaxOffset(ctx, tr, addr, mq)
	}
}

// dropQueue gives mq up: its pulls stop and its offset is persisted, then the service lets go
// of it (an orderly consumer unlocks it).
func (p *puller) dropQueue(mq MessageQueue) {
	p.queuesMu.Lock()
	qs := p.queues[mq]
	delete(p.queues, mq)
	p.queuesMu.Unlock()
	if qs == nil {
		return
	}
	qs.pq.drop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := p.store.persist(ctx, []MessageQueue{mq}, true); err != nil {
		p.log.Warn().Str("topic", mq.Topic).Int("queue_id", mq.QueueID).Err(err).Msg("persist offset of dropped queue")
	}
	p.store.remove(mq)
	p.svc.dropped(ctx, qs)
}

// seek replaces mq's state with an empty cache whose pulls start at offset, which becomes
// mq's committed offset; the old cache is dropped. The new state's pull loop starts with
// pullQueue.
func (p *puller) seek(mq MessageQueue, offset int64) (*queueState, error) {
	p.queuesMu.Lock()
	old := p.queues[mq]
	if old == nil {
		p.queuesMu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNotAssigned, mq)
	}
	qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: offset}
	p.queues[mq] = qs
	old.pq.drop()
	p.queuesMu.Unlock()
	p.store.update(mq, offset, false)
	return qs, nil
}

// pullQueue starts qs's pull loop.
func (p *puller) pullQueue(qs *queueState) { p.goLoop(func() { p.pullLoop(qs) }) }

// PersistOffsets implements the client instance's OffsetPersister: a clustering group's
// offsets of the held queues are written to their brokers and waited for, so a restarted broker
// has them before our heartbeat lets a new member take one of these queues.
func (p *puller) PersistOffsets(ctx context.Context) {
	if p.cfg.model != Clustering || p.isClosing() {
		return
	}
	if err := p.store.persist(ctx, p.assigned(), true); err != nil {
		p.log.Debug().Err(err).Msg("persist offsets after a reconnect")
	}
}

// persistLoop writes the offsets of the held queues every persist interval.
func (p *puller) persistLoop() {
	t := time.NewTicker(p.cfg.persistInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
		if err := p.store.persist(ctx, p.assigned(), false); err != nil && !p.isClosing() {
			p.log.Warn().Err(err).Msg("persist offsets")
		}
		cancel()
	}
}
