package producer

import (
	"context"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/trace"
)

// Message trace (WithTrace): each stored SendSync, SendToQueue, SendOrdered and SendAsync
// message leaves a Pub record, queued to a trace.Dispatcher that sends batches through a
// producer of its own in group _INNER_TRACE_PRODUCER. Batches, one-way sends and transactional
// prepares are not traced.

func init() { trace.RegisterSenderFactory(newTraceSender) }

// traceSender is the trace producer: it sends to the trace topic, which ValidateTopic refuses
// to applications because RMQ_SYS_ topics are reserved.
type traceSender struct{ p *Producer }

func newTraceSender(o trace.SenderOptions) (trace.Sender, error) {
	opts := []Option{
		WithNameServers(o.NameServers...),
		WithGroup(trace.ProducerGroup),
		WithInstanceName(o.InstanceName),
		WithCredentials(o.Credentials),
		WithLogger(o.Logger),
		WithMaxMessageSize(DefaultMaxMessageSize),
	}
	if o.Transport != nil {
		opts = append(opts, WithTransport(o.Transport))
	} else {
		opts = append(opts, WithTLS(o.TLSConfig))
	}
	p, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return traceSender{p}, nil
}

func (t traceSender) SendTrace(ctx context.Context, topic string, keys []string, body []byte) error {
	msg := &Message{Topic: topic, Body: body, Keys: keys}
	if !t.p.begin() {
		return ErrClosed
	}
	defer t.p.end()
	s, err := t.p.newSend(ctx, topic)
	if err != nil {
		return err
	}
	s.msg = t.p.encode(msg)
	_, err = s.runSync(ctx)
	return err
}

func (t traceSender) Close() error { return t.p.Close() }

// startTrace starts the dispatcher of WithTrace; its producer shares this one's client instance.
func (p *Producer) startTrace() error {
	if !p.cfg.trace {
		return nil
	}
	s, err := newTraceSender(trace.SenderOptions{
		NameServers:  p.cfg.nameServers,
		InstanceName: p.cfg.instanceName,
		Transport:    p.cfg.transport,
		Credentials:  p.cfg.credentials,
		TLSConfig:    p.cfg.tlsConfig,
		Logger:       p.cfg.logger,
	})
	if err != nil {
		return err
	}
	p.tracer = trace.NewDispatcher(trace.Config{Topic: p.cfg.traceTopic, Logger: p.log}, s)
	return nil
}

// stopTrace sends the records still queued, within the close timeout.
func (p *Producer) stopTrace() {
	if p.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.closeTimeout)
	defer cancel()
	if err := p.tracer.Close(ctx); err != nil {
		p.log.Warn().Err(err).Msg("closing the trace dispatcher")
	}
}

// tracedSync runs a sync send and traces its result.
func (p *Producer) tracedSync(ctx context.Context, s *send, msg *Message) (*SendResult, error) {
	if p.tracer == nil {
		return s.runSync(ctx)
	}
	start := time.Now()
	res, err := s.runSync(ctx)
	p.tracePub(msg, start, res)
	return res, err
}

// tracedCallback wraps an async send's callback so its result is traced first.
func (p *Producer) tracedCallback(msg *Message, cb func(*SendResult, error)) func(*SendResult, error) {
	if p.tracer == nil {
		return cb
	}
	start := time.Now()
	return func(res *SendResult, err error) {
		p.tracePub(msg, start, res)
		cb(res, err)
	}
}

// tracePub queues the Pub record of a send the broker answered, as RocketMQ's
// SendMessageTraceHookImpl: nothing for a failed send, nor when the broker turned trace off.
func (p *Producer) tracePub(msg *Message, start time.Time, res *SendResult) {
	if res == nil || !res.TraceOn || msg.Topic == p.tracer.Topic() {
		return
	}
	now := time.Now()
	p.tracer.Append(&trace.Context{
		Type:      trace.Pub,
		TimeStamp: now.UnixMilli(),
		RegionID:  res.RegionID,
		Group:     p.wireGroup,
		CostTime:  now.Sub(start).Milliseconds(),
		Success:   res.Status == SendOK,
		Beans: []trace.Bean{{
			Topic:       msg.Topic,
			MsgID:       res.MsgID,
			OffsetMsgID: res.OffsetMsgID,
			Tags:        msg.Tags,
			Keys:        strings.Join(msg.Keys, " "),
			StoreHost:   p.inst.MasterAddr(res.Queue.BrokerName),
			ClientHost:  client.LocalIPv4(),
			BodyLength:  len(msg.Body),
			MsgType:     traceMsgType(msg),
		}},
	})
}

func traceMsgType(msg *Message) trace.MessageType {
	if msg.DelayTimeLevel > 0 || msg.Properties[message.PropertyDelayTimeLevel] != "" ||
		msg.Properties[message.PropertyTimerDeliverMS] != "" {
		return trace.DelayMsg
	}
	return trace.NormalMsg
}
