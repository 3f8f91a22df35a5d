package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"maps"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Delayed delivery (RocketMQ ScheduleMessageService).
//
// A message with delay level L waits in SCHEDULE_TOPIC_XXXX queue L-1; its destination is in
// its REAL_TOPIC and REAL_QID properties. Within one queue every message has the same delay, so
// the queue is in delivery order. The service keeps, per level, a cursor: the queue offset of
// the next message to deliver. One goroutine walks each level from its cursor, and for each
// message whose time has come (store time + the level's delay) stores the real message — same
// body, flag, hosts, times and properties, without DELAY — in its real topic and queue, then
// advances the cursor. It stops at the first message not yet due and sleeps until the earliest
// due time among the levels, at most scheduleIdlePoll (new messages are noticed by polling, or
// at once through notify).
//
// The metadata writer saves the cursors to <store>/config/delayOffset.json every
// FlushConsumerOffsetInterval when they moved, and when the broker stops (persist.go). A cursor
// only moves past a message once its real copy is stored, so after a crash the service resumes
// from the last saved cursor and may deliver a message twice, never zero times (at least once,
// as RocketMQ).

// Tuning of the schedule service.
const (
	// scheduleIdlePoll bounds the sleep when no message is waiting, so new delayed messages are
	// found within this time even if nobody calls notify (RocketMQ: DELAY_FOR_A_WHILE).
	scheduleIdlePoll = 100 * time.Millisecond
	// scheduleRetryDelay is the pause of a level whose delivery failed to store (RocketMQ:
	// DELAY_FOR_A_PERIOD is 10 s; we retry sooner since a put fails only transiently).
	scheduleRetryDelay = time.Second
	// scheduleBatch is how many units one read of a level looks at.
	scheduleBatch = 32
)

// scheduleService delivers delayed messages. Its cursors are guarded by mu; run is the only
// goroutine that advances them (a slave's sync replaces them while run is not running).
type scheduleService struct {
	b      *Broker
	log    zerolog.Logger
	path   string
	levels []time.Duration
	wake   chan struct{}

	mu struct {
		sync.Mutex
		offsets map[int32]int64 // level -> next queue offset to deliver
	}
}

func newScheduleService(b *Broker) *scheduleService {
	s := &scheduleService{b: b,
		log:  b.opts.Logger.With().Str("component", "schedule").Str("broker", b.opts.BrokerName).Logger(),
		path: b.configPath("delayOffset.json"), levels: b.opts.DelayLevels, wake: make(chan struct{}, 1)}
	s.mu.offsets = map[int32]int64{}
	var w protocol.DelayOffsetSerializeWrapper
	fromBak, err := storage.ReadJSONFile(s.path, &w)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		// A Java broker's file has bare integer keys ({"offsetTable":{1:0}}), which strict
		// JSON refuses.
		if raw, rerr := os.ReadFile(s.path); rerr == nil {
			if jw, jerr := protocol.DecodeDelayOffsetSerializeWrapper(raw); jerr == nil {
				maps.Copy(s.mu.offsets, jw.OffsetTable)
				break
			}
		}
		// Delivering from 0 again repeats the delayed messages still in the queues; losing
		// them would be worse.
		s.log.Error().Err(err).Str("file", s.path).Msg("delay offsets unreadable, starting from the queue heads")
	default:
		if fromBak {
			s.log.Warn().Str("file", s.path).Msg("delay offsets loaded from backup")
		}
		maps.Copy(s.mu.offsets, w.OffsetTable)
	}
	return s
}

// notify wakes the service to look at the schedule queues now. It never blocks.
func (s *scheduleService) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// scheduleArrived tells the schedule service a message was stored in SCHEDULE_TOPIC_XXXX, so it
// recomputes its next wake-up without waiting for its idle poll. Optional: a caller that does
// not call it only delays a message's discovery by up to scheduleIdlePoll.
func (b *Broker) scheduleArrived() { b.retry.sched.notify() }

func (s *scheduleService) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.offsets[int32(level)]
}

func (s *scheduleService) setOffset(level int, off int64) {
	s.mu.Lock()
	moved := s.mu.offsets[int32(level)] != off
	s.mu.offsets[int32(level)] = off
	s.mu.Unlock()
	if moved {
		s.b.meta.markDirty(metaDelay)
	}
}

// snapshot returns the cursors of every configured level (GET_ALL_DELAY_OFFSET,
// delayOffset.json).
func (s *scheduleService) snapshot() protocol.DelayOffsetSerializeWrapper {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := make(map[int32]int64, len(s.levels))
	for l := 1; l <= len(s.levels); l++ {
		t[int32(l)] = s.mu.offsets[int32(l)]
	}
	for l, off := range s.mu.offsets { // levels beyond the configured ones are kept, as Java does
		t[l] = off
	}
	return protocol.DelayOffsetSerializeWrapper{OffsetTable: t}
}

// replace installs cursors synced from a master (a slave's copy of GET_ALL_DELAY_OFFSET) and
// has the metadata writer save them.
func (s *scheduleService) replace(w protocol.DelayOffsetSerializeWrapper) error {
	s.mu.Lock()
	s.mu.offsets = maps.Clone(w.OffsetTable)
	if s.mu.offsets == nil {
		s.mu.offsets = map[int32]int64{}
	}
	s.mu.Unlock()
	s.b.meta.changed(metaDelay)
	return nil
}

// updateDelayOffsets replaces the schedule cursors with a master's (slave sync through
// GET_ALL_DELAY_OFFSET); the metadata writer persists them.
func (b *Broker) updateDelayOffsets(w protocol.DelayOffsetSerializeWrapper) error {
	return b.retry.sched.replace(w)
}

// persist writes delayOffset.json; only the metadata writer and Close call it.
func (s *scheduleService) persist() error {
	return storage.WriteJSONFile(s.path, s.snapshot())
}

// run delivers due messages until ctx ends. The metadata writer persists the cursors.
func (s *scheduleService) run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	retryAt := make([]time.Time, len(s.levels)+1)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.wake:
		}
		now := time.Now()
		wait := scheduleIdlePoll
		for level := 1; level <= len(s.levels) && ctx.Err() == nil; level++ {
			if now.Before(retryAt[level]) {
				wait = min(wait, retryAt[level].Sub(now))
				continue
			}
			due, err := s.deliverLevel(ctx, level, now)
			if err != nil {
				s.log.Warn().Err(err).Int("delay_level", level).Msg("delayed delivery failed, retrying")
				retryAt[level] = now.Add(scheduleRetryDelay)
				wait = min(wait, scheduleRetryDelay)
				continue
			}
			if due > 0 {
				wait = min(wait, time.Until(time.UnixMilli(due)))
			}
		}
		timer.Reset(max(wait, time.Millisecond))
	}
}

// deliverLevel delivers the level's due messages in order. The ConsumeQueue tag code of a
// scheduled message is its delivery time (the store computes it from the same DelayLevels), so
// only due messages are read from the CommitLog. It returns the delivery time (Unix ms) of the
// first message not yet due, 0 when the queue is exhausted, or the error of a read or put that
// failed (the cursor then stays on that message).
func (s *scheduleService) deliverLevel(ctx context.Context, level int, now time.Time) (int64, error) {
	qid := int32(level - 1)
	delay := s.levels[level-1].Milliseconds()
	nowMs := now.UnixMilli()
	off := s.offset(level)
	for ctx.Err() == nil {
		if off >= s.b.store.MaxOffsetInQueue(names.TopicSchedule, qid) {
			return 0, nil
		}
		if minOff := s.b.store.MinOffsetInQueue(names.TopicSchedule, qid); off < minOff {
			// Retention deleted what the cursor points at (RocketMQ moves to the min offset too).
			s.log.Warn().Int("delay_level", level).Int64("offset", off).Int64("min_offset", minOff).
				Msg("schedule cursor behind the queue, moved to its head")
			off = minOff
			s.setOffset(level, off)
			continue
		}
		units, err := s.b.store.ConsumeQueueUnits(names.TopicSchedule, qid, off, scheduleBatch)
		if err != nil {
			return 0, fmt.Errorf("read schedule queue %d at %d: %w", qid, off, err)
		}
		// The clock-step test needs a time taken after the units were stored: one stored since
		// now was taken is due up to a few ms past now+delay without the clock going back.
		readMs := time.Now().UnixMilli()
		for _, u := range units {
			if u.Size == math.MaxInt32 { // blank unit of a rebuilt queue's prefix
				off++
				s.setOffset(level, off)
				continue
			}
			due := u.TagsCode
			if due > readMs+delay {
				due = nowMs // stored "in the future" (clock stepped back): deliver now, as RocketMQ
			}
			if due > nowMs {
				return due, nil
			}
			if err := s.deliver(level, off, u.PhyOffset); err != nil {
				return 0, err
			}
			off++
			s.setOffset(level, off)
		}
	}
	return 0, nil
}

// deliver stores the real message of the scheduled record at phyOffset. A record that cannot
// be read or names no destination is dropped with an error log, as RocketMQ drops it; only a
// failed put is returned (and retried).
func (s *scheduleService) deliver(level int, off, phyOffset int64) error {
	raw, err := s.b.store.LookMessageByOffset(phyOffset)
	if err != nil {
		s.log.Error().Err(err).Int("delay_level", level).Int64("offset", off).Int64("phy_offset", phyOffset).
			Msg("unreadable delayed message dropped")
		return nil
	}
	var rec message.Record
	if _, err := message.DecodeRecord(raw, &rec, false); err != nil {
		s.log.Error().Err(err).Int("delay_level", level).Int64("offset", off).Msg("undecodable delayed message dropped")
		return nil
	}
	m, err := s.realMessage(&rec)
	if err != nil {
		s.log.Error().Err(err).Int("delay_level", level).Int64("offset", off).Msg("delayed message dropped")
		return nil
	}
	res, err := s.b.store.PutMessage(m)
	if err != nil && !storedAnyway(res.Status) {
		return fmt.Errorf("put to %s/%d: %s: %w", m.Topic, m.QueueID, res.Status, err)
	}
	s.b.countPut(m.Topic, 1, res.WroteBytes)
	return nil
}

// errNoRealTopic marks a scheduled message that does not say where it goes.
var errNoRealTopic = errors.New("broker: scheduled message without REAL_TOPIC/REAL_QID")

// realMessage builds the message a delayed record is delivered as: its REAL_TOPIC and REAL_QID,
// every property but DELAY (REAL_TOPIC and REAL_QID stay, as RocketMQ leaves them), the
// record's body, flag, sysFlag, born time and host, reconsume times. Its slices point into rec.
func (s *scheduleService) realMessage(rec *message.Record) (*storage.Message, error) {
	props := message.UnmarshalProperties(rec.Properties)
	topic := props[message.PropertyRealTopic]
	qid, err := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, errNoRealTopic
	}
	if topic == names.TopicTransHalf {
		return nil, fmt.Errorf("broker: delayed message bound for %s", topic)
	}
	delete(props, message.PropertyDelayTimeLevel)
	return &storage.Message{
		Topic:                     topic,
		QueueID:                   int32(qid),
		Flag:                      rec.Flag,
		Body:                      rec.Body,
		Properties:                message.MarshalProperties(props),
		SysFlag:                   rec.SysFlag,
		BornTimestamp:             rec.BornTimestamp,
		BornHost:                  rec.BornHost,
		StoreHost:                 s.b.storeHost,
		ReconsumeTimes:            rec.ReconsumeTimes,
		PreparedTransactionOffset: rec.PreparedTransactionOffset,
	}, nil
}
