package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

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
	// persistErrorLogEvery rate-limits the error log while writing delayOffset.json fails.
	persistErrorLogEvery = 10 * time.Second
)

// delayService delivers delayed messages. Its cursors are guarded by mu; run is the only
// goroutine that advances them (a slave's sync replaces them while run is not running).
type delayService struct {
	b      *broker.Broker
	log    zerolog.Logger
	path   string
	levels []time.Duration
	wake   chan struct{}
	// dirty says the cursors moved since delayOffset.json was written; persistNow (capacity 1)
	// asks runPersist for a write now.
	dirty      atomic.Bool
	persistNow chan struct{}

	mu struct {
		sync.Mutex
		offsets map[int32]int64 // level -> next queue offset to deliver
	}
}

func newDelayService(b *broker.Broker) *delayService {
	s := &delayService{b: b,
		log:  b.Logger().With().Str("component", "schedule").Str("broker", b.Options().Broker.Name).Logger(),
		path: b.Store().ConfigPath("delayOffset.json"), levels: b.Options().Timers.DelayLevels, wake: make(chan struct{}, 1),
		persistNow: make(chan struct{}, 1)}
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
func (s *delayService) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *delayService) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.offsets[int32(level)]
}

func (s *delayService) setOffset(level int, off int64) {
	s.mu.Lock()
	moved := s.mu.offsets[int32(level)] != off
	s.mu.offsets[int32(level)] = off
	s.mu.Unlock()
	if moved {
		s.dirty.Store(true)
	}
}

// snapshot returns the cursors of every configured level (GET_ALL_DELAY_OFFSET,
// delayOffset.json).
func (s *delayService) snapshot() protocol.DelayOffsetSerializeWrapper {
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
func (s *delayService) replace(w protocol.DelayOffsetSerializeWrapper) error {
	s.mu.Lock()
	s.mu.offsets = maps.Clone(w.OffsetTable)
	if s.mu.offsets == nil {
		s.mu.offsets = map[int32]int64{}
	}
	s.mu.Unlock()
	s.changed()
	return nil
}

// persist writes delayOffset.json; only runPersist and Close call it, never at once (Close
// comes after Run has returned). A failed write leaves the cursors dirty for the next pass.
func (s *delayService) persist() error {
	s.dirty.Store(false)
	if err := storage.WriteJSONFile(s.path, s.snapshot()); err != nil {
		s.dirty.Store(true)
		return fmt.Errorf("schedule: write %s: %w", s.path, err)
	}
	return nil
}

// changed marks the cursors dirty and has runPersist write them now (a slave's sync).
func (s *delayService) changed() {
	s.dirty.Store(true)
	select {
	case s.persistNow <- struct{}{}:
	default:
	}
}

// runPersist writes delayOffset.json when the cursors moved, every FlushConsumerOffsetInterval
// (RocketMQ persists the ScheduleMessageService every flushDelayOffsetInterval) and at once
// after a slave's sync installed a master's, until ctx ends; Close writes the last state.
func (s *delayService) runPersist(ctx context.Context, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lastErrLog time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.persistNow:
		}
		if !s.dirty.Load() {
			continue
		}
		// Retried every pass; logged at most every persistErrorLogEvery while it fails.
		if err := s.persist(); err != nil && time.Since(lastErrLog) >= persistErrorLogEvery {
			lastErrLog = time.Now()
			s.log.Error().Err(err).Msg("persist delay offsets failed, will retry")
		}
	}
}

// run delivers due messages until ctx ends. The metadata writer persists the cursors.
func (s *delayService) run(ctx context.Context) error {
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
func (s *delayService) deliverLevel(ctx context.Context, level int, now time.Time) (int64, error) {
	qid := int32(level - 1)
	delay := s.levels[level-1].Milliseconds()
	nowMs := now.UnixMilli()
	off := s.offset(level)
	for ctx.Err() == nil {
		if off >= s.b.Store().MaxOffsetInQueue(names.TopicSchedule, qid) {
			return 0, nil
		}
		if minOff := s.b.Store().MinOffsetInQueue(names.TopicSchedule, qid); off < minOff {
			// Retention deleted what the cursor points at (RocketMQ moves to the min offset too).
			s.log.Warn().Int("delay_level", level).Int64("offset", off).Int64("min_offset", minOff).
				Msg("schedule cursor behind the queue, moved to its head")
			off = minOff
			s.setOffset(level, off)
			continue
		}
		units, err := s.b.Store().ConsumeQueueUnits(names.TopicSchedule, qid, off, scheduleBatch)
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
func (s *delayService) deliver(level int, off, phyOffset int64) error {
	raw, err := s.b.Store().LookMessageByOffset(phyOffset)
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
	res, err := s.b.Store().PutMessage(m)
	if err != nil && !broker.PutStored(res.Status) {
		return fmt.Errorf("put to %s/%d: %s: %w", m.Topic, m.QueueID, res.Status, err)
	}
	s.b.Messages().CountPut(m.Topic, 1, res.WroteBytes)
	return nil
}

// errNoRealTopic marks a scheduled message that does not say where it goes.
var errNoRealTopic = errors.New("schedule: scheduled message without REAL_TOPIC/REAL_QID")

// realMessage builds the message a delayed record is delivered as: its REAL_TOPIC and REAL_QID,
// every property but DELAY (REAL_TOPIC and REAL_QID stay, as RocketMQ leaves them), the
// record's body, flag, sysFlag, born time and host, reconsume times. Its slices point into rec.
func (s *delayService) realMessage(rec *message.Record) (*storage.Message, error) {
	props := message.UnmarshalProperties(rec.Properties)
	topic := props[message.PropertyRealTopic]
	qid, err := strconv.ParseInt(props[message.PropertyRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return nil, errNoRealTopic
	}
	if topic == names.TopicTransHalf {
		return nil, fmt.Errorf("schedule: delayed message bound for %s", topic)
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
		StoreHost:                 s.b.Messages().StoreHost(),
		ReconsumeTimes:            rec.ReconsumeTimes,
		PreparedTransactionOffset: rec.PreparedTransactionOffset,
	}, nil
}

// toScheduleTopic turns m into a delayed message, as RocketMQ's CommitLog.putMessage does for a
// DELAY level: the level is capped at the highest configured level (and raised to 1 if lower),
// the real topic and queue are kept in REAL_TOPIC and REAL_QID, DELAY is set to the level, and
// m moves to SCHEDULE_TOPIC_XXXX, queue level-1. The store then gives it the delivery time as
// ConsumeQueue tag code; deliverLevel moves it back when that time comes.
func (s *delayService) toScheduleTopic(m *storage.Message, level int) {
	level = max(min(level, len(s.levels)), 1)
	props := message.SetProperty(m.Properties, message.PropertyRealTopic, m.Topic)
	props = message.SetProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Properties = message.SetProperty(props, message.PropertyDelayTimeLevel, strconv.Itoa(level))
	m.Topic = names.TopicSchedule
	m.QueueID = int32(level - 1)
}
