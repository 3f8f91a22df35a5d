package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/mqgo/mq/internal/names"

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
//     with REAL_TOPIC/REAL_QID naming the retry queue, and the schedule service
//     (internal/broker/schedule)
//     moves it there when its level's delay has passed.
//
// The copy has reconsume times + 1, RETRY_TOPIC = the original topic and ORIGIN_MESSAGE_ID =
// the first delivery's id, both kept when already set, so a message retried many times still
// names where it came from.

// dlqQueueNums is the dead-letter topic's queue count (DLQ_NUMS_PER_GROUP).
const dlqQueueNums = 1

// dlqPerm is the permission a dead-letter topic is created with: read and write, as RocketMQ
// 4.9 creates it in both send-back paths (createTopicInSendMessageBackMethod(dlq, 1,
// PERM_WRITE|PERM_READ, 0)), so operators can consume, inspect and re-drive dead letters by
// subscribing to %DLQ%<group>. Early 4.x releases created it write-only, and so did earlier
// builds of mq: internal/broker/tables corrects those at load. An existing DLQ topic otherwise
// keeps its permission (an operator may have revoked read on purpose).
const dlqPerm = route.PermReadWrite

// minMaxReconsumeTimesVersion is MQVersion.V3_4_9's ordinal, the first client version whose
// maxReconsumeTimes header field RocketMQ honours.
const minMaxReconsumeTimesVersion int16 = 121

// reconsumeLimit is how often a message of a group may be reconsumed before it is a dead
// letter, for a send-back or a send to the group's retry topic: the request header's
// maxReconsumeTimes whenever it carries one, 0 included, and the client is 3.4.9 or later;
// else the group's retryMaxTimes (RocketMQ 4.9, both send paths). A negative value means
// absent: the official clients never send one.
func reconsumeLimit(req *remoting.Command, fromHeader, groupMax int32) int32 {
	if fromHeader >= 0 && req.Version >= minMaxReconsumeTimesVersion {
		return fromHeader
	}
	return groupMax
}

// registerRetry installs CONSUMER_SEND_MSG_BACK.
func (s *sender) registerRetry(d *remoting.Dispatcher) {
	s.handle(d, remoting.ConsumerSendMsgBack, remoting.ProcessorFunc(s.processSendBack), s.sendEx)
}

// processSendBack handles CONSUMER_SEND_MSG_BACK (36), docs/protocol.md §5.7.
func (s *sender) processSendBack(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	cfg, err := s.groups.Lookup(h.Group)
	if err != nil {
		return remoting.NewResponse(remoting.SubscriptionGroupNotExist,
			GroupRemark(err, "subscription group not exist, "+h.Group)), nil
	}
	if !s.IsMaster() {
		return remoting.NewResponse(remoting.ServiceNotAvailable,
			fmt.Sprintf("the broker[%s] is a slave, sending message back is forbidden", s.opts.BrokerAddr)), nil
	}
	if cfg.RetryQueueNums <= 0 {
		return remoting.NewResponse(remoting.Success, ""), nil // retries disabled for the group
	}
	retryTopic := names.RetryTopic(h.Group)
	tc, err := s.topics.CreateIfAbsent(retryTopic, cfg.RetryQueueNums, int32(route.PermReadWrite), 0)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, s.topicsFullRemark(retryTopic)), nil
	}
	if !route.IsWritable(tc.Perm) {
		return remoting.NewResponse(remoting.NoPermission,
			fmt.Sprintf("the topic[%s] sending message is forbidden", retryTopic)), nil
	}
	var rec message.Record
	if raw, err := s.store.LookMessageByOffset(h.Offset); err != nil || decodeInto(raw, &rec) != nil {
		return remoting.NewResponse(remoting.SystemError,
			"look message by offset failed, "+strconv.FormatInt(h.Offset, 10)), nil
	}
	// The copy lands where every account of the group may pull it: only a message the sender
	// may read goes there (ReadCheck), not any offset of the CommitLog.
	if refused := s.checkRead(ch, req, &rec); refused != nil {
		return refused, nil
	}
	m, props := s.sendBackCopy(&rec, &h)

	maxTimes := reconsumeLimit(req, h.MaxReconsumeTimes, cfg.RetryMaxTimes)
	if h.DelayLevel < 0 || rec.ReconsumeTimes >= maxTimes {
		dlq := names.DLQTopic(h.Group)
		if _, err := s.topics.CreateIfAbsent(dlq, dlqQueueNums, int32(dlqPerm), 0); err != nil {
			return remoting.NewResponse(remoting.SystemError, s.topicsFullRemark(dlq)), nil
		}
		m.Topic, m.QueueID = dlq, rand.Int32N(dlqQueueNums)
		m.Properties = message.MarshalProperties(props)
		s.log.Debug().Str("group", h.Group).Str("topic", string(rec.Topic)).Int64("phy_offset", h.Offset).
			Int32("reconsume_times", rec.ReconsumeTimes).Msg("message sent to the dead-letter topic")
	} else {
		level := int(h.DelayLevel)
		if level == 0 {
			level = 3 + int(rec.ReconsumeTimes)
		}
		level = min(level, len(s.opts.Timers.DelayLevels))
		m.Topic = retryTopic
		m.QueueID = rand.Int32N(max(1, min(cfg.RetryQueueNums, tc.WriteQueueNums)))
		m.Properties = message.MarshalProperties(props)
		s.seams.delay(m, level) // the send path's DELAY redirection (core_tx.go)
	}
	res, err := s.store.PutMessage(m)
	if err != nil && !putStored(res.Status) {
		s.log.Warn().Err(err).Str("group", h.Group).Str("status", res.Status.String()).Msg("send back failed")
		return remoting.NewResponse(remoting.SystemError, res.Status.String()), nil
	}
	s.seams.countPut(m.Topic, 1, res.WroteBytes)
	s.seams.afterPut(m, &res)
	// The consumer counts the message as handed back once this answers: the copy must be as
	// durable as a send is, or a crash or a failover loses a message nobody holds any more.
	s.seams.waitForSlave(ctx, &res)
	if res.Status != storage.PutOK {
		return remoting.NewResponse(remoting.SystemError,
			fmt.Sprintf("send back stored but not yet durable (%s): consume it again", res.Status)), nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// sendBackCopy builds the copy of rec a send-back stores, and its properties (the caller sets
// the topic and queue): same body, flag, born time and host, reconsume times + 1, RETRY_TOPIC
// and ORIGIN_MESSAGE_ID set if absent, the transaction bits cleared. RocketMQ also sets
// WAIT=false, so that the send-back waits for neither the flush nor a slave; mq leaves it out
// (docs/rocketmq-differences.md).
func (s *sender) sendBackCopy(rec *message.Record, h *protocol.ConsumerSendMsgBackRequestHeader) (*storage.Message, map[string]string) {
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
	delete(props, message.PropertyWaitStoreMsgOK) // the send-back waits for durability (processSendBack)
	m := &storage.Message{
		Flag:           rec.Flag,
		Body:           rec.Body,
		SysFlag:        rec.SysFlag &^ message.TransactionRollbackType, // both transaction bits
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		StoreHost:      s.storeHost,
		ReconsumeTimes: rec.ReconsumeTimes + 1,
	}
	return m, props
}

// decodeInto decodes the record raw (which rec then points into).
func decodeInto(raw []byte, rec *message.Record) error {
	_, err := message.DecodeRecord(raw, rec, false)
	return err
}
