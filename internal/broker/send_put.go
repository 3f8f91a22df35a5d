package broker

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// The last step of a send (send.go): the append and its answer.

// put appends m, a single message sent to topic h.Topic and queue queueID (RocketMQ
// SendMessageProcessor.sendMessage's putMessage and handlePutMessageResult). Under SYNC_FLUSH
// without SYNC_MASTER it answers later, from the group commit, and returns nil.
func (s *sender) put(ctx context.Context, ch remoting.Channel, req *remoting.Command, h *protocol.SendMessageRequestHeader, m *storage.Message, queueID int32, txID string) *remoting.Command {
	// Before the append: a replier can read the request as soon as it is stored.
	s.seams.noteRequest(ch, h.Properties)
	if s.opts.Store.FlushDiskType == storage.SyncFlush && s.opts.Broker.Role != storage.SyncMaster {
		// The answer waits for the group commit without holding this worker, so one fsync
		// covers every sender waiting, not only as many as there are workers.
		topic := h.Topic
		s.store.PutMessageAsync(m, func(r storage.PutResult, err error) {
			s.seams.afterPut(m, &r)
			_ = remoting.AnswerLater(ch, req, s.putResponse(ch, &r, err, topic, queueID, false, txID, s.seams.recallHandle(m)))
		})
		return nil
	}
	r, err := s.store.PutMessage(m)
	s.seams.waitForSlave(ctx, &r)
	s.seams.afterPut(m, &r)
	return s.putResponse(ch, &r, err, h.Topic, queueID, false, txID, s.seams.recallHandle(m))
}

// sendResponse is a send response with RocketMQ's MSG_REGION and TRACE_ON fields, which the
// broker adds to every send answer, failed or not.
func sendResponse(code int32, remark string) *remoting.Command {
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = map[string]string{message.PropertyMsgRegion: defaultRegion, message.PropertyTraceSwitch: "true"}
	return resp
}

// putResponse answers an append (RocketMQ handlePutMessageResult) of messages sent to topic
// (counted under it, wherever they were redirected). queueID is the queue the
// request named (or the one picked for it), as RocketMQ answers even when the message was
// redirected to a DLQ or the schedule topic; the queue offset is where it was stored. A batch
// answers the comma-joined ids of its messages and the first one's queue offset.
func (s *sender) putResponse(ch remoting.Channel, r *storage.PutResult, err error, topic string, queueID int32, batch bool, txID, recall string) *remoting.Command {
	code, remark := s.putStatusCode(r.Status)
	switch r.Status {
	case storage.PutOK, storage.FlushDiskTimeout, storage.FlushSlaveTimeout, storage.SlaveNotAvailable:
		s.seams.countPut(topic, r.Count, r.WroteBytes)
	case storage.CreateMappedFileFailed, storage.UnknownError:
		s.log.Error().Err(err).Str("status", r.Status.String()).Msg("put message failed")
		return sendResponse(code, remark)
	default:
		if e := s.log.Debug(); e.Enabled() {
			e.Err(err).Str("status", r.Status.String()).Msg("put message refused")
		}
		return sendResponse(code, remark)
	}
	resp := remoting.NewResponse(code, remark)
	var msgID string
	if batch {
		msgID = r.MsgIDs()
	} else {
		msgID = r.MsgID()
	}
	h := protocol.SendMessageResponseHeader{MsgID: msgID, QueueID: queueID, QueueOffset: r.QueueOffset,
		TransactionID: txID, MsgRegion: defaultRegion, TraceOn: traceOn, RecallHandle: recall}
	if _, ok := ch.(remoting.FieldsChannel); ok {
		// Written straight into the frame: no map per send. A copy, so that h stays on the
		// stack for an in-process channel, which gets the map.
		fields := new(protocol.SendMessageResponseHeader)
		*fields = h
		resp.Fields = fields
		return resp
	}
	resp.ExtFields = make(map[string]string, 6)
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
func (s *sender) putStatusCode(st storage.PutStatus) (int32, string) {
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
			"reasons: the broker's disk is full [" + s.diskUtil() + "], messages are put to the slave, message store has been shut down, etc."
	case storage.CreateMappedFileFailed:
		return remoting.SystemError, "create mapped file failed, server is busy or broken."
	case storage.MessageIllegal, storage.PropertiesSizeExceeded:
		return remoting.MessageIllegal, s.illegalRemark
	case storage.OSPageCacheBusy:
		return remoting.SystemBusy, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
	case storage.UnknownError:
		return remoting.SystemError, "UNKNOWN_ERROR"
	default:
		return remoting.SystemError, "UNKNOWN_ERROR DEFAULT"
	}
}

// diskUtil is the disk use the refusal names, as RocketMQ's SendMessageProcessor.diskUtil
// prints it: the used fraction of the CommitLog's, the ConsumeQueues' and the index's
// partitions, one file system here (the store's), as the last retention round measured it.
func (s *sender) diskUtil() string {
	r := s.store.DiskUsedRatio()
	return fmt.Sprintf("CL: %5.2f CQ: %5.2f INDEX: %5.2f", r, r, r)
}
