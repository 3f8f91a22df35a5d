package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The operators' broker requests of issue 31: consume statistics of every group at once,
// offset cloning, ConsumeQueue inspection and cleaning, and who consumes what.

// maxQueryConsumeQueue caps the units one QUERY_CONSUME_QUEUE returns, whatever count asks
// (RocketMQ has no cap; its mqadmin asks 10 by default).
const maxQueryConsumeQueue = 1000

// subscribed reports whether group may be counted on topic, as RocketMQ's admin reads decide:
// a group with no online subscription counts on every topic it has offsets in; an online one
// only on the topics it subscribes to.
func (s *Service) subscribed(group, topic string) bool {
	st, ok := s.core.Clients().ConsumerGroup(group)
	if !ok || len(st.Subscriptions) == 0 {
		return true
	}
	return slices.ContainsFunc(st.Subscriptions, func(d protocol.SubscriptionData) bool { return d.Topic == topic })
}

// processBrokerConsumeStats handles GET_BROKER_CONSUME_STATS (317): for every subscription
// group, per topic it has offsets in (order topics only when isOrder), each write queue's max
// offset and the group's offset, as RocketMQ's ConsumeStatsList.
func (s *Service) processBrokerConsumeStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumeStatsInBrokerHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	store, opts := s.core.Store(), s.core.Options()
	groups := s.core.Groups().All().SubscriptionGroupTable
	var totalDiff int64
	body := append(make([]byte, 0, 256), `{"brokerAddr":`...)
	addr, _ := json.Marshal(opts.BrokerAddr)
	body = append(body, addr...)
	body = append(body, `,"consumeStatsList":[`...)
	for gi, group := range slices.Sorted(maps.Keys(groups)) {
		if gi > 0 {
			body = append(body, ',')
		}
		key, _ := json.Marshal(group)
		body = append(append(append(body, '{'), key...), ":["...)
		first := true
		for _, topic := range s.core.Offsets().TopicsOf(group) {
			tc, ok := s.core.Topics().Get(topic)
			if !ok || (h.IsOrder && !tc.Order) || !s.subscribed(group, topic) {
				continue
			}
			cs := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
			for q := range s.core.Topics().QueueLoopBound(tc.WriteQueueNums) {
				w := protocol.OffsetWrapper{BrokerOffset: max(0, store.MaxOffsetInQueue(topic, q)),
					ConsumerOffset: max(0, s.core.Offsets().Query(group, topic, q))}
				if w.ConsumerOffset > 0 {
					w.LastTimestamp, _ = store.GetMessageStoreTimestamp(topic, q, w.ConsumerOffset-1)
				}
				totalDiff += w.BrokerOffset - w.ConsumerOffset
				cs.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: opts.Broker.Name, QueueID: int(q)}] = w
			}
			if s.deps.Stats != nil {
				cs.ConsumeTps = s.deps.Stats.ConsumeTPS(topic, group)
			}
			if !first {
				body = append(body, ',')
			}
			first = false
			body = append(body, cs.Encode()...)
		}
		body = append(body, "]}"...)
	}
	body = append(body, `],"totalDiff":`...)
	body = strconv.AppendInt(body, totalDiff, 10)
	body = append(body, '}')
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// processCloneGroupOffset handles CLONE_GROUP_OFFSET (314): destGroup gets srcGroup's committed
// offsets in topic (every topic srcGroup has offsets in when topic is empty). Unless offline,
// topics an online srcGroup does not subscribe to are skipped, as in RocketMQ.
func (s *Service) processCloneGroupOffset(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CloneGroupOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	// The destination group is created as a heartbeat would create it (RocketMQ clones to any
	// name): it may be new, which is what cloning is for, but each clone to a new name adds
	// offsets, so the name must fit in the group table (MaxSubscriptionGroups) as a group.
	if _, err := s.core.Groups().Lookup(h.DestGroup); err != nil {
		return remoting.NewResponse(remoting.SubscriptionGroupNotExist,
			broker.GroupRemark(err, "Group "+h.DestGroup+" not exist!")), nil
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		topics = s.core.Offsets().TopicsOf(h.SrcGroup)
	}
	cloned := 0
	for _, topic := range topics {
		tc, ok := s.core.Topics().Get(topic)
		if !ok {
			continue
		}
		if !h.Offline && !s.subscribed(h.SrcGroup, topic) {
			continue
		}
		for q := range s.core.Topics().QueueLoopBound(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
			if off := s.core.Offsets().Query(h.SrcGroup, topic, q); off >= 0 {
				s.core.Offsets().Commit(h.DestGroup, topic, q, off)
				cloned++
			}
		}
	}
	s.log.Info().Str("src", h.SrcGroup).Str("dest", h.DestGroup).Str("topic", h.Topic).Int("queues", cloned).
		Str("client", ch.RemoteAddr()).Msg("group offsets cloned")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// consumeQueueData is one unit in QUERY_CONSUME_QUEUE's body (RocketMQ's ConsumeQueueData;
// the extension fields stay empty: the store keeps no ConsumeQueue extension).
type consumeQueueData struct {
	PhysicOffset   int64   `json:"physicOffset"`
	PhysicSize     int32   `json:"physicSize"`
	TagsCode       int64   `json:"tagsCode"`
	ExtendDataJSON *string `json:"extendDataJson"`
	BitMap         *string `json:"bitMap"`
	Eval           bool    `json:"eval"`
	Msg            *string `json:"msg"`
}

// queryConsumeQueueBody is QueryConsumeQueueResponseBody.
type queryConsumeQueueBody struct {
	SubscriptionData *protocol.SubscriptionData `json:"subscriptionData"`
	FilterData       *string                    `json:"filterData"`
	QueueData        []consumeQueueData         `json:"queueData"`
	MaxQueueIndex    int64                      `json:"maxQueueIndex"`
	MinQueueIndex    int64                      `json:"minQueueIndex"`
}

// processQueryConsumeQueue handles QUERY_CONSUME_QUEUE (321): up to count units of one queue
// from index, with the queue's bounds and, for a consumerGroup, its subscription.
func (s *Service) processQueryConsumeQueue(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryConsumeQueueRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	tc, ok := s.core.Topics().Get(h.Topic)
	if !ok || h.QueueID < 0 || h.QueueID >= s.core.Topics().QueueLoopBound(max(tc.ReadQueueNums, tc.WriteQueueNums)) {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("%d@%s is not exist!", h.QueueID, h.Topic)), nil
	}
	store := s.core.Store()
	body := queryConsumeQueueBody{QueueData: []consumeQueueData{},
		MaxQueueIndex: store.MaxOffsetInQueue(h.Topic, h.QueueID), MinQueueIndex: store.MinOffsetInQueue(h.Topic, h.QueueID)}
	if h.ConsumerGroup != "" {
		filter := fmt.Sprintf("%s@%s is not online!", h.ConsumerGroup, h.Topic)
		if st, ok := s.core.Clients().ConsumerGroup(h.ConsumerGroup); ok {
			for i := range st.Subscriptions {
				if st.Subscriptions[i].Topic == h.Topic {
					body.SubscriptionData = &st.Subscriptions[i]
					filter = "null" // no ConsumerFilterData: the broker compiles SQL filters per pull
				}
			}
		}
		body.FilterData = &filter
	}
	resp := remoting.NewResponse(remoting.Success, "")
	if h.Count > 0 {
		units, err := store.ConsumeQueueUnits(h.Topic, h.QueueID, h.Index, int(min(h.Count, maxQueryConsumeQueue)))
		if err != nil {
			resp.Remark = fmt.Sprintf("Index %d of %d@%s is not exist!", h.Index, h.QueueID, h.Topic)
			return resp, nil
		}
		for _, u := range units {
			body.QueueData = append(body.QueueData, consumeQueueData{PhysicOffset: u.PhyOffset, PhysicSize: u.Size, TagsCode: u.TagsCode})
		}
	}
	var err error
	resp.Body, err = json.Marshal(body)
	return resp, err
}

// processCleanExpiredConsumeQueue handles CLEAN_EXPIRED_CONSUMEQUEUE (306): the ConsumeQueues
// of topics the broker no longer has are deleted (DefaultMessageStore
// .cleanExpiredConsumerQueue; the files behind the CommitLog's start go with each retention
// round already), as CLEAN_UNUSED_TOPIC does (maintenance.go).
func (s *Service) processCleanExpiredConsumeQueue(_ context.Context, ch remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
	return s.cleanGoneTopics(ch, "expired consume queues cleaned"), nil
}

// processTopicConsumeByWho handles QUERY_TOPIC_CONSUME_BY_WHO (300): the groups online on the
// topic and those with offsets in it, as a GroupList.
func (s *Service) processTopicConsumeByWho(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryTopicConsumeByWhoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	set := map[string]struct{}{}
	consumers, _ := s.core.Clients().Counts()
	for group := range consumers {
		if st, ok := s.core.Clients().ConsumerGroup(group); ok &&
			slices.ContainsFunc(st.Subscriptions, func(d protocol.SubscriptionData) bool { return d.Topic == h.Topic }) {
			set[group] = struct{}{}
		}
	}
	for key := range s.core.Offsets().All() {
		if topic, group, ok := broker.SplitOffsetKey(key); ok && topic == h.Topic {
			set[group] = struct{}{}
		}
	}
	return jsonResponse(struct {
		GroupList []string `json:"groupList"`
	}{slices.Sorted(maps.Keys(set))})
}

// processTopicsByConsumer handles QUERY_TOPICS_BY_CONSUMER (343): the topics the group has
// offsets in, with this broker's address, as a TopicList.
func (s *Service) processTopicsByConsumer(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryTopicsByConsumerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	topics := s.core.Offsets().TopicsOf(h.Group)
	slices.Sort(topics)
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = (&route.TopicList{TopicList: append([]string{}, topics...), BrokerAddr: s.core.Options().BrokerAddr}).Encode()
	return resp, nil
}

// brokerStatsItem is BrokerStatsItem, one window of VIEW_BROKER_STATS_DATA.
type brokerStatsItem struct {
	Sum   int64   `json:"sum"`
	TPS   float64 `json:"tps"`
	AvgPT float64 `json:"avgpt"`
}

// processViewBrokerStatsData handles VIEW_BROKER_STATS_DATA (315): a statistic's minute, hour
// and day sums and rates, as BrokerStatsData (statsAll reads TOPIC_PUT_NUMS of a topic and
// GROUP_GET_NUMS of topic@group). Statistics the broker does not keep, and keys nothing was
// counted for, are RocketMQ's SYSTEM_ERROR "The stats <name> <key> not exist".
func (s *Service) processViewBrokerStatsData(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ViewBrokerStatsDataRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	var minute, hour, day stats.WindowStat
	ok := false
	if s.deps.Stats != nil {
		minute, hour, day, ok = s.deps.Stats.StatsData(h.StatsName, h.StatsKey, time.Now())
	}
	if !ok {
		return remoting.NewResponse(remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist",
			names.Quote(h.StatsName, len(h.StatsName)), names.Quote(h.StatsKey, len(h.StatsKey)))), nil
	}
	item := func(w stats.WindowStat) brokerStatsItem {
		return brokerStatsItem{Sum: w.Sum, TPS: w.TPS, AvgPT: w.AvgPT}
	}
	return jsonResponse(struct {
		StatsMinute brokerStatsItem `json:"statsMinute"`
		StatsHour   brokerStatsItem `json:"statsHour"`
		StatsDay    brokerStatsItem `json:"statsDay"`
	}{item(minute), item(hour), item(day)})
}
