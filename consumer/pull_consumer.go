package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mqgo/mq/internal/protocol"
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
	pc *PushConsumer

	mu        sync.Mutex
	delivered []consumeRequest                  // returned by Poll, not yet counted as consumed
	stash     map[MessageQueue][]consumeRequest // batches of paused queues
	ready     []consumeRequest                  // batches of resumed queues, before new ones
}

// NewPullConsumer builds a lite pull consumer; options are those of the push consumer that
// apply (name servers, group, instance name, model, consume from, strategy, pull batch size,
// thresholds, intervals, transport, logger) and WithAutoCommit.
func NewPullConsumer(opts ...Option) (*PullConsumer, error) {
	pc, err := NewPushConsumer(append(slices.Clone(opts), optionFunc(func(c *config) { c.poll = true }))...)
	if err != nil {
		return nil, err
	}
	return &PullConsumer{pc: pc, stash: map[MessageQueue][]consumeRequest{}}, nil
}

// Subscribe asks for the messages of topic matching expr, with the queues rebalanced among the
// group's members. Call before Start.
func (c *PullConsumer) Subscribe(topic, expr string) error {
	return c.pc.Subscribe(topic, expr, func(context.Context, []*Message) (ConsumeResult, error) {
		return ConsumeSuccess, nil // never called: Poll hands the messages out
	})
}

// Assign consumes exactly mqs, without rebalancing (and without Subscribe). Call before Start.
func (c *PullConsumer) Assign(mqs ...MessageQueue) error {
	c.pc.mu.Lock()
	defer c.pc.mu.Unlock()
	if c.pc.mu.state != stateNew {
		return ErrStarted
	}
	c.pc.manual = map[string][]MessageQueue{}
	for _, mq := range mqs {
		c.pc.manual[mq.Topic] = append(c.pc.manual[mq.Topic], mq)
		if _, ok := c.pc.mu.subs[mq.Topic]; !ok {
			c.pc.mu.subs[mq.Topic] = newSubscription(mq.Topic, protocol.SubAll, nil)
		}
	}
	return nil
}

// Start starts pulling.
func (c *PullConsumer) Start() error { return c.pc.Start() }

// Close stops pulling, counts what Poll returned as consumed when auto-committing, persists the
// offsets and releases the client instance.
func (c *PullConsumer) Close() error {
	if c.pc.cfg.autoCommit && c.started() {
		c.mu.Lock()
		c.countDeliveredLocked()
		c.mu.Unlock()
	}
	return c.pc.Close()
}

func (c *PullConsumer) started() bool {
	c.pc.mu.Lock()
	defer c.pc.mu.Unlock()
	return c.pc.mu.state == stateStarted
}

// Assignment returns the queues held now.
func (c *PullConsumer) Assignment() []MessageQueue { return c.pc.Assignment() }

// Poll returns the next batch of messages (of one queue, in offset order), waiting until one is
// pulled or ctx ends. With auto-commit it first counts what earlier calls returned as consumed.
func (c *PullConsumer) Poll(ctx context.Context) ([]*Message, error) {
	if !c.started() {
		return nil, ErrClosed
	}
	c.mu.Lock()
	if c.pc.cfg.autoCommit {
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
		if c.isPaused(req.qs.mq) {
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
	case req := <-c.pc.polls:
		return req, nil
	case <-ctx.Done():
		return consumeRequest{}, ctx.Err()
	case <-c.pc.ctx.Done():
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
			c.pc.store.update(req.qs.mq, off, true)
		}
	}
	c.delivered = nil
}

// Commit counts every batch Poll returned so far as consumed and persists the held queues'
// offsets now.
func (c *PullConsumer) Commit(ctx context.Context) error {
	if !c.started() {
		return ErrClosed
	}
	c.mu.Lock()
	c.countDeliveredLocked()
	c.mu.Unlock()
	return c.pc.store.persist(ctx, c.pc.assigned(), true)
}

// Committed returns the in-memory committed offset of mq (the next offset to consume).
func (c *PullConsumer) Committed(mq MessageQueue) (int64, bool) {
	if c.pc.store == nil {
		return 0, false
	}
	return c.pc.store.read(mq)
}

// Seek makes the next messages of mq start at offset: what was pulled and not returned is
// discarded, and mq's committed offset becomes offset.
func (c *PullConsumer) Seek(mq MessageQueue, offset int64) error {
	if !c.started() {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("consumer: negative offset %d", offset)
	}
	pc := c.pc
	pc.queuesMu.Lock()
	old := pc.queues[mq]
	if old == nil {
		pc.queuesMu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotAssigned, mq)
	}
	qs := &queueState{mq: mq, pq: newProcessQueue(mq), nextOffset: offset}
	pc.queues[mq] = qs
	old.pq.drop()
	pc.queuesMu.Unlock()
	pc.store.update(mq, offset, false)
	c.mu.Lock()
	delete(c.stash, mq)
	c.ready = slices.DeleteFunc(c.ready, func(r consumeRequest) bool { return r.qs.mq == mq })
	c.mu.Unlock()
	pc.goLoop(func() { pc.pullLoop(qs) })
	return nil
}

// SeekToBegin seeks mq to the smallest offset its broker still has.
func (c *PullConsumer) SeekToBegin(ctx context.Context, mq MessageQueue) error {
	if !c.started() {
		return ErrClosed
	}
	off, err := getMinOffset(ctx, c.pc.inst.Transport(), c.pc.inst.AdminAddr(mq.BrokerName), mq)
	if err != nil {
		return err
	}
	return c.Seek(mq, off)
}

// SeekToEnd seeks mq past its last message.
func (c *PullConsumer) SeekToEnd(ctx context.Context, mq MessageQueue) error {
	if !c.started() {
		return ErrClosed
	}
	off, err := getMaxOffset(ctx, c.pc.inst.Transport(), c.pc.inst.AdminAddr(mq.BrokerName), mq)
	if err != nil {
		return err
	}
	return c.Seek(mq, off)
}

// Pause stops pulling mqs and keeps their pulled batches from Poll until Resume.
func (c *PullConsumer) Pause(mqs ...MessageQueue) {
	c.pc.queuesMu.Lock()
	defer c.pc.queuesMu.Unlock()
	for _, mq := range mqs {
		c.pc.paused[mq] = true
	}
}

// Resume undoes Pause: held-back batches come first from Poll.
func (c *PullConsumer) Resume(mqs ...MessageQueue) {
	c.pc.queuesMu.Lock()
	for _, mq := range mqs {
		delete(c.pc.paused, mq)
	}
	c.pc.queuesMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, mq := range mqs {
		c.ready = append(c.ready, c.stash[mq]...)
		delete(c.stash, mq)
	}
}

func (c *PullConsumer) isPaused(mq MessageQueue) bool {
	c.pc.queuesMu.Lock()
	defer c.pc.queuesMu.Unlock()
	return c.pc.paused[mq]
}
