package pop

import (
	"bytes"
	"context"
	"errors"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// handleTarget is what a receipt handle and its request's header resolve to.
type handleTarget struct {
	key    ckKey
	qid    int32 // revive queue
	offset int64
}

// resolveHandle checks an ACK_MESSAGE or CHANGE_MESSAGE_INVISIBLETIME's topic, queue, offset
// and receipt handle as AckMessageProcessor does.
func (s *Service) resolveHandle(group, topic string, queueID int32, extraInfo string, offset int64) (handleTarget, *remoting.Command) {
	var t handleTarget
	if refused := s.masterOnly(); refused != nil {
		return t, refused
	}
	e, err := protocol.ParseExtraInfo(extraInfo)
	if err != nil {
		return t, refuse(remoting.InvalidParameter, "extraInfo is not a receipt handle this broker gave: %v", err)
	}
	if e.ReviveQid >= reviveQueueNum && e.ReviveQid != orderReviveQid {
		return t, refuse(remoting.InvalidParameter, "receipt handle's reviveQid %d is not below %d", e.ReviveQid, reviveQueueNum)
	}
	// The header names the topic the message was popped from, the pop retry topic for a
	// revived one (5.x clients resolve it from the handle before they ack, and
	// AckMessageProcessor takes the header's topic as it is); only BATCH_ACK_MESSAGE's entries
	// name the original topic with the handle's retry marker.
	real := topic
	tc, ok := s.b.Topics().Get(real)
	if !ok {
		return t, refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if queueID < 0 || queueID >= tc.ReadQueueNums {
		return t, refuse(remoting.MessageIllegal, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			queueID, real, tc.ReadQueueNums)
	}
	st := s.b.Store()
	minOff, maxOff := st.MinOffsetInQueue(real, queueID), st.MaxOffsetInQueue(real, queueID)
	if offset < minOff || offset > maxOff {
		return t, refuse(remoting.NoMessage, "offset is illegal, key:%s@%d, old:%d, commit:%d, next:%d",
			real, queueID, offset, minOff, maxOff)
	}
	t.key = ckKey{group: group, topic: real, queueID: queueID, start: e.CkQueueOffset, popTime: e.PopTime}
	t.qid, t.offset = e.ReviveQid, offset
	return t, nil
}

// ackAny acks a handle of either kind: a FIFO batch's, or a checkpoint's.
func (s *Service) ackAny(t handleTarget) error {
	if t.qid != orderReviveQid {
		return s.ack(t)
	}
	if err := s.ackOrder(t); err != nil && !errors.Is(err, errOrderHandle) {
		return err
	}
	return nil // a late FIFO ack, as a late ack of a checkpoint, changes nothing
}

// ack takes the message at offset of the checkpoint key names for good. An ack of a handle
// that names no live checkpoint (acked already, revived already, or not this broker's) does
// nothing and is no error, as a late ack in RocketMQ.
func (s *Service) ack(t handleTarget) error {
	return s.ackOffsets(t.key, t.qid, []int64{t.offset})
}

// ackOffsets takes the messages at offsets of the checkpoint key names for good. Offsets the
// checkpoint does not hold, or holds acked already, are passed over. With buffer merge the
// acks are set in memory and written later by flushAcks (buffer.go); else one revive record,
// an "ack" for one message, a "bAck" (5.x's BatchAckMsg) for more, is stored before ackOffsets
// returns: the bits are set first so the revive loop never re-puts a message being acked, and
// cleared again when the record is not stored.
func (s *Service) ackOffsets(key ckKey, qid int32, offsets []int64) error {
	s.mu.Lock()
	c := s.cks[key]
	if c == nil || c.reviveQid != qid {
		s.mu.Unlock()
		return nil
	}
	var bits uint32
	for _, o := range offsets {
		if i := c.index(o); i >= 0 && (c.acked|bits)&(1<<i) == 0 {
			bits |= 1 << i
		}
	}
	if bits == 0 {
		s.mu.Unlock()
		return nil
	}
	c.acked |= bits
	if s.buffered {
		c.unwritten |= bits
		s.markDirtyLocked(c, nowMillis())
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	err := s.putAcks(c, bits)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		c.acked &^= bits
		return err
	}
	s.dropIfDoneLocked(c)
	return nil
}

// ackInline reports whether an ACK_MESSAGE is answered without waiting, so that the transport
// may serve it on its own goroutine as it does a send: under ASYNC_FLUSH on a master, acking a
// checkpoint's message is one append of an ack record into mapped memory. A FIFO handle's ack
// (reviveQid 999) rewrites consumerOrderInfo.json and stays on the pool; so does every ack
// when records wait for the disk or a slave. Nothing of req is kept past the answer: records
// are copied into the store and checkpoint keys only looked up.
func (s *Service) ackInline(req *remoting.Command) bool {
	o := s.b.Options()
	if o.Store.FlushDiskType == storage.SyncFlush || o.Broker.Role != storage.AsyncMaster {
		return false
	}
	qid, ok := protocol.ExtraInfoField(req.ExtFields["extraInfo"], 3)
	return ok && qid != orderReviveQidField
}

// batchAckInline is ackInline for a BATCH_ACK_MESSAGE: inline unless an entry may name a FIFO
// pop, whose reviveQueueId 999 the JSON body then holds as those three digits (a number
// encoding/json reads into an int32 is written in plain digits).
func (s *Service) batchAckInline(req *remoting.Command) bool {
	o := s.b.Options()
	if o.Store.FlushDiskType == storage.SyncFlush || o.Broker.Role != storage.AsyncMaster {
		return false
	}
	return !bytes.Contains(req.Body, []byte(orderReviveQidField))
}

// processAck serves ACK_MESSAGE.
func (s *Service) processAck(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.AckMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	t, refused := s.resolveHandle(h.ConsumerGroup, h.Topic, h.QueueID, h.ExtraInfo, h.Offset)
	if refused != nil {
		return refused, nil
	}
	if err := s.ackAny(t); err != nil {
		return refuse(remoting.SystemError, "ack not stored: %v", err), nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// maxBatchAcks bounds the entries of one BATCH_ACK_MESSAGE.
const maxBatchAcks = 1024

// processBatchAck serves BATCH_ACK_MESSAGE: every entry is checked before any is applied.
func (s *Service) processBatchAck(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if refused := s.masterOnly(); refused != nil {
		return refused, nil
	}
	if len(req.Body) == 0 {
		return refuse(remoting.InvalidParameter, "batch ack has no body"), nil
	}
	body, err := protocol.DecodeBatchAckBody(req.Body)
	if err != nil {
		return refuse(remoting.InvalidParameter, "%v", err), nil
	}
	if len(body.Acks) > maxBatchAcks {
		return refuse(remoting.InvalidParameter, "batch ack has %d entries, over %d", len(body.Acks), maxBatchAcks), nil
	}
	type entry struct {
		key       ckKey
		reviveQid int32
		bits      []byte
	}
	entries := make([]entry, 0, len(body.Acks))
	for i := range body.Acks {
		a := &body.Acks[i]
		if refused := reqnames.CheckGroupField("c", a.ConsumerGroup); refused != nil {
			return refused, nil
		}
		if err := names.CheckTopic(a.Topic); err != nil {
			return reqnames.Refused("t", err), nil
		}
		if a.StartOffset < 0 || a.QueueID < 0 || a.ReviveQueueID < 0 || (a.ReviveQueueID >= reviveQueueNum && a.ReviveQueueID != orderReviveQid) {
			return refuse(remoting.InvalidParameter, "batch ack entry %d: negative offset or queue, or reviveQueueId %d not below %d",
				i, a.ReviveQueueID, reviveQueueNum), nil
		}
		e := protocol.ExtraInfo{Retry: a.Retry}
		switch a.Retry {
		case protocol.PopRetryNone, protocol.PopRetryV1, protocol.PopRetryV2:
		default:
			return refuse(remoting.InvalidParameter, "batch ack entry %d: r %q is not 0, 1 or 2", i, a.Retry), nil
		}
		entries = append(entries, entry{key: ckKey{group: a.ConsumerGroup, topic: e.RealTopic(a.Topic, a.ConsumerGroup),
			queueID: a.QueueID, start: a.StartOffset, popTime: a.PopTime}, reviveQid: a.ReviveQueueID, bits: a.BitSet})
	}
	var errs []error
	for _, en := range entries {
		var all, offs []int64
		if en.reviveQid == orderReviveQid {
			all = s.orderOffsets(en.key)
		} else {
			s.mu.Lock()
			if c := s.cks[en.key]; c != nil {
				all = append(all, c.offsets...)
			}
			s.mu.Unlock()
		}
		for _, o := range all {
			if d := o - en.key.start; d >= 0 && protocol.BitSetGet(en.bits, int(min(d, 1<<31-1))) {
				offs = append(offs, o)
			}
		}
		if en.reviveQid != orderReviveQid {
			if len(offs) > 0 {
				errs = append(errs, s.ackOffsets(en.key, en.reviveQid, offs))
			}
			continue
		}
		for _, o := range offs {
			errs = append(errs, s.ackAny(handleTarget{key: en.key, qid: en.reviveQid, offset: o}))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return refuse(remoting.SystemError, "some acks not stored: %v", err), nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processChangeInvisible serves CHANGE_MESSAGE_INVISIBLETIME: a new one-message checkpoint
// from now, then an ack of the old handle. A handle that names no live checkpoint is refused
// with NO_MESSAGE: the message was acked, or its invisible time passed and it went back.
func (s *Service) processChangeInvisible(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ChangeInvisibleTimeRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if refused := s.checkInvisible(h.InvisibleTime); refused != nil {
		return refused, nil
	}
	t, refused := s.resolveHandle(h.ConsumerGroup, h.Topic, h.QueueID, h.ExtraInfo, h.Offset)
	if refused != nil {
		return refused, nil
	}
	if t.qid == orderReviveQid {
		visibleAt := nowMillis() + h.InvisibleTime
		if err := s.changeOrder(t, visibleAt); errors.Is(err, errOrderHandle) {
			return refuse(remoting.NoMessage, "the receipt handle of offset %d names no FIFO message awaiting ack", h.Offset), nil
		} else if err != nil {
			return refuse(remoting.SystemError, "FIFO change not stored: %v", err), nil
		}
		// The handle keeps its pop time; its invisible time now ends at visibleAt.
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = make(map[string]string, 3)
		(&protocol.ChangeInvisibleTimeResponseHeader{PopTime: t.key.popTime, InvisibleTime: visibleAt - t.key.popTime,
			ReviveQid: orderReviveQid}).Encode(resp.ExtFields)
		return resp, nil
	}
	key := ckKey{group: t.key.group, topic: t.key.topic, queueID: t.key.queueID, start: t.offset, popTime: nowMillis()}
	s.mu.Lock()
	c := s.cks[t.key]
	live := c != nil && c.reviveQid == t.qid && c.index(t.offset) >= 0 && c.acked&(1<<c.index(t.offset)) == 0
	for _, taken := s.cks[key]; taken; _, taken = s.cks[key] {
		key.popTime++ // the handle's key must name one checkpoint
	}
	s.mu.Unlock()
	if !live {
		return refuse(remoting.NoMessage, "the receipt handle of offset %d names no message awaiting ack: it was acked, or its invisible time passed", h.Offset), nil
	}
	nc := &checkpoint{key: key, reviveQid: t.qid, invisible: h.InvisibleTime, offsets: []int64{t.offset}}
	if err := s.addCheckpoint(nc, nil); err != nil {
		return refuse(remoting.SystemError, "checkpoint not stored: %v", err), nil
	}
	if err := s.ack(t); err != nil {
		return refuse(remoting.SystemError, "ack of the old handle not stored: %v", err), nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = make(map[string]string, 3)
	(&protocol.ChangeInvisibleTimeResponseHeader{PopTime: key.popTime, InvisibleTime: h.InvisibleTime, ReviveQid: t.qid}).Encode(resp.ExtFields)
	return resp, nil
}
