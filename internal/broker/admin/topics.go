package admin

import (
	"context"
	"strings"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The topic admin: UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215) and
// GET_ALL_TOPIC_CONFIG (21), as RocketMQ's AdminBrokerProcessor serves them (docs/protocol.md
// §6). The topic table is the core's: its Topics view checks the queue counts and perm a topic
// may take and deletes what a topic leaves behind; here are the admin's own refusals.

// systemTopicPrefix marks topics RocketMQ keeps for itself (TopicValidator.SYSTEM_TOPIC_PREFIX).
const systemTopicPrefix = "rmq_sys_"

// isSystemTopic reports whether admins may not create or delete topic (TopicValidator
// .isSystemTopic). Unlike RocketMQ 4.9 the trace topic RMQ_SYS_TRACE_TOPIC is not reserved, so
// an admin can create it for message tracing.
func isSystemTopic(topic string) bool {
	switch topic {
	case names.TopicAutoCreate, names.TopicSchedule, names.TopicTransHalf, names.TopicTransOpHalf, names.TopicTransCheckMaxTime,
		names.TopicSelfTest, names.TopicOffsetMoved:
		return true
	}
	return strings.HasPrefix(topic, systemTopicPrefix)
}

// checkAdminTopic refuses reserved topic names for the admin requests (the handlers' name
// check refused invalid ones before the processor ran).
func (s *Service) checkAdminTopic(topic string) error {
	if isSystemTopic(topic) {
		return &remoting.ResponseError{Code: remoting.NoPermission,
			Remark: "The topic[" + topic + "] is conflict with system topic."}
	}
	if topic == s.core.Options().Broker.ClusterName {
		return &remoting.ResponseError{Code: remoting.SystemError,
			Remark: "the topic[" + topic + "] is conflict with system reserved words."}
	}
	return nil
}

// processUpdateAndCreateTopic creates or replaces a topic and registers it with the name
// servers at once (Topics.Update returns once a registration round carried it).
func (s *Service) processUpdateAndCreateTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := s.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	switch h.TopicFilterType {
	case "":
		h.TopicFilterType = route.FilterSingleTag
	case route.FilterSingleTag, route.FilterMultiTag:
	default:
		return nil, &remoting.ResponseError{Code: remoting.SystemError,
			Remark: "unknown topicFilterType " + h.TopicFilterType}
	}
	mods, err := s.attributeMods(h.Attributes)
	if err != nil {
		return nil, err
	}
	tc := broker.TopicConfig{TopicName: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicFilterType: h.TopicFilterType, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err := s.core.Topics().Update(tc, mods); err != nil {
		return nil, err
	}
	s.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Int32("read_queues", tc.ReadQueueNums).
		Int32("write_queues", tc.WriteQueueNums).Int32("perm", tc.Perm).Str("attributes", h.Attributes).
		Msg("topic updated by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// attributeMods parses UPDATE_AND_CREATE_TOPIC's attributes modification and refuses
// message.type=MIXED unless EnableMixedMessageType, as RocketMQ 5's AdminBrokerProcessor does
// before it alters anything.
func (s *Service) attributeMods(attrs string) (map[string]string, error) {
	mods, err := tables.ParseAttributes(attrs)
	if err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: err.Error()}
	}
	if !s.core.Options().Types.EnableMixedMessageType && mods["+"+tables.AttrMessageType] == tables.TypeMixed {
		return nil, &remoting.ResponseError{Code: remoting.InvalidParameter, Remark: "MIXED message type is not supported."}
	}
	return mods, nil
}

// processDeleteTopic removes a topic's config, every group's offsets in it and its
// ConsumeQueues (Topics.Delete). Deleting an unknown topic succeeds.
func (s *Service) processDeleteTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := s.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	existed, err := s.core.Topics().Delete(h.Topic)
	if err != nil {
		s.log.Error().Err(err).Str("topic", h.Topic).Msg("delete topic queues")
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "delete topic queues: " + err.Error()}
	}
	s.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Bool("existed", existed).Msg("topic deleted by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processAllTopicConfig answers the broker's topic table as a TopicConfigSerializeWrapper
// (a slave's metadata sync reads it from its master).
func (s *Service) processAllTopicConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	w := s.core.Topics().All()
	for name, tc := range w.TopicConfigTable {
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = route.FilterSingleTag
			w.TopicConfigTable[name] = tc
		}
	}
	return jsonResponse(&w)
}
