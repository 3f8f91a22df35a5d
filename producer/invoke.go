package producer

import (
	"context"
	"time"

	"github.com/mqgo/mq/remoting"
)

// Step 5 of a send (send.go): an attempt handed to the transport, in the three ways a caller
// may wait, one function each, and the loop around each that runs a send's attempts through
// the shared retry policy (retry.go). An attempt starts only while the send's deadline has not
// passed, goes to its queue's master (route.go) with the request built for that queue
// (encode.go), and is bounded by the deadline.

// runSync runs attempts one after another, each waiting for the broker's answer (step 6),
// until one is stored or the retry policy gives up.
func (s *send) runSync(ctx context.Context) (*SendResult, error) {
	for {
		if !s.timeLeft() {
			return nil, s.failure
		}
		q := s.next()
		start := time.Now()
		res, addr, err := s.invokeSync(ctx, q)
		if err == nil {
			return s.succeeded(q, time.Since(start), res), nil
		}
		if !s.failed(ctx, q, addr, time.Since(start), err) || !s.sleep(ctx) {
			return nil, s.failure
		}
	}
}

// invokeSync sends the request of an attempt on q and reads the answer. It returns the
// address it sent to, "" when q's broker has no known master.
func (s *send) invokeSync(ctx context.Context, q MessageQueue) (*SendResult, string, error) {
	addr, err := s.p.masterAddr(q)
	if err != nil {
		return nil, "", err
	}
	// Bounded by the send's deadline without a context derived per attempt, where the
	// transport allows (remoting.DeadlineInvoker).
	resp, err := remoting.InvokeSyncUntil(ctx, s.p.tr, addr, s.request(q), s.deadline)
	if err != nil {
		return nil, addr, err
	}
	res, err := result(resp, q, s.msg.msgID)
	return res, addr, err
}

// runOneway hands the send's one attempt to the transport (SendOneway allows no retry: a
// request that may have left cannot be sent again without risking a duplicate). Nothing waits
// for the broker, so a success says nothing about its latency: the fault strategy hears of
// failures only.
func (s *send) runOneway(ctx context.Context) error {
	for {
		if !s.timeLeft() {
			return s.failure
		}
		q := s.next()
		addr, err := s.invokeOneway(ctx, q)
		if err == nil {
			return nil
		}
		if !s.failed(ctx, q, addr, 0, err) {
			return s.failure
		}
	}
}

// invokeOneway hands the request of an attempt on q to the transport.
func (s *send) invokeOneway(ctx context.Context, q MessageQueue) (string, error) {
	addr, err := s.p.masterAddr(q)
	if err != nil {
		return "", err
	}
	ctx, cancel := s.attemptContext(ctx)
	defer cancel()
	return addr, s.p.tr.InvokeOneway(ctx, addr, s.request(q))
}

// attemptContext bounds an attempt by the send's deadline. A caller's context whose own
// deadline is that one (it was sooner than the send timeout) bounds it already, and a derived
// context would cost five allocations for nothing.
func (s *send) attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && !d.After(s.deadline) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, s.deadline)
}

// runAsync starts attempts until the transport takes one; its answer continues the send in
// answered. An attempt that cannot start fails here, on the caller's goroutine, and the next
// starts at once; when none is left the callback runs before runAsync returns.
func (s *send) runAsync() {
	for {
		if !s.timeLeft() {
			s.complete(nil, s.failure)
			return
		}
		q := s.next()
		start := time.Now()
		addr, err := s.invokeAsync(q, start)
		if err == nil {
			return
		}
		if !s.failed(context.Background(), q, addr, time.Since(start), err) {
			s.complete(nil, s.failure)
			return
		}
		if s.pause > 0 {
			s.sleepAsync()
			return
		}
	}
}

// invokeAsync hands the request of an attempt on q, started at start, to the transport, which
// calls answered once when the answer comes or the deadline passes. The context is not the
// caller's: SendAsync returns before the answer.
func (s *send) invokeAsync(q MessageQueue, start time.Time) (string, error) {
	addr, err := s.p.masterAddr(q)
	if err != nil {
		return "", err
	}
	// The attempt is bounded by the send's deadline without a context of its own, where the
	// transport allows (remoting.DeadlineInvoker), as a sync attempt is.
	err = remoting.InvokeAsyncUntil(context.Background(), s.p.tr, addr, s.request(q), s.deadline, func(resp *remoting.Command, err error) {
		latency := time.Since(start)
		// Off the transport's goroutine: the callback may be slow and a retry may dial.
		go s.answered(q, addr, latency, resp, err)
	})
	return addr, err
}

// answered reads the answer to an async attempt (step 6) and finishes the send or starts the
// next attempt.
func (s *send) answered(q MessageQueue, addr string, latency time.Duration, resp *remoting.Command, err error) {
	var res *SendResult
	if err == nil {
		res, err = result(resp, q, s.msg.msgID)
	}
	if err == nil {
		s.complete(s.succeeded(q, latency, res), nil)
		return
	}
	if s.failed(context.Background(), q, addr, latency, err) {
		if s.pause > 0 {
			s.sleepAsync()
			return
		}
		s.runAsync()
		return
	}
	s.complete(nil, s.failure)
}

// complete runs SendAsync's callback with the send's outcome, then frees the send's place
// among the async sends in flight and tells Close it is over. A panic in the callback is
// logged, not spread to the producer's goroutine.
func (s *send) complete(res *SendResult, err error) {
	defer s.p.end()
	defer func() { <-s.p.asyncSem }()
	defer func() {
		if r := recover(); r != nil {
			s.p.log.Error().Interface("panic", r).Str("topic", s.topic).Msg("send callback panicked")
		}
	}()
	s.callback(res, err)
}
