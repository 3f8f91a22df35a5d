package broker

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// Request-reply (RocketMQ 4.x ReplyMessageProcessor). A requester's message carries
// CORRELATION_ID and REPLY_TO_CLIENT (its client id); the replier sends its answer with
// SEND_REPLY_MESSAGE (324) or SEND_REPLY_MESSAGE_V2 (325) to <cluster>_REPLY_TOPIC, which every
// broker creates at start (topic_config.go). The broker pushes the reply with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the connection the request came on, or else to the
// holder of the client id (reply_route.go), and stores the reply in its topic
// (storeReplyMessageEnable, on in RocketMQ by default and always here).
//
// The answer is RocketMQ's: SUCCESS when the push was acknowledged, else SYSTEM_ERROR with the
// reason; the store outcome only fills the header (msgId, queue offset), it never changes the
// code. So, as in RocketMQ, a replier whose requester is gone gets SYSTEM_ERROR, and a client
// that retries SYSTEM_ERROR stores its reply again.
//
// Unlike RocketMQ, whose worker waits for the requester (up to 10 s), the worker here stores
// the reply and leaves: the push is asynchronous, and whichever of the two finishes last
// answers the replier. So a requester that never acknowledges holds no worker, and at most
// DefaultMaxReplyPushesPerConnection of its replies wait; the others are refused at once.

// replyPushTimeout bounds the push to the requester (Broker2Client.callClient waits 10 s).
const replyPushTimeout = 10 * time.Second

// propertyPushReplyTime is added to the pushed copy's properties, not to the stored one
// (MessageConst.PROPERTY_PUSH_REPLY_TIME).
const propertyPushReplyTime = "PUSH_REPLY_TIME"

// initReply makes the reply routing table (reply_route.go).
func (b *Broker) initReply() {
	b.replies = newReplyRoutes(time.Now, b.opts.ChannelExpiredTimeout)
}

// registerReply installs SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 on their own pool
// (replyEx), never inline: a reply may wait for a slave, as a send does.
func (b *Broker) registerReply(d *remoting.Dispatcher) {
	for _, code := range []int16{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
		b.handle(d, code, remoting.ProcessorFunc(b.processReply), b.replyEx)
	}
}

// processReply serves 324 and 325 (ReplyMessageProcessor.processReplyMessageRequest). It
// answers later (replyAnswer), once both the push and the store are done.
func (b *Broker) processReply(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SendMessageRequestHeader
	var err error
	if req.Code == remoting.SendReplyMessageV2 {
		err = (*protocol.SendMessageRequestHeaderV2)(&h).Decode(req.ExtFields)
	} else {
		err = h.Decode(req.ExtFields)
	}
	if err != nil {
		return nil, err
	}
	tc, resp := b.send.checkSend(ch, &h)
	if resp != nil {
		return resp, nil
	}
	queueID, resp := pickQueue(h.QueueID, tc)
	if resp != nil {
		return resp, nil
	}
	// RocketMQ finds oversized messages only when storing, after the push; checking first
	// keeps a requester from being handed what this broker would refuse to hold.
	if len(req.Body) > b.opts.MaxMessageBytes || len(h.Properties) > message.MaxPropertiesBytes {
		return sendResponse(remoting.MessageIllegal, b.send.illegalRemark), nil
	}
	// Only what the answer needs: the push may outlive this worker by seconds, and should
	// not keep the request's body and fields alive meanwhile.
	a := &replyAnswer{ch: ch, req: &remoting.Command{Opaque: req.Opaque, Flag: req.Flag, Serialize: req.Serialize},
		queueID: queueID}
	a.pending.Store(2)
	b.pushReply(ctx, ch, &h, req.Body, a)
	m := &storage.Message{
		Topic:          h.Topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		Body:           req.Body,
		Properties:     h.Properties,
		SysFlag:        storedSysFlag(h.SysFlag, tc),
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost(ch),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	r, err := b.store.PutMessage(m)
	b.waitForSlave(ctx, &r)
	if putStored(r.Status) {
		b.countPut(h.Topic, r.Count, r.WroteBytes)
		a.stored, a.msgID, a.queueOffset = true, r.MsgID(), r.QueueOffset
	} else {
		b.log.Warn().Err(err).Str("status", r.Status.String()).Str("topic", h.Topic).Msg("reply message not stored")
	}
	a.done()
	return nil, nil
}

// replyAnswer is the replier's answer, written by whichever of the push and the store ends
// last. Each side writes its fields before its done; the atomic counter orders those writes
// before the answer reads them.
type replyAnswer struct {
	ch      remoting.Channel
	req     *remoting.Command // the request's opaque, flag and serialization
	queueID int32
	pending atomic.Int32

	pushRemark string // push side: "" when acknowledged

	stored      bool // store side
	msgID       string
	queueOffset int64
}

// pushed records the push's outcome.
func (a *replyAnswer) pushed(remark string) {
	a.pushRemark = remark
	a.done()
}

func (a *replyAnswer) done() {
	if a.pending.Add(-1) != 0 {
		return
	}
	resp := sendResponse(remoting.Success, "")
	rh := protocol.SendMessageResponseHeader{MsgRegion: defaultRegion, TraceOn: traceOn}
	headerSet := false
	if a.pushRemark != "" {
		resp.Code, resp.Remark = remoting.SystemError, a.pushRemark
	} else {
		// RocketMQ answers "0" until the store says otherwise, so clients can decode it.
		rh.MsgID, rh.QueueID = "0", a.queueID
		headerSet = true
	}
	if a.stored {
		rh.MsgID, rh.QueueID, rh.QueueOffset = a.msgID, a.queueID, a.queueOffset
		headerSet = true
	}
	if headerSet {
		rh.Encode(resp.ExtFields)
	}
	_ = remoting.AnswerLater(a.ch, a.req, resp)
}

// pushReply starts the push of a reply to its requester and calls a.pushed once with its
// outcome: "" when the requester acknowledged it, else RocketMQ's remark (ours when there are
// too many pushes waiting for that requester).
func (b *Broker) pushReply(ctx context.Context, from remoting.Channel, h *protocol.SendMessageRequestHeader, body []byte, a *replyAnswer) {
	clientID, _ := message.PropertyValueString(h.Properties, message.PropertyReplyToClient)
	if clientID == "" {
		b.log.Debug().Str("addr", from.RemoteAddr()).Msg("reply message without REPLY_TO_CLIENT")
		// Not RocketMQ's "... is null", which reads as a refused name (names.go).
		a.pushed("reply message has no " + message.PropertyReplyToClient + " property to push it by")
		return
	}
	corr, _ := message.PropertyValueString(h.Properties, message.PropertyCorrelationID)
	t, miss := b.replies.target(corr, clientID)
	switch miss {
	case replyNoChannel:
		b.log.Debug().Str("client_id", clientID).Msg("reply message for a client not connected")
		a.pushed("push reply message fail, channel of <" + clientID + "> not found.")
		return
	case replyTooManyPushes:
		b.log.Debug().Str("client_id", clientID).Msg("reply message for a client that acknowledges no pushes")
		a.pushed(fmt.Sprintf("push reply message to %s fail: %d replies pushed to its connection still wait for "+
			"its acknowledgement, try again later", clientID, t.limit))
		return
	}
	now := time.Now().UnixMilli()
	ph := protocol.ReplyMessageRequestHeader{
		ProducerGroup:         h.ProducerGroup,
		Topic:                 h.Topic,
		DefaultTopic:          h.DefaultTopic,
		DefaultTopicQueueNums: h.DefaultTopicQueueNums,
		QueueID:               h.QueueID,
		SysFlag:               h.SysFlag,
		BornTimestamp:         h.BornTimestamp,
		Flag:                  h.Flag,
		Properties:            setProperty(h.Properties, propertyPushReplyTime, strconv.FormatInt(now, 10)),
		ReconsumeTimes:        h.ReconsumeTimes,
		UnitMode:              h.UnitMode,
		BornHost:              bornHost(from).String(),
		StoreHost:             b.storeHost.String(),
		StoreTimestamp:        now,
	}
	finish := func(err error) {
		b.replies.pushDone(t, err == nil)
		if err != nil {
			b.log.Warn().Err(err).Str("client_id", clientID).Str("addr", t.ch.RemoteAddr()).Msg("push reply message failed")
			a.pushed("push reply message to " + clientID + " fail.")
			return
		}
		a.pushed("")
	}
	pctx, cancel := context.WithTimeout(ctx, t.timeout)
	err := t.ch.InvokeAsync(pctx, remoting.NewRequest(remoting.PushReplyMessageToClient, remoting.EncodeHeader(&ph), body),
		func(resp *remoting.Command, err error) {
			cancel()
			if err == nil && resp.Code != remoting.Success {
				err = &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
			}
			finish(err)
		})
	if err != nil {
		cancel()
		finish(err)
	}
}
