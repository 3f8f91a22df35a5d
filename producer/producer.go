package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Producer sends messages to RocketMQ 4.x brokers (this module's nodes or Apache's), in-process
// or over TCP. It is ready when New returns and safe for concurrent use; Close it when done.
type Producer struct {
	cfg       config
	wireGroup string
	inst      *client.Instance
	tr        remoting.Transport
	log       zerolog.Logger
	fault     *faultTolerance

	pubMu sync.RWMutex
	pubs  map[string]*publishInfo // wire topic -> queues

	// life guards closed against the Add of inflight: a send registers under the read lock,
	// Close flips closed under the write lock and then waits.
	life     sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
	asyncSem chan struct{} // one token per SendAsync awaiting its callback

	closeOnce sync.Once
	closeErr  error
}

// New validates the options, acquires the shared client instance and registers the group.
// There is no Start: the producer is ready when New returns. The first send to a topic fetches
// its route.
func New(opts ...Option) (*Producer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	for _, tr := range cfg.owned {
		if tr != nil && tr != cfg.transport {
			_ = tr.Close() // handed over, then replaced by a later option
		}
	}
	if err := cfg.validate(); err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			_ = cfg.transport.Close()
		}
		return nil, err
	}
	inst, err := client.Acquire(client.Options{
		NameServers:             cfg.nameServers,
		InstanceName:            cfg.instanceName,
		Transport:               cfg.transport,
		OwnTransport:            cfg.ownTransport,
		PollNameServerInterval:  cfg.pollInterval,
		HeartbeatBrokerInterval: cfg.heartbeatInterval,
		Namespace:               cfg.namespace,
		Logger:                  cfg.logger,
	})
	if err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			_ = cfg.transport.Close()
		}
		return nil, err
	}
	p := &Producer{
		cfg:       cfg,
		wireGroup: cfg.group,
		inst:      inst,
		tr:        inst.Transport(),
		fault:     newFaultTolerance(cfg.now),
		pubs:      make(map[string]*publishInfo),
		asyncSem:  make(chan struct{}, cfg.maxAsyncInFlight),
	}
	if cfg.namespace != "" {
		p.wireGroup = cfg.namespace + "%" + cfg.group
	}
	l := inst.Logger()
	p.log = l.With().Str("component", "producer").Str("group", p.wireGroup).Logger()
	if err := inst.RegisterProducer(p.wireGroup); err != nil {
		return nil, errors.Join(err, inst.Release())
	}
	return p, nil
}

// ClientID returns the client id (ip@instance) brokers see.
func (p *Producer) ClientID() string { return p.inst.ClientID() }

// Close stops accepting sends, waits for in-flight sends (sync and async, at most the close
// timeout; async callbacks still run afterwards if their responses arrive), unregisters the
// group from the brokers and releases the client instance. It is safe to call more than once.
func (p *Producer) Close() error {
	p.closeOnce.Do(func() {
		p.life.Lock()
		p.closed = true
		p.life.Unlock()
		done := make(chan struct{})
		go func() { p.inflight.Wait(); close(done) }()
		t := time.NewTimer(p.cfg.closeTimeout)
		select {
		case <-done:
		case <-t.C:
			p.log.Warn().Dur("timeout", p.cfg.closeTimeout).Msg("closing with sends still in flight")
		}
		t.Stop()
		p.inst.UnregisterProducer(p.wireGroup)
		p.closeErr = p.inst.Release()
	})
	return p.closeErr
}

// begin registers an in-flight send; false once the producer is closed.
func (p *Producer) begin() bool {
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

// deadline is when a send that starts now must be over.
func (p *Producer) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(p.cfg.sendTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// retryable reports whether an attempt that failed with err may go to another broker.
func retryable(err error) bool {
	var re *remoting.ResponseError
	if errors.As(err, &re) {
		return re.Retryable()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, remoting.ErrClosed) {
		return false
	}
	var he *remoting.HeaderError
	return !errors.As(err, &he)
}

// isolates reports whether a failure counts against the broker in the fault strategy:
// transport errors and retryable codes do; a refused message does not.
func isolates(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	return retryable(err)
}

// SendSync sends msg and waits until a broker stored it. Retryable failures (transport errors,
// SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST) are retried on another
// broker up to the retries option while the send timeout lasts; a *SendError lists every
// attempt.
func (p *Producer) SendSync(ctx context.Context, msg *Message) (*SendResult, error) {
	if err := p.validate(msg); err != nil {
		return nil, err
	}
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.inflight.Done()
	return p.sendWithRetries(ctx, p.prepare(msg))
}

// SendBatch sends msgs, all to one topic, in one SEND_BATCH_MESSAGE request, stored
// consecutively in one queue; retried like SendSync. Delayed messages cannot be batched, and
// the encoded batch must fit the max message size.
func (p *Producer) SendBatch(ctx context.Context, msgs ...*Message) (*SendResult, error) {
	if err := p.validateBatch(msgs); err != nil {
		return nil, err
	}
	if !p.begin() {
		return nil, ErrClosed
	}
	defer p.inflight.Done()
	return p.sendWithRetries(ctx, p.prepareBatch(msgs))
}

func (p *Producer) validateBatch(msgs []*Message) error {
	if len(msgs) == 0 {
		return invalid("empty batch")
	}
	size := 0
	for _, m := range msgs {
		if err := p.validate(m); err != nil {
			return err
		}
		if m.Topic != msgs[0].Topic {
			return invalid("batch mixes topics %s and %s", msgs[0].Topic, m.Topic)
		}
		if m.DelayTimeLevel > 0 {
			return invalid("a batch cannot hold delayed messages")
		}
		size += 22 + len(m.Body) + 64
	}
	if size > p.cfg.maxMessageSize {
		return invalid("batch of about %d bytes exceeds the max message size %d", size, p.cfg.maxMessageSize)
	}
	return nil
}

func (p *Producer) sendWithRetries(ctx context.Context, pr *prepared) (*SendResult, error) {
	deadline := p.deadline(ctx)
	pi, err := p.publishInfo(ctx, pr.wireTopic)
	if err != nil {
		return nil, err
	}
	se := &SendError{Topic: pr.topic}
	var avoid []string
	for attempt := 0; attempt <= p.cfg.retries; attempt++ {
		if attempt > 0 {
			if !time.Now().Before(deadline) {
				se.Cause = fmt.Errorf("send timeout %v spent: %w", p.cfg.sendTimeout, remoting.ErrTimeout)
				break
			}
			if pi2, err := p.publishInfo(ctx, pr.wireTopic); err == nil {
				pi = pi2
			}
		}
		q := p.selectQueue(pi, avoid)
		res, addr, err := p.attemptSync(ctx, deadline, q, pr)
		if err == nil {
			res.Attempts = attempt + 1
			return res, nil
		}
		se.Attempts = append(se.Attempts, Attempt{Queue: q, Addr: addr, Err: err})
		avoid = append(avoid, q.BrokerName)
		if attempt > 0 {
			p.log.Debug().Err(err).Str("broker", q.BrokerName).Int("attempt", attempt+1).Msg("send attempt failed")
		}
		if !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	se.AllBrokersFailed = allFailed(pi.brokers, se.Attempts)
	return nil, se
}

func allFailed(brokers []string, attempts []Attempt) bool {
	for _, b := range brokers {
		found := false
		for _, a := range attempts {
			if a.Queue.BrokerName == b {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return len(brokers) > 0
}

// attemptSync sends pr to q once and feeds the fault strategy.
func (p *Producer) attemptSync(ctx context.Context, deadline time.Time, q MessageQueue, pr *prepared) (*SendResult, string, error) {
	addr := p.inst.MasterAddr(q.BrokerName)
	if addr == "" {
		p.fault.update(q.BrokerName, 0, true)
		return nil, "", fmt.Errorf("%w: no master address known for broker %s", ErrNoRoute, q.BrokerName)
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	start := time.Now()
	resp, err := p.tr.InvokeSync(actx, addr, p.command(q, pr))
	cancel()
	latency := time.Since(start)
	var res *SendResult
	if err == nil {
		res, err = p.result(resp, q, pr)
	}
	p.fault.update(q.BrokerName, latency, err != nil && isolates(err))
	return res, addr, err
}

// SendOneway sends msg without waiting for the broker; only failures to hand the request to
// the transport are retried (on another broker). Nothing tells whether it was stored.
func (p *Producer) SendOneway(ctx context.Context, msg *Message) error {
	if err := p.validate(msg); err != nil {
		return err
	}
	if !p.begin() {
		return ErrClosed
	}
	defer p.inflight.Done()
	pr := p.prepare(msg)
	pi, err := p.publishInfo(ctx, pr.wireTopic)
	if err != nil {
		return err
	}
	deadline := p.deadline(ctx)
	se := &SendError{Topic: pr.topic}
	var avoid []string
	for attempt := 0; attempt <= p.cfg.retries && time.Now().Before(deadline); attempt++ {
		q := p.selectQueue(pi, avoid)
		addr := p.inst.MasterAddr(q.BrokerName)
		if addr == "" {
			err = fmt.Errorf("%w: no master address known for broker %s", ErrNoRoute, q.BrokerName)
		} else {
			actx, cancel := context.WithDeadline(ctx, deadline)
			err = p.tr.InvokeOneway(actx, addr, p.command(q, pr))
			cancel()
		}
		if err == nil {
			return nil
		}
		p.fault.update(q.BrokerName, 0, isolates(err))
		se.Attempts = append(se.Attempts, Attempt{Queue: q, Addr: addr, Err: err})
		avoid = append(avoid, q.BrokerName)
		if !retryable(err) {
			break
		}
	}
	se.AllBrokersFailed = allFailed(pi.brokers, se.Attempts)
	return se
}

// SendToQueue sends msg to exactly q (one attempt, no retry elsewhere).
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
	defer p.inflight.Done()
	pr := p.prepare(msg)
	if _, err := p.publishInfo(ctx, pr.wireTopic); err != nil {
		return nil, err
	}
	return p.sendOnce(ctx, q, pr)
}

func (p *Producer) sendOnce(ctx context.Context, q MessageQueue, pr *prepared) (*SendResult, error) {
	res, addr, err := p.attemptSync(ctx, p.deadline(ctx), q, pr)
	if err != nil {
		return nil, &SendError{Topic: pr.topic, Attempts: []Attempt{{Queue: q, Addr: addr, Err: err}}}
	}
	res.Attempts = 1
	return res, nil
}

// SendOrdered sends msg to the queue sel picks for arg (for example HashSelector with an
// order id), so messages with the same arg keep their order in one queue. With StrictOrder a
// failure is returned and never retried elsewhere; with FailoverOrder the message goes to the
// next available queue while the selected queue's broker is isolated (see Ordering).
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
	defer p.inflight.Done()
	pr := p.prepare(msg)
	pi, err := p.publishInfo(ctx, pr.wireTopic)
	if err != nil {
		return nil, err
	}
	q, err := p.selectOrdered(pi, msg, sel, arg, ord)
	if err != nil {
		return nil, err
	}
	return p.sendOnce(ctx, q, pr)
}

func (p *Producer) selectOrdered(pi *publishInfo, msg *Message, sel MessageQueueSelector, arg any, ord Ordering) (q MessageQueue, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic: %v", ErrSelector, r)
		}
	}()
	q = sel.Select(pi.queues, msg, arg)
	idx := indexOf(pi.queues, q)
	if idx < 0 {
		return q, fmt.Errorf("%w: selected queue %s is not a writable queue of topic %s", ErrSelector, q, msg.Topic)
	}
	q = pi.queues[idx]
	if ord != FailoverOrder || p.fault.available(q.BrokerName) {
		return q, nil
	}
	n := len(pi.queues)
	for i := 1; i < n; i++ {
		alt := pi.queues[(idx+i)%n]
		if p.fault.available(alt.BrokerName) {
			return alt, nil
		}
	}
	return q, nil
}
