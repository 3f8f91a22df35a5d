package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/remoting"
)

// The retry policy around steps 3 to 6 (send.go). Sync, oneway and async sends differ in how
// they wait for an attempt (invoke.go) and in how many attempts they get, as in RocketMQ 4.9:
// a sync send up to 1 + retries (retryTimesWhenSendFailed), a one-way send one, an async send
// 1 + async retries (retryTimesWhenSendAsyncFailed) counting only attempts that got no answer.
// What comes before an attempt (timeLeft, next in select.go) and after it (succeeded, failed)
// is one code, so they choose queues, isolate brokers and time out alike. An attempt that
// could not reach its broker at all is the exception to the counts (unreachable.go).

// succeeded feeds an attempt on q that the broker answered in latency to the fault strategy
// (a fast answer ends the broker's isolation) and counts the attempts into res.
func (s *send) succeeded(q MessageQueue, latency time.Duration, res *SendResult) *SendResult {
	s.p.fault.update(q.BrokerName, latency, false)
	res.Attempts = 1
	if s.failure != nil {
		res.Attempts += len(s.failure.Attempts)
	}
	return res
}

// failed records an attempt on q (to addr, "" when no master was known) that failed with err
// after latency, and isolates q's broker when err says something about it. It returns true
// when another attempt may start: err retryable for this kind of send, ctx alive and attempts
// left in this round, or err says the broker could not be reached and the send may wait for
// it (unreachable.go, which may set s.pause); the route is re-read first. Otherwise s.failure
// is complete and is the send's error. Whether time is left is the next attempt's check
// (timeLeft).
func (s *send) failed(ctx context.Context, q MessageQueue, addr string, latency time.Duration, err error) bool {
	s.p.fault.update(q.BrokerName, latency, isolates(err))
	if s.failure == nil {
		s.failure = &SendError{Topic: s.topic}
	}
	s.failure.Attempts = append(s.failure.Attempts, Attempt{Queue: q, Addr: addr, Err: err})
	n := len(s.failure.Attempts)
	if n > 1 {
		s.p.log.Debug().Err(err).Str("broker", q.BrokerName).Int("attempt", n).Msg("send attempt failed")
	}
	if ctx.Err() != nil {
		s.finish(nil)
		return false
	}
	if s.waitUnreachable && unreachable(err) {
		return s.afterUnreachable(ctx)
	}
	if !s.mayRetry(err) || n-s.round > s.retries {
		s.finish(nil)
		return false
	}
	s.reroute(ctx)
	return true
}

// reroute re-reads the route a send picks its next queue from: a route refreshed since the
// last attempt may list other brokers, and a failed lookup keeps the route this send had. It
// reads the instance's cache (a name server is asked only for a borrowed route, at most once
// per poll interval), so sends that wait for a broker do not add load on the name servers.
// Once the time is spent no lookup is worth its wait; a queue the caller chose stays.
func (s *send) reroute(ctx context.Context) {
	if s.pi == nil || !time.Now().Before(s.deadline) {
		return
	}
	if pi, err := s.p.publishInfo(ctx, s.wireTopic); err == nil {
		s.pi = pi
	}
}

// timeLeft reports whether the send's deadline has not passed, checked before each attempt
// is sent. RocketMQ checks the same before every attempt (sendDefaultImpl) and after an
// ordered send's selector ran (sendSelectImpl): a send whose time went in the route lookup,
// the selector or earlier attempts fails with a timeout and sends nothing more. When it
// returns false, s.failure is the send's error, with the spent timeout as its cause.
func (s *send) timeLeft() bool {
	if time.Now().Before(s.deadline) {
		return true
	}
	s.finish(s.timeoutCause())
	return false
}

// timeoutCause is the cause of a send that ran out of time.
func (s *send) timeoutCause() error {
	return fmt.Errorf("send timeout %v spent: %w", s.p.cfg.sendTimeout, remoting.ErrTimeout)
}

// finish completes s.failure as the send's error, with cause when not nil.
func (s *send) finish(cause error) {
	if s.failure == nil {
		s.failure = &SendError{Topic: s.topic}
	}
	if cause != nil {
		s.failure.Cause = cause
	}
	if s.pi != nil {
		s.failure.AllBrokersFailed = allFailed(s.pi.brokers, s.failure.Attempts)
	}
}

// mayRetry reports whether an attempt of this send that failed with err may be followed by
// another. An async send is retried only when its request got no answer: RocketMQ's
// onExceptionImpl retries requests that were lost or timed out, never a broker's error code.
func (s *send) mayRetry(err error) bool {
	var re *remoting.ResponseError
	if s.callback != nil && errors.As(err, &re) {
		return false
	}
	return retryable(err)
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

// allFailed reports whether every broker of a route has a failed attempt.
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
