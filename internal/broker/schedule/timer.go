package schedule

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Names of the timer topic, its cursor's group and the RocketMQ 5 timer properties.
const (
	// timerGroup owns the timer service's cursor (ours: RocketMQ keeps a TimerCheckpoint file).
	timerGroup = "CID_RMQ_SYS_WHEEL_TIMER"

	PropertyTimerDelaySec   = message.PropertyTimerDelaySec
	PropertyTimerDelayMS    = message.PropertyTimerDelayMS
	PropertyTimerOutMS      = "TIMER_OUT_MS"
	PropertyTimerEnqueueMS  = "TIMER_ENQUEUE_MS"
	PropertyTimerDequeueMS  = "TIMER_DEQUEUE_MS"
	PropertyTimerDelUniqKey = "TIMER_DEL_UNIQKEY"
)

// Tuning of the timer service.
const (
	// timerScanBatch bounds the units indexed between two delivery passes, so a burst of new
	// timer messages does not hold back the due ones.
	timerScanBatch = 4096
	// timerRetryDelay pauses delivery after a put failed (the store is full or shutting down).
	timerRetryDelay = time.Second
	// timerDedupLookups is how many records with one UNIQ_KEY the restart check looks at.
	timerDedupLookups = 16
)

// timerIllegalRemark is RocketMQ's answer to WHEEL_TIMER_MSG_ILLEGAL.
const timerIllegalRemark = "timer message illegal, the delay time should not be bigger than the max delay %dms; " +
	"or if set del msg, the delay time should be bigger than the current time"

// timerDeliverMs returns when a message's timer properties ask it to be delivered, the
// relative ones counted from now. ok is false for a message without them; err is set when a
// value is not a number or overflows.
func timerDeliverMs(props string, now int64) (deliverMs int64, ok bool, err error) {
	var v string
	scale := int64(1)
	base := now
	if s, found := message.PropertyValueString(props, PropertyTimerDelaySec); found {
		v, scale = s, 1000
	} else if s, found := message.PropertyValueString(props, PropertyTimerDelayMS); found {
		v = s
	} else if s, found := message.PropertyValueString(props, message.PropertyTimerDeliverMS); found {
		v, base = s, 0
	} else {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, true, err
	}
	if n > (math.MaxInt64-base)/scale || n < (math.MinInt64+base)/scale {
		return 0, true, strconv.ErrRange
	}
	return base + n*scale, true, nil
}

// toTimerTopic moves a message with a future timer time to the timer topic. It returns the
// answer refusing the send, or nil when m was moved or is not a timer message. Callers pass
// only non-transactional and committed messages without a DELAY level, as RocketMQ's
// HookUtils.handleScheduleMessage does.
func (s *timerService) toTimerTopic(m *storage.Message) *remoting.Command {
	if m.Topic == names.TopicTimer {
		return nil
	}
	if _, rolled := message.PropertyValueString(m.Properties, PropertyTimerOutMS); rolled {
		return nil // delivered by a timer already (RocketMQ's double check)
	}
	now := time.Now().UnixMilli()
	deliverMs, ok, err := timerDeliverMs(m.Properties, now)
	if !ok {
		return nil
	}
	illegal := broker.SendResponse(remoting.MessageIllegal, fmt.Sprintf(timerIllegalRemark, s.maxDelay.Milliseconds()))
	if err != nil {
		return illegal
	}
	_, del := message.PropertyValueString(m.Properties, PropertyTimerDelUniqKey)
	if deliverMs <= now {
		if del {
			return illegal
		}
		return nil // due already: stored in its topic now, as RocketMQ does
	}
	if deliverMs-now > s.maxDelay.Milliseconds() {
		return illegal
	}
	props := message.SetProperty(m.Properties, PropertyTimerOutMS, strconv.FormatInt(deliverMs, 10))
	props = message.SetProperty(props, message.PropertyRealTopic, m.Topic)
	m.Properties = message.SetProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic = names.TopicTimer
	m.QueueID = 0
	s.b.Topics().AddSystem(names.TopicTimer, 1)
	return nil
}

// timerEntry is a pending timer message.
type timerEntry struct {
	deliverMs, queueOffset, phyOffset int64
}

// slotHeap is a min-heap of slot numbers.
type slotHeap []int64

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h slotHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// offsetWindow finds the lowest queue offset not done when offsets finish out of order: one
// bit per offset from the lowest undone one to the highest marked.
type offsetWindow struct {
	base  int64 // offset of words[0]'s bit 0, a multiple of 64
	next  int64 // lowest offset not done
	words []uint64
}

func newOffsetWindow(start int64) offsetWindow { return offsetWindow{base: start &^ 63, next: start} }

// done marks off finished and moves next past every finished offset.
func (w *offsetWindow) done(off int64) {
	if off < w.next {
		return
	}
	i := off - w.base
	for int64(len(w.words)) <= i/64 {
		w.words = append(w.words, 0)
	}
	w.words[i/64] |= 1 << (i % 64)
	for {
		j := w.next - w.base
		if j/64 >= int64(len(w.words)) || w.words[j/64]&(1<<(j%64)) == 0 {
			break
		}
		w.next++
	}
	if drop := (w.next - w.base) / 64; drop > 0 {
		w.words = w.words[drop:]
		w.base += drop * 64
	}
}

// timerService delivers timer messages. Everything but pending is owned by run.
type timerService struct {
	b      *broker.Broker
	log    zerolog.Logger
	slotMs int64 // slot width
	poll   time.Duration

	slots map[int64][]timerEntry // slot -> entries; slot s is due at s*slotMs
	// deleted are the keys of messages deletion markers named (TimerDeleteKey); deleteOrder
	// lists them by the slot of their marker, after which they are forgotten.
	deleted     map[string]struct{}
	deleteOrder map[int64][]string
	slotOrder   slotHeap
	scanned     int64 // next timer queue offset to index
	window      offsetWindow
	committed   int64
	// checkBelow: offsets below it were stored before this start and may have been delivered.
	checkBelow int64
	startMs    int64

	maxDelay time.Duration

	pending atomic.Int64
	// cursor is committed, for the store's retention (retentionFloor), which reads it from
	// the store's goroutine.
	cursor atomic.Int64
}

func newTimerService(b *broker.Broker) *timerService {
	o := b.Options()
	st := b.Store()
	s := &timerService{b: b,
		log:     b.Logger().With().Str("component", "timer").Str("broker", o.Broker.Name).Logger(),
		slotMs:  max(o.Timers.Precision.Milliseconds()/2, 1),
		slots:   map[int64][]timerEntry{},
		deleted: map[string]struct{}{}, deleteOrder: map[int64][]string{},
		maxDelay: o.Timers.MaxDelay,
	}
	s.poll = max(o.Timers.Precision/4, time.Millisecond)
	cursor := max(b.Offsets().Query(timerGroup, names.TopicTimer, 0), st.MinOffsetInQueue(names.TopicTimer, 0))
	s.scanned, s.committed, s.window = cursor, cursor, newOffsetWindow(cursor)
	s.cursor.Store(cursor)
	s.checkBelow = st.MaxOffsetInQueue(names.TopicTimer, 0)
	s.startMs = time.Now().UnixMilli()
	return s
}

// run indexes and delivers timer messages until ctx ends.
func (s *timerService) run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		wait := s.poll
		more := s.scan()
		if err := s.deliverDue(ctx, time.Now().UnixMilli()); err != nil {
			s.log.Warn().Err(err).Msg("timer delivery failed, retrying")
			wait = timerRetryDelay
		} else if more {
			wait = 0
		} else if len(s.slotOrder) > 0 {
			wait = min(wait, time.Until(time.UnixMilli(s.slotOrder[0]*s.slotMs)))
		}
		s.commitCursor()
		timer.Reset(max(wait, 0))
	}
}

// scan indexes up to timerScanBatch new units of the timer queue and reports whether more wait.
func (s *timerService) scan() bool {
	st := s.b.Store()
	if minOff := st.MinOffsetInQueue(names.TopicTimer, 0); s.scanned < minOff {
		// Retention deleted messages never delivered: nothing can bring them back.
		s.log.Error().Int64("offset", s.scanned).Int64("min_offset", minOff).Msg("timer messages deleted before delivery")
		for off := s.scanned; off < minOff; off++ {
			s.window.done(off)
		}
		s.scanned = minOff
	}
	end := st.MaxOffsetInQueue(names.TopicTimer, 0)
	if s.scanned >= end {
		return false
	}
	units, err := st.ConsumeQueueUnits(names.TopicTimer, 0, s.scanned, timerScanBatch)
	if err != nil {
		s.log.Warn().Err(err).Int64("offset", s.scanned).Msg("timer queue unreadable")
		return false
	}
	for _, u := range units {
		off := s.scanned
		s.scanned++
		deliverMs, delKey, err := s.deliverTime(u)
		if err != nil {
			s.log.Error().Err(err).Int64("offset", off).Msg("timer message dropped")
			s.window.done(off)
			continue
		}
		slot := (deliverMs + s.slotMs - 1) / s.slotMs
		if _, ok := s.slots[slot]; !ok {
			heap.Push(&s.slotOrder, slot)
			s.slots[slot] = nil
		}
		if delKey != "" {
			s.markDeleted(delKey, slot)
			s.window.done(off)
			continue
		}
		s.slots[slot] = append(s.slots[slot], timerEntry{deliverMs: deliverMs, queueOffset: off, phyOffset: u.PhyOffset})
		s.pending.Add(1)
	}
	return s.scanned < end
}

// deliverTime reads a timer record's TIMER_OUT_MS and, for a deletion marker, the key of the
// message it deletes (TIMER_DEL_UNIQKEY, "<real topic>+<UNIQ_KEY>").
func (s *timerService) deliverTime(u storage.CQUnit) (int64, string, error) {
	if u.Size == math.MaxInt32 {
		return 0, "", fmt.Errorf("blank unit")
	}
	var rec message.Record
	if err := s.b.Messages().Read(u.PhyOffset, &rec); err != nil {
		return 0, "", err
	}
	v, ok := message.PropertyValue(rec.Properties, PropertyTimerOutMS)
	if !ok {
		return 0, "", fmt.Errorf("no %s", PropertyTimerOutMS)
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	del, _ := message.PropertyValue(rec.Properties, PropertyTimerDelUniqKey)
	return ms, string(del), err
}

// TimerDeleteKey is the key a deletion marker names the timer message it deletes by
// (TimerMessageStore.buildDeleteKey).
func TimerDeleteKey(realTopic, uniqKey string) string { return realTopic + "+" + uniqKey }

// markDeleted records a deletion marker due in slot: the message it names is not delivered if
// its slot comes no later than the slot after the marker's (a recall handle's time is the
// message's plus 1 ms, which may fall in the next slot). Markers are forgotten once that slot
// is done; on a restart the scan from the cursor finds them again, since the cursor never
// passes a message not yet delivered and a marker is stored after its message.
func (s *timerService) markDeleted(key string, slot int64) {
	if _, ok := s.deleted[key]; !ok {
		s.deleteOrder[slot] = append(s.deleteOrder[slot], key)
	}
	s.deleted[key] = struct{}{}
}

// forgetDeleted drops the markers due in slot once it is done.
func (s *timerService) forgetDeleted(slot int64) {
	for _, k := range s.deleteOrder[slot] {
		delete(s.deleted, k)
	}
	delete(s.deleteOrder, slot)
}

// deliverDue stores every message of the slots due at nowMs in its real topic. On a failed put
// the message and the rest of its slot stay pending.
func (s *timerService) deliverDue(ctx context.Context, nowMs int64) error {
	for len(s.slotOrder) > 0 && s.slotOrder[0]*s.slotMs <= nowMs && ctx.Err() == nil {
		slot := s.slotOrder[0]
		entries := s.slots[slot]
		for i, e := range entries {
			if err := s.deliver(e); err != nil {
				s.slots[slot] = entries[i:]
				return err
			}
			s.window.done(e.queueOffset)
			s.pending.Add(-1)
		}
		delete(s.slots, slot)
		heap.Pop(&s.slotOrder)
		s.forgetDeleted(slot)
	}
	return nil
}

// deliver stores the real message of one timer entry. A record that cannot be read or names
// no destination, or that the store refuses for good, is dropped with an error log (RocketMQ's
// PUT_NO_RETRY); a put that may succeed later is returned.
func (s *timerService) deliver(e timerEntry) error {
	var rec message.Record
	if err := s.b.Messages().Read(e.phyOffset, &rec); err != nil {
		s.log.Error().Err(err).Int64("offset", e.queueOffset).Msg("unreadable timer message dropped")
		return nil
	}
	raw := string(rec.Properties)
	topic, _ := message.PropertyValueString(raw, message.PropertyRealTopic)
	qid, err := strconv.ParseInt(propertyOrEmpty(raw, message.PropertyRealQueueID), 10, 32)
	if topic == "" || err != nil || qid < 0 {
		s.log.Error().Int64("offset", e.queueOffset).Msg("timer message without REAL_TOPIC/REAL_QID dropped")
		return nil
	}
	if len(s.deleted) > 0 {
		if _, gone := s.deleted[TimerDeleteKey(topic, propertyOrEmpty(raw, message.PropertyUniqKey))]; gone {
			s.log.Debug().Str("topic", topic).Int64("offset", e.queueOffset).Msg("timer message deleted (recalled), not delivered")
			return nil
		}
	}
	if e.queueOffset < s.checkBelow && e.deliverMs <= s.startMs && s.deliveredBefore(topic, raw) {
		return nil
	}
	raw = message.RemoveProperty(raw, message.PropertyRealTopic)
	raw = message.RemoveProperty(raw, message.PropertyRealQueueID)
	raw = message.SetProperty(raw, PropertyTimerEnqueueMS, strconv.FormatInt(rec.StoreTimestamp, 10))
	raw = message.SetProperty(raw, PropertyTimerDequeueMS, strconv.FormatInt(time.Now().UnixMilli(), 10))
	m := (*storage.Message)(rec.Copy(topic, int32(qid), raw))
	m.StoreHost = s.b.Messages().StoreHost()
	r, err := s.b.Store().PutMessage(m)
	switch {
	case broker.PutStored(r.Status):
		s.b.Messages().CountPut(m.Topic, 1, r.WroteBytes)
		return nil
	case r.Status == storage.MessageIllegal || r.Status == storage.PropertiesSizeExceeded:
		s.log.Error().Err(err).Str("status", r.Status.String()).Int64("offset", e.queueOffset).Msg("timer message refused by the store, dropped")
		return nil
	}
	return fmt.Errorf("put to %s/%d: %s: %w", topic, qid, r.Status, err)
}

func propertyOrEmpty(props, key string) string {
	v, _ := message.PropertyValueString(props, key)
	return v
}

// deliveredBefore reports whether the timer message with properties props was stored in its
// real topic already, by a life of the broker that ended before the cursor moved past it.
func (s *timerService) deliveredBefore(topic, props string) bool {
	uniq := propertyOrEmpty(props, message.PropertyUniqKey)
	out := propertyOrEmpty(props, PropertyTimerOutMS)
	if uniq == "" {
		return false
	}
	res, err := s.b.Store().QueryMessage(topic, uniq, timerDedupLookups, 0, math.MaxInt64)
	if err != nil {
		return false
	}
	for _, raw := range res.Messages {
		var c message.Record
		if _, err := message.DecodeRecord(raw, &c, false); err != nil {
			continue
		}
		cp := string(c.Properties)
		if _, dequeued := message.PropertyValueString(cp, PropertyTimerDequeueMS); dequeued &&
			propertyOrEmpty(cp, message.PropertyUniqKey) == uniq && propertyOrEmpty(cp, PropertyTimerOutMS) == out {
			return true
		}
	}
	return false
}

// commitCursor records the lowest undelivered offset as the timer group's consumer offset; the
// metadata writer persists it.
func (s *timerService) commitCursor() {
	if next := s.window.next; next != s.committed {
		s.b.Offsets().Commit(timerGroup, names.TopicTimer, 0, next)
		s.committed = next
		s.cursor.Store(next)
	}
}

// retentionFloor is the store's RetentionFloor: the CommitLog offset of the timer queue's
// entry at the cursor, the oldest timer message not yet delivered, or MaxInt64 when none is
// pending. A pending timer message may be due after FileReservedTime (TimerMaxDelay defaults
// to the same 72 h), so its segment must outlive the retention period. RocketMQ 5 re-puts long
// timers instead (TIMER_ROLL_TIMES).
func (s *timerService) retentionFloor() int64 {
	st := s.b.Store()
	cursor := s.cursor.Load()
	if cursor >= st.MaxOffsetInQueue(names.TopicTimer, 0) {
		return math.MaxInt64
	}
	off, err := st.GetCommitLogOffsetInQueue(names.TopicTimer, 0, cursor)
	if err != nil {
		return math.MaxInt64
	}
	return off
}
