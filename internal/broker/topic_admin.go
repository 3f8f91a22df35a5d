package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// topicAdmin serves UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215) and
// GET_ALL_TOPIC_CONFIG (21), as RocketMQ's AdminBrokerProcessor serves them (docs/protocol.md §6).
// It holds no state of its own: the topic table is the broker's.
type topicAdmin struct{ *Broker }

// systemTopicPrefix marks topics RocketMQ keeps for itself (TopicValidator.SYSTEM_TOPIC_PREFIX).
const systemTopicPrefix = "rmq_sys_"

// isSystemTopic reports whether admins may not create or delete topic (TopicValidator
// .isSystemTopic). Unlike RocketMQ 4.9 the trace topic RMQ_SYS_TRACE_TOPIC is not reserved, so
// an admin can create it for message tracing.
func (a *topicAdmin) isSystemTopic(topic string) bool {
	switch topic {
	case names.TopicAutoCreate, names.TopicSchedule, names.TopicTransHalf, names.TopicTransOpHalf, names.TopicTransCheckMaxTime,
		names.TopicSelfTest, names.TopicOffsetMoved:
		return true
	}
	return strings.HasPrefix(topic, systemTopicPrefix)
}

func (a *topicAdmin) register(d *remoting.Dispatcher) {
	a.handle(d, remoting.UpdateAndCreateTopic, remoting.ProcessorFunc(a.updateAndCreateTopic), a.adminEx)
	a.handle(d, remoting.DeleteTopicInBroker, remoting.ProcessorFunc(a.deleteTopic), a.adminEx)
	a.handle(d, remoting.GetAllTopicConfig, remoting.ProcessorFunc(a.getAllTopicConfig), a.adminEx)
}

// checkAdminTopic refuses invalid and reserved topic names for the admin requests.
func (a *topicAdmin) checkAdminTopic(topic string) error {
	if remark := validateTopic(topic); remark != "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: remark}
	}
	if a.isSystemTopic(topic) {
		return &remoting.ResponseError{Code: remoting.NoPermission,
			Remark: "The topic[" + topic + "] is conflict with system topic."}
	}
	if topic == a.opts.Broker.ClusterName {
		return &remoting.ResponseError{Code: remoting.SystemError,
			Remark: "the topic[" + topic + "] is conflict with system reserved words."}
	}
	return nil
}

// checkTopicShape refuses queue counts outside [1, MaxQueueNums] and a perm outside
// PermName.isValid's [0, 8). RocketMQ's broker stores whatever arrives and leaves the checks to
// its tools; we refuse here because every later admin read loops over the queue counts and
// every client that routes to the topic allocates that many queues.
func (a *topicAdmin) checkTopicShape(h *protocol.CreateTopicRequestHeader) error {
	remark := a.queueNumsRemark("readQueueNums", h.ReadQueueNums, 1)
	if remark == "" {
		remark = a.queueNumsRemark("writeQueueNums", h.WriteQueueNums, 1)
	}
	if remark == "" && (h.Perm < 0 || h.Perm > maxPermValue) {
		remark = fmt.Sprintf("perm %d is out of range [0, %d]", h.Perm, maxPermValue)
	}
	if remark == "" {
		return nil
	}
	return &remoting.ResponseError{Code: remoting.SystemError, Remark: "topic[" + h.Topic + "]: " + remark}
}

// updateAndCreateTopic creates or replaces a topic and registers it with the name servers at
// once (the topic manager asks the registration loop to run).
func (a *topicAdmin) updateAndCreateTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := a.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	if err := a.checkTopicShape(&h); err != nil {
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
	mods, err := a.attributeMods(h.Attributes)
	if err != nil {
		return nil, err
	}
	tc := TopicConfig{TopicName: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicFilterType: h.TopicFilterType, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err := a.topics.UpdateAttributes(tc, mods); err != nil {
		// RocketMQ 5 answers a refused modification with SYSTEM_ERROR and the reason.
		var ae *tables.AttributeError
		if errors.As(err, &ae) {
			return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: ae.Error()}
		}
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: a.topicsFullRemark(h.Topic)}
	}
	a.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Int32("read_queues", tc.ReadQueueNums).
		Int32("write_queues", tc.WriteQueueNums).Int32("perm", tc.Perm).Str("attributes", h.Attributes).
		Msg("topic updated by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// attributeMods parses UPDATE_AND_CREATE_TOPIC's attributes modification and refuses
// message.type=MIXED unless EnableMixedMessageType, as RocketMQ 5's AdminBrokerProcessor does
// before it alters anything.
func (a *topicAdmin) attributeMods(s string) (map[string]string, error) {
	mods, err := tables.ParseAttributes(s)
	if err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: err.Error()}
	}
	if !a.opts.Types.EnableMixedMessageType && mods["+"+tables.AttrMessageType] == tables.TypeMixed {
		return nil, &remoting.ResponseError{Code: remoting.InvalidParameter, Remark: "MIXED message type is not supported."}
	}
	return mods, nil
}

// deleteTopic removes a topic's config, every group's offsets in it and its ConsumeQueues. The
// records stay in the CommitLog until retention removes them. Deleting an unknown topic succeeds.
func (a *topicAdmin) deleteTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := a.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	existed := a.topics.Delete(h.Topic)
	a.offsets.RemoveTopic(h.Topic)
	a.seams.forgetTopicCounters(h.Topic)
	if err := a.store.DeleteTopics(h.Topic); err != nil {
		a.log.Error().Err(err).Str("topic", h.Topic).Msg("delete topic queues")
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "delete topic queues: " + err.Error()}
	}
	a.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Bool("existed", existed).Msg("topic deleted by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// getAllTopicConfig answers the broker's topic table as a TopicConfigSerializeWrapper.
func (a *topicAdmin) getAllTopicConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	w := a.topics.Snapshot()
	for name, tc := range w.TopicConfigTable {
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = route.FilterSingleTag
			w.TopicConfigTable[name] = tc
		}
	}
	body, err := json.Marshal(&w)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}
