package pop

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
)

// FIFO pops (order=true), as RocketMQ 5's ConsumerOrderInfoManager: a queue hands out one batch
// at a time; the next batch waits until every message of this one is acked or its invisible
// time passed, and then starts at the first message not acked, which comes again with its
// consumed count raised. A FIFO pop writes no checkpoint and moves no offset: each ack moves
// the group's consumer offset to the first message of the batch not yet acked. The table is
// consumerOrderInfo.json, written before a pop or ack is answered, so a restart neither hands
// out a hidden batch nor forgets an ack.

// orderReviveQid is the reviveQid of a FIFO pop's receipt handles (KeyBuilder
// POP_ORDER_REVIVE_QUEUE).
const orderReviveQid = 999

// orderReviveQidField is orderReviveQid as a receipt handle writes it.
const orderReviveQidField = "999"

// orderFile is ConsumerOrderInfoManager's file in the store's config directory.
const orderFile = "consumerOrderInfo.json"

// orderInfo is one queue's batch (OrderInfo's JSON names).
type orderInfo struct {
	PopTime       int64           `json:"popTime"`
	InvisibleTime int64           `json:"i"`
	Offsets       []int64         `json:"o"`            // first, then differences from it
	NextVisible   map[int64]int64 `json:"ot,omitempty"` // offset -> ms, after a change
	Consumed      map[int64]int   `json:"oc,omitempty"` // offset -> times handed out before
	LastConsume   int64           `json:"l"`
	CommitBits    int64           `json:"cm"`
	AttemptID     string          `json:"a,omitempty"`
}

// orderTable is consumerOrderInfo.json: "topic@group" -> queue id -> batch.
type orderTable struct {
	Table map[string]map[int32]*orderInfo `json:"table"`
}

func (o *orderInfo) offset(i int) int64 {
	if i == 0 {
		return o.Offsets[0]
	}
	return o.Offsets[0] + o.Offsets[i]
}

func (o *orderInfo) acked(i int) bool { return o.CommitBits&(1<<i) != 0 }

// next is the offset the group's consumer offset moves to: the first message not acked, or
// past the batch.
func (o *orderInfo) next() int64 {
	for i := range o.Offsets {
		if !o.acked(i) {
			return o.offset(i)
		}
	}
	return o.offset(len(o.Offsets)-1) + 1
}

// blocks reports whether the batch still hides the queue at now from a pop with attemptID (a
// retry of the same attempt gets the batch again).
func (o *orderInfo) blocks(attemptID string, now int64) bool {
	if len(o.Offsets) == 0 || (o.AttemptID != "" && o.AttemptID == attemptID) {
		return false
	}
	for i := range o.Offsets {
		if o.acked(i) {
			continue
		}
		visible := o.PopTime + o.InvisibleTime
		if t, ok := o.NextVisible[o.offset(i)]; ok {
			visible = t
		}
		if now < visible {
			return true
		}
	}
	return false
}

// orders is the FIFO table and its file; mu guards both.
type orders struct {
	mu        sync.Mutex
	path      string
	t         orderTable
	lastClean int64 // unix ms of the last clean
}

// orderCleanEvery is how often saving the table also cleans it: RocketMQ cleans it on every
// persist, which runs every 10 s.
const orderCleanEvery = 10_000

// orderIdleSpan is how long a queue's FIFO state stays after its last pop
// (ConsumerOrderInfoManager's CLEAN_SPAN_FROM_LAST, 24 h).
const orderIdleSpan = 24 * 3600 * 1000

func orderKey(topic, group string) string { return topic + "@" + group }

// loadOrders reads consumerOrderInfo.json and raises each group's consumer offset to what its
// acks reached (the offset table is flushed on a period; the file before every answer).
func (s *Service) loadOrders() error {
	o := &orders{path: s.b.Store().ConfigPath(orderFile), t: orderTable{Table: map[string]map[int32]*orderInfo{}}}
	s.orders = o
	if _, err := storage.ReadJSONFile(o.path, &o.t); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pop: read %s: %w", o.path, err)
	}
	if o.t.Table == nil {
		o.t.Table = map[string]map[int32]*orderInfo{}
	}
	for key, qs := range o.t.Table {
		i := strings.LastIndexByte(key, '@')
		if i < 0 {
			delete(o.t.Table, key)
			continue
		}
		topic, group := key[:i], key[i+1:]
		for qid, info := range qs {
			if len(info.Offsets) == 0 || len(info.Offsets) > maxPopNums {
				delete(qs, qid)
				continue
			}
			if next := info.next(); s.b.Offsets().Query(group, topic, qid) < next {
				s.b.Offsets().Commit(group, topic, qid, next)
			}
		}
	}
	s.cleanOrders(o, nowMillis()) // as ConsumerOrderInfoManager.decode does
	return nil
}

// saveOrders writes the table, cleaned first when the last clean is orderCleanEvery old; the
// caller holds o.mu.
func (s *Service) saveOrders(o *orders) error {
	if now := nowMillis(); now-o.lastClean >= orderCleanEvery {
		s.cleanOrders(o, now)
	}
	return storage.WriteJSONFile(o.path, &o.t)
}

// cleanOrders drops what ConsumerOrderInfoManager.autoClean drops: the state of a topic or a
// group that no longer exists, of a queue past the topic's read queues, and of a queue not
// popped for orderIdleSpan. The caller holds o.mu (or has o to itself, at load).
func (s *Service) cleanOrders(o *orders, now int64) {
	o.lastClean = now
	for key, qs := range o.t.Table {
		i := strings.LastIndexByte(key, '@')
		if i < 0 {
			delete(o.t.Table, key)
			continue
		}
		topic, group := key[:i], key[i+1:]
		tc, ok := s.b.Topics().Get(topic)
		if _, exists := s.b.Groups().Get(group); !ok || !exists || len(qs) == 0 {
			delete(o.t.Table, key)
			continue
		}
		for qid, info := range qs {
			if qid >= tc.ReadQueueNums || now-info.LastConsume > orderIdleSpan {
				delete(qs, qid)
			}
		}
		if len(qs) == 0 {
			delete(o.t.Table, key)
		}
	}
}

// popOrderQueue pops one batch of a queue for a FIFO pop, unless the queue's last batch still
// hides it. The caller holds the queue's lock.
func (s *Service) popOrderQueue(r *popRequest, topic string, qid int32, out *popOut) {
	h := &r.h
	st := s.b.Store()
	o := s.orders
	key := orderKey(topic, h.ConsumerGroup)
	o.mu.Lock()
	prev := o.t.Table[key][qid]
	blocked := prev != nil && prev.blocks(h.AttemptID, out.popTime)
	o.mu.Unlock()
	offset := s.popOffset(h.ConsumerGroup, topic, qid, h.InitMode)
	if blocked || int(h.MaxMsgNums) <= out.n {
		out.rest += max(st.MaxOffsetInQueue(topic, qid)-offset, 0)
		return
	}
	res := st.GetMessage(h.ConsumerGroup, topic, qid, offset, int(h.MaxMsgNums)-out.n, 0, r.sub.Filter())
	defer res.Release()
	out.rest += max(res.MaxOffset-res.NextBeginOffset, 0)
	if res.Status != storage.Found || len(res.Messages) == 0 {
		if res.NextBeginOffset != offset {
			s.b.Offsets().Commit(h.ConsumerGroup, topic, qid, res.NextBeginOffset)
		}
		return
	}
	info := &orderInfo{PopTime: out.popTime, InvisibleTime: h.InvisibleTime, LastConsume: out.popTime, AttemptID: h.AttemptID,
		Offsets: make([]int64, len(res.QueueOffsets))}
	for i, off := range res.QueueOffsets {
		info.Offsets[i] = off - res.QueueOffsets[0]
	}
	info.Offsets[0] = res.QueueOffsets[0]
	info.Consumed = consumedCounts(prev, info)
	o.mu.Lock()
	qs := o.t.Table[key]
	if qs == nil {
		qs = map[int32]*orderInfo{}
		o.t.Table[key] = qs
	}
	qs[qid] = info
	err := s.saveOrders(o)
	o.mu.Unlock()
	if err != nil {
		out.err = err
		s.log.Warn().Err(err).Str("topic", topic).Int32("queue", qid).Msg("FIFO pop not recorded")
		return
	}
	marker := protocol.PopRetryMarker(topic)
	least := -1
	buf := make([]byte, 0, res.TotalBytes+len(res.Messages)*popCKRoom)
	for i, raw := range res.Messages {
		e := protocol.ExtraInfo{CkQueueOffset: offset, PopTime: out.popTime, InvisibleTime: h.InvisibleTime,
			ReviveQid: orderReviveQid, Retry: marker, BrokerName: s.brokerName, QueueID: qid, QueueOffset: res.QueueOffsets[i]}
		buf = appendWithProperty(buf, raw, protocol.PropertyPopCK, e.String())
		n := info.Consumed[res.QueueOffsets[i]]
		out.orderInfo = protocol.AppendQueueOffsetCount(out.orderInfo, topic, qid, res.QueueOffsets[i], n)
		if least < 0 || n < least {
			least = n
		}
	}
	out.addEncoded(buf)
	// The old clients read one count per queue (ExtraInfoUtil.buildQueueIdOrderCountInfo).
	out.orderInfo = protocol.AppendOffsetInfo(out.orderInfo, topic, qid, strconv.Itoa(least))
	out.n += len(res.Messages)
	out.startInfo = protocol.AppendOffsetInfo(out.startInfo, topic, qid, strconv.FormatInt(offset, 10))
	offs := make([]string, len(res.QueueOffsets))
	for i, off := range res.QueueOffsets {
		offs[i] = strconv.FormatInt(off, 10)
	}
	out.msgInfo = protocol.AppendOffsetInfo(out.msgInfo, topic, qid, strings.Join(offs, ","))
}

// consumedCounts carries the previous batch's counts over to the messages handed out again
// (OrderInfo.mergeOffsetConsumedCount); a retry of the same attempt keeps them as they were.
func consumedCounts(prev, next *orderInfo) map[int64]int {
	if prev == nil {
		return nil
	}
	if prev.AttemptID != "" && prev.AttemptID == next.AttemptID {
		return prev.Consumed
	}
	before := map[int64]bool{}
	for i := range prev.Offsets {
		before[prev.offset(i)] = true
	}
	out := map[int64]int{}
	for i := range next.Offsets {
		if off := next.offset(i); before[off] {
			out[off] = prev.Consumed[off] + 1
		}
	}
	return out
}

// errOrderHandle is an ack or change of a FIFO handle that names no batch of the queue.
var errOrderHandle = errors.New("the receipt handle names no FIFO batch of this queue awaiting ack")

// ackOrder acks a FIFO handle's message and moves the group's consumer offset to the first
// message of the batch not acked (ConsumerOrderInfoManager.commitAndNext).
func (s *Service) ackOrder(t handleTarget) error {
	o := s.orders
	o.mu.Lock()
	defer o.mu.Unlock()
	info := o.t.Table[orderKey(t.key.topic, t.key.group)][t.key.queueID]
	if info == nil || info.PopTime != t.key.popTime {
		return errOrderHandle
	}
	i := -1
	for j := range info.Offsets {
		if info.offset(j) == t.offset {
			i = j
		}
	}
	if i < 0 {
		return errOrderHandle
	}
	if info.acked(i) {
		return nil
	}
	info.CommitBits |= 1 << i
	if err := s.saveOrders(o); err != nil {
		info.CommitBits &^= 1 << i
		return err
	}
	s.b.Offsets().Commit(t.key.group, t.key.topic, t.key.queueID, info.next())
	return nil
}

// changeOrder moves a FIFO message's deadline (ConsumerOrderInfoManager.updateNextVisibleTime).
func (s *Service) changeOrder(t handleTarget, visibleAt int64) error {
	o := s.orders
	o.mu.Lock()
	defer o.mu.Unlock()
	info := o.t.Table[orderKey(t.key.topic, t.key.group)][t.key.queueID]
	if info == nil || info.PopTime != t.key.popTime {
		return errOrderHandle
	}
	for j := range info.Offsets {
		if info.offset(j) == t.offset && !info.acked(j) {
			if info.NextVisible == nil {
				info.NextVisible = map[int64]int64{}
			}
			info.NextVisible[t.offset] = visibleAt
			return s.saveOrders(o)
		}
	}
	return errOrderHandle
}

// orderOffsets are the offsets of the FIFO batch a handle's key names, or nil.
func (s *Service) orderOffsets(k ckKey) []int64 {
	o := s.orders
	o.mu.Lock()
	defer o.mu.Unlock()
	info := o.t.Table[orderKey(k.topic, k.group)][k.queueID]
	if info == nil || info.PopTime != k.popTime {
		return nil
	}
	out := make([]int64, len(info.Offsets))
	for i := range info.Offsets {
		out[i] = info.offset(i)
	}
	return out
}
