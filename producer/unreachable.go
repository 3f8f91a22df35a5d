package producer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/mqgo/mq/remoting"
)

// Waiting out a broker that is away (issue 18). RocketMQ's sendDefaultImpl resends at once
// and gives up after 1 + retryTimesWhenSendFailed attempts, so a broker restart of a second
// fails every send that starts during it, although the send timeout (3 s) had room to wait.
// With WithRetryUnreachableUntilTimeout (on by default) an attempt that could not reach its
// broker at all is followed by another while the send timeout lasts, whatever the retries
// count: at once to a broker of the route not yet found away, and once every one of them was,
// after a pause. Each pause starts a new round with the retries count fresh, so a broker
// that comes back answering SYSTEM_ERROR for a moment is still retried as RocketMQ would.
// A broker's error code never starts a pause: the broker is there and said no.

// The pauses grow from unreachableBackoffFirst, doubling up to unreachableBackoffMax, each
// drawn at random from its upper half, so producers that lost a broker together do not all
// come back to it in the same millisecond. The cap keeps a broker that returns waiting at
// most half a second for the first send. No RocketMQ setting: its producer does not wait.
const (
	unreachableBackoffFirst = 50 * time.Millisecond
	unreachableBackoffMax   = 500 * time.Millisecond
)

// unreachable reports whether an attempt that failed with err never reached a broker that
// could answer it: no connection could be made (refused, reset, no route to the host, a name
// that does not resolve, the dial timed out), the connection broke under the request, no
// node listens at an in-process address, or no master address is known for the broker. The
// send's own deadline, a cancelled context or a closed transport are not: waiting cannot
// help them.
func unreachable(err error) bool {
	if errors.Is(err, remoting.ErrConnClosed) || errors.Is(err, remoting.ErrNoRoute) || errors.Is(err, ErrNoRoute) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// unreachableBackoff is the pause before round k+1 (k from 0), before jitter.
func unreachableBackoff(k int) time.Duration {
	d := unreachableBackoffFirst
	for ; k > 0 && d < unreachableBackoffMax; k-- {
		d *= 2
	}
	return min(d, unreachableBackoffMax)
}

// halfJitter draws a pause from [d/2, d].
func halfJitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// afterUnreachable decides what follows an attempt of s that found its broker away. It
// returns true when another attempt may start: at once while a broker of the route has not
// been found away in this round, else after s.pause. A pause is cut to end
// unreachableBackoffFirst before the deadline, so the last attempt has a moment to be
// answered; when not even that is left the send fails with the timeout as its cause.
func (s *send) afterUnreachable(ctx context.Context) bool {
	if !s.everyBrokerAway() {
		s.reroute(ctx)
		return true
	}
	left := time.Until(s.deadline) - unreachableBackoffFirst
	if left <= 0 {
		s.finish(s.timeoutCause())
		return false
	}
	s.pause = min(s.p.cfg.jitter(unreachableBackoff(s.pauses)), left)
	s.pauses++
	s.round = len(s.failure.Attempts)
	return true
}

// everyBrokerAway reports whether every broker s may send to (the route's, or the one of the
// queue the caller chose) failed as unreachable in this round.
func (s *send) everyBrokerAway() bool {
	brokers := []string{s.queue.BrokerName}
	if s.pi != nil {
		brokers = s.pi.brokers
	}
	for _, b := range brokers {
		away := false
		for _, a := range s.failure.Attempts[s.round:] {
			if a.Queue.BrokerName == b && unreachable(a.Err) {
				away = true
				break
			}
		}
		if !away {
			return false
		}
	}
	return true
}

// sleep waits out the pause afterUnreachable set, if any, then re-reads the route. It returns
// false, with s.failure complete, when ctx ends or the producer closes first.
func (s *send) sleep(ctx context.Context) bool {
	if s.pause == 0 {
		return true
	}
	t := time.NewTimer(s.pause)
	defer t.Stop()
	s.pause = 0
	select {
	case <-t.C:
	case <-ctx.Done():
		s.finish(ctx.Err())
		return false
	case <-s.p.closing:
		s.finish(errClosedWhileAway)
		return false
	}
	s.reroute(ctx)
	return true
}

// sleepAsync is sleep for an async send: a timer, not a goroutine, waits, and then the send
// goes on with its next attempt or, when the producer closed meanwhile, completes with the
// failure. It returns at once.
func (s *send) sleepAsync() {
	d := s.pause
	s.pause = 0
	time.AfterFunc(d, func() {
		select {
		case <-s.p.closing:
			s.finish(errClosedWhileAway)
			s.complete(nil, s.failure)
			return
		default:
		}
		s.reroute(context.Background())
		s.runAsync()
	})
}

// errClosedWhileAway is the cause of a send that was waiting for an unreachable broker when
// its producer closed: Close does not wait for a broker to come back.
var errClosedWhileAway = fmt.Errorf("%w while waiting for an unreachable broker", ErrClosed)
