package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// ErrNameServersUnreachable is a route query that no name server answered (every one failed
// with a transport error). The wrapping error names each server and its error.
var ErrNameServersUnreachable = errors.New("client: no name server answered")

// TopicRoute returns the cached route of topic, or fetches it from a name server on a miss.
// The result is shared: callers must not modify it. A missing topic comes back as a
// *remoting.ResponseError with code TOPIC_NOT_EXIST.
func (i *Instance) TopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	i.mu.RLock()
	r := i.routes[topic]
	i.mu.RUnlock()
	if r != nil {
		return r, nil
	}
	return i.RefreshTopicRoute(ctx, topic)
}

// CachedTopicRoute returns the cached route of topic, or nil, without any I/O.
func (i *Instance) CachedTopicRoute(topic string) *route.TopicRouteData {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.routes[topic]
}

// RefreshTopicRoute fetches topic's route from a name server and caches it. Concurrent calls
// for one topic share one request. On failure the cache is left as it was (a topic keeps its
// last known route while every name server is down).
func (i *Instance) RefreshTopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	ch := i.flight.DoChan(topic, func() (any, error) {
		// Shared by every caller, so bound by the instance's life and the per-server timeout,
		// not by one caller's context.
		return i.fetchRoute(i.ctx, topic)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*route.TopicRouteData), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("client: route of topic %s: %w", topic, ctx.Err())
	}
}

// fetchRoute asks the name servers in round-robin order, moving to the next one only on a
// transport error (docs/protocol.md §3.1): the first server that answers decides.
func (i *Instance) fetchRoute(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	ns := i.opts.NameServers
	i.mu.Lock()
	start := i.nsNext
	i.nsNext++
	i.mu.Unlock()
	var tried []string
	for k := range ns {
		addr := ns[(int(start)+k)%len(ns)]
		actx, cancel := context.WithTimeout(ctx, i.opts.RouteTimeout)
		resp, err := i.tr.InvokeSync(actx, addr, route.BuildGetRouteInfo(topic))
		cancel()
		if err != nil {
			tried = append(tried, addr+" ("+err.Error()+")")
			continue
		}
		r, err := route.DecodeRouteInfoResponse(resp)
		if err != nil {
			return nil, fmt.Errorf("client: route of topic %s from %s: %w", topic, addr, err)
		}
		i.storeRoute(topic, r)
		return r, nil
	}
	return nil, fmt.Errorf("%w: no route info for topic %s, name servers tried: %s", ErrNameServersUnreachable,
		topic, strings.Join(tried, ", "))
}

// storeRoute caches r as topic's route and merges its broker addresses; a broker found for the
// first time gets a heartbeat soon.
func (i *Instance) storeRoute(topic string, r *route.TopicRouteData) {
	newBroker := false
	i.mu.Lock()
	i.routes[topic] = r
	for _, bd := range r.BrokerDatas {
		old := i.brokers[bd.BrokerName]
		if !sameAddrs(old, bd.BrokerAddrs) {
			if len(i.producers)+len(i.consumers) > 0 {
				for id, a := range bd.BrokerAddrs {
					if old[id] != a {
						newBroker = true
					}
				}
			}
			m := make(map[int64]string, len(bd.BrokerAddrs))
			for id, a := range bd.BrokerAddrs {
				m[id] = a
			}
			i.brokers[bd.BrokerName] = m
		}
	}
	i.mu.Unlock()
	if newBroker {
		i.kickHeartbeat()
	}
}

func sameAddrs(a, b map[int64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// BrokerAddr returns the address of broker id of brokerName, or "" when unknown.
func (i *Instance) BrokerAddr(brokerName string, brokerID int64) string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.brokers[brokerName][brokerID]
}

// MasterAddr returns the master address of brokerName, or "" when unknown.
func (i *Instance) MasterAddr(brokerName string) string {
	return i.BrokerAddr(brokerName, route.MasterID)
}

// AdminAddr returns where reads of a broker's consumer offsets go: the master, else the
// slave with the lowest id, else "" (RocketMQ findBrokerAddressInAdmin). Slaves copy their
// master's offsets, so a consumer taking a queue while the master is down starts from the
// slave's copy instead of not taking the queue at all.
func (i *Instance) AdminAddr(brokerName string) string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	addrs := i.brokers[brokerName]
	if a := addrs[route.MasterID]; a != "" {
		return a
	}
	best, addr := int64(-1), ""
	for id, a := range addrs {
		if a != "" && (best < 0 || id < best) {
			best, addr = id, a
		}
	}
	return addr
}

// AnyBrokerAddrOfTopic returns the master (else any address) of a random broker of topic's
// cached route, or "" (docs/protocol.md §3.1.4, get consumer list).
func (i *Instance) AnyBrokerAddrOfTopic(topic string) string {
	i.mu.RLock()
	r := i.routes[topic]
	i.mu.RUnlock()
	if r == nil || len(r.BrokerDatas) == 0 {
		return ""
	}
	bd := r.BrokerDatas[rand.IntN(len(r.BrokerDatas))]
	return bd.SelectAddr()
}

// brokerAddrs lists every master address, or every address when all is set.
func (i *Instance) brokerAddrs(all bool) []string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	var out []string
	for _, ids := range i.brokers {
		for id, a := range ids {
			if all || id == route.MasterID {
				out = append(out, a)
			}
		}
	}
	return out
}

// isBrokerAddr reports whether addr is an address of a known broker.
func (i *Instance) isBrokerAddr(addr string) bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	for _, ids := range i.brokers {
		for _, a := range ids {
			if a == addr {
				return true
			}
		}
	}
	return false
}

// topics lists the topics of the route table.
func (i *Instance) topics() []string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]string, 0, len(i.routes))
	for t := range i.routes {
		out = append(out, t)
	}
	return out
}

// refreshAll refreshes every cached topic and every consumer's subscribed topics; errors keep
// the cached routes. A consumer subscribed to a topic that had no route and has one now (it
// was created since) rebalances at once, so it takes the new topic's queues within one
// refresh period rather than at its next rebalance.
func (i *Instance) refreshAll() {
	seen := make(map[string]bool)
	for _, t := range i.topics() {
		seen[t] = true
	}
	consumers := i.consumerList()
	for _, c := range consumers {
		for _, t := range c.SubscribedTopics() {
			seen[t] = true
		}
	}
	appeared := make(map[string]bool)
	for t := range seen {
		select {
		case <-i.stop:
			return
		default:
		}
		had := i.CachedTopicRoute(t) != nil
		ctx, cancel := context.WithTimeout(i.ctx, i.opts.RouteTimeout*time.Duration(max(1, len(i.opts.NameServers))))
		if _, err := i.RefreshTopicRoute(ctx, t); err != nil {
			var re *remoting.ResponseError
			if !errors.As(err, &re) {
				i.log.Debug().Err(err).Str("topic", t).Msg("route refresh failed; keeping the cached route")
			}
		} else if !had {
			appeared[t] = true
		}
		cancel()
	}
	if len(appeared) == 0 {
		return
	}
	for _, c := range consumers {
		if slices.ContainsFunc(c.SubscribedTopics(), func(t string) bool { return appeared[t] }) {
			c.Rebalance()
		}
	}
}

// cleanOfflineBrokers drops broker addresses no cached route mentions any more.
func (i *Instance) cleanOfflineBrokers() {
	i.mu.Lock()
	defer i.mu.Unlock()
	live := make(map[string]map[int64]bool)
	for _, r := range i.routes {
		for _, bd := range r.BrokerDatas {
			m := live[bd.BrokerName]
			if m == nil {
				m = make(map[int64]bool)
				live[bd.BrokerName] = m
			}
			for id := range bd.BrokerAddrs {
				m[id] = true
			}
		}
	}
	for name, ids := range i.brokers {
		for id := range ids {
			if !live[name][id] {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(i.brokers, name)
		}
	}
}

func (i *Instance) routeLoop() {
	defer i.wg.Done()
	t := time.NewTicker(i.opts.PollNameServerInterval)
	defer t.Stop()
	for {
		select {
		case <-i.stop:
			return
		case <-t.C:
			i.refreshAll()
		}
	}
}
