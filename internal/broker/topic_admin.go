package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"strings"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Topic admin: UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215) and
// GET_ALL_TOPIC_CONFIG (21), as RocketMQ's AdminBrokerProcessor serves them (docs/protocol.md §6).

// systemTopicPrefix marks topics RocketMQ keeps for itself (TopicValidator.SYSTEM_TOPIC_PREFIX).
const systemTopicPrefix = "rmq_sys_"

// isSystemTopic reports whether admins may not create or delete topic (TopicValidator
// .isSystemTopic). Unlike RocketMQ 4.9 the trace topic RMQ_SYS_TRACE_TOPIC is not reserved, so
// an admin can create it for message tracing.
func (b *Broker) isSystemTopic(topic string) bool {
	switch topic {
	case names.TopicAutoCreate, names.TopicSchedule, names.TopicTransHalf, names.TopicTransOpHalf, names.TopicTransCheckMaxTime,
		names.TopicSelfTest, names.TopicOffsetMoved:
		return true
	}
	return strings.HasPrefix(topic, systemTopicPrefix)
}

func (b *Broker) registerTopicAdmin(d *remoting.Dispatcher) {
	b.handle(d, remoting.UpdateAndCreateTopic, remoting.ProcessorFunc(b.updateAndCreateTopic), b.adminEx)
	b.handle(d, remoting.DeleteTopicInBroker, remoting.ProcessorFunc(b.deleteTopic), b.adminEx)
	b.handle(d, remoting.GetAllTopicConfig, remoting.ProcessorFunc(b.getAllTopicConfig), b.adminEx)
}

// checkAdminTopic refuses invalid and reserved topic names for the admin requests.
func (b *Broker) checkAdminTopic(topic string) error {
	if remark := validateTopic(topic); remark != "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: remark}
	}
	if b.isSystemTopic(topic) {
		return &remoting.ResponseError{Code: remoting.NoPermission,
			Remark: "The topic[" + topic + "] is conflict with system topic."}
	}
	if topic == b.opts.ClusterName {
		return &remoting.ResponseError{Code: remoting.SystemError,
			Remark: "the topic[" + topic + "] is conflict with system reserved words."}
	}
	return nil
}

// checkTopicShape refuses queue counts outside [1, MaxQueueNums] and a perm outside
// PermName.isValid's [0, 8). RocketMQ's broker stores whatever arrives and leaves the checks to
// its tools; we refuse here because every later admin read loops over the queue counts and
// every client that routes to the topic allocates that many queues.
func (b *Broker) checkTopicShape(h *protocol.CreateTopicRequestHeader) error {
	remark := b.queueNumsRemark("readQueueNums", h.ReadQueueNums, 1)
	if remark == "" {
		remark = b.queueNumsRemark("writeQueueNums", h.WriteQueueNums, 1)
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
func (b *Broker) updateAndCreateTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := b.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	if err := b.checkTopicShape(&h); err != nil {
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
	tc := TopicConfig{TopicName: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicFilterType: h.TopicFilterType, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err := b.topics.update(tc); err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: b.topicsFullRemark(h.Topic)}
	}
	b.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Int32("read_queues", tc.ReadQueueNums).
		Int32("write_queues", tc.WriteQueueNums).Int32("perm", tc.Perm).Msg("topic updated by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// deleteTopic removes a topic's config, every group's offsets in it and its ConsumeQueues. The
// records stay in the CommitLog until retention removes them. Deleting an unknown topic succeeds.
func (b *Broker) deleteTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := b.checkAdminTopic(h.Topic); err != nil {
		return nil, err
	}
	existed := b.topics.delete(h.Topic)
	b.offsets.removeTopic(h.Topic)
	b.forgetTopicCounters(h.Topic)
	if err := b.store.DeleteTopics(h.Topic); err != nil {
		b.log.Error().Err(err).Str("topic", h.Topic).Msg("delete topic queues")
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "delete topic queues: " + err.Error()}
	}
	b.log.Info().Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Bool("existed", existed).Msg("topic deleted by admin")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// getAllTopicConfig answers the broker's topic table as a TopicConfigSerializeWrapper.
func (b *Broker) getAllTopicConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	w := b.topics.snapshot()
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
