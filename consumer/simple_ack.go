package consumer

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Acks to one broker are merged, as 5.x's proxy merges its SDKs' acks before they reach the
// broker: an Ack joins the batch of acks waiting for that broker, and the broker's sender
// goroutine sends each batch as one request (an ACK_MESSAGE for a lone ack, a
// BATCH_ACK_MESSAGE for more). Acks made while a request is on the wire wait and leave together
// once it is answered; before it sends a lone ack the sender yields once, so that the acks of a
// batch of messages acknowledged from a goroutine each, made runnable together, leave in one
// request. Each Ack returns once the broker answered the request that carried it, so the API's
// meaning is unchanged: a nil error means the broker has the ack.
//
// An Ack derives no context and starts no timer of its own: its request is bounded by the
// consumer's life and by the request timeout counted from the batch's first Ack, and it waits
// for its batch's answer or its own context, whichever comes first. The sender outlives its
// batches by ackSenderIdle, so that a steady stream of acks does not start a goroutine (and
// grow its stack) per request.

// maxAckBatch bounds the acks of one BATCH_ACK_MESSAGE (the broker takes up to 1024 entries;
// one entry can carry several acks of one pop, so this many acks always fit).
const maxAckBatch = 1024

// maxAcksInFlight is how many ack requests to one broker may be on the wire at once before
// further Acks wait to be merged: one, so that every Ack made meanwhile joins the next batch
// (a request costs both ends more than the acks it carries).
const maxAcksInFlight = 1

// ackSenderIdle is how long a sender goroutine waits for the next batch before it ends.
const ackSenderIdle = time.Second

// maxAckBitSpan is the largest distance from a handle's checkpoint offset to its message that
// a batch entry's bitset carries; a handle farther away (none of this broker's pops are) is
// acknowledged alone.
const maxAckBitSpan = 4096

// errAckAlone asks a merged Ack to go again as an ACK_MESSAGE of its own: the batch it was in
// was refused as a whole, and its own answer tells what, if anything, is wrong with it.
var errAckAlone = errors.New("consumer: ack again alone")

// errAckExpired answers the acks of a batch that waited the whole request timeout before a
// request could carry it.
var errAckExpired = errors.New("consumer: ack waited its request timeout for the acks before it to be answered")

// ackEntry is one Ack in a batch; done is set for an AckAsync, which no goroutine waits for.
type ackEntry struct {
	v    *MessageView
	r    *receipt
	done func(error)
}

// ackBatch is the acks to one broker that leave in one request. Its fields past acks are
// written by the sender before done is closed.
type ackBatch struct {
	acks  []ackEntry
	first time.Time // when its first Ack joined: the request must be answered a request timeout after
	async int       // entries of AckAsync calls (done set)
	done  chan struct{}
	err   error  // the answer for every ack, unless alone says otherwise
	alone []bool // by index: answered errAckAlone (nil: none)
}

// result is the answer for the i-th ack of b, once done is closed.
func (b *ackBatch) result(i int) error {
	if b.alone != nil && b.alone[i] {
		return errAckAlone
	}
	return b.err
}

// ackQueue is the batches waiting for one broker address, the last one still taking acks,
// and the senders working through them: senders counts them, idle those waiting for work less
// the wake-ups sent to them (each a token in wake).
type ackQueue struct {
	senders int
	idle    int
	wake    chan struct{} // capacity maxAcksInFlight: a send never blocks
	noBatch bool          // the broker answered REQUEST_CODE_NOT_SUPPORTED to a batch
	batches []*ackBatch
}

// ackMerger holds the ack queues of a SimpleConsumer, by broker address.
type ackMerger struct {
	mu     sync.Mutex
	queues map[string]*ackQueue
}

// mergedAck has the ack of v with handle r sent to addr, merged with the other acks to addr
// waiting meanwhile, and returns the broker's answer to it, or ctx's error when ctx ends first
// (the ack may still reach the broker, as a cancelled request may).
func (c *SimpleConsumer) mergedAck(ctx context.Context, addr string, v *MessageView, r *receipt) error {
	b, i := c.joinAck(addr, ackEntry{v: v, r: r})
	select {
	case <-b.done:
		return b.result(i)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// joinAck adds e to the batch of acks waiting for addr, starting or waking a sender, and
// returns the batch and e's index in it.
func (c *SimpleConsumer) joinAck(addr string, e ackEntry) (*ackBatch, int) {
	m := &c.acks
	m.mu.Lock()
	if m.queues == nil {
		m.queues = map[string]*ackQueue{}
	}
	q := m.queues[addr]
	if q == nil {
		q = &ackQueue{wake: make(chan struct{}, maxAcksInFlight)}
		m.queues[addr] = q
	}
	var b *ackBatch
	if n := len(q.batches); n > 0 && len(q.batches[n-1].acks) < maxAckBatch {
		b = q.batches[n-1]
	} else {
		b = &ackBatch{first: time.Now(), done: make(chan struct{})}
		q.batches = append(q.batches, b)
	}
	i := len(b.acks)
	b.acks = append(b.acks, e)
	if e.done != nil {
		b.async++
	}
	switch {
	case q.idle > 0:
		q.idle--
		q.wake <- struct{}{}
	case q.senders < maxAcksInFlight:
		q.senders++
		c.calls.Add(1) // Close waits for the sender, as for a call
		go c.sendAcks(addr, q)
	}
	m.mu.Unlock()
	return b, i
}

// finishAsync calls the done functions of b's AckAsync entries with their answers, one after
// the other, on a goroutine of its own (one per batch, not per ack), so that a slow done
// never holds up the sender; an entry answered errAckAlone is sent alone first. Each ends the
// call its AckAsync began.
func (c *SimpleConsumer) finishAsync(addr string, b *ackBatch) {
	if b.async == 0 {
		return
	}
	go func() {
		for i, e := range b.acks {
			if e.done == nil {
				continue
			}
			err := b.result(i)
			if err == errAckAlone {
				err = c.ackAlone(c.ctx, addr, e.v, e.r)
			}
			e.done(ackError(e.v, err))
			c.calls.Done()
		}
	}()
}

// sendAcks sends the batches waiting in q, one request at a time, until none came for
// ackSenderIdle or the consumer closes with none waiting.
func (c *SimpleConsumer) sendAcks(addr string, q *ackQueue) {
	defer c.calls.Done()
	m := &c.acks
	var idle *time.Timer
	yielded := false
	for {
		m.mu.Lock()
		if len(q.batches) == 0 {
			q.idle++
			m.mu.Unlock()
			if idle == nil {
				idle = time.NewTimer(ackSenderIdle)
			} else {
				idle.Reset(ackSenderIdle)
			}
			var ended bool
			select {
			case <-q.wake:
			case <-idle.C:
				ended = true
			case <-c.ctx.Done():
				ended = true
			}
			if ended && c.senderEnds(addr, q) {
				idle.Stop()
				return
			}
			continue
		}
		if !yielded && len(q.batches) == 1 && len(q.batches[0].acks) == 1 {
			// A lone ack: other goroutines made runnable with it (a batch acknowledged from a
			// goroutine each) get to join it before it leaves.
			yielded = true
			m.mu.Unlock()
			runtime.Gosched()
			continue
		}
		yielded = false
		b := q.batches[0]
		q.batches[0] = nil
		q.batches = q.batches[1:]
		if len(q.batches) == 0 {
			q.batches = nil
		}
		noBatch := q.noBatch
		m.mu.Unlock()
		c.sendAckBatch(addr, q, b, noBatch)
		close(b.done)
		c.finishAsync(addr, b)
	}
}

// senderEnds ends an idle sender of q unless a wake-up was sent to it meanwhile.
func (c *SimpleConsumer) senderEnds(addr string, q *ackQueue) bool {
	m := &c.acks
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-q.wake:
		return false // a signaller counted this sender out of idle already
	default:
	}
	q.idle--
	q.senders--
	if q.senders == 0 && len(m.queues) > 64 {
		delete(m.queues, addr) // brokers come and go: keep the table small
	}
	return true
}

// sendAckBatch sends the acks of b to addr and sets their answers: a lone ack as ACK_MESSAGE,
// more as one BATCH_ACK_MESSAGE. Acks the batch cannot carry, or all of them when the broker
// refused the batch, are answered errAckAlone: their callers send them alone.
func (c *SimpleConsumer) sendAckBatch(addr string, q *ackQueue, b *ackBatch, noBatch bool) {
	until := b.first.Add(c.cfg.requestTimeout)
	if !time.Now().Before(until) {
		b.err = errAckExpired
		return
	}
	if len(b.acks) == 1 {
		e := b.acks[0]
		b.err = c.sendAckUntil(addr, e.v, e.r, until)
		return
	}
	inBatch := make([]ackEntry, 0, len(b.acks))
	for i, e := range b.acks {
		// A handle too far from its checkpoint offset for a bitset goes alone.
		if d := e.r.info.QueueOffset - e.r.info.CkQueueOffset; noBatch || d < 0 || d >= maxAckBitSpan {
			if b.alone == nil {
				b.alone = make([]bool, len(b.acks))
			}
			b.alone[i] = true
		} else {
			inBatch = append(inBatch, e)
		}
	}
	switch len(inBatch) {
	case 0:
	case 1:
		b.err = c.sendAckUntil(addr, inBatch[0].v, inBatch[0].r, until)
	default:
		err := c.sendBatchAck(addr, inBatch, until)
		if err != nil {
			var re *remoting.ResponseError
			if errors.As(err, &re) && re.Code == remoting.RequestCodeNotSupported {
				c.acks.mu.Lock()
				q.noBatch = true
				c.acks.mu.Unlock()
			}
			err = errAckAlone
		}
		b.err = err
	}
}

// sendAckUntil sends the ack of v with handle r to addr as an ACK_MESSAGE of its own, bounded
// by until and the consumer's life.
func (c *SimpleConsumer) sendAckUntil(addr string, v *MessageView, r *receipt, until time.Time) error {
	_, err := c.invokeUntil(c.ctx, addr, remoting.AckMessage, ackHeader(c.group, v.wireTopic, r), nil, until)
	return err
}

// sendBatchAck sends batch as one BATCH_ACK_MESSAGE to addr, bounded by until and the
// consumer's life: one entry per checkpoint, a bit per message.
func (c *SimpleConsumer) sendBatchAck(addr string, batch []ackEntry, until time.Time) error {
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
	_, err := c.invokeUntil(c.ctx, addr, remoting.BatchAckMessage, nil, body.Encode(), until)
	return err
}
