package consumer

import (
	"errors"
	"net"
	"time"

	"github.com/mqgo/mq/remoting"
)

// How long a queue waits after a failed pull. RocketMQ waits pullTimeDelayMillsWhenException
// (WithPullErrorDelay, 1 s) after every failure. A broker that restarts is back long before
// that, so a pull that failed because its connection broke, or could not be made, is retried
// after DefaultReconnectPullDelay, doubling up to DefaultMaxReconnectPullDelay (never past the
// pull error delay) while the broker stays away. Once the connection is back, the broker may
// refuse the first pulls because it does not know the group yet (the instance's heartbeat
// after the reconnect is on its way): those are retried the same quick way, for one round of
// doubling only, so a broker that keeps refusing is asked every pull error delay again. Every other
// failure waits the pull error delay, as in RocketMQ.

// retryReason is why a queue's pulls are being retried quickly.
type retryReason int

const (
	retryNone         retryReason = iota
	retryConnection               // the connection broke or could not be made
	retryRegistration             // reconnected, but the broker does not know the group yet
)

// pullRetry is a queue's quick-retry state; only its pull loop touches it.
type pullRetry struct {
	reason retryReason
	delay  time.Duration // the last wait
}

// failedPullDelay returns how long qs waits before pulling again after err, and advances its
// quick-retry state.
func (p *puller) failedPullDelay(qs *queueState, err error) time.Duration {
	reason := retryNone
	switch {
	case isConnectionLost(err):
		reason = retryConnection
	case qs.retry.reason != retryNone && isUnregistered(err):
		reason = retryRegistration
	}
	limit := min(DefaultMaxReconnectPullDelay, p.cfg.pullErrorDelay)
	switch {
	case reason == retryNone,
		reason == retryRegistration && qs.retry.reason == retryRegistration && qs.retry.delay >= limit:
		qs.retry = pullRetry{}
		return p.cfg.pullErrorDelay
	case reason != qs.retry.reason:
		qs.retry = pullRetry{reason: reason, delay: min(DefaultReconnectPullDelay, limit)}
	default:
		qs.retry.delay = min(2*qs.retry.delay, limit)
	}
	return qs.retry.delay
}

// isConnectionLost reports whether a request failed because its connection broke or could not
// be made, rather than by an answer or a timeout.
func isConnectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, remoting.ErrConnClosed) || errors.Is(err, remoting.ErrNoRoute) || errors.As(err, &opErr)
}

// isUnregistered reports whether a pull was refused because the broker does not know the
// group's subscription (RocketMQ SUBSCRIPTION_NOT_EXIST and SUBSCRIPTION_NOT_LATEST), as a
// broker that restarted answers until the group's next heartbeat.
func isUnregistered(err error) bool {
	var re *remoting.ResponseError
	return errors.As(err, &re) && (re.Code == remoting.SubscriptionNotExist || re.Code == remoting.SubscriptionNotLatest)
}
