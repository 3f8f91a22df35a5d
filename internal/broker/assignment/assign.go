package assignment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// DefaultRoutePollInterval is how long a topic's route fetched from the name servers is used
// (RocketMQ 5 loadBalancePollNameServerInterval, 30 s).
const DefaultRoutePollInterval = 30 * time.Second

// routeFetchTimeout bounds one GET_ROUTEINFO_BY_TOPIC to a name server (the clients' 3 s).
const routeFetchTimeout = 3 * time.Second

// maxCachedRoutes bounds the route cache (ours): a query may name any topic.
const maxCachedRoutes = 4096

// strategies are the allocation strategies QUERY_ASSIGNMENT serves, as 5.x's processor
// registers them.
var strategies = map[string]rebalance.Strategy{
	rebalance.NameAveragely:         rebalance.Averagely(),
	rebalance.NameAveragelyByCircle: rebalance.AveragelyByCircle(),
}

// queryAssignment serves QUERY_ASSIGNMENT (QueryAssignmentProcessor.queryAssignment).
func (s *Service) queryAssignment(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var b protocol.QueryAssignmentRequestBody
	if err := decodeBody("QUERY_ASSIGNMENT", req, &b); err != nil {
		return nil, err
	}
	if err := checkNames(b.Topic, b.ConsumerGroup); err != nil {
		return nil, err
	}
	if b.MessageModel != protocol.MessageModelClustering && b.MessageModel != protocol.MessageModelBroadcasting {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: fmt.Sprintf(
			"messageModel %s is neither %s nor %s", names.Quote(b.MessageModel, len(b.MessageModel)),
			protocol.MessageModelClustering, protocol.MessageModelBroadcasting)}
	}
	mode, ok := s.modes.get(b.Topic, b.ConsumerGroup)
	if !ok {
		mode = s.defaultMode(b.Topic, b.ConsumerGroup)
	}
	queues := s.loadBalance(ctx, &b, mode)
	var body protocol.QueryAssignmentResponseBody
	if queues != nil {
		body.MessageQueueAssignments = make([]protocol.MessageQueueAssignment, 0, len(queues))
		for _, q := range queues {
			body.MessageQueueAssignments = append(body.MessageQueueAssignments,
				protocol.MessageQueueAssignment{MessageQueue: q, Mode: mode.Mode})
		}
	}
	data, err := body.MarshalJSON()
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = data
	return resp, nil
}

// defaultMode is the mode of a group and topic nobody set one for: PULL for a retry topic,
// else Types.DefaultMessageRequestMode, with DefaultPopShareQueueNum in POP mode.
func (s *Service) defaultMode(topic, group string) protocol.SetMessageRequestModeRequestBody {
	t := s.core.Options().Types
	m := protocol.SetMessageRequestModeRequestBody{Topic: topic, ConsumerGroup: group, Mode: t.DefaultMessageRequestMode}
	if names.IsRetryTopic(topic) {
		m.Mode = config.MessageRequestModePull
	}
	if m.Mode == config.MessageRequestModePop {
		m.PopShareQueueNum = t.DefaultPopShareQueueNum
	}
	return m
}

// loadBalance returns the queues assigned to the client, sorted; nil means "no answer" (the
// topic has no route, the group no members, the strategy is unknown), which tells the client
// to keep what it has, as 5.x's doLoadBalance returns null.
func (s *Service) loadBalance(ctx context.Context, b *protocol.QueryAssignmentRequestBody,
	mode protocol.SetMessageRequestModeRequestBody) []rebalance.MessageQueue {
	all := s.routes.subscribeQueues(ctx, b.Topic)
	if all == nil {
		return nil
	}
	if b.MessageModel == protocol.MessageModelBroadcasting || s.core.Options().Types.DisableServerLoadBalancer {
		return all
	}
	g, ok := s.core.Clients().ConsumerGroup(b.ConsumerGroup)
	if !ok || len(g.Connections) == 0 {
		return nil
	}
	cids := make([]string, 0, len(g.Connections))
	for _, c := range g.Connections {
		cids = append(cids, c.ClientID)
	}
	slices.Sort(cids)
	cids = slices.Compact(cids)
	strategy, ok := strategies[b.StrategyName]
	if !ok {
		if e := s.log.Debug(); e.Enabled() {
			e.Str("strategy", names.Quote(b.StrategyName, len(b.StrategyName))).Msg("QUERY_ASSIGNMENT with an unknown strategy")
		}
		return nil
	}
	var out []rebalance.MessageQueue
	if mode.Mode == config.MessageRequestModePop {
		out = allocateForPop(strategy, b.ConsumerGroup, b.ClientID, all, cids, mode.PopShareQueueNum)
	} else {
		out = strategy.Allocate(b.ConsumerGroup, b.ClientID, all, cids)
	}
	return sortedSet(out)
}

// allocateForPop is 5.x's allocate4Pop: with popShareQueueNum at most 0, or enough to cover
// every other member, each member pops every queue (queue id -1, one per broker); else, when
// the members are no more than the queues, a member takes its own share and the shares of
// the popShareQueueNum members after it; else each member takes one queue, by its position.
func allocateForPop(strategy rebalance.Strategy, group, clientID string, queues []rebalance.MessageQueue,
	cids []string, share int) []rebalance.MessageQueue {
	if share <= 0 || share >= len(cids)-1 {
		out := make([]rebalance.MessageQueue, 0, len(queues))
		for _, q := range queues {
			out = append(out, rebalance.MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: -1})
		}
		return out
	}
	index := slices.Index(cids, clientID)
	if len(cids) > len(queues) {
		if index < 0 {
			return []rebalance.MessageQueue{}
		}
		return []rebalance.MessageQueue{queues[index%len(queues)]}
	}
	out := strategy.Allocate(group, clientID, queues, cids)
	if index >= 0 {
		for i := 1; i <= share; i++ {
			out = append(out, strategy.Allocate(group, cids[(index+i)%len(cids)], queues, cids)...)
		}
	}
	return out
}

// sortedSet sorts queues as MessageQueue.compareTo and drops repeats (5.x answers a set); the
// result is never nil.
func sortedSet(qs []rebalance.MessageQueue) []rebalance.MessageQueue {
	out := slices.Clone(qs)
	if out == nil {
		out = []rebalance.MessageQueue{}
	}
	slices.SortFunc(out, compareQueues)
	return slices.Compact(out)
}

func compareQueues(a, b rebalance.MessageQueue) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
}

// routeCache holds the readable queues of topics as the name servers route them
// (TopicRouteInfoManager's topicSubscribeInfoTable).
type routeCache struct {
	core *broker.Broker
	ttl  time.Duration

	mu sync.Mutex
	m  map[string]cachedRoute
}

type cachedRoute struct {
	queues []rebalance.MessageQueue // nil: the topic has no route
	at     time.Time
}

func newRouteCache(core *broker.Broker, ttl time.Duration) *routeCache {
	return &routeCache{core: core, ttl: ttl, m: map[string]cachedRoute{}}
}

// subscribeQueues returns the readable queues of topic, sorted, or nil when it has none. A
// broker without name servers reads its own topic table.
func (c *routeCache) subscribeQueues(ctx context.Context, topic string) []rebalance.MessageQueue {
	opts := c.core.Options()
	if len(opts.NameServers) == 0 {
		tc, ok := c.core.Topics().Get(topic)
		if !ok {
			return nil
		}
		return c.readable(topic, []route.QueueData{{BrokerName: opts.Broker.Name, ReadQueueNums: tc.ReadQueueNums, Perm: tc.Perm}})
	}
	c.mu.Lock()
	e, ok := c.m[topic]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.queues
	}
	queues, err := c.fetch(ctx, topic)
	if err != nil {
		// Every name server failed: keep answering from what was fetched before.
		return e.queues
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedRoutes {
		now := time.Now()
		for k, v := range c.m {
			if now.Sub(v.at) >= c.ttl {
				delete(c.m, k)
			}
		}
		for k := range c.m { // still full: any entry will do
			if len(c.m) < maxCachedRoutes {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[topic] = cachedRoute{queues: queues, at: time.Now()}
	c.mu.Unlock()
	return queues
}

// fetch asks the name servers in turn for topic's route; a topic they do not know has no
// queues (nil, nil). The error is the last name server's when none answered.
func (c *routeCache) fetch(ctx context.Context, topic string) ([]rebalance.MessageQueue, error) {
	opts := c.core.Options()
	var last error
	for _, addr := range opts.NameServers {
		rctx, cancel := context.WithTimeout(ctx, routeFetchTimeout)
		resp, err := opts.Transport.InvokeSync(rctx, addr, route.BuildGetRouteInfo(topic))
		cancel()
		if err != nil {
			last = err
			continue
		}
		rd, err := route.DecodeRouteInfoResponse(resp)
		var re *remoting.ResponseError
		if errors.As(err, &re) && re.Code == remoting.TopicNotExist {
			return nil, nil
		}
		if err != nil {
			last = err
			continue
		}
		return c.readable(topic, rd.QueueDatas), nil
	}
	return nil, last
}

// readable lists the queues of the readable queue datas (topicRouteData2TopicSubscribeInfo),
// each count capped at MaxQueueNums, sorted; nil when there are none.
func (c *routeCache) readable(topic string, qds []route.QueueData) []rebalance.MessageQueue {
	var out []rebalance.MessageQueue
	for _, qd := range qds {
		if !route.IsReadable(qd.Perm) {
			continue
		}
		for i := range c.core.Topics().QueueLoopBound(qd.ReadQueueNums) {
			out = append(out, rebalance.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: int(i)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return sortedSet(out)
}
