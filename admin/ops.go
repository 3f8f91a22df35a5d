package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The operators' requests of issue 31: configurations, write permission, consume statistics
// of a whole broker, offset cloning and ConsumeQueue inspection.

// BrokerConfig returns a broker's configuration (GET_BROKER_CONFIG), RocketMQ's keys.
func (a *Admin) BrokerConfig(ctx context.Context, brokerAddr string) (map[string]string, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("admin: broker config of %s: %w", brokerAddr, err)
	}
	return route.ParseProperties(string(resp.Body))
}

// UpdateBrokerConfig changes settings of a broker (UPDATE_BROKER_CONFIG). A broker refuses
// the settings it cannot change at run time, with a remark naming them.
func (a *Admin) UpdateBrokerConfig(ctx context.Context, brokerAddr string, kv map[string]string) error {
	req := remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte(route.FormatProperties(kv)))
	if _, err := a.invokeOK(ctx, brokerAddr, req); err != nil {
		return fmt.Errorf("admin: update broker config of %s: %w", brokerAddr, err)
	}
	return nil
}

// NameServers are the name servers the Admin asks.
func (a *Admin) NameServers() []string { return slices.Clone(a.opts.NameServers) }

// WipeWritePerm takes the write permission off every topic of brokerName in one name server
// (WIPE_WRITE_PERM_OF_BROKER) and returns how many topics it changed: producers stop sending
// to the broker at their next route refresh.
func (a *Admin) WipeWritePerm(ctx context.Context, nameServer, brokerName string) (int, error) {
	return a.writePerm(ctx, nameServer, brokerName, remoting.WipeWritePermOfBroker, "wipeTopicCount")
}

// AddWritePerm gives every topic of brokerName in one name server read and write permission
// again (ADD_WRITE_PERM_OF_BROKER) and returns how many topics it changed.
func (a *Admin) AddWritePerm(ctx context.Context, nameServer, brokerName string) (int, error) {
	return a.writePerm(ctx, nameServer, brokerName, remoting.AddWritePermOfBroker, "addTopicCount")
}

func (a *Admin) writePerm(ctx context.Context, nameServer, brokerName string, code int32, countKey string) (int, error) {
	req := remoting.NewRequest(code, remoting.EncodeHeader(&protocol.WipeWritePermOfBrokerRequestHeader{BrokerName: brokerName}), nil)
	resp, err := a.invokeOK(ctx, nameServer, req)
	if err != nil {
		return 0, fmt.Errorf("admin: write perm of broker %s on name server %s: %w", brokerName, nameServer, err)
	}
	n, err := strconv.Atoi(resp.ExtFields[countKey])
	if err != nil {
		return 0, fmt.Errorf("admin: name server %s answered %s=%q", nameServer, countKey, resp.ExtFields[countKey])
	}
	return n, nil
}

// NamesrvConfig returns each name server's configuration (GET_NAMESRV_CONFIG), by address.
func (a *Admin) NamesrvConfig(ctx context.Context) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, ns := range a.opts.NameServers {
		resp, err := a.invokeOK(ctx, ns, remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
		if err != nil {
			return nil, fmt.Errorf("admin: config of name server %s: %w", ns, err)
		}
		if out[ns], err = route.ParseProperties(string(resp.Body)); err != nil {
			return nil, fmt.Errorf("admin: config of name server %s: %w", ns, err)
		}
	}
	return out, nil
}

// UpdateNamesrvConfig changes settings of every name server (UPDATE_NAMESRV_CONFIG).
func (a *Admin) UpdateNamesrvConfig(ctx context.Context, kv map[string]string) error {
	for _, ns := range a.opts.NameServers {
		req := remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte(route.FormatProperties(kv)))
		if _, err := a.invokeOK(ctx, ns, req); err != nil {
			return fmt.Errorf("admin: update config of name server %s: %w", ns, err)
		}
	}
	return nil
}

// GroupConsumeStats is one group's progress on one topic of a broker.
type GroupConsumeStats struct {
	Group string
	ConsumeStats
}

// BrokerConsumeStats is a broker's consume statistics of every group (GET_BROKER_CONSUME_STATS).
type BrokerConsumeStats struct {
	BrokerAddr string
	Stats      []GroupConsumeStats
	TotalDiff  int64
}

// BrokerConsumeStats returns the progress of every subscription group of a broker; isOrder
// keeps the order topics only.
func (a *Admin) BrokerConsumeStats(ctx context.Context, brokerAddr string, isOrder bool) (*BrokerConsumeStats, error) {
	req := remoting.NewRequest(remoting.GetBrokerConsumeStats,
		remoting.EncodeHeader(&protocol.GetConsumeStatsInBrokerHeader{IsOrder: isOrder}), nil)
	resp, err := a.invokeOK(ctx, brokerAddr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: consume stats of broker %s: %w", brokerAddr, err)
	}
	l, err := protocol.DecodeConsumeStatsList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: consume stats of broker %s: %w", brokerAddr, err)
	}
	out := &BrokerConsumeStats{BrokerAddr: l.BrokerAddr, TotalDiff: l.TotalDiff}
	for _, g := range l.Groups {
		for _, s := range g.Stats {
			cs := GroupConsumeStats{Group: g.Group, ConsumeStats: ConsumeStats{ConsumeTPS: s.ConsumeTps,
				Offsets: make(map[MessageQueue]OffsetWrapper, len(s.OffsetTable))}}
			for mq, o := range s.OffsetTable {
				cs.Offsets[mq] = OffsetWrapper{BrokerOffset: o.BrokerOffset, ConsumerOffset: o.ConsumerOffset,
					LastTimestamp: millisTime(o.LastTimestamp)}
			}
			out.Stats = append(out.Stats, cs)
		}
	}
	return out, nil
}

// CloneGroupOffset gives destGroup srcGroup's offsets in topic on every master of the topic's
// route (CLONE_GROUP_OFFSET), as RocketMQ's mqadmin does; offline also clones topics an online
// srcGroup does not subscribe to.
func (a *Admin) CloneGroupOffset(ctx context.Context, srcGroup, destGroup, topic string, offline bool) error {
	ms, err := a.routeMasters(ctx, topic, "clone offsets of group "+srcGroup)
	if err != nil {
		return err
	}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.CloneGroupOffset, remoting.EncodeHeader(&protocol.CloneGroupOffsetRequestHeader{
			SrcGroup: srcGroup, DestGroup: destGroup, Topic: topic, Offline: offline}), nil)
		if _, err := a.invokeOK(ctx, m.addr, req); err != nil {
			return fmt.Errorf("admin: clone offsets of group %s on broker %s: %w", srcGroup, m.addr, err)
		}
	}
	return nil
}

// ConsumeQueueUnit is one ConsumeQueue entry (RocketMQ's ConsumeQueueData).
type ConsumeQueueUnit struct {
	PhysicOffset   int64   `json:"physicOffset"`
	PhysicSize     int32   `json:"physicSize"`
	TagsCode       int64   `json:"tagsCode"`
	ExtendDataJSON *string `json:"extendDataJson"`
	BitMap         *string `json:"bitMap"`
	Eval           bool    `json:"eval"`
	Msg            *string `json:"msg"`
}

// ConsumeQueueView is QUERY_CONSUME_QUEUE's answer.
type ConsumeQueueView struct {
	SubscriptionData json.RawMessage    `json:"subscriptionData"`
	FilterData       *string            `json:"filterData"`
	QueueData        []ConsumeQueueUnit `json:"queueData"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
	// Remark is the broker's note, e.g. that index is past the queue's end.
	Remark string `json:"remark,omitempty"`
}

// QueryConsumeQueue reads count units of a queue from index on a broker; group, when set,
// asks for its subscription too.
func (a *Admin) QueryConsumeQueue(ctx context.Context, brokerAddr, topic string, queueID int32, index int64, count int32, group string) (*ConsumeQueueView, error) {
	req := remoting.NewRequest(remoting.QueryConsumeQueue, remoting.EncodeHeader(&protocol.QueryConsumeQueueRequestHeader{
		Topic: topic, QueueID: queueID, Index: index, Count: count, ConsumerGroup: group}), nil)
	resp, err := a.invokeOK(ctx, brokerAddr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: consume queue %d@%s on %s: %w", queueID, topic, brokerAddr, err)
	}
	v := &ConsumeQueueView{Remark: resp.Remark}
	if len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, v); err != nil {
			return nil, fmt.Errorf("admin: consume queue %d@%s on %s: %w", queueID, topic, brokerAddr, err)
		}
	}
	return v, nil
}

// CleanExpiredConsumeQueue has a broker delete the ConsumeQueues of topics it no longer has
// (CLEAN_EXPIRED_CONSUMEQUEUE).
func (a *Admin) CleanExpiredConsumeQueue(ctx context.Context, brokerAddr string) error {
	if _, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.CleanExpiredConsumeQueue, nil, nil)); err != nil {
		return fmt.Errorf("admin: clean expired consume queues on %s: %w", brokerAddr, err)
	}
	return nil
}

// ClusterBrokers returns every broker address of cluster ("" = every cluster), masters and
// slaves, sorted.
func (a *Admin) ClusterBrokers(ctx context.Context, cluster string) ([]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for c, brokerNames := range ci.ClusterAddrTable {
		if cluster != "" && c != cluster {
			continue
		}
		for _, name := range brokerNames {
			out = append(out, slices.Collect(maps.Values(ci.BrokerAddrTable[name].BrokerAddrs))...)
		}
	}
	if cluster != "" && len(out) == 0 {
		return nil, fmt.Errorf("admin: cluster %s not found", cluster)
	}
	slices.Sort(out)
	return out, nil
}

// TopicClusters returns the clusters whose brokers hold topic, sorted (mqadmin
// topicClusterList).
func (a *Admin) TopicClusters(ctx context.Context, topic string) ([]string, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]struct{}{}
	for _, bd := range r.BrokerDatas {
		for c, brokerNames := range ci.ClusterAddrTable {
			if slices.Contains(brokerNames, bd.BrokerName) {
				set[c] = struct{}{}
			}
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// StatsWindow is one window of a broker statistic: the sum counted in it and the rate per
// second (RocketMQ's BrokerStatsItem; avgpt is 0 from mq's brokers, which count messages, not
// calls).
type StatsWindow struct {
	Sum   int64   `json:"sum"`
	TPS   float64 `json:"tps"`
	AvgPT float64 `json:"avgpt"`
}

// BrokerStatsData is a statistic's last minute, hour and day (VIEW_BROKER_STATS_DATA).
type BrokerStatsData struct {
	Minute StatsWindow `json:"statsMinute"`
	Hour   StatsWindow `json:"statsHour"`
	Day    StatsWindow `json:"statsDay"`
}

// Sum24Hours is the day's sum, or the hour's, or the minute's, the first not 0 (RocketMQ's
// StatsAllSubCommand.compute24HourSum).
func (d *BrokerStatsData) Sum24Hours() int64 {
	for _, s := range []int64{d.Day.Sum, d.Hour.Sum, d.Minute.Sum} {
		if s != 0 {
			return s
		}
	}
	return 0
}

// Names of the statistics ViewBrokerStatsData reads (RocketMQ's BrokerStatsManager).
const (
	StatsTopicPutNums = "TOPIC_PUT_NUMS" // key: a topic
	StatsGroupGetNums = "GROUP_GET_NUMS" // key: topic@group
)

// ViewBrokerStatsData reads one statistic of a broker.
func (a *Admin) ViewBrokerStatsData(ctx context.Context, brokerAddr, name, key string) (*BrokerStatsData, error) {
	req := remoting.NewRequest(remoting.ViewBrokerStatsData,
		remoting.EncodeHeader(&protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}), nil)
	resp, err := a.invokeOK(ctx, brokerAddr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: stats %s of %s on %s: %w", name, key, brokerAddr, err)
	}
	var d BrokerStatsData
	if err := json.Unmarshal(resp.Body, &d); err != nil {
		return nil, fmt.Errorf("admin: stats %s of %s on %s: %w", name, key, brokerAddr, err)
	}
	return &d, nil
}

// TopicConsumedBy returns the groups that consume topic (online, or with offsets in it) on
// every master of its route (QUERY_TOPIC_CONSUME_BY_WHO), sorted.
func (a *Admin) TopicConsumedBy(ctx context.Context, topic string) ([]string, error) {
	ms, err := a.routeMasters(ctx, topic, "groups consuming "+topic)
	if err != nil {
		return nil, err
	}
	set := map[string]struct{}{}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.QueryTopicConsumeByWho,
			remoting.EncodeHeader(&protocol.QueryTopicConsumeByWhoRequestHeader{Topic: topic}), nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		if err != nil {
			return nil, fmt.Errorf("admin: groups consuming %s on %s: %w", topic, m.addr, err)
		}
		var body struct {
			GroupList []string `json:"groupList"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("admin: groups consuming %s on %s: %w", topic, m.addr, err)
		}
		for _, g := range body.GroupList {
			set[g] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}
