package producer

import (
	"context"
	"fmt"
	"time"
)

// The send pipeline. Every Send method takes its message through the same steps, each in one
// file, in this order:
//
//	1 validate  validate.go  the message, before any I/O
//	2 route     route.go     the topic's writable queues, cached per topic
//	3 select    select.go    the queue of an attempt: round robin away from the broker that
//	                         just failed (and isolated ones, fault.go), or the caller's
//	                         selector or queue
//	4 encode    encode.go    body and properties once per send, the header per attempt
//	5 invoke    invoke.go    the attempt: sync, oneway or async
//	6 result    result.go    the broker's answer as a SendResult or an error
//
// Steps 3 to 6 run once per attempt, on a send (below): the message past step 2, encoded, with
// what its attempts so far taught. After each attempt the retry policy (retry.go), the same
// for the three ways of invoking, feeds the fault strategy and decides whether another starts.

// SendSync sends msg and waits until a broker stored it. Retryable failures (transport errors,
// SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST) are retried on another
// broker than the one that just failed, up to the retries option while the send timeout lasts
// (RocketMQ's sendDefaultImpl); brokers that cannot be reached at all are waited for until the
// timeout (WithRetryUnreachableUntilTimeout). A *SendError lists every attempt.
func (p *Producer) SendSync(ctx context.Context, msg *Message) (*SendResult, error) {
	if err := p.validate(msg); err != nil {
		return nil, err
	}
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.end()
	s, err := p.newSend(ctx, msg.Topic)
	if err != nil {
		return nil, err
	}
	s.pinGroup(msg.MessageGroup)
	s.msg = p.encode(msg)
	return p.tracedSync(ctx, s, msg)
}

// SendBatch sends msgs, all to one topic, in one SEND_BATCH_MESSAGE request, stored
// consecutively in one queue; retried like SendSync. Delayed messages cannot be batched, and
// the encoded batch must fit the max message size. Messages with a MessageGroup must all have
// the same one; the batch goes to its queue.
func (p *Producer) SendBatch(ctx context.Context, msgs ...*Message) (*SendResult, error) {
	if err := p.validateBatch(msgs); err != nil {
		return nil, err
	}
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.end()
	s, err := p.newSend(ctx, msgs[0].Topic)
	if err != nil {
		return nil, err
	}
	s.pinGroup(msgs[0].MessageGroup)
	s.msg = p.encodeBatch(msgs)
	return s.runSync(ctx)
}

// SendOneway sends msg once without waiting for the broker, and is never retried (RocketMQ
// makes one attempt of a one-way send: a retry could store it twice). The error says only
// that the request could not be handed to the transport; nothing tells whether it was stored.
func (p *Producer) SendOneway(ctx context.Context, msg *Message) error {
	if err := p.validate(msg); err != nil {
		return err
	}
	if !p.begin() {
		return ErrClosed
	}
	defer p.end()
	s, err := p.newSend(ctx, msg.Topic)
	if err != nil {
		return err
	}
	s.retries, s.waitUnreachable = 0, false
	s.pinGroup(msg.MessageGroup)
	s.msg = p.encode(msg)
	return s.runOneway(ctx)
}

// SendToQueue sends msg to exactly q (one attempt, no retry elsewhere; while q's broker cannot
// be reached it is waited for, see WithRetryUnreachableUntilTimeout).
func (p *Producer) SendToQueue(ctx context.Context, msg *Message, q MessageQueue) (*SendResult, error) {
	if err := p.validate(msg); err != nil {
		return nil, err
	}
	if q.Topic != "" && q.Topic != msg.Topic {
		return nil, invalid("queue %s is not of topic %s", q, msg.Topic)
	}
	q.Topic = msg.Topic
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.end()
	s, err := p.newSend(ctx, msg.Topic)
	if err != nil {
		return nil, err
	}
	s.to(q)
	s.msg = p.encode(msg)
	return p.tracedSync(ctx, s, msg)
}

// SendOrdered sends msg to the queue sel picks for arg (for example HashSelector with an
// order id), so messages with the same arg keep their order in one queue. With StrictOrder a
// failure is returned and never retried elsewhere; with FailoverOrder the message goes to the
// next available queue while the selected queue's broker is isolated (see Ordering). The
// selector's time counts against the send timeout: when the timeout is spent once it returns,
// nothing is sent and the error wraps remoting.ErrTimeout (RocketMQ's sendSelectImpl).
func (p *Producer) SendOrdered(ctx context.Context, msg *Message, sel MessageQueueSelector, arg any, ord Ordering) (*SendResult, error) {
	if err := p.validate(msg); err != nil {
		return nil, err
	}
	if sel == nil {
		return nil, fmt.Errorf("%w: nil selector", ErrSelector)
	}
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.end()
	s, err := p.newSend(ctx, msg.Topic)
	if err != nil {
		return nil, err
	}
	q, err := p.selectOrdered(s.pi, msg, sel, arg, ord)
	if err != nil {
		return nil, err
	}
	s.to(q)
	s.msg = p.encode(msg)
	return p.tracedSync(ctx, s, msg)
}

// SendAsync sends msg and returns without waiting. cb runs exactly once with the result or a
// *SendError — on a goroutine of the producer, or before SendAsync returns when no attempt
// could even start — unless SendAsync itself returns an error
// (invalid message, closed producer, no route), in which case cb never runs. An attempt whose
// request got no answer (not sent, connection lost, timed out) is retried on another broker
// than the one that just failed, up to the async retries option within the send timeout (and
// while no broker can be reached, until the timeout, on a timer: see
// WithRetryUnreachableUntilTimeout); an error code from the broker is not retried (RocketMQ's
// onExceptionImpl). A panic in cb is
// recovered and logged. Close waits for callbacks still pending (up to its timeout). While
// the max number of async sends are in flight, SendAsync blocks until one finishes or ctx
// ends. With WithAsyncBatching, msg may wait in a batch with others to its queue, sent
// together (see there).
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb func(*SendResult, error)) error {
	if err := p.validate(msg); err != nil {
		return err
	}
	if cb == nil {
		return invalid("nil callback")
	}
	cb = p.tracedCallback(msg, cb)
	if err := p.acquireAsync(ctx); err != nil {
		return err
	}
	if !p.begin() {
		<-p.asyncSem
		return ErrClosed
	}
	if p.batches != nil && p.batchable(msg) {
		batched, err := p.batches.add(ctx, msg, cb)
		if err != nil {
			<-p.asyncSem
			p.end()
			return err
		}
		if batched {
			return nil
		}
	}
	s, err := p.newSend(ctx, msg.Topic)
	if err != nil {
		<-p.asyncSem
		p.end()
		return err
	}
	s.retries = p.cfg.asyncRetries
	s.pinGroup(msg.MessageGroup)
	s.msg = p.encode(msg)
	s.callback = cb
	s.runAsync()
	return nil
}

// send is one message or batch past its route lookup: its encoding and what its attempts so far
// taught. Only one attempt of a send runs at a time (an async retry starts from the previous
// attempt's answer), so its fields need no lock.
type send struct {
	p         *Producer
	topic     string // as the caller named it
	wireTopic string // with the namespace
	msg       encoded
	deadline  time.Time // of all attempts
	// retries is how many attempts may follow the first of a round: the retries option
	// (async: the async retries option), or 0 for a one-way send or a queue the caller chose
	// (to). The first round starts with the send; each pause for an unreachable broker starts
	// another (unreachable.go).
	retries int
	// waitUnreachable lets attempts that could not reach their broker go on, with pauses,
	// until the deadline (WithRetryUnreachableUntilTimeout; never for a one-way send).
	waitUnreachable bool
	round           int           // index in failure.Attempts where this round began
	pauses          int           // pauses so far, which sets the next one's length
	pause           time.Duration // to wait before the next attempt; 0: at once
	pi              *publishInfo  // the route next picks from; nil for a queue the caller chose
	queue           MessageQueue  // the queue the caller chose
	// first, when set, is the queue of the first attempt, picked before the send began (a
	// batch's, whose messages chose it); the attempts after it pick theirs.
	first *MessageQueue
	// failure lists the failed attempts, and is the send's error once no attempt is left; nil
	// while none failed, so a send stored at the first attempt does not pay for it.
	failure *SendError
	// callback is SendAsync's; nil for the sends the caller waits for.
	callback func(*SendResult, error)
}

// newSend starts a send to the user topic topic: the deadline of all its attempts (the send
// timeout, or ctx's deadline when sooner), then its route (step 2).
func (p *Producer) newSend(ctx context.Context, topic string) (*send, error) {
	s := &send{p: p, topic: topic, wireTopic: p.wireTopic(topic), deadline: p.deadline(ctx), retries: p.cfg.retries,
		waitUnreachable: p.cfg.retryUnreachable}
	pi, err := p.publishInfo(ctx, s.wireTopic)
	if err != nil {
		return nil, err
	}
	s.pi = pi
	return s, nil
}

// to sends to q, which the caller chose (SendToQueue, SendOrdered), in one attempt: a retry
// elsewhere would break what q was chosen for.
func (s *send) to(q MessageQueue) {
	s.pi, s.queue, s.retries = nil, q, 0
}

// deadline is when a send that starts now must be over.
func (p *Producer) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(p.cfg.sendTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}
