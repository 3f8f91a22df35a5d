package producer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
)

// Client-side batching of SendAsync (WithAsyncBatching), beyond RocketMQ 4.x, whose clients
// batch only the slices callers hand to SendBatch; RocketMQ 5's autoBatch is the model, and
// its defaults are ours. A message picks its queue as an unbatched one would (step 3 of
// send.go) and is encoded at once (the caller may reuse it when SendAsync returns) into the
// open batch of that queue. The batch leaves as one SEND_BATCH_MESSAGE, as a send of its own
// under the async retry policy (retry.go), once the next message would take it past maxBytes
// or once linger passed since its first message.
//
// Each queue is a lane with at most one batch in flight, so that the queue stores its messages
// in the order SendAsync took them: the broker serves concurrent requests on several workers
// and may store them in any order. While a batch is in flight the next one keeps gathering
// (it leaves when the lane is free, if its linger passed by then), so under load batches grow
// instead of queueing up as many small requests.
//
// Every batched message holds what an unbatched SendAsync holds until its callback ran: a
// place among the async sends in flight (WithMaxAsyncInFlight bounds the messages waiting in
// batches too) and a send Close waits for.

// batchElementOverhead is the size of a SEND_BATCH_MESSAGE element besides its body and
// properties (docs/protocol.md §9.6).
const batchElementOverhead = 22

// asyncBatcher holds the lanes of a producer with WithAsyncBatching.
type asyncBatcher struct {
	p        *Producer
	linger   time.Duration
	maxBytes int

	// buffers holds batch bodies whose request is over, for new batches.
	buffers sync.Pool

	mu    sync.Mutex
	lanes map[MessageQueue]*lane // only lanes with a batch open, waiting or in flight
	// closed is set when Close sent what was open: later messages (of SendAsync calls that
	// began before) do not linger.
	closed bool
}

func newAsyncBatcher(p *Producer) *asyncBatcher {
	return &asyncBatcher{p: p, linger: p.cfg.batchLinger, maxBytes: p.cfg.batchMaxBytes,
		lanes: make(map[MessageQueue]*lane)}
}

// lane is one queue's batches. busy and pumping keep one batch of the lane between its first
// attempt and its callbacks at a time.
type lane struct {
	q    MessageQueue
	open *asyncBatch   // gathering messages; nil when none
	full []*asyncBatch // closed by size, oldest first, waiting for the lane
	busy bool          // a batch of the lane was taken and its callbacks have not all run
	// pumping is set while a goroutine runs pump for the lane: a batch that ends before the
	// goroutine looks again leaves the next one to it, so batches failing at once do not
	// recurse.
	pumping bool
}

// idle reports whether nothing holds the lane, so that whoever makes a batch ready starts it.
func (l *lane) idle() bool { return !l.busy && !l.pumping }

// asyncBatch is one SEND_BATCH_MESSAGE in the making.
type asyncBatch struct {
	b         *asyncBatcher
	lane      *lane
	topic     string
	wireTopic string
	pi        *publishInfo // of its first message; its retries pick from it (and refresh it)
	body      []byte
	msgs      []batched
	deadline  time.Time // the soonest of its messages' send deadlines
	// due is set once the batch lingered long enough: it leaves as soon as its lane is free.
	due   bool
	timer *time.Timer // ends the linger; nil once due
}

// batched is a message of a batch.
type batched struct {
	msgID string // UNIQ_KEY
	cb    func(*SendResult, error)
}

// batchable reports whether msg may go in a batch: what the broker refuses in one (a delay
// level, a retry topic, a transaction half message, RocketMQ 5's canBatch rules), what would
// change meaning for the other messages (the broker reads WAIT from a batch's first message
// only), a message group (whose queue is the group's, not the batch lane's), and bodies the
// producer would compress (batch elements are not compressed).
func (p *Producer) batchable(msg *Message) bool {
	if msg.DelayTimeLevel > 0 || msg.MessageGroup != "" || strings.HasPrefix(msg.Topic, names.RetryPrefix) {
		return false
	}
	if len(msg.Properties) > 0 {
		for _, k := range [...]string{message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
			message.PropertyTransactionPrepared, message.PropertyProducerGroup, message.PropertyWaitStoreMsgOK} {
			if _, ok := msg.Properties[k]; ok {
				return false
			}
		}
	}
	return p.cfg.compressOver <= 0 || len(msg.Body) < p.cfg.compressOver
}

// acquireAsync takes a place among the async sends in flight, waiting for one until ctx ends.
// Before waiting it lets the open batches leave without lingering: their answers are what
// frees places, so lingering would only idle.
func (p *Producer) acquireAsync(ctx context.Context) error {
	select {
	case p.asyncSem <- struct{}{}:
		return nil
	default:
	}
	if p.batches != nil {
		p.batches.flush(false)
	}
	select {
	case p.asyncSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("producer: waiting for room among %d async sends in flight: %w", cap(p.asyncSem), ctx.Err())
	}
}

// add puts msg, validated and batchable, with its place in flight and its begin taken, into
// the open batch of the queue it picks. It returns false, with nothing done, when msg's
// element alone would not fit maxBytes: it goes alone.
func (b *asyncBatcher) add(ctx context.Context, msg *Message, cb func(*SendResult, error)) (bool, error) {
	p := b.p
	wire := p.wireTopic(msg.Topic)
	pi, err := p.publishInfo(ctx, wire)
	if err != nil {
		return false, err
	}
	msgID, props := encodeElementProperties(msg)
	size := batchElementOverhead + len(msg.Body) + len(props)
	if size > b.maxBytes {
		return false, nil
	}
	q := p.selectQueue(pi, "")
	deadline := p.deadline(ctx)

	b.mu.Lock()
	l := b.lanes[q]
	if l == nil {
		l = &lane{q: q}
		b.lanes[q] = l
	}
	if o := l.open; o != nil && len(o.body)+size > b.maxBytes {
		o.stopLinger()
		l.full = append(l.full, o)
		l.open = nil
	}
	o := l.open
	if o == nil {
		o = b.openBatch(l, msg.Topic, wire, pi, deadline, size)
	}
	o.body = message.AppendBatchElement(growBatch(o.body, size, b.maxBytes), msg.Flag, msg.Body, props)
	o.msgs = append(o.msgs, batched{msgID: msgID, cb: cb})
	if deadline.Before(o.deadline) {
		o.deadline = deadline
	}
	b.startIfIdleAndUnlock(l)
	return true, nil
}

// startIfIdleAndUnlock takes the lane's ready batch when nothing holds the lane, unlocks b.mu
// and starts the batch taken.
func (b *asyncBatcher) startIfIdleAndUnlock(l *lane) {
	var next *asyncBatch
	if l.idle() {
		next = b.takeLocked(l)
	}
	b.mu.Unlock()
	if next != nil {
		b.pump(l, next)
	}
}

// encodeElementProperties is encode's UNIQ_KEY and properties for a batch element.
func encodeElementProperties(msg *Message) (msgID, props string) { return encodeProperties(msg) }

// firstBatchBuffer is a new batch's buffer (at most maxBytes): all of a batch of the default
// maxBytes, a start for larger ones, so a lone message does not cost a buffer of maxBytes.
const firstBatchBuffer = DefaultAsyncBatchMaxBytes

// maxFirstBatchMsgs bounds the room a new batch makes for messages before it knows how many
// will come.
const maxFirstBatchMsgs = 256

// growBatch makes room for n more bytes in body, doubling up to maxBytes.
func growBatch(body []byte, n, maxBytes int) []byte {
	if len(body)+n <= cap(body) {
		return body
	}
	c := max(len(body)+n, min(2*cap(body), maxBytes))
	return append(make([]byte, 0, c), body...)
}

// openBatch starts the open batch of l; b.mu is held.
func (b *asyncBatcher) openBatch(l *lane, topic, wire string, pi *publishInfo, deadline time.Time, size int) *asyncBatch {
	o := &asyncBatch{b: b, lane: l, topic: topic, wireTopic: wire, pi: pi, deadline: deadline}
	if buf, ok := b.buffers.Get().(*[]byte); ok {
		o.body = (*buf)[:0]
	} else {
		o.body = make([]byte, 0, min(b.maxBytes, max(size, firstBatchBuffer)))
	}
	o.msgs = make([]batched, 0, min(cap(o.body)/size+1, maxFirstBatchMsgs))
	if b.linger <= 0 || b.closed {
		o.due = true
	} else {
		o.timer = time.AfterFunc(b.linger, o.lingered)
	}
	l.open = o
	return o
}

// stopLinger ends the batch's linger early; b.mu is held.
func (o *asyncBatch) stopLinger() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.due = true
}

// lingered is the end of the open batch o's linger: it leaves now, or when its lane is free.
func (o *asyncBatch) lingered() {
	b, l := o.b, o.lane
	b.mu.Lock()
	if l.open != o || o.timer == nil { // already closed by size or flushed
		b.mu.Unlock()
		return
	}
	o.timer, o.due = nil, true
	b.startIfIdleAndUnlock(l)
}

// flush sends the open batches of idle lanes now and lets those of busy lanes leave as soon as
// their lane is free; closing (Close) also makes every later batch leave without lingering.
func (b *asyncBatcher) flush(closing bool) {
	type start struct {
		l  *lane
		bt *asyncBatch
	}
	var starts []start
	b.mu.Lock()
	if closing {
		b.closed = true
	}
	for _, l := range b.lanes {
		if l.open != nil {
			l.open.stopLinger()
		}
		if l.idle() {
			if bt := b.takeLocked(l); bt != nil {
				starts = append(starts, start{l, bt})
			}
		}
	}
	b.mu.Unlock()
	for _, s := range starts {
		b.pump(s.l, s.bt)
	}
}

// takeLocked takes the batch of l that should leave next, if any: the oldest full one, else the
// open one once due. It marks l busy and pumping (the caller pumps what it took), and forgets
// a lane left with nothing. b.mu is held and l is not busy.
func (b *asyncBatcher) takeLocked(l *lane) *asyncBatch {
	var bt *asyncBatch
	switch {
	case len(l.full) > 0:
		bt = l.full[0]
		l.full[0] = nil
		l.full = l.full[1:]
	case l.open != nil && l.open.due:
		bt = l.open
		l.open = nil
	}
	if bt == nil {
		if l.open == nil && !l.pumping {
			delete(b.lanes, l.q)
		}
		return nil
	}
	l.busy, l.pumping = true, true
	return bt
}

// pump sends bt, taken from l, and then each batch of l that is ready when the one before has
// been answered by the time bt's attempt is on its way; a batch answered later starts the next
// from its callbacks (done).
func (b *asyncBatcher) pump(l *lane, bt *asyncBatch) {
	for bt != nil {
		bt.send()
		b.mu.Lock()
		bt = nil
		if !l.busy {
			bt = b.takeLocked(l)
		}
		if bt == nil {
			l.pumping = false
			if !l.busy && l.open == nil && len(l.full) == 0 {
				delete(b.lanes, l.q)
			}
		}
		b.mu.Unlock()
	}
}

// done frees l after a batch's callbacks ran and starts its next batch, unless a pump of the
// lane is still looking and will.
func (b *asyncBatcher) done(l *lane) {
	b.mu.Lock()
	l.busy = false
	var next *asyncBatch
	if !l.pumping {
		next = b.takeLocked(l)
	}
	b.mu.Unlock()
	if next != nil {
		b.pump(l, next)
	}
}

// send starts the batch as a send of its own: async retries, its messages' soonest deadline,
// the first attempt on its lane's queue. Its place in flight and its begin are those of its
// last message; answered frees the others'.
func (o *asyncBatch) send() {
	p := o.b.p
	s := &send{p: p, topic: o.topic, wireTopic: o.wireTopic, deadline: o.deadline, retries: p.cfg.asyncRetries,
		waitUnreachable: p.cfg.retryUnreachable, pi: o.pi, msg: encoded{body: o.body, batch: true}}
	s.callback = o.answered
	q := o.lane.q
	s.first = &q
	s.runAsync()
}

// answered runs every message's callback, in the batch's order, with its own result or the
// batch's error, frees the places of all but the last message (send.complete frees that one
// after this returns) and lets the lane go on.
func (o *asyncBatch) answered(res *SendResult, err error) {
	p := o.b.p
	var results []SendResult
	if err == nil {
		results = splitBatchResult(res, o.msgs)
	}
	if err == nil && res.Attempts == 1 {
		// The only request that carried the body has been answered: the broker has stored
		// it and the transport is done with it.
		body := o.body
		o.b.buffers.Put(&body)
	}
	o.body = nil
	last := len(o.msgs) - 1
	for i, m := range o.msgs {
		if err == nil {
			p.callBatched(m.cb, o.topic, &results[i], nil)
		} else {
			p.callBatched(m.cb, o.topic, nil, err)
		}
		if i < last {
			<-p.asyncSem
			p.end()
		}
	}
	o.b.done(o.lane)
}

// splitBatchResult is a result per message of a stored batch: its own UNIQ_KEY and, when the
// broker named one offset message id per message (ours and RocketMQ 4.x's CommitLog store a
// batch at consecutive offsets of its queue, and answer the first offset and every id), its
// own offset id and queue offset. Otherwise each result keeps the batch's answer, as RocketMQ
// 5's ProduceAccumulator does.
func splitBatchResult(res *SendResult, msgs []batched) []SendResult {
	out := make([]SendResult, len(msgs))
	offsetIDs := res.OffsetMsgID
	each := strings.Count(offsetIDs, ",") == len(msgs)-1
	for i, m := range msgs {
		r := *res
		r.MsgID = m.msgID
		if each {
			r.OffsetMsgID, offsetIDs, _ = strings.Cut(offsetIDs, ",")
			r.QueueOffset += int64(i)
		}
		out[i] = r
	}
	return out
}

// callBatched runs one message's callback; a panic is logged and does not keep the rest of
// the batch from theirs.
func (p *Producer) callBatched(cb func(*SendResult, error), topic string, res *SendResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error().Interface("panic", r).Str("topic", topic).Msg("send callback panicked")
		}
	}()
	cb(res, err)
}
