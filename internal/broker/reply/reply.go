// Package reply is request-reply (RocketMQ 4.x ReplyMessageProcessor): SEND_REPLY_MESSAGE
// (324) and SEND_REPLY_MESSAGE_V2 (325), the push of a reply to its requester with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326), and where that push goes (route.go).
//
// A requester's message carries CORRELATION_ID and REPLY_TO_CLIENT (its client id); the
// replier sends its answer to <cluster>_REPLY_TOPIC, which every broker creates at start. The
// broker pushes the reply to the connection the request came on, or else to the holder of the
// client id (route.go), and stores the reply in its topic (storeReplyMessageEnable, on in
// RocketMQ by default and always here).
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
//
// The service joins the core through its seams: the send path shows it every plain send
// before the append (broker.RequestNoter, set with Seams.SetRequestNoter, to remember the
// request's route), heartbeats and closed connections reach it through the core's Hooks; a
// reply is checked and stored as a send is, through Messages.CheckSend and StoreAsSend. It keeps no files and runs no loop.
// Its one lock, the routing table's mutex, is a leaf.
package reply

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Service serves the reply codes over a broker core.
type Service struct {
	core   *broker.Broker
	log    zerolog.Logger
	routes *replyRoutes
	// pool serves reply sends (RocketMQ's replyMessageExecutor, as many workers as the send
	// pool): a worker stores the reply and starts its push, whose answer comes back without
	// it. Never inline: a reply may wait for a slave, as a send does.
	pool *remoting.Executor
}

// New builds the service over core and joins the core's send path, heartbeats and connection
// cleanup. Attach it to core before Register.
func New(core *broker.Broker) *Service {
	opts := core.Options()
	s := &Service{core: core, log: core.Logger().With().Str("component", "reply").Str("broker", opts.Broker.Name).Logger(),
		routes: newReplyRoutes(time.Now, opts.Periods.ClientChannelExpiredTime),
		pool:   remoting.NewExecutor("reply", opts.SendThreads, 10000)}
	core.Seams().SetRequestNoter(s)
	core.Hooks().OnHeartbeat(s.routes.heartbeat) // the client id for replies, unless held
	core.Hooks().OnConnClose(func(ch remoting.Channel) { s.routes.dropChannel(ch.ID()) })
	return s
}

// Handlers are SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2, whose headers name the producer
// group, the topic and the default topic as a send's do.
func (s *Service) Handlers() []broker.Handler {
	v1 := []reqnames.Field{reqnames.GroupField("producerGroup"), {Key: "topic", Field: "topic", Kind: reqnames.SendTopic},
		reqnames.TopicField("defaultTopic")}
	v2 := []reqnames.Field{{Key: "a", Field: "producerGroup", Kind: reqnames.Group},
		{Key: "b", Field: "topic", Kind: reqnames.SendTopic}, {Key: "c", Field: "defaultTopic", Kind: reqnames.Topic}}
	p := remoting.ProcessorFunc(s.processReply)
	return []broker.Handler{
		{Code: remoting.SendReplyMessage, Names: v1, Proc: p, Pool: s.pool},
		{Code: remoting.SendReplyMessageV2, Names: v2, Proc: p, Pool: s.pool},
	}
}

// Run has no loop to run: routes expire as requests come.
func (s *Service) Run(context.Context) error { return nil }

// Close has nothing to write.
func (s *Service) Close() error { return nil }

// replyPushTimeout bounds the push to the requester (Broker2Client.callClient waits 10 s).
const replyPushTimeout = 10 * time.Second

// propertyPushReplyTime is added to the pushed copy's properties, not to the stored one
// (MessageConst.PROPERTY_PUSH_REPLY_TIME).
const propertyPushReplyTime = "PUSH_REPLY_TIME"

// processReply serves 324 and 325 (ReplyMessageProcessor.processReplyMessageRequest). It
// answers later (replyAnswer), once both the push and the store are done.
func (s *Service) processReply(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
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
	// RocketMQ finds oversized messages only when storing, after the push; checking the sizes
	// first keeps a requester from being handed what this broker would refuse to hold.
	queueID, sysFlag, refusal := s.core.Messages().CheckSend(ch, &h, len(req.Body))
	if refusal != nil {
		return refusal, nil
	}
	// Only what the answer needs: the push may outlive this worker by seconds, and should
	// not keep the request's body and fields alive meanwhile.
	a := &replyAnswer{ch: ch, req: &remoting.Command{Opaque: req.Opaque, Flag: req.Flag, Serialize: req.Serialize},
		queueID: queueID}
	a.pending.Store(2)
	s.pushReply(ctx, ch, &h, req.Body, a)
	m := &storage.Message{
		Topic:          h.Topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		Body:           req.Body,
		Properties:     h.Properties,
		SysFlag:        sysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       broker.BornHost(ch),
		StoreHost:      s.core.Messages().StoreHost(),
		ReconsumeTimes: h.ReconsumeTimes,
	}
	r, stored, err := s.core.Messages().StoreAsSend(ctx, m)
	if stored {
		a.stored, a.msgID, a.queueOffset = true, r.MsgID(), r.QueueOffset
	} else {
		s.log.Warn().Err(err).Str("status", r.Status.String()).Str("topic", h.Topic).Msg("reply message not stored")
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
	resp := broker.SendResponse(remoting.Success, "")
	rh := protocol.SendMessageResponseHeader{MsgRegion: broker.RegionID, TraceOn: broker.TraceOn}
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
func (s *Service) pushReply(ctx context.Context, from remoting.Channel, h *protocol.SendMessageRequestHeader, body []byte, a *replyAnswer) {
	clientID, _ := message.PropertyValueString(h.Properties, message.PropertyReplyToClient)
	if clientID == "" {
		s.log.Debug().Str("addr", from.RemoteAddr()).Msg("reply message without REPLY_TO_CLIENT")
		// Not RocketMQ's "... is null", which reads as a refused name (names.go).
		a.pushed("reply message has no " + message.PropertyReplyToClient + " property to push it by")
		return
	}
	corr, _ := message.PropertyValueString(h.Properties, message.PropertyCorrelationID)
	t, miss := s.routes.target(corr, clientID)
	switch miss {
	case replyNoChannel:
		s.log.Debug().Str("client_id", clientID).Msg("reply message for a client not connected")
		a.pushed("push reply message fail, channel of <" + clientID + "> not found.")
		return
	case replyTooManyPushes:
		s.log.Debug().Str("client_id", clientID).Msg("reply message for a client that acknowledges no pushes")
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
		Properties:            message.SetProperty(h.Properties, propertyPushReplyTime, strconv.FormatInt(now, 10)),
		ReconsumeTimes:        h.ReconsumeTimes,
		UnitMode:              h.UnitMode,
		BornHost:              broker.BornHost(from).String(),
		StoreHost:             s.core.Messages().StoreHost().String(),
		StoreTimestamp:        now,
	}
	finish := func(err error) {
		s.routes.pushDone(t, err == nil)
		if err != nil {
			s.log.Warn().Err(err).Str("client_id", clientID).Str("addr", t.ch.RemoteAddr()).Msg("push reply message failed")
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
