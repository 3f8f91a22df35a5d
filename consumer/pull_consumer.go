package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
)

// PullConsumer is a lite pull consumer: the application calls Poll for messages instead of
// registering listeners. It shares the push consumer's machinery — rebalancing (Subscribe) or a
// fixed assignment (Assign), a long-polling pull loop and cache per queue with the same flow
// control, and the offset stores — and hands each pulled batch to Poll.
//
// Offsets: a message counts as consumed once a later Poll is called (WithAutoCommit, the
// default) or Commit is; the committed offset of a queue never passes a message returned by Poll
// and not yet counted. Committed offsets are persisted every WithPersistInterval, by Commit and
// at Close. Failed messages are not sent back; Seek to consume again.
//
// Poll, Commit, Seek, Pause and Resume are safe for concurrent use, but the offsets a Commit
// counts are those of every batch Poll returned so far, whoever called it.
type PullConsumer struct {
	// p pulls, rebalances and keeps offsets (puller.go); the PullConsumer is its
	// queueService: pulled batches wait in polls until Poll takes them.
	p          *puller
	autoCommit bool
	polls      chan consumeRequest // pulled batches waiting for Poll

	mu        sync.Mutex
	delivered []consumeRequest                  // returned by Poll, not yet counted as consumed
	paused    map[MessageQueue]bool             // not pulled, their batches held back from Poll
	stash     map[MessageQueue][]consumeRequest // batches of paused queues
	ready     []consumeRequest                  // batches of resumed queues, before new ones
}

// NewPullConsumer builds a lite pull consumer; options are those of the push consumer that
// apply (name servers, group, instance name, model, consume from, strategy, pull batch size,
// thresholds, intervals, transport, logger) and WithAutoCommit. Its defaults are the push
// consumer's but for DefaultLitePullBatchSize and DefaultLitePullSuspend, as RocketMQ's
// DefaultLitePullConsumer.
func NewPullConsumer(opts ...Option) (*PullConsumer, error) {
	cfg, err := newConfig(append([]Option{liteDefaults}, opts...))
	if err != nil {
		return nil, err
	}
	c := &PullConsumer{autoCommit: cfg.autoCommit, polls: make(chan consumeRequest, 64),
		paused: map[MessageQueue]bool{}, stash: map[MessageQueue][]consumeRequest{}}
	// RocketMQ's lite pull consumer always sends its subscription with the pull.
	cfg.subscriptionInPull = true
	c.p = newPuller(cfg.pullerConfig, protocol.ConsumeActively, c)
	return c, nil
}

// Subscribe asks for the messages of topic matching the tag expression expr, with the queues
// rebalanced among the group's members. Call before Start.
func (c *PullConsumer) Subscribe(topic, expr string) error {
	return c.SubscribeSelector(topic, ByTag(expr))
}

// SubscribeSelector is Subscribe with a selector: a tag expression, or an SQL92 one that Start
// checks with the topic's brokers (CHECK_CLIENT_CONFIG).
func (c *PullConsumer) SubscribeSelector(topic string, sel MessageSelector) error {
	if topic == "" {
		return errSubscribeArgs
	}
	if err := sel.check(); err != nil {
		return err
	}
	topic = c.p.wireTopic(topic)
	s := newSelectorSubscription(topic, sel, nil)
	return c.p.setup(func(subs map[string]*subscription) { subs[topic] = s })
}

// Assign consumes exactly mqs, without rebalancing (and without Subscribe). Call before Start.
func (c *PullConsumer) Assign(mqs ...MessageQueue) error {
	fixed := fixedQueues{}
	for _, mq := range mqs {
		mq = c.p.wireQueue(mq)
		fixed[mq.Topic] = append(fixed[mq.Topic], mq)
	}
	return c.p.setup(func(subs map[string]*subscription) {
		c.p.pickQueues = fixed.allocate
		for topic := range fixed {
			if _, ok := subs[topic]; !ok {
				subs[topic] = newSubscription(topic, protocol.SubAll, nil)
			}
		}
	})
}

// fixedQueues are the queues Assign gave, by topic.
type fixedQueues map[string][]MessageQueue

// allocate holds the assigned queues of topic that its route has.
func (f fixedQueues) allocate(_ context.Context, topic string, readable []MessageQueue) ([]MessageQueue, error) {
	var mine []MessageQueue
	for _, q := range f[topic] {
		if slices.Contains(readable, q) {
			mine = append(mine, q)
		}
	}
	return mine, nil
}

// Start starts pulling. As the push consumer's Start, it waits for a subscribed or assigned
// topic that does not exist yet rather than failing.
func (c *PullConsumer) Start() error { return c.p.start() }

// Close stops pulling, counts what Poll returned as consumed when auto-committing, persists the
// offsets and releases the client instance.
func (c *PullConsumer) Close() error { return c.p.close() }

// Assignment returns the queues held now.
func (c *PullConsumer) Assignment() []MessageQueue {
	out := c.p.assigned()
	rebalance.SortQueues(out)
	return out
}

// Poll returns the next batch of messages (of one queue, in offset order), waiting until one is
// pulled or ctx ends. With auto-commit it first counts what earlier calls returned as consumed.
func (c *PullConsumer) Poll(ctx context.Context) ([]*Message, error) {
	if !c.p.isStarted() {
		return nil, ErrClosed
	}
	c.mu.Lock()
	if c.autoCommit {
		c.countDeliveredLocked()
	}
	c.mu.Unlock()
	for {
		req, err := c.next(ctx)
		if err != nil {
			return nil, err
		}
		if req.qs.pq.isDropped() {
			continue // the queue went to another member, or was sought
		}
		c.mu.Lock()
		if c.paused[req.qs.mq] {
			c.stash[req.qs.mq] = append(c.stash[req.qs.mq], req)
			c.mu.Unlock()
			continue
		}
		c.delivered = append(c.delivered, req)
		c.mu.Unlock()
		return req.msgs, nil
	}
}

// next returns a batch of a resumed queue, else waits for a pulled one.
func (c *PullConsumer) next(ctx context.Context) (consumeRequest, error) {
	c.mu.Lock()
	if len(c.ready) > 0 {
		req := c.ready[0]
		c.ready = c.ready[1:]
		c.mu.Unlock()
		return req, nil
	}
	c.mu.Unlock()
	select {
	case req := <-c.polls:
		return req, nil
	case <-ctx.Done():
		return consumeRequest{}, ctx.Err()
	case <-c.p.ctx.Done():
		return consumeRequest{}, ErrClosed
	}
}

// countDeliveredLocked takes the batches Poll returned out of their queues' caches and raises
// the queues' offsets. c.mu must be held.
func (c *PullConsumer) countDeliveredLocked() {
	for _, req := range c.delivered {
		if req.qs.pq.isDropped() {
			continue
		}
		if off := req.qs.pq.remove(req.msgs); off >= 0 {
			c.p.store.update(req.qs.mq, off, true)
		}
	}
	c.delivered = nil
}

// Commit counts every batch Poll returned so far as consumed and persists the held queues'
// offsets now.
func (c *PullConsumer) Commit(ctx context.Context) error {
	if !c.p.isStarted() {
		return ErrClosed
	}
	c.mu.Lock()
	c.countDeliveredLocked()
	c.mu.Unlock()
	return c.p.store.persist(ctx, c.p.assigned(), true)
}

// Committed returns the in-memory committed offset of mq (the next offset to consume).
func (c *PullConsumer) Committed(mq MessageQueue) (int64, bool) {
	if c.p.store == nil {
		return 0, false
	}
	return c.p.store.read(c.p.wireQueue(mq))
}

// Seek makes the next messages of mq start at offset: what was pulled and not returned is
// discarded, and mq's committed offset becomes offset.
func (c *PullConsumer) Seek(mq MessageQueue, offset int64) error {
	if !c.p.isStarted() {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("consumer: negative offset %d", offset)
	}
	mq = c.p.wireQueue(mq)
	qs, err := c.p.seek(mq, offset)
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.stash, mq)
	c.ready = slices.DeleteFunc(c.ready, func(r consumeRequest) bool { return r.qs.mq == mq })
	c.mu.Unlock()
	c.p.pullQueue(qs)
	return nil
}

// SeekToBegin seeks mq to the smallest offset its broker still has.
func (c *PullConsumer) SeekToBegin(ctx context.Context, mq MessageQueue) error {
	if !c.p.isStarted() {
		return ErrClosed
	}
	mq = c.p.wireQueue(mq)
	off, err := getMinOffset(ctx, c.p.inst.Transport(), c.p.inst.AdminAddr(mq.BrokerName), mq)
	if err != nil {
		return err
	}
	return c.Seek(mq, off)
}

// SeekToEnd seeks mq past its last message.
func (c *PullConsumer) SeekToEnd(ctx context.Context, mq MessageQueue) error {
	if !c.p.isStarted() {
		return ErrClosed
	}
	mq = c.p.wireQueue(mq)
	off, err := getMaxOffset(ctx, c.p.inst.Transport(), c.p.inst.AdminAddr(mq.BrokerName), mq)
	if err != nil {
		return err
	}
	return c.Seek(mq, off)
}

// Pause stops pulling mqs and keeps their pulled batches from Poll until Resume.
func (c *PullConsumer) Pause(mqs ...MessageQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, mq := range mqs {
		c.paused[c.p.wireQueue(mq)] = true
	}
}

// Resume undoes Pause: held-back batches come first from Poll.
func (c *PullConsumer) Resume(mqs ...MessageQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, mq := range mqs {
		mq = c.p.wireQueue(mq)
		delete(c.paused, mq)
		c.ready = append(c.ready, c.stash[mq]...)
		delete(c.stash, mq)
	}
}

// submit implements queueService: the batch waits for Poll.
func (c *PullConsumer) submit(qs *queueState, msgs []*Message) {
	select {
	case c.polls <- consumeRequest{qs: qs, msgs: msgs}:
	case <-c.p.ctx.Done():
	case <-qs.pq.done:
	}
}

// pullHold implements queueService: pulls pause while the queue is paused or its cache spans
// too many offsets.
func (c *PullConsumer) pullHold(qs *queueState, span int64) time.Duration {
	c.mu.Lock()
	paused := c.paused[qs.mq]
	c.mu.Unlock()
	if paused || span > c.p.cfg.maxSpan {
		return c.p.cfg.flowControlDelay
	}
	return 0
}

// stopService implements queueService: with auto-commit, what Poll returned counts as
// consumed before Close persists the offsets.
func (c *PullConsumer) stopService() {
	if !c.autoCommit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countDeliveredLocked()
}

// consumeDirectly implements queueService: there is no listener to run.
func (c *PullConsumer) consumeDirectly([]byte) *remoting.Command {
	return remoting.NewResponse(remoting.SystemError, "consumer: a pull consumer does not consume directly")
}

// The lite pull consumer takes and gives up queues with nothing more to do, and runs no
// goroutines of its own.
func (c *PullConsumer) admit(context.Context, *processQueue) bool   { return true }
func (c *PullConsumer) taken(*queueState)                           {}
func (c *PullConsumer) dropped(context.Context, *queueState)        {}
func (c *PullConsumer) startService()                               {}
func (c *PullConsumer) closeQueues(context.Context, []MessageQueue) {}
