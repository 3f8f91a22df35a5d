package producer

import (
	"context"
	"fmt"
	"time"

	"github.com/mqgo/mq/remoting"
)

// SendAsync sends msg and returns without waiting. cb runs exactly once with the result or a
// *SendError — on a goroutine of the producer, or before SendAsync returns when no attempt
// could even start — unless SendAsync itself returns an error
// (invalid message, closed producer, no route), in which case cb never runs. Failed attempts
// are retried on another broker like SendSync's, within the send timeout. A panic in cb is
// recovered and logged. Close waits for callbacks still pending (up to its timeout). While
// the max number of async sends are in flight, SendAsync blocks until one finishes or ctx
// ends.
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb func(*SendResult, error)) error {
	if err := p.validate(msg); err != nil {
		return err
	}
	if cb == nil {
		return invalid("nil callback")
	}
	select {
	case p.asyncSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("producer: waiting for room among %d async sends in flight: %w", cap(p.asyncSem), ctx.Err())
	}
	if !p.begin() {
		<-p.asyncSem
		return ErrClosed
	}
	pr := p.prepare(msg)
	pi, err := p.publishInfo(ctx, pr.wireTopic)
	if err != nil {
		<-p.asyncSem
		p.inflight.Done()
		return err
	}
	a := &asyncSend{p: p, pr: pr, pi: pi, cb: cb, deadline: p.deadline(ctx)}
	a.se.Topic = pr.topic
	a.try()
	return nil
}

// asyncSend is one SendAsync in flight; only one attempt of it runs at a time, so its fields
// need no lock.
type asyncSend struct {
	p        *Producer
	pr       *prepared
	pi       *publishInfo
	cb       func(*SendResult, error)
	deadline time.Time
	attempt  int
	avoid    []string
	se       SendError
}

// try starts the next attempt; failures to start one are handled (retried or finished) here.
func (a *asyncSend) try() {
	for {
		q := a.p.selectQueue(a.pi, a.avoid)
		addr := a.p.inst.MasterAddr(q.BrokerName)
		if addr == "" {
			if a.failed(q, addr, fmt.Errorf("%w: no master address known for broker %s", ErrNoRoute, q.BrokerName), 0) {
				continue
			}
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), a.deadline)
		start := time.Now()
		err := a.p.tr.InvokeAsync(ctx, addr, a.p.command(q, a.pr), func(resp *remoting.Command, err error) {
			cancel()
			latency := time.Since(start)
			// Off the transport's goroutine: the callback may be slow and a retry may dial.
			go a.complete(q, addr, latency, resp, err)
		})
		if err == nil {
			return
		}
		cancel()
		if !a.failed(q, addr, err, time.Since(start)) {
			return
		}
	}
}

func (a *asyncSend) complete(q MessageQueue, addr string, latency time.Duration, resp *remoting.Command, err error) {
	var res *SendResult
	if err == nil {
		res, err = a.p.result(resp, q, a.pr)
	}
	if err == nil {
		a.p.fault.update(q.BrokerName, latency, false)
		res.Attempts = a.attempt + 1
		a.finish(res, nil)
		return
	}
	if a.failed(q, addr, err, latency) {
		if pi, err := a.p.publishInfo(context.Background(), a.pr.wireTopic); err == nil {
			a.pi = pi
		}
		a.try()
	}
}

// failed records a failed attempt. It returns true when another attempt should start;
// otherwise it has finished the send with a *SendError.
func (a *asyncSend) failed(q MessageQueue, addr string, err error, latency time.Duration) bool {
	a.p.fault.update(q.BrokerName, latency, isolates(err))
	a.se.Attempts = append(a.se.Attempts, Attempt{Queue: q, Addr: addr, Err: err})
	a.avoid = append(a.avoid, q.BrokerName)
	a.attempt++
	if retryable(err) && a.attempt <= a.p.cfg.retries {
		if time.Now().Before(a.deadline) {
			return true
		}
		a.se.Cause = fmt.Errorf("send timeout %v spent: %w", a.p.cfg.sendTimeout, remoting.ErrTimeout)
	}
	a.se.AllBrokersFailed = allFailed(a.pi.brokers, a.se.Attempts)
	a.finish(nil, &a.se)
	return false
}

func (a *asyncSend) finish(res *SendResult, err error) {
	defer a.p.inflight.Done()
	defer func() { <-a.p.asyncSem }()
	defer func() {
		if r := recover(); r != nil {
			a.p.log.Error().Interface("panic", r).Str("topic", a.pr.topic).Msg("send callback panicked")
		}
	}()
	a.cb(res, err)
}
