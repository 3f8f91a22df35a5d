package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The fallback of a failed send-back (docs/protocol.md §5.7). When CONSUMER_SEND_MSG_BACK
// fails, for any reason, RocketMQ 4.9's push consumer sends the message to %RETRY%<group>
// itself, through its client instance's internal producer (CLIENT_INNER_PRODUCER): a copy with
// the message's properties, RETRY_TOPIC and ORIGIN_MESSAGE_ID, delay level 3 + reconsume times,
// and the reconsume times and limit in the send header, which the broker's handleRetryAndDLQ
// reads to send it to the DLQ past the limit. Only when that fails too is the message consumed
// again locally. mq does the same, with a SEND_MESSAGE_V2 through the consumer's own client
// instance: no producer is registered for it, since brokers never call an internal producer
// back.

const (
	// innerProducerGroup is the producer group RocketMQ's internal producer sends with
	// (MixAll.CLIENT_INNER_PRODUCER_GROUP).
	innerProducerGroup = "CLIENT_INNER_PRODUCER"
	// resendAttempts is 1 + DefaultMQProducer's retryTimesWhenSendFailed (2).
	resendAttempts = 3
	// resendTimeout is DefaultMQProducer's sendMsgTimeout (3 s), for all attempts together.
	resendTimeout = 3 * time.Second
)

// consumerOnlyProperties are properties the consumer itself adds to a message it pulled; the
// copy leaves them out, since the next pull of it sets them again. RECONSUME_TIME and
// MAX_RECONSUME_TIMES travel in the send header instead (RocketMQ's producer moves them there
// for a retry topic), and a copy is never a transaction's half message.
var consumerOnlyProperties = []string{
	message.PropertyMinOffset, message.PropertyMaxOffset, message.PropertyConsumeStartTimestamp,
	message.PropertyReconsumeTime, message.PropertyMaxReconsumeTimes, message.PropertyTransactionPrepared,
}

// resendToRetry stores a copy of m in the group's retry topic with a normal send, after the
// send-back of m failed. toDLQ is the orderly consumer's case (m at its reconsume limit): the
// header then carries m's reconsume times unchanged, which the broker compares with the limit
// and sends to the DLQ, as RocketMQ's orderly service sends it (it never uses
// CONSUMER_SEND_MSG_BACK). Otherwise the copy counts one more reconsume, as a send-back's does.
// A message without UNIQ_KEY is resent without one (RocketMQ's producer would make one).
func (pc *PushConsumer) resendToRetry(ctx context.Context, m *Message, toDLQ bool) error {
	topic := RetryTopic(pc.p.cfg.group)
	r, err := pc.p.inst.TopicRoute(ctx, topic)
	if err != nil {
		return fmt.Errorf("consumer: resend to %s: %w", topic, err)
	}
	targets := resendTargets(r, topic, m.Queue.BrokerName)
	if len(targets) == 0 {
		return fmt.Errorf("consumer: resend to %s: no writable queue", topic)
	}
	reconsume := m.ReconsumeTimes + 1
	if toDLQ {
		reconsume = m.ReconsumeTimes
	}
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         innerProducerGroup,
		Topic:                 topic,
		DefaultTopic:          names.TopicAutoCreate,
		DefaultTopicQueueNums: 4,
		Flag:                  m.Flag,
		Properties:            message.MarshalProperties(resendProperties(m)),
		ReconsumeTimes:        reconsume,
		MaxReconsumeTimes:     pc.maxReconsumeTimes(),
	}
	var errs []error
	for i := range resendAttempts {
		if ctx.Err() != nil {
			break
		}
		q := targets[i%len(targets)]
		h.QueueID, h.BrokerName = int32(q.QueueID), q.BrokerName
		h.BornTimestamp = time.Now().UnixMilli()
		err := pc.resendOnce(ctx, &h, m.Body)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		errs = append(errs, ctx.Err())
	}
	return fmt.Errorf("consumer: resend to %s: %w", topic, errors.Join(errs...))
}

// resendOnce sends one attempt to the master of h's broker.
func (pc *PushConsumer) resendOnce(ctx context.Context, h *protocol.SendMessageRequestHeader, body []byte) error {
	addr := pc.p.inst.MasterAddr(h.BrokerName)
	if addr == "" {
		return fmt.Errorf("%w: %s", ErrNoBroker, h.BrokerName)
	}
	req := remoting.NewRequest(remoting.SendMessageV2, remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(h)), body)
	resp, err := pc.p.inst.Transport().InvokeSync(ctx, addr, req)
	if err != nil {
		return err
	}
	// Only SEND_OK hands the message over: stored but not yet flushed or replicated, the copy
	// may be lost with its broker, and nobody would hold the message any more. The listener
	// then gets it again, as after a failed send-back.
	return remoting.ErrorFromResponse(resp)
}

// resendProperties is the copy's properties: m's, without what the consumer added, with
// RETRY_TOPIC the topic m was first sent to, ORIGIN_MESSAGE_ID the first delivery's id and
// DELAY 3 + reconsume times (RocketMQ's sendMessageBack fallback). m's map is only read: a
// listener may still be reading it when the expiry scan sends a message back.
func resendProperties(m *Message) map[string]string {
	props := maps.Clone(m.Properties)
	if props == nil {
		props = map[string]string{}
	}
	for _, k := range consumerOnlyProperties {
		delete(props, k)
	}
	props[message.PropertyRetryTopic] = originTopic(m)
	if props[message.PropertyOriginMessageID] == "" {
		props[message.PropertyOriginMessageID] = m.MsgID
	}
	props[message.PropertyDelayTimeLevel] = strconv.Itoa(3 + int(m.ReconsumeTimes))
	return props
}

// resendTargets is one writable retry queue per broker of r, the broker the send-back failed
// on last (another one may take the copy), each at a random queue and the brokers from a
// random start, so consumers do not pile on one queue.
func resendTargets(r *route.TopicRouteData, topic, failedBroker string) []MessageQueue {
	var out, last []MessageQueue
	start := rand.IntN(max(1, len(r.QueueDatas)))
	for i := range r.QueueDatas {
		qd := r.QueueDatas[(start+i)%len(r.QueueDatas)]
		if !route.IsWritable(qd.Perm) || qd.WriteQueueNums <= 0 {
			continue
		}
		q := MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: rand.IntN(int(qd.WriteQueueNums))}
		if qd.BrokerName == failedBroker {
			last = append(last, q)
		} else {
			out = append(out, q)
		}
	}
	return append(out, last...)
}
