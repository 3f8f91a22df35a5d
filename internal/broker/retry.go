package broker

import (
	"context"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"math/rand/v2"
	"strconv"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Retry and dead letters (RocketMQ SendMessageProcessor.consumerSendMsgBack).
//
// A consumer that failed a message sends it back with CONSUMER_SEND_MSG_BACK. The broker looks
// the stored record up by its CommitLog offset and stores a copy:
//
//   - in %DLQ%<group> (one queue) when the consumer asks for it (delay level < 0) or the
//     message was already reconsumed maxReconsumeTimes times;
//   - otherwise in %RETRY%<group>, delayed: the copy goes to SCHEDULE_TOPIC_XXXX queue level-1
//     with REAL_TOPIC/REAL_QID naming the retry queue, and the schedule service (schedule.go)
//     moves it there when its level's delay has passed.
//
// The copy has reconsume times + 1, RETRY_TOPIC = the original topic and ORIGIN_MESSAGE_ID =
// the first delivery's id, both kept when already set, so a message retried many times still
// names where it came from.

// dlqQueueNums is the dead-letter topic's queue count (DLQ_NUMS_PER_GROUP).
const dlqQueueNums = 1

// dlqPerm is the permission a dead-letter topic is created with. RocketMQ 4.x brokers create
// it write-only (createTopicInSendMessageBackMethod(dlq, 1, PERM_WRITE, 0)): dead letters are
// not consumed by accident, and an operator who wants to re-consume them grants read with
// UPDATE_AND_CREATE_TOPIC. We do the same; docs/protocol.md §5.7 notes later releases use
// read+write. An existing DLQ topic keeps its permission.
const dlqPerm = route.PermWrite

// retryState holds the schedule (delay) service and the broker's message counters.
type retryState struct {
	sched *scheduleService
	stats brokerStats
}

func (b *Broker) initRetry() {
	b.retry = &retryState{sched: newScheduleService(b)}
	b.retry.stats.init()
	b.addRunner(b.runTPSSampler)
	if b.IsMaster() {
		// A slave keeps the offsets its master reports (GET_ALL_DELAY_OFFSET) and delivers
		// nothing: it cannot write.
		b.addRunner(b.retry.sched.run)
	}
}

// registerRetry installs CONSUMER_SEND_MSG_BACK.
func (b *Broker) registerRetry(d *remoting.Dispatcher) {
	b.handle(d, remoting.ConsumerSendMsgBack, remoting.ProcessorFunc(b.processSendBack), b.sendEx)
}

// persistRetry saves the schedule service's per-level offsets.
func (b *Broker) persistRetry() error { return b.retry.sched.persist() }

// processSendBack handles CONSUMER_SEND_MSG_BACK (36), docs/protocol.md §5.7.
func (b *Broker) processSendBack(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	cfg, ok := b.groups.find(h.Group)
	if !ok {
		return remoting.NewResponse(remoting.SubscriptionGroupNotExist,
			"subscription group not exist, "+h.Group), nil
	}
	if !b.IsMaster() {
		return remoting.NewResponse(remoting.ServiceNotAvailable,
			fmt.Sprintf("the broker[%s] is a slave, sending message back is forbidden", b.opts.BrokerAddr)), nil
	}
	if cfg.RetryQueueNums <= 0 {
		return remoting.NewResponse(remoting.Success, ""), nil // retries disabled for the group
	}
	retryTopic := names.RetryTopic(h.Group)
	tc, err := b.topics.createIfAbsent(retryTopic, cfg.RetryQueueNums, int32(route.PermReadWrite), 0)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, b.topicsFullRemark(retryTopic)), nil
	}
	if !route.IsWritable(tc.Perm) {
		return remoting.NewResponse(remoting.NoPermission,
			fmt.Sprintf("the topic[%s] sending message is forbidden", retryTopic)), nil
	}
	var rec message.Record
	if raw, err := b.store.LookMessageByOffset(h.Offset); err != nil || decodeInto(raw, &rec) != nil {
		return remoting.NewResponse(remoting.SystemError,
			"look message by offset failed, "+strconv.FormatInt(h.Offset, 10)), nil
	}
	m, props := b.sendBackCopy(&rec, &h)

	maxTimes := h.MaxReconsumeTimes
	if maxTimes <= 0 {
		maxTimes = cfg.RetryMaxTimes
	}
	if h.DelayLevel < 0 || rec.ReconsumeTimes >= maxTimes {
		dlq := names.DLQTopic(h.Group)
		if _, err := b.topics.createIfAbsent(dlq, dlqQueueNums, int32(dlqPerm), 0); err != nil {
			return remoting.NewResponse(remoting.SystemError, b.topicsFullRemark(dlq)), nil
		}
		m.Topic, m.QueueID = dlq, rand.Int32N(dlqQueueNums)
		m.Properties = message.MarshalProperties(props)
		b.log.Debug().Str("group", h.Group).Str("topic", string(rec.Topic)).Int64("phy_offset", h.Offset).
			Int32("reconsume_times", rec.ReconsumeTimes).Msg("message sent to the dead-letter topic")
	} else {
		level := int(h.DelayLevel)
		if level == 0 {
			level = 3 + int(rec.ReconsumeTimes)
		}
		level = min(level, len(b.opts.DelayLevels))
		m.Topic = retryTopic
		m.QueueID = rand.Int32N(max(1, min(cfg.RetryQueueNums, tc.WriteQueueNums)))
		m.Properties = message.MarshalProperties(props)
		b.toScheduleTopic(m, level) // the send path's DELAY redirection (send_props.go)
	}
	res, err := b.store.PutMessage(m)
	if err != nil && !storedAnyway(res.Status) {
		b.log.Warn().Err(err).Str("group", h.Group).Str("status", res.Status.String()).Msg("send back failed")
		return remoting.NewResponse(remoting.SystemError, res.Status.String()), nil
	}
	b.countPut(m.Topic, 1, res.WroteBytes)
	if m.Topic == names.TopicSchedule {
		b.retry.sched.notify()
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// sendBackCopy builds the copy of rec a send-back stores, and its properties (the caller sets
// the topic and queue): same body, flag, born time and host, reconsume times + 1, RETRY_TOPIC
// and ORIGIN_MESSAGE_ID set if absent, the transaction bits cleared, and WAIT=false as
// RocketMQ sets it (the consumer does not wait for a flush).
func (b *Broker) sendBackCopy(rec *message.Record, h *protocol.ConsumerSendMsgBackRequestHeader) (*storage.Message, map[string]string) {
	props := message.UnmarshalProperties(rec.Properties)
	if _, ok := props[message.PropertyRetryTopic]; !ok {
		props[message.PropertyRetryTopic] = string(rec.Topic)
	}
	if props[message.PropertyOriginMessageID] == "" {
		// RocketMQ brokers use the offset id here; the header's id (the consumer's view,
		// UNIQ_KEY first) agrees with what the client's own resend fallback writes.
		id := h.OriginMsgID
		if id == "" {
			id = props[message.PropertyUniqKey]
		}
		if id == "" {
			id = message.OffsetMsgID(rec.StoreHost, rec.PhysicalOffset)
		}
		props[message.PropertyOriginMessageID] = id
	}
	props[message.PropertyWaitStoreMsgOK] = "false"
	m := &storage.Message{
		Flag:           rec.Flag,
		Body:           rec.Body,
		SysFlag:        rec.SysFlag &^ message.TransactionRollbackType, // both transaction bits
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: rec.ReconsumeTimes + 1,
	}
	return m, props
}

// decodeInto decodes the record raw (which rec then points into).
func decodeInto(raw []byte, rec *message.Record) error {
	_, err := message.DecodeRecord(raw, rec, false)
	return err
}

// storedAnyway reports whether a put that returned an error still stored the message.
func storedAnyway(st storage.PutStatus) bool {
	switch st {
	case storage.PutOK, storage.FlushDiskTimeout, storage.FlushSlaveTimeout, storage.SlaveNotAvailable:
		return true
	}
	return false
}
