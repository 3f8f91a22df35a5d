package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Step 2 of a send (send.go): where the topic's messages may go. The answer is cached per wire
// topic and rebuilt only when the client instance's route changed, so a send to a known topic
// costs two map reads here.

// publishInfo is a topic's writable queues as the producer uses them (RocketMQ's
// TopicPublishInfo), built from one route.
type publishInfo struct {
	route   *route.TopicRouteData // what it was built from, to notice a refreshed route
	queues  []MessageQueue        // user topic, sorted by broker name then queue id
	brokers []string              // distinct broker names of queues
	counter *atomic.Uint32        // round-robin position, random at first, kept across rebuilds
	// borrowed marks a route lent by the create-topic key (TBW102) to a topic the name
	// servers do not know yet; checkAt (unix ns) is when to ask them again.
	borrowed bool
	checkAt  atomic.Int64
}

// buildPublishInfo turns a route into the writable queues of topic (docs/protocol.md §3.1.3):
// the orderTopicConf when set, else every writable queue data whose broker has a master, with
// write queue counts capped at maxQueues when maxQueues > 0.
func buildPublishInfo(topic string, r *route.TopicRouteData, maxQueues int) *publishInfo {
	pi := &publishInfo{route: r}
	if r.OrderTopicConf != "" {
		for _, part := range strings.Split(r.OrderTopicConf, ";") {
			name, count, ok := strings.Cut(part, ":")
			n, err := strconv.Atoi(count)
			if !ok || err != nil || name == "" {
				continue
			}
			for q := 0; q < n; q++ {
				pi.queues = append(pi.queues, MessageQueue{Topic: topic, BrokerName: name, QueueID: q})
			}
		}
	} else {
		qds := slices.Clone(r.QueueDatas)
		slices.SortFunc(qds, func(a, b route.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		for _, qd := range qds {
			if !route.IsWritable(qd.Perm) || !hasMaster(r, qd.BrokerName) {
				continue
			}
			n := int(qd.WriteQueueNums)
			if maxQueues > 0 && n > maxQueues {
				n = maxQueues
			}
			for q := 0; q < n; q++ {
				pi.queues = append(pi.queues, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: q})
			}
		}
	}
	for _, q := range pi.queues {
		if !slices.Contains(pi.brokers, q.BrokerName) {
			pi.brokers = append(pi.brokers, q.BrokerName)
		}
	}
	return pi
}

func hasMaster(r *route.TopicRouteData, broker string) bool {
	for i := range r.BrokerDatas {
		if r.BrokerDatas[i].BrokerName == broker {
			return r.BrokerDatas[i].MasterAddr() != ""
		}
	}
	return false
}

// publishInfo returns the queues of wire topic topic: from the local table while its route is
// the instance's cached one, else rebuilt from the route (fetched from the name servers on a
// miss). A topic the name servers do not know borrows the create-topic key's route (capped at
// the default topic queue count) when auto-creation is on, and asks again every poll interval.
func (p *Producer) publishInfo(ctx context.Context, topic string) (*publishInfo, error) {
	pi, err := p.lookupPublishInfo(ctx, topic)
	if err == nil && len(pi.queues) == 0 {
		return nil, fmt.Errorf("%w: no writable queue with a master for topic %s in its route (name servers %v)",
			ErrNoRoute, topic, p.cfg.nameServers)
	}
	return pi, err
}

func (p *Producer) lookupPublishInfo(ctx context.Context, topic string) (*publishInfo, error) {
	p.pubMu.RLock()
	pi := p.pubs[topic]
	p.pubMu.RUnlock()
	if pi != nil {
		if !pi.borrowed {
			r := p.inst.CachedTopicRoute(topic)
			if r == nil || r == pi.route {
				return pi, nil
			}
			return p.storePublishInfo(topic, buildPublishInfo(p.userTopic(topic), r, 0), pi)
		}
		if p.cfg.now().UnixNano() < pi.checkAt.Load() {
			return pi, nil
		}
	}
	r, err := p.inst.TopicRoute(ctx, topic)
	if err == nil {
		return p.storePublishInfo(topic, buildPublishInfo(p.userTopic(topic), r, 0), pi)
	}
	var re *remoting.ResponseError
	if errors.As(err, &re) && re.Code == remoting.TopicNotExist {
		if !p.cfg.autoCreateTopic {
			return nil, fmt.Errorf("%w: no route info for topic %s: the name servers %v do not know it and auto-create is off",
				ErrNoRoute, topic, p.cfg.nameServers)
		}
		dr, derr := p.inst.TopicRoute(ctx, p.cfg.createTopicKey)
		if derr == nil {
			npi := buildPublishInfo(p.userTopic(topic), dr, p.cfg.topicQueueNums)
			npi.borrowed = true
			npi.checkAt.Store(p.cfg.now().Add(p.cfg.pollInterval).UnixNano())
			return p.storePublishInfo(topic, npi, pi)
		}
		err = fmt.Errorf("topic %s is unknown and so is the create-topic key: %w", topic, derr)
	}
	if pi != nil { // a borrowed route, kept while the name servers cannot say more
		pi.checkAt.Store(p.cfg.now().Add(p.cfg.pollInterval).UnixNano())
		return pi, nil
	}
	return nil, fmt.Errorf("%w: %w", ErrNoRoute, err)
}

// storePublishInfo installs npi for topic, carrying the round-robin counter over from old;
// a topic's first counter starts at a random position (queueStart).
func (p *Producer) storePublishInfo(topic string, npi, old *publishInfo) (*publishInfo, error) {
	if old != nil {
		npi.counter = old.counter
	} else {
		npi.counter = new(atomic.Uint32)
		npi.counter.Store(p.cfg.queueStart())
	}
	p.pubMu.Lock()
	p.pubs[topic] = npi
	p.pubMu.Unlock()
	return npi, nil
}

// masterAddr returns where an attempt on q goes: the master of q's broker, as the instance's
// routes name it. Sends never go to a slave, which refuses them.
func (p *Producer) masterAddr(q MessageQueue) (string, error) {
	if addr := p.inst.MasterAddr(q.BrokerName); addr != "" {
		return addr, nil
	}
	return "", fmt.Errorf("%w: no master address known for broker %s", ErrNoRoute, q.BrokerName)
}

// wireTopic is topic as the name servers and brokers know it: with the namespace, by the rule
// the consumer uses too (names.WrapNamespace: system topics stay bare, a retry or dead-letter
// prefix stays in front).
func (p *Producer) wireTopic(topic string) string { return names.WrapNamespace(p.cfg.namespace, topic) }

// userTopic is the inverse of wireTopic, for the queues a caller sees.
func (p *Producer) userTopic(wire string) string {
	return names.WithoutNamespace(p.cfg.namespace, wire)
}
