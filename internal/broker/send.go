package broker

import (
	"context"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"math/rand/v2"
	"net/netip"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// The send side: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320),
// SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325), as RocketMQ 4.x's
// SendMessageProcessor serves them (docs/protocol.md §4):
//
//  1. decode the header (long keys for 10 and 324, one-letter keys for 310, 320 and 325);
//  2. check, in RocketMQ's order: broker role, topic name, reserved topics, topic config
//     (auto-created from the request's default topic, or for %RETRY% topics from the group),
//     topic write permission, queue id (send_check.go);
//  3. build the stored message: born host = the connection's peer, store host = the broker's
//     address, CLUSTER property added, body kept as sent (never inflated);
//  4. %RETRY% messages past their max reconsume times go to %DLQ%<group>; DELAY and timer
//     messages go where the Scheduler keeps them (core_tx.go, internal/broker/schedule);
//  5. append, and answer the put status with RocketMQ's code and remark.
//
// Replies (324/325) are pushed to their requester, then stored (reply.go). A transaction half
// message (TRAN_MSG true) is refused when RejectTransactionMessage is set, else moved to
// RMQ_SYS_TRANS_HALF_TOPIC until END_TRANSACTION (internal/broker/transaction).

// Values of the MSG_REGION and TRACE_ON response fields (BrokerConfig regionId, traceOn).
const (
	defaultRegion = "DefaultRegion"
	traceOn       = true
)

// sendState is the send side's state (owned by send.go): remarks computed once.
type sendState struct {
	// illegalRemark answers MESSAGE_ILLEGAL for sizes (RocketMQ's text, with our limit).
	illegalRemark string
	// slaveRemark refuses sends to a slave.
	slaveRemark string
	// rejectTxRemark refuses half messages when RejectTransactionMessage is set.
	rejectTxRemark string
}

func (b *Broker) initSend() {
	b.send = &sendState{
		illegalRemark: fmt.Sprintf("the message is illegal, maybe msg body or properties length not matched. "+
			"msg body length limit %dk, msg properties length limit 32k.", b.opts.MaxMessageBytes/1024),
		slaveRemark:    "the broker[" + b.storeHost.Addr().String() + "] sending message is forbidden",
		rejectTxRemark: "the broker[" + b.storeHost.Addr().String() + "] sending transaction message is forbidden",
	}
}

// registerSend installs SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE and
// the topic admin processors.
func (b *Broker) registerSend(d *remoting.Dispatcher) {
	p := remoting.ProcessorFunc(b.processSend)
	for _, code := range []int16{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage} {
		b.codes = append(b.codes, code)
		d.RegisterInline(code, guardNames(code, requestNames[code], p), b.sendEx, b.sendInline)
	}
	b.registerTopicAdmin(d)
}

// sendInline reports whether a send is answered without waiting, so that the transport may run
// it on its own goroutine (remoting.Dispatcher.RegisterInline): under ASYNC_FLUSH an append is
// a copy into mapped memory, under the store's lock, which nothing holds for long. A send
// waits when the store flushes before answering (SYNC_FLUSH), when a slave must have it first
// (SYNC_MASTER), when it creates its topic (the answer waits for the name servers to have the
// route), and when it goes to a retry topic (past its max reconsume times it creates the
// group's DLQ topic). A slave answers at once, but on a worker as before.
func (b *Broker) sendInline(req *remoting.Command) bool {
	if b.opts.Store.FlushDiskType == storage.SyncFlush || b.opts.BrokerRole != storage.AsyncMaster {
		return false
	}
	key := "topic"
	switch req.Code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		key = "b"
	}
	topic := req.ExtFields[key]
	if strings.HasPrefix(topic, names.RetryPrefix) {
		return false
	}
	_, ok := b.topics.get(topic)
	return ok
}

// processSend serves the five send codes. A header that does not decode answers SYSTEM_ERROR
// naming the field (the dispatcher turns the *remoting.HeaderError into that response).
func (b *Broker) processSend(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SendMessageRequestHeader
	var err error
	switch req.Code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		err = (*protocol.SendMessageRequestHeaderV2)(&h).Decode(req.ExtFields)
	default:
		err = h.Decode(req.ExtFields)
	}
	if err != nil {
		return nil, err
	}
	reply := req.Code == remoting.SendReplyMessage || req.Code == remoting.SendReplyMessageV2
	if !reply && (req.Code == remoting.SendBatchMessage || h.Batch) {
		return b.sendBatch(ctx, ch, req, &h), nil
	}
	return b.sendOne(ctx, ch, req, &h), nil
}

// sendOne stores a single message (RocketMQ SendMessageProcessor.sendMessage).
func (b *Broker) sendOne(ctx context.Context, ch remoting.Channel, req *remoting.Command, h *protocol.SendMessageRequestHeader) *remoting.Command {
	tc, resp := b.checkSend(ch, h)
	if resp != nil {
		return resp
	}
	queueID, resp := pickQueue(h.QueueID, tc)
	if resp != nil {
		return resp
	}
	if len(req.Body) > b.opts.MaxMessageBytes {
		return sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
	}
	m := &storage.Message{
		Topic:          h.Topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		Body:           req.Body,
		SysFlag:        storedSysFlag(h.SysFlag, tc),
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost(ch),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	props := h.Properties
	if resp := b.handleRetryAndDLQ(req, h, m, &props); resp != nil {
		return resp
	}
	m.Properties = setProperty(props, message.PropertyCluster, b.opts.ClusterName)
	var txID string
	if transactionHalf(h.Properties, h.ReconsumeTimes) {
		if b.opts.RejectTransactionMessage {
			return sendResponse(remoting.NoPermission, b.send.rejectTxRemark)
		}
		// The property decides, as in RocketMQ, whatever the sysFlag says. A DELAY level
		// waits for the commit (internal/broker/transaction).
		if resp := b.prepareHalf(m); resp != nil {
			return resp
		}
		// RocketMQ answers a half message with its UNIQ_KEY as transaction id.
		txID, _ = message.PropertyValueString(m.Properties, message.PropertyUniqKey)
	} else {
		switch message.TransactionType(m.SysFlag) {
		case message.TransactionNotType, message.TransactionCommitType:
			if resp := b.Schedule(m); resp != nil {
				return resp
			}
		}
	}
	if len(m.Properties) > message.MaxPropertiesBytes {
		return sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
	}
	// Before the append: a replier can read the request as soon as it is stored.
	b.noteRequest(ch, h.Properties)
	if b.opts.Store.FlushDiskType == storage.SyncFlush && b.opts.BrokerRole != storage.SyncMaster {
		// The answer waits for the group commit without holding this worker, so one fsync
		// covers every sender waiting, not only as many as there are workers.
		topic := h.Topic
		b.store.PutMessageAsync(m, func(r storage.PutResult, err error) {
			b.afterPut(m, &r)
			_ = remoting.AnswerLater(ch, req, b.putResponse(&r, err, topic, queueID, false, txID))
		})
		return nil
	}
	r, err := b.store.PutMessage(m)
	b.waitForSlave(ctx, &r)
	b.afterPut(m, &r)
	return b.putResponse(&r, err, h.Topic, queueID, false, txID)
}

// sendBatch stores the messages of a SEND_BATCH_MESSAGE body at consecutive offsets of one queue
// (RocketMQ SendMessageProcessor.sendBatchMessage and CommitLog.putMessages).
func (b *Broker) sendBatch(ctx context.Context, ch remoting.Channel, req *remoting.Command, h *protocol.SendMessageRequestHeader) *remoting.Command {
	if len(h.Topic) > message.MaxTopicBytes {
		return sendResponse(remoting.MessageIllegal, fmt.Sprintf("message topic length too long %d", len(h.Topic)))
	}
	if strings.HasPrefix(h.Topic, names.RetryPrefix) {
		return sendResponse(remoting.MessageIllegal, "batch request does not support retry group "+h.Topic)
	}
	tc, resp := b.checkSend(ch, h)
	if resp != nil {
		return resp
	}
	queueID, resp := pickQueue(h.QueueID, tc)
	if resp != nil {
		return resp
	}
	if message.TransactionType(h.SysFlag) != message.TransactionNotType {
		return sendResponse(remoting.MessageIllegal, "batch message does not support transaction")
	}
	if delayLevel(h.Properties) > 0 {
		return sendResponse(remoting.MessageIllegal, "batch message does not support delay level")
	}
	if len(req.Body) > b.opts.MaxMessageBytes {
		return sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
	}
	elems, err := message.DecodeBatch(req.Body)
	if err != nil {
		return sendResponse(remoting.MessageIllegal, "the batch message is illegal: "+err.Error())
	}
	if len(elems) == 0 {
		return sendResponse(remoting.MessageIllegal, "the batch message is empty")
	}
	batchProps := setProperty(h.Properties, message.PropertyCluster, b.opts.ClusterName)
	born := bornHost(ch)
	sysFlag := storedSysFlag(h.SysFlag, tc)
	store := make([]storage.Message, len(elems))
	msgs := make([]*storage.Message, len(elems))
	for i, e := range elems {
		m := &store[i]
		*m = storage.Message{Topic: h.Topic, QueueID: queueID, Flag: e.Flag, Body: e.Body,
			Properties: joinProperties(e.Properties, batchProps), SysFlag: sysFlag,
			BornTimestamp: h.BornTimestamp, BornHost: born, StoreHost: b.storeHost,
			ReconsumeTimes: h.ReconsumeTimes}
		if delayLevel(m.Properties) > 0 {
			return sendResponse(remoting.MessageIllegal, "batch message does not support delay level")
		}
		if len(m.Properties) > message.MaxPropertiesBytes {
			return sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
		}
		msgs[i] = m
	}
	r, err := b.store.PutMessages(msgs)
	b.waitForSlave(ctx, &r)
	return b.putResponse(&r, err, h.Topic, queueID, true, "")
}

// pickQueue returns the queue to write: the requested one, or for a negative id a random
// writable queue as RocketMQ does.
func pickQueue(queueID int32, tc TopicConfig) (int32, *remoting.Command) {
	if queueID >= 0 {
		return queueID, nil
	}
	if tc.WriteQueueNums <= 0 {
		return 0, sendResponse(remoting.SystemError,
			fmt.Sprintf("request queueId[%d] is illegal, %s has no writable queue", queueID, topicConfigString(tc)))
	}
	return rand.Int32N(tc.WriteQueueNums), nil
}

// storedSysFlag is the request's sysFlag plus the multi-tags bit of MULTI_TAG topics.
func storedSysFlag(sysFlag int32, tc TopicConfig) int32 {
	if tc.TopicFilterType == route.FilterMultiTag {
		sysFlag |= message.FlagMultiTags
	}
	return sysFlag
}

// bornHost is the connection's peer address, or 0.0.0.0:0 when it does not parse.
func bornHost(ch remoting.Channel) netip.AddrPort {
	ap, err := netip.ParseAddrPort(ch.RemoteAddr())
	if err != nil {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return ap
}

// sendResponse is a send response with RocketMQ's MSG_REGION and TRACE_ON fields, which the
// broker adds to every send answer, failed or not.
func sendResponse(code int16, remark string) *remoting.Command {
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = map[string]string{message.PropertyMsgRegion: defaultRegion, message.PropertyTraceSwitch: "true"}
	return resp
}

// putResponse answers an append (RocketMQ handlePutMessageResult) of messages sent to topic
// (counted under it, wherever they were redirected). queueID is the queue the
// request named (or the one picked for it), as RocketMQ answers even when the message was
// redirected to a DLQ or the schedule topic; the queue offset is where it was stored. A batch
// answers the comma-joined ids of its messages and the first one's queue offset.
func (b *Broker) putResponse(r *storage.PutResult, err error, topic string, queueID int32, batch bool, txID string) *remoting.Command {
	code, remark := putStatusCode(r.Status, b.send.illegalRemark)
	switch r.Status {
	case storage.PutOK, storage.FlushDiskTimeout, storage.FlushSlaveTimeout, storage.SlaveNotAvailable:
		b.countPut(topic, r.Count, r.WroteBytes)
	case storage.CreateMappedFileFailed, storage.UnknownError:
		b.log.Error().Err(err).Str("status", r.Status.String()).Msg("put message failed")
		return sendResponse(code, remark)
	default:
		if e := b.log.Debug(); e.Enabled() {
			e.Err(err).Str("status", r.Status.String()).Msg("put message refused")
		}
		return sendResponse(code, remark)
	}
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = make(map[string]string, 6)
	var msgID string
	if batch {
		msgID = r.MsgIDs()
	} else {
		msgID = r.MsgID()
	}
	h := protocol.SendMessageResponseHeader{MsgID: msgID, QueueID: queueID, QueueOffset: r.QueueOffset,
		TransactionID: txID, MsgRegion: defaultRegion, TraceOn: traceOn}
	h.Encode(resp.ExtFields)
	return resp
}

// putStored reports whether a put status means the message was written (the send succeeds).
func putStored(st storage.PutStatus) bool {
	switch st {
	case storage.PutOK, storage.FlushDiskTimeout, storage.FlushSlaveTimeout, storage.SlaveNotAvailable:
		return true
	}
	return false
}

// putStatusCode maps a put status to RocketMQ's response code and remark.
func putStatusCode(st storage.PutStatus, illegalRemark string) (int16, string) {
	switch st {
	case storage.PutOK:
		return remoting.Success, ""
	case storage.FlushDiskTimeout:
		return remoting.FlushDiskTimeout, ""
	case storage.FlushSlaveTimeout:
		return remoting.FlushSlaveTimeout, ""
	case storage.SlaveNotAvailable:
		return remoting.SlaveNotAvailable, ""
	case storage.ServiceNotAvailable:
		return remoting.ServiceNotAvailable, "service not available now. It may be caused by one of the following " +
			"reasons: the broker's disk is full, messages are put to the slave, message store has been shut down, etc."
	case storage.CreateMappedFileFailed:
		return remoting.SystemError, "create mapped file failed, server is busy or broken."
	case storage.MessageIllegal, storage.PropertiesSizeExceeded:
		return remoting.MessageIllegal, illegalRemark
	case storage.OSPageCacheBusy:
		return remoting.SystemBusy, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
	case storage.UnknownError:
		return remoting.SystemError, "UNKNOWN_ERROR"
	default:
		return remoting.SystemError, "UNKNOWN_ERROR DEFAULT"
	}
}
