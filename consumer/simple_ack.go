package consumer

import (
	"context"
	"errors"
	"sync"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Acks to one broker are merged, as 5.x's proxy merges its SDKs' acks before they reach the
// broker: an Ack made while maxAcksInFlight requests of acks to the same broker are on the
// wire waits for one of them to be answered, and every Ack that waited leaves together in one
// BATCH_ACK_MESSAGE. Otherwise an Ack goes out at once, as an ACK_MESSAGE of its own, so a
// few goroutines acking one message after the other pay nothing for the merging. Each Ack returns once the broker answered the request
// that carried it, so the API's meaning is unchanged: a nil error means the broker has the ack.

// maxAckBatch bounds the acks of one BATCH_ACK_MESSAGE (the broker takes up to 1024 entries;
// one entry can carry several acks of one pop, so this many acks always fit).
const maxAckBatch = 1024

// maxAcksInFlight is how many ack requests to one broker may be on the wire at once before
// further Acks wait to be merged.
const maxAcksInFlight = 4

// maxAckBitSpan is the largest distance from a handle's checkpoint offset to its message that
// a batch entry's bitset carries; a handle farther away (none of this broker's pops are) is
// acknowledged alone.
const maxAckBitSpan = 4096

// errAckAlone asks a merged Ack to go again as an ACK_MESSAGE of its own: the batch it was in
// was refused as a whole, and its own answer tells what, if anything, is wrong with it.
var errAckAlone = errors.New("consumer: ack again alone")

// pendingAck is one Ack waiting to be sent or answered.
type pendingAck struct {
	v    *MessageView
	r    *receipt
	done chan error // buffered: the sender never waits for the Ack's caller
}

// ackQueue is the acks waiting for one broker address; inFlight counts the ack requests on the
// wire to it (each sent by an Ack's caller or by a sender goroutine working through waiting).
type ackQueue struct {
	inFlight int
	noBatch  bool // the broker answered REQUEST_CODE_NOT_SUPPORTED to a batch
	waiting  []*pendingAck
}

// ackMerger holds the ack queues of a SimpleConsumer, by broker address.
type ackMerger struct {
	mu     sync.Mutex
	queues map[string]*ackQueue
}

// mergedAck sends the ack of v with handle r to addr, merged with the acks to addr made
// meanwhile, and returns the broker's answer to it. When no ack to addr is on the wire the
// caller sends its own at once; acks made while one is on the wire wait, and a goroutine sends
// them together once it is answered.
func (c *SimpleConsumer) mergedAck(ctx context.Context, addr string, v *MessageView, r *receipt) error {
	m := &c.acks
	m.mu.Lock()
	if m.queues == nil {
		m.queues = map[string]*ackQueue{}
	}
	q := m.queues[addr]
	if q == nil {
		q = &ackQueue{}
		m.queues[addr] = q
	}
	if q.inFlight < maxAcksInFlight {
		q.inFlight++
		m.mu.Unlock()
		_, err := c.invokeAt(ctx, addr, remoting.AckMessage, ackHeader(c.group, v.wireTopic, r), nil)
		m.mu.Lock()
		if len(q.waiting) > 0 {
			c.calls.Add(1) // Close waits for the sender, as for a call
			go c.sendAcks(addr, q)
		} else {
			q.inFlight--
		}
		m.mu.Unlock()
		return err
	}
	p := &pendingAck{v: v, r: r, done: make(chan error, 1)}
	q.waiting = append(q.waiting, p)
	m.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		// Like a cancelled request, the ack may still reach the broker.
		return ctx.Err()
	}
}

// sendAck sends the ack of v with handle r to addr as an ACK_MESSAGE of its own, for a sender
// goroutine: bounded by the request timeout and the consumer's life.
func (c *SimpleConsumer) sendAck(addr string, v *MessageView, r *receipt) error {
	ctx, cancel := c.callContext(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	_, err := c.invokeAt(ctx, addr, remoting.AckMessage, ackHeader(c.group, v.wireTopic, r), nil)
	return err
}

// sendAcks sends the acks waiting in q, one request at a time, until none wait, then gives
// its place in q.inFlight back.
func (c *SimpleConsumer) sendAcks(addr string, q *ackQueue) {
	defer c.calls.Done()
	m := &c.acks
	for {
		m.mu.Lock()
		n := min(len(q.waiting), maxAckBatch)
		if n == 0 {
			q.inFlight--
			if q.inFlight == 0 && len(m.queues) > 64 {
				delete(m.queues, addr) // brokers come and go: keep the table small
			}
			m.mu.Unlock()
			return
		}
		batch := q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		if len(q.waiting) == 0 {
			q.waiting = nil
		}
		noBatch := q.noBatch
		m.mu.Unlock()
		c.sendAckBatch(addr, q, batch, noBatch)
	}
}

// sendAckBatch sends the acks of batch to addr and answers each: a lone ack as ACK_MESSAGE,
// more as one BATCH_ACK_MESSAGE. Acks the batch cannot carry, or all of them when the broker
// refused the batch, are answered errAckAlone: their callers send them alone.
func (c *SimpleConsumer) sendAckBatch(addr string, q *ackQueue, batch []*pendingAck, noBatch bool) {
	inBatch := batch[:0:0]
	for _, p := range batch {
		// A handle too far from its checkpoint offset for a bitset goes alone.
		if d := p.r.info.QueueOffset - p.r.info.CkQueueOffset; len(batch) > 1 && (noBatch || d < 0 || d >= maxAckBitSpan) {
			p.done <- errAckAlone
		} else {
			inBatch = append(inBatch, p)
		}
	}
	switch len(inBatch) {
	case 0:
	case 1:
		p := inBatch[0]
		p.done <- c.sendAck(addr, p.v, p.r)
	default:
		err := c.sendBatchAck(addr, inBatch)
		if err != nil {
			var re *remoting.ResponseError
			if errors.As(err, &re) && re.Code == remoting.RequestCodeNotSupported {
				c.acks.mu.Lock()
				q.noBatch = true
				c.acks.mu.Unlock()
			}
			err = errAckAlone
		}
		for _, p := range inBatch {
			p.done <- err
		}
	}
}

// sendBatchAck sends batch as one BATCH_ACK_MESSAGE to addr: one entry per checkpoint, a bit
// per message.
func (c *SimpleConsumer) sendBatchAck(addr string, batch []*pendingAck) error {
	type entryKey struct {
		topic, retry string
		queueID      int32
		start        int64
		popTime      int64
		reviveQid    int32
	}
	body := protocol.BatchAckMessageRequestBody{}
	index := map[entryKey]int{}
	for _, p := range batch {
		i := p.r.info
		d := i.QueueOffset - i.CkQueueOffset
		k := entryKey{topic: p.v.wireTopic, retry: i.Retry, queueID: i.QueueID, start: i.CkQueueOffset,
			popTime: i.PopTime, reviveQid: i.ReviveQid}
		j, ok := index[k]
		if !ok {
			j = len(body.Acks)
			index[k] = j
			body.Acks = append(body.Acks, protocol.BatchAck{ConsumerGroup: c.group, Topic: p.v.wireTopic, Retry: i.Retry,
				StartOffset: i.CkQueueOffset, QueueID: i.QueueID, ReviveQueueID: i.ReviveQid, PopTime: i.PopTime,
				InvisibleTime: i.InvisibleTime})
		}
		e := &body.Acks[j]
		if need := int(d)/8 + 1; len(e.BitSet) < need {
			e.BitSet = append(e.BitSet, make([]byte, need-len(e.BitSet))...)
		}
		e.BitSet[d/8] |= 1 << (uint(d) % 8)
	}
	ctx, cancel := c.callContext(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	_, err := c.invokeAt(ctx, addr, remoting.BatchAckMessage, nil, body.Encode())
	return err
}
