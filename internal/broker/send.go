package broker

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// The send side: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320), as
// RocketMQ 4.x's SendMessageProcessor serves them (docs/protocol.md §4). A single message
// walks down four steps, one file each, and returns to sendOne between them only:
//
//  1. processSend (here) decodes the header (long keys for 10, one-letter keys for 310 and 320);
//  2. check (send_check.go) runs RocketMQ's msgCheck in its order: broker role, reserved topics,
//     topic config (auto-created from the request's default topic), write permission, queue id;
//  3. sendOne (here) builds the stored message: born host = the connection's peer, store host =
//     the broker's address, body kept as sent (never inflated);
//  4. redirect (send_props.go) edits its properties and target: %RETRY% messages past their max
//     reconsume times go to %DLQ%<group>, CLUSTER is added, a transaction half message goes
//     where the Transactions service keeps it (refused when RejectTransactionMessage is set,
//     internal/broker/transaction), a DELAY level or a timer where the Scheduler keeps it
//     (internal/broker/schedule; both seams in core_tx.go);
//  5. put (send_put.go) appends and answers the put status with RocketMQ's code and remark.
//
// Replies (SEND_REPLY_MESSAGE 324 and _V2 325) are pushed to their requester, then stored
// (reply.go).

// Values of the MSG_REGION and TRACE_ON response fields (BrokerConfig regionId, traceOn).
const (
	defaultRegion = "DefaultRegion"
	traceOn       = true
)

// sender is the send processor (RocketMQ's SendMessageProcessor): the send codes and the
// remarks it computes once. Its state never changes after newSender, so it takes no lock.
type sender struct {
	*Broker
	// illegalRemark answers MESSAGE_ILLEGAL for sizes (RocketMQ's text, with our limit).
	illegalRemark string
	// slaveRemark refuses sends to a slave.
	slaveRemark string
	// rejectTxRemark refuses half messages when RejectTransactionMessage is set.
	rejectTxRemark string
}

func newSender(b *Broker) *sender {
	return &sender{
		Broker: b,
		illegalRemark: fmt.Sprintf("the message is illegal, maybe msg body or properties length not matched. "+
			"msg body length limit %dk, msg properties length limit 32k.", b.opts.Limits.MaxMessageBytes/1024),
		slaveRemark:    "the broker[" + b.storeHost.Addr().String() + "] sending message is forbidden",
		rejectTxRemark: "the broker[" + b.storeHost.Addr().String() + "] sending transaction message is forbidden",
	}
}

// register installs SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.
func (s *sender) register(d *remoting.Dispatcher) {
	p := remoting.ProcessorFunc(s.processSend)
	for _, code := range []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage} {
		s.codes = append(s.codes, code)
		fields, _ := reqnames.Fields(code)
		d.RegisterInline(code, guardNames(code, fields, p), s.sendEx, s.sendInline)
		d.ReadsRawHeader(code) // the names guard, sendInline and processSend read it in place
	}
}

// sendInline reports whether a send is answered without waiting, so that the transport may run
// it on its own goroutine (remoting.Dispatcher.RegisterInline): under ASYNC_FLUSH an append is
// a copy into mapped memory, under the store's lock, which nothing holds for long. A send
// waits when the store flushes before answering (SYNC_FLUSH), when a slave must have it first
// (SYNC_MASTER), when it creates its topic (the answer waits for the name servers to have the
// route), and when it goes to a retry topic (past its max reconsume times it creates the
// group's DLQ topic). A slave answers at once, but on a worker as before.
func (s *sender) sendInline(req *remoting.Command) bool {
	if s.opts.Store.FlushDiskType == storage.SyncFlush || s.opts.Broker.Role != storage.AsyncMaster {
		return false
	}
	key := "topic"
	switch req.Code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		key = "b"
	}
	topic, _ := req.LookupExt(key)
	if strings.HasPrefix(topic, names.RetryPrefix) {
		return false
	}
	_, ok := s.topics.Get(topic)
	return ok
}

// processSend serves the send codes. A header that does not decode answers SYSTEM_ERROR
// naming the field (the dispatcher turns the *remoting.HeaderError into that response).
func (s *sender) processSend(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SendMessageRequestHeader
	var err error
	r := req.FieldReader()
	switch req.Code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		err = (*protocol.SendMessageRequestHeaderV2)(&h).DecodeFrom(&r)
	default:
		err = h.DecodeFrom(&r)
	}
	if err != nil {
		return nil, err
	}
	reply := req.Code == remoting.SendReplyMessage || req.Code == remoting.SendReplyMessageV2
	if !reply && (req.Code == remoting.SendBatchMessage || h.Batch) {
		return s.sendBatch(ctx, ch, req, &h), nil
	}
	return s.sendOne(ctx, ch, req, &h), nil
}

// sendOne stores a single message (RocketMQ SendMessageProcessor.sendMessage).
func (s *sender) sendOne(ctx context.Context, ch remoting.Channel, req *remoting.Command, h *protocol.SendMessageRequestHeader) *remoting.Command {
	tc, queueID, resp := s.check(ch, h)
	if resp != nil {
		return resp
	}
	if len(req.Body) > s.opts.Limits.MaxMessageBytes {
		return sendResponse(remoting.MessageIllegal, s.illegalRemark)
	}
	m := &storage.Message{
		Topic:          h.Topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		Body:           req.Body,
		SysFlag:        storedSysFlag(h.SysFlag, tc),
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost(ch),
		StoreHost:      s.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	txID, resp := s.redirect(req, h, m)
	if resp != nil {
		return resp
	}
	return s.put(ctx, ch, req, h, m, queueID, txID)
}

// sendBatch stores the messages of a SEND_BATCH_MESSAGE body at consecutive offsets of one queue
// (RocketMQ SendMessageProcessor.sendBatchMessage and CommitLog.putMessages).
func (s *sender) sendBatch(ctx context.Context, ch remoting.Channel, req *remoting.Command, h *protocol.SendMessageRequestHeader) *remoting.Command {
	if len(h.Topic) > message.MaxTopicBytes {
		return sendResponse(remoting.MessageIllegal, fmt.Sprintf("message topic length too long %d", len(h.Topic)))
	}
	if strings.HasPrefix(h.Topic, names.RetryPrefix) {
		return sendResponse(remoting.MessageIllegal, "batch request does not support retry group "+h.Topic)
	}
	tc, queueID, resp := s.check(ch, h)
	if resp != nil {
		return resp
	}
	if message.TransactionType(h.SysFlag) != message.TransactionNotType {
		return sendResponse(remoting.MessageIllegal, "batch message does not support transaction")
	}
	if message.DelayLevel(h.Properties) > 0 {
		return sendResponse(remoting.MessageIllegal, "batch message does not support delay level")
	}
	if len(req.Body) > s.opts.Limits.MaxMessageBytes {
		return sendResponse(remoting.MessageIllegal, s.illegalRemark)
	}
	elems, err := message.DecodeBatch(req.Body)
	if err != nil {
		return sendResponse(remoting.MessageIllegal, "the batch message is illegal: "+err.Error())
	}
	if len(elems) == 0 {
		return sendResponse(remoting.MessageIllegal, "the batch message is empty")
	}
	batchProps := message.SetProperty(h.Properties, message.PropertyCluster, s.opts.Broker.ClusterName)
	born := bornHost(ch)
	sysFlag := storedSysFlag(h.SysFlag, tc)
	store := make([]storage.Message, len(elems))
	msgs := make([]*storage.Message, len(elems))
	for i, e := range elems {
		m := &store[i]
		*m = storage.Message{Topic: h.Topic, QueueID: queueID, Flag: e.Flag, Body: e.Body,
			Properties: message.JoinProperties(e.Properties, batchProps), SysFlag: sysFlag,
			BornTimestamp: h.BornTimestamp, BornHost: born, StoreHost: s.storeHost,
			ReconsumeTimes: h.ReconsumeTimes}
		if message.DelayLevel(m.Properties) > 0 {
			return sendResponse(remoting.MessageIllegal, "batch message does not support delay level")
		}
		if len(m.Properties) > message.MaxPropertiesBytes {
			return sendResponse(remoting.MessageIllegal, s.illegalRemark)
		}
		msgs[i] = m
	}
	r, err := s.store.PutMessages(msgs)
	s.seams.waitForSlave(ctx, &r)
	return s.putResponse(ch, &r, err, h.Topic, queueID, true, "", "")
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
