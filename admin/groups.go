package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// NewSubscriptionGroupConfig returns RocketMQ's defaults for a group (SubscriptionGroupConfig).
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1}
}

// subscriptionGroupBody is RocketMQ's SubscriptionGroupConfig JSON; consumeMessageOrderly is
// RocketMQ 5's, which 4.x brokers ignore.
type subscriptionGroupBody struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool   `json:"consumeMessageOrderly"`
	RetryQueueNums                 int    `json:"retryQueueNums"`
	RetryMaxTimes                  int    `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// CreateSubscriptionGroup creates or updates a consumer group's settings on one broker
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP). The fields are sent as given: start from
// NewSubscriptionGroupConfig for RocketMQ's defaults.
func (a *Admin) CreateSubscriptionGroup(ctx context.Context, brokerAddr string, cfg SubscriptionGroupConfig) error {
	if cfg.GroupName == "" {
		return errors.New("admin: create subscription group: no group name")
	}
	body, err := json.Marshal(subscriptionGroupBody{GroupName: cfg.GroupName, ConsumeEnable: cfg.ConsumeEnable,
		ConsumeFromMinEnable: !cfg.DisableConsumeFromMin, ConsumeBroadcastEnable: cfg.ConsumeBroadcastEnable,
		ConsumeMessageOrderly: cfg.ConsumeMessageOrderly, RetryQueueNums: cfg.RetryQueueNums,
		RetryMaxTimes: cfg.RetryMaxTimes, BrokerID: cfg.BrokerID,
		WhichBrokerWhenConsumeSlowly:   cfg.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIdsChangedEnable: !cfg.DisableNotifyConsumerIdsChanged})
	if err == nil {
		_, err = a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil, body))
	}
	if err != nil {
		return fmt.Errorf("admin: create subscription group %s on broker %s: %w", cfg.GroupName, brokerAddr, err)
	}
	return nil
}

// DeleteSubscriptionGroup deletes a consumer group's settings from one broker
// (DELETE_SUBSCRIPTIONGROUP); its offsets stay, as with RocketMQ's admin unless asked
// (RemoveSubscriptionGroup).
func (a *Admin) DeleteSubscriptionGroup(ctx context.Context, brokerAddr, group string) error {
	return a.RemoveSubscriptionGroup(ctx, brokerAddr, group, false)
}

// ConsumerGroups returns the consumer groups that have a retry topic, sorted: the groups
// mqadmin consumerProgress lists when given no group.
func (a *Admin) ConsumerGroups(ctx context.Context) ([]string, error) {
	topics, err := a.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, t := range topics {
		if g, ok := strings.CutPrefix(t, names.RetryPrefix); ok && g != "" {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return groups, nil
}

// ConsumeStats returns a group's progress on topic ("" = every topic the group has offsets
// for), asked (GET_CONSUME_STATS) of every master of the route of the group's retry topic.
func (a *Admin) ConsumeStats(ctx context.Context, group, topic string) (*ConsumeStats, error) {
	what := "consume stats of group " + group
	ms, err := a.routeMasters(ctx, names.RetryTopic(group), what)
	if err != nil {
		return nil, err
	}
	out := &ConsumeStats{Offsets: map[MessageQueue]OffsetWrapper{}}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.GetConsumeStats,
			remoting.EncodeHeader(&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}), nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		s, err := protocol.DecodeConsumeStats(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		out.ConsumeTPS += s.ConsumeTps
		for mq, o := range s.OffsetTable {
			out.Offsets[mq] = OffsetWrapper{BrokerOffset: o.BrokerOffset, ConsumerOffset: o.ConsumerOffset,
				LastTimestamp: millisTime(o.LastTimestamp)}
		}
	}
	return out, nil
}

// consumerConnectionBody is RocketMQ's ConsumerConnection JSON.
type consumerConnectionBody struct {
	ConnectionSet []struct {
		ClientID   string `json:"clientId"`
		ClientAddr string `json:"clientAddr"`
		Language   string `json:"language"`
		Version    int    `json:"version"`
	} `json:"connectionSet"`
	SubscriptionTable map[string]struct {
		SubString      string `json:"subString"`
		ExpressionType string `json:"expressionType"`
	} `json:"subscriptionTable"`
	ConsumeType      string `json:"consumeType"`
	MessageModel     string `json:"messageModel"`
	ConsumeFromWhere string `json:"consumeFromWhere"`
}

// ConsumerConnection returns a group's online members and subscriptions
// (GET_CONSUMER_CONNECTION_LIST), from the first master of the group's retry topic that knows
// them; a group with nobody online is CONSUMER_NOT_ONLINE, a *remoting.ResponseError.
func (a *Admin) ConsumerConnection(ctx context.Context, group string) (*ConsumerConnection, error) {
	what := "consumer connection of group " + group
	ms, err := a.routeMasters(ctx, names.RetryTopic(group), what)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, m := range ms {
		cc, err := a.ConsumerConnectionAt(ctx, group, m.addr)
		if err != nil {
			lastErr = err
			continue
		}
		return cc, nil
	}
	return nil, lastErr
}

// ConsumerConnectionAt returns a group's online members and subscriptions as one broker knows
// them (GET_CONSUMER_CONNECTION_LIST); a group with nobody online there is CONSUMER_NOT_ONLINE,
// a *remoting.ResponseError.
func (a *Admin) ConsumerConnectionAt(ctx context.Context, group, brokerAddr string) (*ConsumerConnection, error) {
	what := "consumer connection of group " + group
	req := remoting.NewRequest(remoting.GetConsumerConnectionList,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil)
	resp, err := a.invokeOK(ctx, brokerAddr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: %s on broker %s: %w", what, brokerAddr, err)
	}
	var body consumerConnectionBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("admin: %s on broker %s: %w", what, brokerAddr, err)
	}
	cc := &ConsumerConnection{ConsumeType: body.ConsumeType, MessageModel: body.MessageModel,
		ConsumeFromWhere: body.ConsumeFromWhere}
	for _, c := range body.ConnectionSet {
		cc.Connections = append(cc.Connections, Connection{ClientID: c.ClientID, ClientAddr: c.ClientAddr,
			Language: c.Language, Version: c.Version})
	}
	slices.SortFunc(cc.Connections, func(x, y Connection) int { return strings.Compare(x.ClientID, y.ClientID) })
	for topic, s := range body.SubscriptionTable {
		typ := s.ExpressionType
		if typ == "" {
			typ = protocol.ExpressionTag
		}
		cc.Subscriptions = append(cc.Subscriptions, Subscription{Topic: topic, Expression: s.SubString, Type: typ})
	}
	slices.SortFunc(cc.Subscriptions, func(x, y Subscription) int { return strings.Compare(x.Topic, y.Topic) })
	return cc, nil
}

// ResetOffsetByTime moves a group's offsets of topic to the first message stored at or after
// t on every master of the topic (INVOKE_BROKER_TO_RESET_OFFSET), which tells the group's
// online consumers; without force, a queue never moves forward. The zero time means the end of
// each queue (mqadmin's "now"). On a broker where the group
// has nobody online (CONSUMER_NOT_ONLINE) the offsets are committed directly instead
// (SEARCH_OFFSET_BY_TIMESTAMP, UPDATE_CONSUMER_OFFSET), as mqadmin resetOffsetByTime falls
// back to. It returns the new offset of each queue.
func (a *Admin) ResetOffsetByTime(ctx context.Context, group, topic string, t time.Time, force bool) (map[MessageQueue]int64, error) {
	what := fmt.Sprintf("reset offset of group %s on topic %s", group, topic)
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	ms := masters(r)
	if len(ms) == 0 {
		return nil, fmt.Errorf("admin: %s: topic has no master broker", what)
	}
	out := map[MessageQueue]int64{}
	for _, m := range ms {
		req := remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
			&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: resetTimestamp(t), IsForce: force}), nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		var rerr *remoting.ResponseError
		if errors.As(err, &rerr) && rerr.Code == remoting.ConsumerNotOnline {
			err = a.commitOffsetsByTime(ctx, m.addr, group, topic, t, force, out)
			if err != nil {
				return nil, fmt.Errorf("admin: %s on broker %s (no consumer online): %w", what, m.addr, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		table, err := protocol.DecodeOffsetSerializeWrapper(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		for mq, off := range table {
			out[mq] = off
		}
	}
	return out, nil
}

// commitOffsetsByTime resets the group's queues of topic on one broker by committing the
// offsets itself, for a group with nobody online to tell (mqadmin's resetOffsetByTimestampOld):
// the queues are those the broker reports the group's progress on.
func (a *Admin) commitOffsetsByTime(ctx context.Context, addr, group, topic string, t time.Time, force bool, out map[MessageQueue]int64) error {
	req := remoting.NewRequest(remoting.GetConsumeStats,
		remoting.EncodeHeader(&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}), nil)
	resp, err := a.invokeOK(ctx, addr, req)
	if err != nil {
		return err
	}
	stats, err := protocol.DecodeConsumeStats(resp.Body)
	if err != nil {
		return err
	}
	if len(stats.OffsetTable) == 0 {
		return fmt.Errorf("group %s has no offsets of topic %s", group, topic)
	}
	for mq, o := range stats.OffsetTable {
		search := remoting.NewRequest(remoting.SearchOffsetByTimestamp, remoting.EncodeHeader(
			&protocol.SearchOffsetRequestHeader{Topic: mq.Topic, QueueID: int32(mq.QueueID), Timestamp: searchTimestamp(t)}), nil)
		resp, err := a.invokeOK(ctx, addr, search)
		if err != nil {
			return err
		}
		var h protocol.OffsetHeader
		if err := h.Decode(resp.ExtFields); err != nil {
			return err
		}
		target := h.Offset
		if !force && target >= o.ConsumerOffset {
			target = o.ConsumerOffset
		}
		update := remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: mq.Topic, QueueID: int32(mq.QueueID),
				CommitOffset: target}), nil)
		if _, err := a.invokeOK(ctx, addr, update); err != nil {
			return err
		}
		out[mq] = target
	}
	return nil
}

// resetTimestamp is t as INVOKE_BROKER_TO_RESET_OFFSET carries it: -1 asks for the end of
// each queue.
func resetTimestamp(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// searchTimestamp is t as SEARCH_OFFSET_BY_TIMESTAMP carries it: a time past every message
// finds the end of each queue.
func searchTimestamp(t time.Time) int64 {
	if t.IsZero() {
		return math.MaxInt64
	}
	return t.UnixMilli()
}
