package consumer

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Where a queue's pulls go (docs/protocol.md §3.1.4). A pull answer carries suggestWhichBrokerId:
// a master sends a reader that is far behind to a slave, a slave sends it back to the master.
// The next pull of the queue follows it. A pull that cannot reach its broker (a transport
// error: the master died) moves to another address of the same broker name at once, and the
// failed address is avoided for a while; offsets keep going to the master only, so commits
// wait until it is back.

// DefaultFailoverHold is how long a queue's pulls avoid an address they could not reach
// before trying it again (so that a master that comes back gets its readers back).
const DefaultFailoverHold = 5 * time.Second

// selectPullAddr picks the address of a queue's next pull among addrs (broker id -> address
// of the queue's broker name), following RocketMQ's FindBrokerAddressInSubscribe: the
// suggested id's address; if it has none and is a slave id, id+1's; else any address (the
// lowest id, so the master when there is one). An address equal to avoid (one that just failed)
// is replaced by the lowest-id other address when there is one. It returns "" when addrs is
// empty. Pure: no locks, no clock.
func selectPullAddr(addrs map[int64]string, suggested int64, avoid string) (addr string, id int64) {
	id = suggested
	addr = addrs[id]
	if addr == "" && id != route.MasterID {
		id++
		addr = addrs[id]
	}
	if addr == "" || (avoid != "" && addr == avoid) {
		if other, otherID := lowestAddr(addrs, avoid); other != "" {
			return other, otherID
		}
	}
	if addr == "" {
		return lowestAddr(addrs, "")
	}
	return addr, id
}

// lowestAddr returns the address of the lowest broker id of addrs whose address is set and
// not skip, and that id.
func lowestAddr(addrs map[int64]string, skip string) (string, int64) {
	ids := make([]int64, 0, len(addrs))
	for id, a := range addrs {
		if a != "" && a != skip {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", 0
	}
	id := slices.Min(ids)
	return addrs[id], id
}

// isTransportError reports whether a pull failed to reach its broker (as opposed to an answer
// the broker gave, or the consumer closing).
func isTransportError(err error) bool {
	var re *remoting.ResponseError
	return err != nil && !errors.As(err, &re) && !errors.Is(err, ErrNoBroker) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, ErrNoSubscription)
}

// brokerAddrsOf returns the addresses (by broker id) of mq's broker name from the cached route
// of mq's topic, falling back to the instance's table for the master and the suggested id.
func (p *puller) brokerAddrsOf(mq MessageQueue, suggested int64) map[int64]string {
	// Every pull asks, and the route is cached once the topic is known: only a miss needs the
	// bounded fetch, whose context and timer each pull allocated.
	r := p.inst.CachedTopicRoute(mq.Topic)
	if r == nil {
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
		var err error
		if r, err = p.inst.TopicRoute(ctx, mq.Topic); err != nil {
			r = nil
		}
		cancel()
	}
	if r != nil {
		for _, bd := range r.BrokerDatas {
			if bd.BrokerName == mq.BrokerName && len(bd.BrokerAddrs) > 0 {
				return bd.BrokerAddrs
			}
		}
	}
	m := map[int64]string{}
	for _, id := range []int64{route.MasterID, suggested, suggested + 1} {
		if a := p.inst.BrokerAddr(mq.BrokerName, id); a != "" {
			m[id] = a
		}
	}
	return m
}

// pullTarget picks the address of qs's next pull and whether it is a slave.
func (p *puller) pullTarget(qs *queueState) (addr string, slave bool) {
	avoid := ""
	if qs.failedAddr != "" && time.Now().Before(qs.failedUntil) {
		avoid = qs.failedAddr
	}
	addr, id := selectPullAddr(p.brokerAddrsOf(qs.mq, qs.brokerID), qs.brokerID, avoid)
	return addr, id != route.MasterID
}

// pullFailed records that a pull to addr failed with err. It reports whether another address
// of the broker name is worth trying at once (a transport error with an alternative).
//
// Only the first failure moves on at once: when the address that just failed was itself the
// way around another one that failed within its hold, every address of the broker name is
// failing, and the loop waits its failed-pull delay before the next try. Moving on at once
// every time would spin between addresses that fail at once (a dead master refusing, a slave
// cut off), with no wait at all, for as long as they stay down.
func (p *puller) pullFailed(qs *queueState, addr string, err error) bool {
	if !isTransportError(err) || addr == "" {
		return false
	}
	now := time.Now()
	around := qs.failedAddr != "" && qs.failedAddr != addr && now.Before(qs.failedUntil)
	qs.failedAddr, qs.failedUntil = addr, now.Add(p.cfg.failoverHold)
	if around {
		return false
	}
	next, _ := selectPullAddr(p.brokerAddrsOf(qs.mq, qs.brokerID), qs.brokerID, addr)
	return next != "" && next != addr
}
