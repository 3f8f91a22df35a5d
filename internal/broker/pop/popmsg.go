package pop

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// timeoutSlackMillis is how late a pop may arrive after its client's bornTime+pollTime before
// it is answered POLLING_TIMEOUT at once (PopMessageRequestHeader.isTimeoutTooMuch: 500 ms).
const timeoutSlackMillis = 500

// timeoutTooMuch is isTimeoutTooMuch without overflow: a negative born time is always late.
func timeoutTooMuch(now, bornTime, pollTime int64) bool {
	if bornTime < 0 || bornTime > now {
		return bornTime < 0
	}
	pollTime = max(pollTime, 0)
	if pollTime > math.MaxInt64-timeoutSlackMillis {
		return false
	}
	return now-bornTime > pollTime+timeoutSlackMillis
}

// popRequest is a POP_MESSAGE being served: its header and what the checks resolved.
type popRequest struct {
	h     protocol.PopMessageRequestHeader
	sub   *filter.Subscription
	queue int32 // the topic's read queue count
	retry int32 // the retry topic's read queue count, 0 when it has none
}

// processPop serves POP_MESSAGE.
func (s *Service) processPop(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PopMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	return s.pop(ch, req, &h, s.pollWait(h.PollTime)), nil
}

// checkPop checks a pop or notification's header and resolves its topic, group and filter.
func (s *Service) checkPop(ch remoting.Channel, h *protocol.PopMessageRequestHeader) (*popRequest, *remoting.Command) {
	if refused := s.masterOnly(); refused != nil {
		return nil, refused
	}
	if timeoutTooMuch(nowMillis(), h.BornTime, h.PollTime) {
		return nil, refuse(remoting.PollingTimeout, "the broker[%s] pop message is timeout too much", s.brokerName)
	}
	if h.MaxMsgNums > maxPopNums {
		return nil, refuse(remoting.InvalidParameter, "the broker[%s] pop message's num is greater than 32", s.brokerName)
	}
	if h.MaxMsgNums <= 0 {
		return nil, refuse(remoting.InvalidParameter, "the broker[%s] pop message's num %d is not positive", s.brokerName, h.MaxMsgNums)
	}
	if refused := s.checkInvisible(h.InvisibleTime); refused != nil {
		return nil, refused
	}
	tc, refused := s.readableTopic(ch, h.Topic, h.QueueID, true)
	if refused != nil {
		return nil, refused
	}
	gc, refused := s.consumableGroup(h.ConsumerGroup)
	if refused != nil {
		return nil, refused
	}
	if gc.ConsumeMessageOrderly {
		// A FIFO group (mqadmin updateSubGroup -o true) pops in order whatever the request
		// says: RocketMQ 5's proxy sets order from the group for its SDKs, and a remoting
		// client that does not know the group's setting gets the same here.
		h.Order = true
	}
	if refused := filter.RefuseHeader(h.Exp, h.ExpType); refused != nil {
		return nil, refused
	}
	r := &popRequest{h: *h, sub: filter.Parse(h.Topic, h.Exp, h.ExpType), queue: tc.ReadQueueNums}
	if rt, ok := s.b.Topics().Get(protocol.PopRetryTopicV1(h.Topic, h.ConsumerGroup)); ok {
		r.retry = rt.ReadQueueNums
	}
	return r, nil
}

// pop serves a pop that may wait up to wait for a message; it returns nil when the pop was
// parked.
func (s *Service) pop(ch remoting.Channel, req *remoting.Command, h *protocol.PopMessageRequestHeader, wait time.Duration) *remoting.Command {
	r, refused := s.checkPop(ch, h)
	if refused != nil {
		return refused
	}
	if s.full() {
		return refuse(remoting.SystemBusy, "the broker[%s] holds %d popped batches awaiting ack (popCkMaxBufferSize): ack or wait",
			s.brokerName, s.cfg.CkMaxBufferSize)
	}
	out := popOut{popTime: nowMillis(), reviveQid: int32(s.nextQid.Add(1) % uint32(reviveQueueNum))}
	randomQ := rand.IntN(100)
	retryFirst := randomQ < s.cfg.FromRetryProbability
	retryTopic := protocol.PopRetryTopicV1(h.Topic, h.ConsumerGroup)
	if h.Order {
		r.retry = 0 // a FIFO pop reads the topic alone, as RocketMQ's
	}
	if retryFirst && r.retry > 0 {
		s.popTopic(r, retryTopic, r.retry, -1, randomQ, &out)
	}
	s.popTopic(r, h.Topic, r.queue, h.QueueID, randomQ, &out)
	if !retryFirst && r.retry > 0 && out.n < int(h.MaxMsgNums) {
		s.popTopic(r, retryTopic, r.retry, -1, randomQ, &out)
	}
	if out.err != nil && out.n == 0 {
		out.release()
		return refuse(remoting.SystemError, "the broker[%s] could not record the pop: %v", s.brokerName, out.err)
	}
	code, remark := int32(remoting.Success), "FOUND"
	if out.n == 0 {
		switch s.polls.park(ch, req, h, false, wait) {
		case parked:
			return nil
		case pollFull:
			code = remoting.PollingFull
		default:
			code = remoting.PollingTimeout
		}
		remark = "NO_MESSAGE_IN_QUEUE"
	}
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = make(map[string]string, 7)
	(&protocol.PopMessageResponseHeader{PopTime: out.popTime, InvisibleTime: h.InvisibleTime, ReviveQid: out.reviveQid,
		RestNum: out.rest, StartOffsetInfo: out.startInfo, MsgOffsetInfo: out.msgInfo, OrderCountInfo: out.orderInfo}).Encode(resp.ExtFields)
	if out.n > 0 {
		out.setBody(resp)
	}
	return resp
}

// popCKRoom is about what POP_CK adds to a message: its name, separators and a handle of
// typical offsets and times.
const popCKRoom = 96

// popOut collects what one pop took: the answer's body in pieces (body.go), the header's
// offset information.
type popOut struct {
	popTime   int64
	reviveQid int32
	n         int
	rest      int64
	pieces    [][]byte
	size      int
	encoded   bool                 // a piece is re-encoded: the body is copied
	held      []*storage.GetResult // lent from by pieces
	startInfo string
	msgInfo   string
	orderInfo string
	err       error
}

// popTopic pops from queue qid of topic, or from every queue starting at randomQ when qid is
// -1, until the batch is full.
func (s *Service) popTopic(r *popRequest, topic string, queues, qid int32, randomQ int, out *popOut) {
	if qid >= 0 {
		s.popQueue(r, topic, qid, out)
		return
	}
	queues = s.b.Topics().QueueLoopBound(queues)
	for i := range queues {
		s.popQueue(r, topic, (int32(randomQ)+i)%queues, out)
	}
}

// popOffset is where the group's next pop of the queue starts: its consumer offset, else the
// queue's first message (initMode MIN, and always in a retry topic) or, for MAX, its last
// unless the queue still holds its very first message in memory, which a new group then
// starts from (PopMessageProcessor.getInitOffset with initPopOffsetByCheckMsgInMem, on): the
// 5.x SDKs pop with MAX, and a group made after its topic's first sends still gets them.
func (s *Service) popOffset(group, topic string, qid, initMode int32) int64 {
	if off := s.b.Offsets().Query(group, topic, qid); off >= 0 {
		return off
	}
	st := s.b.Store()
	if initMode == protocol.PopInitModeMin || strings.HasPrefix(topic, "%RETRY%") {
		return st.MinOffsetInQueue(topic, qid)
	}
	if st.MinOffsetInQueue(topic, qid) <= 0 && st.InMemory(topic, qid, 0) {
		return 0
	}
	return max(st.MaxOffsetInQueue(topic, qid)-1, 0)
}

// popQueue pops what fits of one queue into out: it reads from the group's pop offset, records
// the checkpoint, moves the offset and appends the messages with their POP_CK.
func (s *Service) popQueue(r *popRequest, topic string, qid int32, out *popOut) {
	h := &r.h
	want := int(h.MaxMsgNums) - out.n
	st := s.b.Store()
	if want <= 0 {
		out.rest += max(st.MaxOffsetInQueue(topic, qid)-s.popOffset(h.ConsumerGroup, topic, qid, h.InitMode), 0)
		return
	}
	lock := s.queueLock(h.ConsumerGroup, topic, qid)
	lock.Lock()
	defer lock.Unlock()
	if h.Order {
		s.popOrderQueue(r, topic, qid, out)
		return
	}
	offset := s.popOffset(h.ConsumerGroup, topic, qid, h.InitMode)
	res := st.GetMessage(h.ConsumerGroup, topic, qid, offset, want, 0, r.sub.Filter())
	lent := false
	defer func() {
		if !lent {
			res.Release()
		}
	}()
	next := res.NextBeginOffset
	commit := func() {
		if next != offset {
			s.b.Offsets().Commit(h.ConsumerGroup, topic, qid, next)
		}
	}
	out.rest += max(res.MaxOffset-next, 0)
	if res.Status != storage.Found || len(res.Messages) == 0 {
		commit() // filtered-out messages and corrected offsets move the offset too
		return
	}
	c := &checkpoint{key: ckKey{group: h.ConsumerGroup, topic: topic, queueID: qid, start: offset, popTime: out.popTime},
		reviveQid: out.reviveQid, invisible: h.InvisibleTime, offsets: append([]int64(nil), res.QueueOffsets...)}
	if err := s.addCheckpoint(c, commit); err != nil {
		out.err = err
		s.log.Warn().Err(err).Str("topic", topic).Int32("queue", qid).Msg("pop checkpoint not stored")
		return
	}
	marker := protocol.PopRetryMarker(topic)
	if marker == protocol.PopRetryNone && !anyHasProperty(res.Messages, protocol.PropertyPopCK) {
		out.lend(res)
		lent = true
	} else {
		// A revived message's handle names the retry topic it lies in, which its record's
		// topic does not tell a client that reads it as the original (RocketMQ 5's broker
		// renames it; ours leaves the client to): the handle goes with it as POP_CK. So does
		// the handle of a record a producer stored with a POP_CK of its own, which clients
		// would take for the broker's.
		buf := make([]byte, 0, res.TotalBytes+len(res.Messages)*popCKRoom)
		for i, raw := range res.Messages {
			e := protocol.ExtraInfo{CkQueueOffset: offset, PopTime: out.popTime, InvisibleTime: h.InvisibleTime,
				ReviveQid: out.reviveQid, Retry: marker, BrokerName: s.brokerName, QueueID: qid, QueueOffset: res.QueueOffsets[i]}
			buf = appendWithProperty(buf, raw, protocol.PropertyPopCK, e.String())
		}
		out.addEncoded(buf)
	}
	out.n += len(res.Messages)
	out.startInfo = protocol.AppendOffsetInfo(out.startInfo, topic, qid, strconv.FormatInt(offset, 10))
	offs := make([]string, len(res.QueueOffsets))
	for i, o := range res.QueueOffsets {
		offs[i] = strconv.FormatInt(o, 10)
	}
	out.msgInfo = protocol.AppendOffsetInfo(out.msgInfo, topic, qid, strings.Join(offs, ","))
}

// appendWithProperty appends the stored record raw to dst with key=value set in its
// properties; a record that does not decode, or whose properties would outgrow the record
// format, is appended unchanged. The properties end the record, so a key it does not hold yet
// (the case of every pop: POP_CK is never stored) is appended in place with the two length
// fields rewritten; a key it holds is replaced by re-encoding the record.
func appendWithProperty(dst, raw []byte, key, value string) []byte {
	var rec message.Record
	size, err := message.DecodeRecord(raw, &rec, false)
	if err != nil {
		return append(dst, raw...)
	}
	raw = raw[:size]
	if _, ok := message.PropertyValue(rec.Properties, key); ok {
		return reencodeWithProperty(dst, raw, &rec, key, value)
	}
	sep := len(rec.Properties) > 0 && rec.Properties[len(rec.Properties)-1] != message.PropertySeparator
	add := len(key) + len(value) + 2
	if sep {
		add++
	}
	propLen := len(rec.Properties) + add
	if propLen > message.MaxPropertiesBytes || size+add > math.MaxInt32 {
		return append(dst, raw...)
	}
	n := len(dst)
	dst = append(dst, raw...)
	if sep {
		dst = append(dst, message.PropertySeparator)
	}
	dst = append(dst, key...)
	dst = append(dst, message.NameValueSeparator)
	dst = append(dst, value...)
	dst = append(dst, message.PropertySeparator)
	rec2 := dst[n:]
	binary.BigEndian.PutUint32(rec2[message.OffTotalSize:], uint32(size+add))
	binary.BigEndian.PutUint16(rec2[size-len(rec.Properties)-2:], uint16(propLen))
	return dst
}

// anyHasProperty reports whether a record of raws may hold key in its properties: whether
// they hold key and the name-value separator anywhere, which a property named key writes (a
// record that does not decode counts as holding it; either way it goes the careful way).
func anyHasProperty(raws [][]byte, key string) bool {
	var rec message.Record
	var buf [32]byte
	named := append(append(buf[:0], key...), message.NameValueSeparator)
	for _, raw := range raws {
		if _, err := message.DecodeRecord(raw, &rec, false); err != nil || bytes.Contains(rec.Properties, named) {
			return true
		}
	}
	return false
}

// reencodeWithProperty appends rec, decoded from raw, re-encoded with key=value set in its
// properties (replacing the pieces named key), or raw unchanged when that does not fit.
func reencodeWithProperty(dst, raw []byte, rec *message.Record, key, value string) []byte {
	m := rec.Copy(string(rec.Topic), rec.QueueID, message.SetProperty(string(rec.Properties), key, value))
	m.BodyCRC = rec.BodyCRC
	size, err := message.RecordSize(m)
	if err != nil {
		return append(dst, raw...)
	}
	n := len(dst)
	dst = append(dst, make([]byte, size)...)
	message.EncodeRecord(dst[n:], size, (*message.Message)(m), rec.QueueOffset, rec.PhysicalOffset, rec.StoreTimestamp)
	return dst
}

// processPeek serves PEEK_MESSAGE: the messages from the group's pop offset, nothing hidden or
// moved.
func (s *Service) processPeek(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PeekMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if h.MaxMsgNums > maxPopNums || h.MaxMsgNums <= 0 {
		return refuse(remoting.InvalidParameter, "the broker[%s] peek message's num %d is not in [1, 32]", s.brokerName, h.MaxMsgNums), nil
	}
	tc, refused := s.readableTopic(ch, h.Topic, h.QueueID, true)
	if refused != nil {
		return refused, nil
	}
	if _, refused := s.consumableGroup(h.ConsumerGroup); refused != nil {
		return refused, nil
	}
	st := s.b.Store()
	var body []byte
	var n int
	var rest int64
	peekQueue := func(topic string, qid int32) {
		offset := s.popOffset(h.ConsumerGroup, topic, qid, protocol.PopInitModeMin)
		if want := int(h.MaxMsgNums) - n; want > 0 {
			res := st.GetMessage(h.ConsumerGroup, topic, qid, offset, want, 0, nil)
			for _, raw := range res.Messages {
				body = append(body, raw...)
			}
			n += len(res.Messages)
			offset = max(offset, res.NextBeginOffset)
			res.Release()
		}
		rest += max(st.MaxOffsetInQueue(topic, qid)-offset, 0)
	}
	// Every queue of a topic, from a random one, as PeekMessageProcessor reads them.
	randomQ := rand.IntN(100)
	peekTopic := func(topic string, queues, only int32) {
		if only >= 0 {
			peekQueue(topic, only)
			return
		}
		queues = s.b.Topics().QueueLoopBound(queues)
		for i := range queues {
			peekQueue(topic, (int32(randomQ)+i)%queues)
		}
	}
	// The group's pop retry topic too, first one time in five, else after the topic when it
	// left room: what a pop would hand out includes the revived messages.
	retryTopic := protocol.PopRetryTopicV1(h.Topic, h.ConsumerGroup)
	rt, hasRetry := s.b.Topics().Get(retryTopic)
	retryFirst := randomQ%5 == 0
	if hasRetry && retryFirst {
		peekTopic(retryTopic, rt.ReadQueueNums, -1)
	}
	peekTopic(h.Topic, tc.ReadQueueNums, h.QueueID)
	if hasRetry && !retryFirst && n < int(h.MaxMsgNums) {
		peekTopic(retryTopic, rt.ReadQueueNums, -1)
	}
	code, remark := int32(remoting.Success), "FOUND"
	if n == 0 {
		code, remark = remoting.PullNotFound, "NO_MESSAGE_IN_QUEUE"
	}
	resp := remoting.NewResponse(code, remark)
	resp.ExtFields = make(map[string]string, 4)
	(&protocol.PopMessageResponseHeader{RestNum: rest}).Encode(resp.ExtFields)
	resp.Body = body
	return resp, nil
}
