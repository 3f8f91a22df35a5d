package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// DefaultDelayLevels are RocketMQ's messageDelayLevel: the delays of levels 1..18 of a message
// waiting in names.TopicSchedule, whose ConsumeQueue tag code is its delivery time.
var DefaultDelayLevels = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
	6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
}

// tagsCode is the ConsumeQueue tag code of a record: the Java hash of its TAGS, or for a
// message in SCHEDULE_TOPIC_XXXX with a DELAY level, its delivery time in ms.
func (s *Store) tagsCode(r *message.Record) int64 {
	if string(r.Topic) == names.TopicSchedule {
		if v, ok := message.PropertyValue(r.Properties, message.PropertyDelayTimeLevel); ok {
			if lvl, err := strconv.Atoi(string(v)); err == nil && lvl > 0 {
				levels := s.opts.DelayLevels
				lvl = min(lvl, len(levels))
				return r.StoreTimestamp + levels[lvl-1].Milliseconds()
			}
		}
	}
	if v, ok := message.PropertyValue(r.Properties, message.PropertyTags); ok && len(v) > 0 {
		return int64(message.JavaBytesHash(v))
	}
	return 0
}

// runDispatcher dispatches new CommitLog records into the ConsumeQueues and the index. It is
// woken by every append and also polls, so it follows the writer closely.
func (s *Store) runDispatcher(ctx context.Context) error {
	t := time.NewTicker(s.opts.dispatchPoll)
	defer t.Stop()
	var lastErr string
	var lastLog time.Time
	for {
		if _, err := s.dispatchAvailable(nil); err != nil {
			// Retried on every wake; log a repeated error at most every 10 s.
			if err.Error() != lastErr || time.Since(lastLog) > 10*time.Second {
				s.log.Error().Err(err).Int64("phy_offset", s.reputFrom.Load()).Msg("dispatch failed, will retry")
				lastErr, lastLog = err.Error(), time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.cl.wake:
		case <-t.C:
		}
	}
}

// dispatchAvailable dispatches every complete record between reputFrom and the log's end
// and returns how many it dispatched. During recovery (rebuild != nil) a record that does not
// fit its ConsumeQueue marks the queue for rebuilding instead of failing.
func (s *Store) dispatchAvailable(rebuild map[*consumeQueue]bool) (int, error) {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	return s.dispatchLocked(rebuild)
}

// dispatchAfterAppend dispatches what the appender just wrote, on its goroutine, when nobody
// else is dispatching; otherwise it wakes the dispatcher, as it does when the dispatch fails
// (the dispatcher retries and logs). Waking a parked goroutine for every append costs a sync
// send about a fifth of its round trip on two cores, more than the dispatch itself, which
// writes one ConsumeQueue unit and tells the listener; consumers see the message sooner too.
func (s *Store) dispatchAfterAppend() {
	if !s.dispatchMu.TryLock() {
		s.cl.notify()
		return
	}
	if s.dispatchStopped {
		s.dispatchMu.Unlock()
		return
	}
	_, err := s.dispatchLocked(nil)
	s.dispatchMu.Unlock()
	if err != nil {
		s.cl.notify()
	}
}

// dispatchLocked is dispatchAvailable with s.dispatchMu held.
func (s *Store) dispatchLocked(rebuild map[*consumeQueue]bool) (int, error) {
	var rec message.Record
	n := 0
	for {
		from, end := s.reputFrom.Load(), s.dispatchEnd()
		if from >= end {
			return n, nil
		}
		if minPhy := s.cl.minPhy.Load(); from < minPhy {
			s.reputFrom.Store(minPhy)
			continue
		}
		sg := s.cl.segs.find(from)
		if sg == nil {
			return n, fmt.Errorf("storage: dispatch: no segment holds offset %d", from)
		}
		pos := from - sg.start
		limit := min(sg.wrote.Load(), max(pos, end-sg.start))
		progressed := false
		var err error
		for limit-pos >= message.BlankMinBytes {
			b := sg.data[pos:limit]
			if int32(binary.BigEndian.Uint32(b[4:])) == message.BlankMagicCode {
				pos = sg.size
				progressed = true
				break
			}
			size := int64(int32(binary.BigEndian.Uint32(b)))
			if size < message.MinRecordBytes || pos+size > sg.size-message.BlankMinBytes {
				err = corrupt(sg.path, pos, fmt.Errorf("record size %d", size))
				break
			}
			if pos+size > limit {
				break // the rest of a replicated record has not arrived yet
			}
			if _, derr := message.DecodeRecord(b, &rec, false); derr != nil {
				err = corrupt(sg.path, pos, derr)
				break
			}
			if err = s.dispatchRecord(&rec, rebuild); err != nil {
				break
			}
			pos += size
			n++
			s.dispatched.Add(1)
			progressed = true
			s.reputFrom.Store(sg.start + pos)
		}
		if pos >= sg.size {
			s.reputFrom.Store(sg.end())
		}
		sg.release()
		if err != nil || !progressed {
			return n, err
		}
	}
}

// dispatchEnd is the CommitLog offset dispatching stops at: the log's end, the confirm offset
// (SetConfirmOffset) and, with flushBound, the flushed offset (RocketMQ's getReputEndOffset).
func (s *Store) dispatchEnd() int64 {
	end := min(s.cl.maxPhy.Load(), s.confirmed.Load())
	if s.flushBound {
		end = min(end, s.cl.flushedPhy.Load())
	}
	return end
}

// dispatchRecord appends the record's unit to its ConsumeQueue, indexes its keys and tells
// the listener.
func (s *Store) dispatchRecord(rec *message.Record, rebuild map[*consumeQueue]bool) error {
	if s.idx != nil {
		if err := s.idx.add(rec); err != nil {
			// A full disk fails every record's keys until space returns: log once in a while.
			s.idxFailed++
			if now := time.Now(); now.Sub(s.idxFailLoggedAt) >= 10*time.Second {
				s.log.Error().Err(err).Int64("records", s.idxFailed).Msg("index add failed: keys of these records are not indexed")
				s.idxFailLoggedAt, s.idxFailed = now, 0
			}
		}
	}
	s.lastCQTs.Store(rec.StoreTimestamp)
	if !dispatchesToQueue(rec.SysFlag) {
		return nil
	}
	q := s.cqs.getBytes(rec.Topic, rec.QueueID)
	if q == nil {
		var err error
		if q, err = s.cqs.getOrCreate(string(rec.Topic), rec.QueueID); err != nil {
			s.skipUnsafeRecord(rec, err)
			return nil
		}
	}
	if rebuild[q] {
		return nil // rebuilt from the whole log afterwards
	}
	u := CQUnit{PhyOffset: rec.PhysicalOffset, Size: rec.TotalSize, TagsCode: s.tagsCode(rec)}
	max := q.maxOffset.Load()
	switch {
	case rec.QueueOffset < max:
		// Already dispatched before a crash: check it agrees.
		if rebuild != nil && rec.QueueOffset >= q.minOffset.Load() {
			if got, err := q.unit(rec.QueueOffset); err != nil || got.PhyOffset != u.PhyOffset {
				s.markRebuild(q, rebuild, fmt.Sprintf("unit %d points to %d, log has it at %d", rec.QueueOffset, got.PhyOffset, u.PhyOffset))
			}
		}
		return nil
	case rec.QueueOffset > max && (rebuild != nil || max > 0 || q.segs.len() > 0):
		// During recovery this also catches a queue whose files were deleted: its first
		// record seen after the checkpoint is not its first record.
		if rebuild != nil {
			s.markRebuild(q, rebuild, fmt.Sprintf("queue ends at %d, log has offset %d", max, rec.QueueOffset))
			return nil
		}
		s.log.Error().Str("topic", q.topic).Int32("queue_id", q.queueID).Int64("offset", rec.QueueOffset).
			Int64("max_offset", max).Msg("consume queue gap: unit skipped")
		return nil
	}
	if err := q.put(rec.QueueOffset, u); err != nil {
		return err
	}
	if fn := s.opts.OnDispatch; fn != nil && rebuild == nil {
		fn(DispatchEvent{Topic: q.topic, QueueID: q.queueID, QueueOffset: rec.QueueOffset,
			TagsCode: u.TagsCode, StoreTimestamp: rec.StoreTimestamp, PhyOffset: u.PhyOffset, Size: u.Size})
	}
	return nil
}

func (s *Store) markRebuild(q *consumeQueue, rebuild map[*consumeQueue]bool, why string) {
	if rebuild[q] {
		return
	}
	rebuild[q] = true
	s.report.action("consume queue %s/%d disagrees with the commitlog (%s): rebuilding", q.topic, q.queueID, why)
}

// SetConfirmOffset bounds what is dispatched to the ConsumeQueues and the index, and so what
// consumers see, to the records that end at or below offset: RocketMQ 5's confirm offset, below
// which every member of a SyncStateSet holds the log (getReputEndOffset without
// readUnCommitted). A consumer then never reads a message a new master may not have. Records
// already dispatched stay; raising the bound dispatches what it releases. math.MaxInt64 lifts
// it (the default).
func (s *Store) SetConfirmOffset(offset int64) {
	if old := s.confirmed.Swap(offset); offset > old {
		s.cl.notify()
	}
}

// ConfirmOffset is the bound SetConfirmOffset set, math.MaxInt64 without one.
func (s *Store) ConfirmOffset() int64 { return s.confirmed.Load() }
