package client

import (
	"context"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Admin requests brokers relay to consumers: RESET_CONSUMER_CLIENT_OFFSET (220) and
// GET_CONSUMER_STATUS_FROM_CLIENT (221), sent by a broker serving INVOKE_BROKER_TO_RESET_OFFSET
// (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223).

// OffsetResetter is a Consumer that can be moved by 220 (push consumers).
type OffsetResetter interface {
	// ResetOffset moves the held queues of topic named in offsets; it must not block for long.
	ResetOffset(topic string, offsets map[protocol.MessageQueue]int64)
}

// ConsumeStatusReporter is a Consumer that answers 221.
type ConsumeStatusReporter interface {
	// ConsumeStatus returns the consumer's offsets of topic's held queues.
	ConsumeStatus(topic string) map[protocol.MessageQueue]int64
}

// processResetOffset hands a 220 to the group's consumer. It is one-way: a request that cannot
// be acted on is logged and dropped, as RocketMQ's client does.
func (i *Instance) processResetOffset(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ResetOffsetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		i.log.Warn().Str("service", "reset-offset").Str("broker", ch.RemoteAddr()).Err(err).Msg("reset offset request unreadable")
		return nil, nil
	}
	log := i.log.With().Str("service", "reset-offset").Str("broker", ch.RemoteAddr()).Str("topic", h.Topic).
		Str("group", h.Group).Int64("timestamp", h.Timestamp).Logger()
	offsets, err := protocol.DecodeOffsetSerializeWrapper(req.Body)
	if err != nil {
		log.Warn().Err(err).Msg("reset offset table unreadable")
		return nil, nil
	}
	r, ok := i.consumer(h.Group).(OffsetResetter)
	if !ok {
		log.Info().Msg("reset offset for a group without a push consumer here; ignored")
		return nil, nil
	}
	log.Info().Int("queues", len(offsets)).Msg("resetting offsets")
	r.ResetOffset(h.Topic, offsets)
	return nil, nil
}

// processConsumeStatus answers 221 with the group's offsets of the topic.
func (i *Instance) processConsumeStatus(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumerStatusRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	r, ok := i.consumer(h.Group).(ConsumeStatusReporter)
	if !ok {
		return remoting.NewResponse(remoting.SystemError,
			"The Consumer Group <"+h.Group+"> not exist in this consumer"), nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = protocol.EncodeConsumerStatusBody(&protocol.ConsumerStatusBody{MessageQueueTable: r.ConsumeStatus(h.Topic)})
	return resp, nil
}

// RunningInfoReporter is a Consumer that describes what it holds for GET_CONSUMER_RUNNING_INFO
// (307); the instance adds the group's settings and subscriptions.
type RunningInfoReporter interface {
	RunningInfo() ConsumerRunning
}

// ConsumerRunning is a consumer's part of its running info.
type ConsumerRunning struct {
	Orderly bool
	// ConsumeGoroutines is how many listener calls may run at once (RocketMQ's consume
	// thread pool size).
	ConsumeGoroutines int
	Queues            map[protocol.MessageQueue]protocol.ProcessQueueInfo
	// Status is the pull and consume rates per topic (RocketMQ's ConsumerStatsManager).
	Status map[string]protocol.ConsumeStatus
}

// runningInfoResponse answers 307 for a consumer that reports its queues: RocketMQ's
// ConsumerRunningInfo with the properties its tools read, the subscriptions and the queue
// table, and the status table of pull and consume rates.
func (i *Instance) runningInfoResponse(c Consumer, r RunningInfoReporter) (*remoting.Command, error) {
	data := c.HeartbeatData()
	run := r.RunningInfo()
	info := &protocol.ConsumerRunningInfo{
		Properties: map[string]string{
			protocol.PropNameServerAddr:     strings.Join(i.opts.NameServers, ";") + ";",
			protocol.PropConsumeType:        data.ConsumeType,
			protocol.PropClientVersion:      "mq-go",
			protocol.PropConsumeOrderly:     strconv.FormatBool(run.Orderly),
			protocol.PropThreadPoolCoreSize: strconv.Itoa(run.ConsumeGoroutines),
			"consumerGroup":                 data.GroupName,
			"messageModel":                  data.MessageModel,
			"consumeFromWhere":              data.ConsumeFromWhere,
		},
		SubscriptionSet: data.SubscriptionDataSet,
		MQTable:         run.Queues,
		StatusTable:     run.Status,
	}
	body, err := protocol.EncodeConsumerRunningInfo(info)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}
