// Package admin is the broker's admin request processors (RocketMQ's AdminBrokerProcessor): the
// topic admin (UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG), the admin
// reads (GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG), subscription group admin
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP), the connection lists
// (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST), the requests relayed to a
// group's consumers (INVOKE_BROKER_TO_RESET_OFFSET, INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
// GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY) and the broker's configuration
// (GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG).
//
// It holds no loops of its own, one file (broker.properties: the settings UPDATE_BROKER_CONFIG
// changed, given back to the core by New) and no state but GET_BROKER_CONFIG's version counter:
// every processor reads and writes the core through its views (Topics, Groups, Offsets,
// Clients, Messages, and the store), the statistics through Stats and the delay cursors through
// DelayOffsets. Its requests run on the core's admin pool. Its one lock, configMu, is held only
// while broker.properties is rewritten; the core's managers take theirs, one at a time.
//
// Files: admin.go (the service and its handlers), topics.go (the topic admin), reads.go (admin
// reads and subscription group admin), connections.go (the connection lists), reset_offset.go
// (the relays to consumers), consume_directly.go (CONSUME_MESSAGE_DIRECTLY), config.go
// (GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG), config_file.go (broker.properties), ops.go
// (GET_BROKER_CONSUME_STATS, CLONE_GROUP_OFFSET, QUERY_CONSUME_QUEUE, CLEAN_EXPIRED_CONSUMEQUEUE,
// QUERY_TOPIC_CONSUME_BY_WHO, QUERY_TOPICS_BY_CONSUMER), maintenance.go (CLEAN_UNUSED_TOPIC,
// DELETE_EXPIRED_COMMITLOG), acl.go (the ACL administration codes, over the node's ACL).
package admin

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Stats are the figures of the statistics service (internal/broker/stats) that runtime info
// and consume stats report.
type Stats interface {
	// Started is when the counting began (bootTimestamp).
	Started() time.Time
	// DayMarks are the put and get totals now, this morning and yesterday morning.
	DayMarks(now time.Time) (put, putToday, putYesterday, get, getToday, getYesterday int64)
	// Rates are the put and get rates over 10 s, 60 s and 600 s; ok is false before two samples.
	Rates() (put, get [3]float64, ok bool)
	// ConsumeTPS is what group pulled of topic per second over the last minute.
	ConsumeTPS(topic, group string) float64
	// StatsData is one statistic's minute, hour and day figures (VIEW_BROKER_STATS_DATA); ok
	// is false for an unknown name or key.
	StatsData(name, key string, now time.Time) (minute, hour, day stats.WindowStat, ok bool)
}

// DelayOffsets is the schedule service's cursors (delayOffset.json).
type DelayOffsets interface {
	DelayOffsets() protocol.DelayOffsetSerializeWrapper
}

// Deps are what the admin processors read beyond the core. A nil Stats reports no counters
// (zero totals, no rates); a nil Delays no delay cursors.
type Deps struct {
	Stats  Stats
	Delays DelayOffsets
	// ACL is the node's ACL for the ACL administration codes (acl.go); nil with ACL off.
	ACL ACLAdmin
}

// Service serves the admin requests over a broker core.
type Service struct {
	core *broker.Broker
	deps Deps
	log  zerolog.Logger
	// configVersion and configVersionAt are GET_BROKER_CONFIG's DataVersion: updates counted
	// since start, and the time of the last (or of the start).
	configVersion, configVersionAt atomic.Int64
	// configMu serializes writes of broker.properties (config_file.go).
	configMu sync.Mutex
}

// New builds the service over core and gives the core the settings UPDATE_BROKER_CONFIG
// persisted (config_file.go). Attach it to core before Register.
func New(core *broker.Broker, deps Deps) (*Service, error) {
	s := &Service{core: core, deps: deps,
		log: core.Logger().With().Str("component", "admin").Str("broker", core.Options().Broker.Name).Logger()}
	s.configVersionAt.Store(time.Now().UnixMilli())
	if err := s.loadRuntimeConfig(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handlers are the admin codes with the header fields that carry names, all on the admin pool.
func (s *Service) Handlers() []broker.Handler {
	topic := []reqnames.Field{reqnames.TopicField("topic")}
	groupTopic := []reqnames.Field{reqnames.GroupField("consumerGroup"), reqnames.TopicField("topic")}
	// The relays' headers name the group "group", not "consumerGroup".
	relay := []reqnames.Field{reqnames.GroupField("group"), reqnames.TopicField("topic")}
	consumerGroup := []reqnames.Field{reqnames.GroupField("consumerGroup")}
	pool := s.core.Pools().Admin
	h := func(code int32, names []reqnames.Field, f remoting.ProcessorFunc) broker.Handler {
		return broker.Handler{Code: code, Names: names, Proc: f, Pool: pool}
	}
	return []broker.Handler{
		h(remoting.UpdateAndCreateTopic, []reqnames.Field{reqnames.TopicField("topic"), reqnames.TopicField("defaultTopic")},
			s.processUpdateAndCreateTopic),
		h(remoting.DeleteTopicInBroker, topic, s.processDeleteTopic),
		h(remoting.GetAllTopicConfig, nil, s.processAllTopicConfig),
		h(remoting.GetBrokerRuntimeInfo, nil, s.processRuntimeInfo),
		h(remoting.GetTopicStatsInfo, topic, s.processTopicStats),
		h(remoting.GetConsumeStats, groupTopic, s.processConsumeStats),
		h(remoting.GetAllConsumerOffset, nil, s.processAllConsumerOffset),
		h(remoting.GetAllDelayOffset, nil, s.processAllDelayOffset),
		h(remoting.GetAllSubscriptionGroupConfig, nil, s.processAllSubscriptionGroups),
		h(remoting.UpdateAndCreateSubscription, nil, s.processUpdateSubscriptionGroup), // body: its processor
		h(remoting.DeleteSubscriptionGroup, []reqnames.Field{reqnames.GroupField("groupName")}, s.processDeleteSubscriptionGroup),
		h(remoting.GetConsumerConnectionList, consumerGroup, s.processConsumerConnectionList),
		h(remoting.GetProducerConnectionList, []reqnames.Field{reqnames.GroupField("producerGroup")}, s.processProducerConnectionList),
		h(remoting.InvokeBrokerToResetOffset, relay, s.processResetOffset),
		h(remoting.InvokeBrokerToGetConsumerStats, relay, s.processGetConsumerStatus),
		h(remoting.GetConsumerRunningInfo, consumerGroup, s.processConsumerRunningInfo),
		h(remoting.ConsumeMessageDirectly, consumerGroup, s.processConsumeMessageDirectly),
		h(remoting.GetBrokerConfig, nil, s.processGetBrokerConfig),
		h(remoting.UpdateBrokerConfig, nil, s.processUpdateBrokerConfig),
		h(remoting.GetBrokerConsumeStats, nil, s.processBrokerConsumeStats),
		h(remoting.CloneGroupOffset, []reqnames.Field{reqnames.GroupField("srcGroup"), reqnames.GroupField("destGroup"),
			reqnames.TopicField("topic")}, s.processCloneGroupOffset),
		h(remoting.QueryConsumeQueue, []reqnames.Field{reqnames.TopicField("topic"), reqnames.GroupField("consumerGroup")},
			s.processQueryConsumeQueue),
		h(remoting.CleanExpiredConsumeQueue, nil, s.processCleanExpiredConsumeQueue),
		h(remoting.QueryTopicConsumeByWho, topic, s.processTopicConsumeByWho),
		h(remoting.ViewBrokerStatsData, nil, s.processViewBrokerStatsData),
		h(remoting.QueryTopicsByConsumer, []reqnames.Field{reqnames.GroupField("group")}, s.processTopicsByConsumer),
		h(remoting.CleanUnusedTopic, nil, s.processCleanUnusedTopic),
		h(remoting.DeleteExpiredCommitLog, nil, s.processDeleteExpiredCommitLog),
		h(remoting.UpdateAndCreateACLConfig, nil, s.processUpdateACL),
		h(remoting.DeleteACLConfig, nil, s.processDeleteACL),
		h(remoting.GetBrokerClusterACLInfo, nil, s.processACLVersion),
		h(remoting.UpdateGlobalWhiteAddrsConfig, nil, s.processUpdateGlobalWhiteAddrs),
		h(remoting.GetBrokerClusterACLConfig, nil, s.processACLConfig),
	}
}

// Run has no loop to run.
func (s *Service) Run(context.Context) error { return nil }

// Close has nothing to write.
func (s *Service) Close() error { return nil }

// jsonResponse answers SUCCESS with v as JSON body.
func jsonResponse(v any) (*remoting.Command, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}
