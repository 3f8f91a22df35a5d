package producer

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
)

// Request-reply (RocketMQ 4.x DefaultMQProducer.request): the request is an ordinary message
// carrying CORRELATION_ID, REPLY_TO_CLIENT (this client's id) and TTL; a consumer answers it
// with a reply (consumer.NewReplyMessage) sent by SendReply; the broker pushes the reply to this
// client (to the connection the request went on, when the reply reaches the broker that stored
// the request), whose instance hands it to the waiting request by its correlation id.

// DefaultRequestTimeout is how long a request waits for its reply when ctx has no deadline
// (RocketMQ's request timeout, 3 s).
const DefaultRequestTimeout = 3 * time.Second

// maxInflatedReply bounds a compressed reply body once inflated, so that a zlib bomb costs
// little; larger results keep the raw bytes.
const maxInflatedReply = 64 << 20

// ErrRequestTimeout is a request whose reply did not come within its timeout. It wraps
// context.DeadlineExceeded.
var ErrRequestTimeout = fmt.Errorf("producer: no reply within the request timeout: %w", context.DeadlineExceeded)

// Reply is the answer to a request.
type Reply struct {
	// Topic is the reply topic (<cluster>_REPLY_TOPIC).
	Topic string
	Body  []byte
	// Compressed reports that Body is still compressed because inflating it failed.
	Compressed bool
	// Properties holds every property of the reply: CORRELATION_ID, REPLY_TO_CLIENT, TTL,
	// MSG_TYPE, the broker's PUSH_REPLY_TIME and the replier's own.
	Properties     map[string]string
	Flag           int32
	ReconsumeTimes int32
	// BornHost is the replier's address as the broker saw it, StoreHost the broker's.
	BornHost   string
	StoreHost  string
	BornTime   time.Time
	StoreTime  time.Time
	ArriveTime time.Time
}

// Property returns one property ("" when absent).
func (r *Reply) Property(name string) string { return r.Properties[name] }

// Request sends msg and waits for its reply, until ctx ends or, when ctx has no deadline,
// DefaultRequestTimeout. msg is not modified: the request properties go on a copy. A reply
// that comes after the timeout is dropped (ErrRequestTimeout).
func (p *Producer) Request(ctx context.Context, msg *Message) (*Reply, error) {
	type outcome struct {
		reply *Reply
		err   error
	}
	done := make(chan outcome, 1)
	if err := p.RequestAsync(ctx, msg, func(r *Reply, err error) { done <- outcome{r, err} }); err != nil {
		return nil, err
	}
	o := <-done
	return o.reply, o.err
}

// RequestAsync sends msg and returns once it is handed to the send pipeline; cb runs exactly
// once, with the reply, the send's failure, or the timeout (ctx's deadline, else
// DefaultRequestTimeout). When RequestAsync returns an error, cb never runs. cb runs on the
// goroutine that delivered the reply (or timed out), so it should not block.
func (p *Producer) RequestAsync(ctx context.Context, msg *Message, cb func(*Reply, error)) error {
	if cb == nil {
		return invalid("nil callback")
	}
	if err := p.validate(msg); err != nil {
		return err
	}
	timeout := DefaultRequestTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	correlationID := newCorrelationID()
	req := *msg
	req.Properties = make(map[string]string, len(msg.Properties)+3)
	maps.Copy(req.Properties, msg.Properties)
	req.Properties[message.PropertyCorrelationID] = correlationID
	req.Properties[message.PropertyReplyToClient] = p.inst.ClientID()
	req.Properties[message.PropertyTTL] = strconv.FormatInt(timeout.Milliseconds(), 10)

	if err := p.prepareRequest(ctx, p.wireTopic(msg.Topic)); err != nil {
		return err
	}

	r := &pendingRequest{p: p, topic: msg.Topic, cb: cb,
		cancelWait: func() bool { return p.inst.CancelReply(correlationID) }}
	var rctx context.Context
	rctx, r.cancel = context.WithTimeout(ctx, timeout)
	// Registered before the send: the push may arrive before the send's answer. Everything
	// finish reads is set before: the registration's lock orders it before a delivery, which
	// comes on another goroutine (the reader of whichever connection the broker pushed on).
	if _, err := p.inst.AwaitReply(correlationID, r.delivered); err != nil {
		r.cancel()
		return err
	}
	context.AfterFunc(rctx, func() {
		if ctx.Err() == context.Canceled {
			r.finish(nil, ctx.Err())
			return
		}
		r.finish(nil, fmt.Errorf("%w: %s after %v", ErrRequestTimeout, msg.Topic, timeout))
	})
	err := p.SendAsync(rctx, &req, func(_ *SendResult, err error) {
		if err != nil {
			r.finish(nil, err)
		}
	})
	if err != nil && r.done.CompareAndSwap(false, true) {
		r.cancelWait()
		r.cancel()
		return err
	}
	// Else cb has run or will: the request ended (ctx done) before SendAsync refused it.
	return nil
}

// prepareRequest makes sure that every broker that may get the reply to a request on topic
// knows this client before the request leaves. The broker the request goes to learns it from
// the request itself: it pushes the reply to the connection the request came on. But the
// replier sends the reply to <cluster>_REPLY_TOPIC, which every broker of the cluster serves,
// and a broker that did not store the request finds this client only by its heartbeats. So, as
// RocketMQ does, a topic met for the first time brings a heartbeat round to every broker known,
// and here so does a cluster whose reply topic this producer has not asked about yet: its route
// makes its brokers known (and heartbeated from then on). The request waits for the round.
func (p *Producer) prepareRequest(ctx context.Context, topic string) error {
	r := p.inst.CachedTopicRoute(topic)
	round := r == nil
	if r == nil {
		pi, err := p.publishInfo(ctx, topic)
		if err != nil {
			return err
		}
		r = pi.route // the create-topic key's for a topic not created yet
	}
	for _, bd := range r.BrokerDatas {
		if bd.Cluster == "" {
			continue
		}
		if _, asked := p.replyClusters.LoadOrStore(bd.Cluster, true); asked {
			continue
		}
		replyTopic := bd.Cluster + names.ReplyTopicSuffix
		if p.inst.CachedTopicRoute(replyTopic) != nil {
			continue
		}
		if _, err := p.inst.TopicRoute(ctx, replyTopic); err != nil {
			p.log.Debug().Err(err).Str("topic", replyTopic).Msg("no route of the reply topic: only the broker storing a request can answer it")
			continue
		}
		round = true
	}
	if round {
		p.inst.SendHeartbeatToAllBrokers(ctx)
	}
	return nil
}

// SendReply sends a reply built by consumer.NewReplyMessage with SEND_REPLY_MESSAGE_V2 (325),
// as the Java client does; it is retried as SendSync is. SendSync sends a reply (MSG_TYPE reply)
// the same way; SendReply also refuses a message that is not one. The broker answers SYSTEM_ERROR when
// it could not push the reply to the requester (gone, or its request timed out long ago).
func (p *Producer) SendReply(ctx context.Context, msg *Message) (*SendResult, error) {
	if msg != nil && msg.Properties[message.PropertyMsgType] != replyMessageType {
		return nil, invalid("not a reply: MSG_TYPE is %q, want %q", msg.Properties[message.PropertyMsgType], replyMessageType)
	}
	return p.SendSync(ctx, msg) // a reply goes as SEND_REPLY_MESSAGE_V2 (encode)
}

// replyMessageType is MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG).
const replyMessageType = "reply"

// pendingRequest is a request waiting for its reply; finish ends it once.
type pendingRequest struct {
	p          *Producer
	topic      string
	cb         func(*Reply, error)
	cancelWait func() bool
	cancel     context.CancelFunc
	done       atomic.Bool
}

func (r *pendingRequest) delivered(cr *client.Reply) { r.finish(r.p.reply(cr), nil) }

func (r *pendingRequest) finish(reply *Reply, err error) {
	if !r.done.CompareAndSwap(false, true) {
		return
	}
	r.cancelWait()
	r.cancel()
	defer func() {
		if v := recover(); v != nil {
			r.p.log.Error().Interface("panic", v).Str("topic", r.topic).Msg("request callback panicked")
		}
	}()
	r.cb(reply, err)
}

// reply converts a pushed reply, inflating a compressed body.
func (p *Producer) reply(cr *client.Reply) *Reply {
	h := &cr.Header
	r := &Reply{Topic: p.userTopic(h.Topic), Body: cr.Body, Properties: message.UnmarshalProperties([]byte(h.Properties)),
		Flag: h.Flag, ReconsumeTimes: h.ReconsumeTimes, BornHost: h.BornHost, StoreHost: h.StoreHost,
		BornTime: time.UnixMilli(h.BornTimestamp), StoreTime: time.UnixMilli(h.StoreTimestamp), ArriveTime: cr.ArriveTime}
	if h.SysFlag&message.FlagCompressed != 0 {
		if body, err := inflateReply(cr.Body); err == nil {
			r.Body = body
		} else {
			r.Compressed = true
			p.log.Debug().Err(err).Str("topic", h.Topic).Msg("compressed reply body does not inflate")
		}
	}
	return r
}

func inflateReply(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflatedReply+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxInflatedReply {
		return nil, errors.New("inflated body too large")
	}
	return out, nil
}

// newCorrelationID is a random UUID, as RocketMQ's CorrelationIdUtil makes them.
func newCorrelationID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}
