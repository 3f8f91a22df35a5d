package admin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Defaults of RocketMQ's TopicConfig, used when a TopicConfig leaves the queue counts at 0.
const (
	DefaultReadQueueNums  = 16
	DefaultWriteQueueNums = 16
)

// topicFilterType is the filter type RocketMQ's admin writes into UPDATE_AND_CREATE_TOPIC.
const topicFilterType = "SINGLE_TAG"

// ClusterInfo returns every cluster and broker the name servers know (GET_BROKER_CLUSTER_INFO).
func (a *Admin) ClusterInfo(ctx context.Context) (*route.ClusterInfo, error) {
	resp, err := a.invokeNameServer(ctx, route.BuildGetBrokerClusterInfo)
	if err != nil {
		return nil, fmt.Errorf("admin: cluster info: %w", err)
	}
	ci, err := route.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: cluster info: %w", err)
	}
	return ci, nil
}

// BrokerRuntimeInfo returns a broker's runtime figures (GET_BROKER_RUNTIME_INFO), keyed as
// RocketMQ names them (msgPutTotalTodayNow, putTps, commitLogDiskRatio, ...).
func (a *Admin) BrokerRuntimeInfo(ctx context.Context, brokerAddr string) (map[string]string, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("admin: runtime info of broker %s: %w", brokerAddr, err)
	}
	kv, err := route.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: runtime info of broker %s: %w", brokerAddr, err)
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}

// TopicList returns every topic the name servers know, sorted.
func (a *Admin) TopicList(ctx context.Context) ([]string, error) {
	resp, err := a.invokeNameServer(ctx, route.BuildGetAllTopicList)
	if err != nil {
		return nil, fmt.Errorf("admin: topic list: %w", err)
	}
	l, err := route.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: topic list: %w", err)
	}
	slices.Sort(l.TopicList)
	return slices.Compact(l.TopicList), nil
}

// TopicRoute returns a topic's route (GET_ROUTEINFO_BY_TOPIC); an unknown topic is a
// *remoting.ResponseError with code TOPIC_NOT_EXIST.
func (a *Admin) TopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	resp, err := a.invokeNameServer(ctx, func() *remoting.Command { return route.BuildGetRouteInfo(topic) })
	if err == nil {
		var r *route.TopicRouteData
		if r, err = route.DecodeRouteInfoResponse(resp); err == nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("admin: topic route of %s: %w", topic, err)
}

// TopicStats returns each queue's offsets (GET_TOPIC_STATS_INFO), asked of every master of the
// topic's route.
func (a *Admin) TopicStats(ctx context.Context, topic string) (map[MessageQueue]TopicOffset, error) {
	what := "topic stats of " + topic
	ms, err := a.routeMasters(ctx, topic, what)
	if err != nil {
		return nil, err
	}
	out := map[MessageQueue]TopicOffset{}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.GetTopicStatsInfo, remoting.EncodeHeader(&protocol.TopicHeader{Topic: topic}), nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		t, err := protocol.DecodeTopicStatsTable(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		for mq, o := range t.OffsetTable {
			out[mq] = TopicOffset{MinOffset: o.MinOffset, MaxOffset: o.MaxOffset, LastUpdate: millisTime(o.LastUpdateTimestamp)}
		}
	}
	return out, nil
}

// millisTime converts RocketMQ's epoch milliseconds, 0 meaning none, to a time.
func millisTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// CreateTopic creates or updates a topic on one broker (UPDATE_AND_CREATE_TOPIC). Zero queue
// counts mean RocketMQ's defaults and a zero Perm means read and write.
func (a *Admin) CreateTopic(ctx context.Context, brokerAddr string, cfg TopicConfig) error {
	if cfg.Topic == "" {
		return fmt.Errorf("admin: create topic: no topic name")
	}
	h := &protocol.CreateTopicRequestHeader{Topic: cfg.Topic, DefaultTopic: names.TopicAutoCreate,
		ReadQueueNums:  int32(cmpOr(cfg.ReadQueueNums, DefaultReadQueueNums)),
		WriteQueueNums: int32(cmpOr(cfg.WriteQueueNums, DefaultWriteQueueNums)),
		Perm:           int32(cmpOr(cfg.Perm, int(route.PermReadWrite))), TopicFilterType: topicFilterType,
		Order: cfg.Order, Attributes: cfg.Attributes}
	_, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	if err != nil {
		return fmt.Errorf("admin: create topic %s on broker %s: %w", cfg.Topic, brokerAddr, err)
	}
	return nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// clusterMasters returns the master of every broker name of cluster, sorted by broker name.
func (a *Admin) clusterMasters(ctx context.Context, cluster string) ([]brokerAddr, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	brokerNames, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil, fmt.Errorf("admin: cluster %s not found", cluster)
	}
	var out []brokerAddr
	for _, name := range slices.Sorted(slices.Values(brokerNames)) {
		bd := ci.BrokerAddrTable[name]
		if addr := bd.MasterAddr(); addr != "" {
			out = append(out, brokerAddr{name: name, addr: addr})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: cluster %s has no master broker", cluster)
	}
	return out, nil
}

// CreateTopicInCluster creates or updates a topic on every master of cluster.
func (a *Admin) CreateTopicInCluster(ctx context.Context, cluster string, cfg TopicConfig) error {
	ms, err := a.clusterMasters(ctx, cluster)
	if err != nil {
		return fmt.Errorf("admin: create topic %s in cluster %s: %w", cfg.Topic, cluster, err)
	}
	for _, m := range ms {
		if err := a.CreateTopic(ctx, m.addr, cfg); err != nil {
			return err
		}
	}
	return nil
}

// DeleteTopic deletes a topic from every master of cluster (DELETE_TOPIC_IN_BROKER), then from
// every name server (DELETE_TOPIC_IN_NAMESRV), as mqadmin deleteTopic does.
func (a *Admin) DeleteTopic(ctx context.Context, cluster, topic string) error {
	ms, err := a.clusterMasters(ctx, cluster)
	if err != nil {
		return fmt.Errorf("admin: delete topic %s: %w", topic, err)
	}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.DeleteTopicInBroker, remoting.EncodeHeader(&protocol.TopicHeader{Topic: topic}), nil)
		if _, err := a.invokeOK(ctx, m.addr, req); err != nil {
			return fmt.Errorf("admin: delete topic %s on broker %s: %w", topic, m.addr, err)
		}
	}
	for _, ns := range a.opts.NameServers {
		if _, err := a.invokeOK(ctx, ns, route.BuildDeleteTopic(topic)); err != nil {
			return fmt.Errorf("admin: delete topic %s on name server %s: %w", topic, ns, err)
		}
	}
	return nil
}
