package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// Request-reply (RocketMQ 4.x ReplyMessageProcessor). A requester's message carries
// CORRELATION_ID and REPLY_TO_CLIENT (its client id); the replier sends its answer with
// SEND_REPLY_MESSAGE (324) or SEND_REPLY_MESSAGE_V2 (325) to <cluster>_REPLY_TOPIC, which every
// broker creates at start (topic_config.go). The broker pushes the reply to the requester's
// connection with PUSH_REPLY_MESSAGE_TO_CLIENT (326) and waits for its answer, then stores the
// reply in its topic (storeReplyMessageEnable, on in RocketMQ by default and always here).
//
// The answer is RocketMQ's: SUCCESS when the push was acknowledged, else SYSTEM_ERROR with the
// reason; the store outcome only fills the header (msgId, queue offset), it never changes the
// code. So, as in RocketMQ, a replier whose requester is gone gets SYSTEM_ERROR, and a client
// that retries SYSTEM_ERROR stores its reply again.

// replyPushTimeout bounds the push to the requester (Broker2Client.callClient waits 10 s).
const replyPushTimeout = 10 * time.Second

// propertyPushReplyTime is added to the pushed copy's properties, not to the stored one
// (MessageConst.PROPERTY_PUSH_REPLY_TIME).
const propertyPushReplyTime = "PUSH_REPLY_TIME"

// registerReply installs SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 on their own pool (replyEx). Never
// inline: the answer waits for another client.
func (b *Broker) registerReply(d *remoting.Dispatcher) {
	for _, code := range []int16{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
		b.handle(d, code, remoting.ProcessorFunc(b.processReply), b.replyEx)
	}
}

// processReply serves 324 and 325 (ReplyMessageProcessor.processReplyMessageRequest).
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
	tc, resp := b.checkSend(ch, &h)
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
	resp = sendResponse(remoting.Success, "")
	respHeader := protocol.SendMessageResponseHeader{MsgRegion: defaultRegion, TraceOn: traceOn}
	headerSet := false
	if remark := b.pushReply(ctx, ch, &h, req.Body); remark != "" {
		resp.Code, resp.Remark = remoting.SystemError, remark
	} else {
		// RocketMQ answers "0" until the store says otherwise, so clients can decode it.
		respHeader.MsgID, respHeader.QueueID = "0", queueID
		headerSet = true
	}
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
		respHeader.MsgID, respHeader.QueueID, respHeader.QueueOffset = r.MsgID(), queueID, r.QueueOffset
		headerSet = true
	} else {
		b.log.Warn().Err(err).Str("status", r.Status.String()).Str("topic", h.Topic).Msg("reply message not stored")
	}
	if headerSet {
		respHeader.Encode(resp.ExtFields)
	}
	return resp, nil
}

// pushReply hands the reply to the connection of the client named by its REPLY_TO_CLIENT
// property and returns "" when that client acknowledged it, else RocketMQ's remark.
func (b *Broker) pushReply(ctx context.Context, from remoting.Channel, h *protocol.SendMessageRequestHeader, body []byte) string {
	clientID, _ := message.PropertyValueString(h.Properties, message.PropertyReplyToClient)
	if clientID == "" {
		b.log.Debug().Str("addr", from.RemoteAddr()).Msg("reply message without REPLY_TO_CLIENT")
		// Not RocketMQ's "... is null", which reads as a refused name (names.go).
		return "reply message has no " + message.PropertyReplyToClient + " property to push it by"
	}
	to, ok := b.clientChannel(clientID)
	if !ok {
		b.log.Debug().Str("client_id", clientID).Msg("reply message for a client not connected")
		return "push reply message fail, channel of <" + clientID + "> not found."
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
	pctx, cancel := context.WithTimeout(ctx, replyPushTimeout)
	defer cancel()
	resp, err := to.InvokeSync(pctx, remoting.NewRequest(remoting.PushReplyMessageToClient, remoting.EncodeHeader(&ph), body))
	if err == nil && resp.Code != remoting.Success {
		err = &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
	}
	if err != nil {
		b.log.Warn().Err(err).Str("client_id", clientID).Str("addr", to.RemoteAddr()).Msg("push reply message failed")
		return "push reply message to " + clientID + " fail."
	}
	return ""
}
