package consumer

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/trace"

	// The producer package provides the trace producer (trace.RegisterSenderFactory).
	_ "github.com/mqgo/mq/producer"
)

// Keys of ConsumeContext.Props the trace hook leaves from ConsumeBefore for ConsumeAfter.
const (
	propTraceRequest = "__trace_request_id"
	propTraceStart   = "__trace_start_ns"
)

// traceHook is WithTrace's consume hook: a SubBefore record before each listener call and a
// SubAfter record after it, as RocketMQ's ConsumeMessageTraceHookImpl writes them. It records
// nothing until Start gave it a dispatcher.
type traceHook struct {
	topic string
	d     atomic.Pointer[trace.Dispatcher]
}

// startTrace gives the trace hook its dispatcher; started is false when there is nothing to
// start (no WithTrace, or a dispatcher from an earlier Start).
func (pc *PushConsumer) startTrace() (started bool, err error) {
	h := pc.cfg.trace
	if h == nil || h.d.Load() != nil {
		return false, nil
	}
	c := pc.p.cfg
	s, err := trace.NewSender(trace.SenderOptions{
		NameServers:  c.nameServers,
		InstanceName: c.instanceName,
		Transport:    c.transport,
		Credentials:  c.credentials,
		TLSConfig:    c.tlsConfig,
		Logger:       &c.logger,
	})
	if err != nil {
		return false, err
	}
	h.d.Store(trace.NewDispatcher(trace.Config{Topic: h.topic, Logger: pc.log}, s))
	return true, nil
}

// stopTrace sends the records still queued, within the close timeout.
func (pc *PushConsumer) stopTrace() {
	h := pc.cfg.trace
	if h == nil {
		return
	}
	d := h.d.Swap(nil)
	if d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pc.cfg.closeTimeout)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		pc.log.Warn().Err(err).Msg("closing the trace dispatcher")
	}
}

// beans are the traced messages of a call: all but those sent with TRACE_ON=false.
func (h *traceHook) beans(cc *ConsumeContext) (beans []trace.Bean, region string) {
	host := client.LocalIPv4()
	for _, m := range cc.Messages {
		if m == nil || m.Properties[message.PropertyTraceSwitch] == "false" {
			continue
		}
		beans = append(beans, trace.Bean{
			Topic:      m.Topic,
			MsgID:      m.MsgID,
			Tags:       m.Tags,
			Keys:       strings.Join(m.Keys, " "),
			ClientHost: host,
			StoreHost:  m.StoreHost.String(),
			BodyLength: int(m.StoreSize),
			RetryTimes: int(m.ReconsumeTimes),
		})
		region = m.Properties[message.PropertyMsgRegion]
	}
	return beans, region
}

func (h *traceHook) ConsumeBefore(cc *ConsumeContext) {
	d := h.d.Load()
	if d == nil {
		return
	}
	beans, region := h.beans(cc)
	if len(beans) == 0 {
		return
	}
	now := time.Now()
	var id [16]byte
	for i := range id {
		id[i] = byte(rand.Uint32())
	}
	requestID := strings.ToUpper(hex.EncodeToString(id[:]))
	if cc.Props == nil {
		cc.Props = make(map[string]string, 2)
	}
	cc.Props[propTraceRequest] = requestID
	cc.Props[propTraceStart] = strconv.FormatInt(now.UnixNano(), 10)
	d.Append(&trace.Context{Type: trace.SubBefore, TimeStamp: now.UnixMilli(), RegionID: region,
		Group: cc.Group, RequestID: requestID, Success: true, Beans: beans})
}

func (h *traceHook) ConsumeAfter(cc *ConsumeContext) {
	d := h.d.Load()
	requestID := cc.Props[propTraceRequest]
	if d == nil || requestID == "" {
		return
	}
	beans, region := h.beans(cc)
	now := time.Now()
	var cost int64
	if start, err := strconv.ParseInt(cc.Props[propTraceStart], 10, 64); err == nil {
		cost = now.Sub(time.Unix(0, start)).Milliseconds()
	}
	code := trace.ConsumeSuccess
	switch {
	case cc.Err != nil:
		code = trace.ConsumeException
	case cc.Result != ConsumeSuccess:
		code = trace.ConsumeFailed
	}
	d.Append(&trace.Context{Type: trace.SubAfter, TimeStamp: now.UnixMilli(), RegionID: region,
		Group: cc.Group, RequestID: requestID, CostTime: cost, Success: cc.Success(),
		ContextCode: code, Beans: beans})
}
