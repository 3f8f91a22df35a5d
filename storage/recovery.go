package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// RecoveryReport says what Open found and did. Actions lists every repair in words, in order.
type RecoveryReport struct {
	// Clean is true when the previous run closed the store (no abort marker).
	Clean bool
	// CheckpointValid is false when the checkpoint was missing or damaged.
	CheckpointValid bool
	// ManifestValid is true when the manifest was read and the ConsumeQueues and index files
	// were compared with it; false when it was missing or damaged (then the CommitLog and the
	// queues are checked as after a crash) or the store is new.
	ManifestValid bool
	// ScannedFrom is the CommitLog offset validation started at (-1: no scan, clean load).
	ScannedFrom int64
	// ScannedRecords counts the records validated.
	ScannedRecords int
	// MinPhyOffset and MaxPhyOffset bound the recovered CommitLog.
	MinPhyOffset, MaxPhyOffset int64
	// TruncatedAt is where the CommitLog was cut (-1: not cut); TruncateReason says why and
	// TruncatedFile names the segment.
	TruncatedAt    int64
	TruncateReason string
	TruncatedFile  string
	// ExtendedFiles are segment files found shorter than the segment size (zero-filled).
	ExtendedFiles []string
	// RemovedFiles are files deleted because they lay past the cut or were damaged.
	RemovedFiles []string
	// ClearedUnits counts ConsumeQueue units removed because they pointed past the cut.
	ClearedUnits int
	// RebuiltQueues names ("topic/queueId") the ConsumeQueues rebuilt from the CommitLog.
	RebuiltQueues []string
	// RedispatchedFrom is where dispatching resumed; RedispatchedRecords counts records
	// dispatched during Open.
	RedispatchedFrom    int64
	RedispatchedRecords int
	Actions             []string
	Duration            time.Duration
}

func (r *RecoveryReport) action(format string, args ...any) {
	r.Actions = append(r.Actions, fmt.Sprintf(format, args...))
}

// recover brings the CommitLog, ConsumeQueues and index into agreement. Called by Open.
func (s *Store) recover() error {
	r := &s.report
	r.TruncatedAt, r.ScannedFrom = -1, -1
	_, err := os.Stat(s.abortPath())
	r.Clean = errors.Is(err, os.ErrNotExist)
	ckpt, ckErr := readCheckpoint(s.checkpointPath())
	r.CheckpointValid = ckErr == nil
	switch {
	case ckErr == nil:
	case errors.Is(ckErr, os.ErrNotExist):
	default:
		s.log.Warn().Err(ckErr).Msg("checkpoint unreadable, validating the whole commitlog")
		r.action("checkpoint unreadable (%v): validating the whole commitlog", ckErr)
	}
	if !r.Clean {
		r.action("abort marker present: previous run did not close the store")
	}
	man, manErr := readManifest(s.manifestPath())
	newStore := errors.Is(manErr, os.ErrNotExist) && errors.Is(ckErr, os.ErrNotExist)
	r.ManifestValid = manErr == nil
	switch {
	case manErr == nil:
	case newStore:
		// Nothing was ever checkpointed.
	case errors.Is(manErr, os.ErrNotExist):
		s.log.Warn().Msg("manifest missing, checking the consume queues and the index as after a crash")
		r.action("manifest missing: checking the consume queues and the index as after a crash")
	default:
		s.log.Warn().Err(manErr).Msg("manifest unreadable, checking the consume queues and the index as after a crash")
		r.action("manifest unreadable (%v): checking the consume queues and the index as after a crash", manErr)
	}
	// Only a clean close whose manifest survived lets Open trust the files it finds.
	trusted := r.Clean && (man != nil || newStore)
	ext, err := s.cl.segs.load()
	if err != nil {
		return err
	}
	for _, p := range ext {
		r.ExtendedFiles = append(r.ExtendedFiles, p)
		r.action("segment %s was short: extended with zeros", filepath.Base(p))
		s.log.Warn().Str("file", p).Msg("commitlog segment was short, extended")
	}
	if err := s.recoverCommitLog(ckpt, r.CheckpointValid && len(ext) == 0, trusted); err != nil {
		return err
	}
	// Where dispatching must resume at the latest: a cut mid-record leaves that record to be
	// dispatched again once a slave has its rest.
	dispatchFloor := int64(math.MaxInt64)
	if s.opts.Truncate {
		if dispatchFloor, err = s.truncateAtOpen(s.opts.TruncateTo); err != nil {
			return err
		}
	}
	if err := s.dropEpochsPastEnd(); err != nil {
		return err
	}
	maxPhy, minPhy := s.cl.maxPhy.Load(), s.cl.minPhy.Load()
	r.MinPhyOffset, r.MaxPhyOffset = minPhy, maxPhy
	s.cl.flushedPhy.Store(maxPhy)

	if s.idx != nil {
		removed, err := s.idx.load()
		if err != nil {
			return err
		}
		for _, p := range removed {
			r.RemovedFiles = append(r.RemovedFiles, p)
			r.action("index file %s damaged: removed", filepath.Base(p))
		}
		if len(removed) == 0 && man != nil {
			if why := s.idx.checkManifest(man.index, minPhy); why != "" {
				r.action("index %s: rebuilding", why)
				s.log.Warn().Str("reason", why).Msg("index files disagree with the manifest")
				removed = append(removed, why)
			}
		}
		if len(removed) > 0 {
			if err := s.rebuildIndex(minPhy, maxPhy); err != nil {
				return err
			}
		}
		s.idx.truncate(min(maxPhy, dispatchFloor))
	}

	rebuild, cutPast, err := s.loadQueues(maxPhy, minPhy, !trusted)
	if err != nil {
		return err
	}
	if r.ScannedFrom >= 0 {
		s.verifyQueueTails(r.ScannedFrom, rebuild)
	}

	// Resume dispatching from the last point known to be in the ConsumeQueues.
	from := minPhy
	if r.CheckpointValid && ckpt.DispatchedOffset >= minPhy {
		from = min(ckpt.DispatchedOffset, maxPhy)
	}
	if !trusted {
		from = min(from, r.ScannedFrom)
	}
	from = max(min(from, dispatchFloor), minPhy)
	var expired map[*consumeQueue]int64
	if man != nil {
		expired = s.checkQueueManifest(man.queues, minPhy, maxPhy, from, rebuild, cutPast)
	}
	r.RedispatchedFrom = from
	s.reputFrom.Store(from)
	n, err := s.dispatchAvailable(rebuild)
	if err != nil {
		return err
	}
	r.RedispatchedRecords = n
	if n > 0 {
		r.action("dispatched %d records from offset %d", n, from)
	}
	if !s.opts.Slave {
		if err := s.cutIncompleteTail(); err != nil {
			return err
		}
	}
	if len(rebuild) > 0 {
		if err := s.rebuildQueues(rebuild); err != nil {
			return err
		}
	}
	for q, next := range expired {
		if rebuild[q] {
			continue // it has later records after all: rebuilt with them
		}
		if err := q.restartAt(next); err != nil {
			return err
		}
	}
	// The append side continues every queue at its ConsumeQueue's end.
	for _, q := range s.cqs.all() {
		q.correctMinOffset(minPhy)
		if max := q.maxOffset.Load(); max > 0 {
			s.cl.setQueueOffsetLocked(q.topic, q.queueID, max)
		}
	}
	s.lastCQTs.Store(s.flushedTs.Load())
	if !r.Clean || len(r.Actions) > 0 {
		// Make what recovery kept and wrote durable and record it, so the next recovery
		// starts from here rather than from a checkpoint older than the repairs.
		if r.ScannedFrom >= 0 {
			for _, sg := range s.cl.segs.snapshot() {
				if sg.end() > r.ScannedFrom {
					sg.flushed.Store(0)
				}
			}
			s.cl.flushedPhy.Store(max(r.ScannedFrom, minPhy))
		}
		if _, err := s.flushCommitLog(); err != nil {
			return err
		}
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			return err
		}
	}
	return nil
}

// recoverCommitLog sets the write position. After a clean close with a valid checkpoint it
// trusts the checkpoint (checking that nothing lies past it); otherwise it validates records
// from a safe point and cuts the log at the first invalid one.
func (s *Store) recoverCommitLog(ckpt checkpoint, ckptUsable, trusted bool) error {
	r := &s.report
	segs := s.cl.segs.snapshot()
	if len(segs) == 0 {
		if ckptUsable && ckpt.PhysicOffset > 0 {
			// Everything was deleted; continue at the next segment boundary.
			start := (ckpt.PhysicOffset + s.opts.SegmentBytes - 1) / s.opts.SegmentBytes * s.opts.SegmentBytes
			s.cl.maxPhy.Store(start)
			s.cl.minPhy.Store(start)
		}
		return nil
	}
	s.cl.minPhy.Store(segs[0].start)
	last := segs[len(segs)-1]
	if trusted && ckptUsable && ckpt.PhysicOffset >= last.start && ckpt.PhysicOffset <= last.end() {
		pos := ckpt.PhysicOffset - last.start
		if pos == last.size || binary.BigEndian.Uint64(last.data[pos:]) == 0 {
			last.wrote.Store(pos)
			last.flushed.Store(pos)
			s.cl.maxPhy.Store(ckpt.PhysicOffset)
			s.flushedTs.Store(ckpt.PhysicMsgTimestamp)
			return nil
		}
		r.action("data found past the checkpoint offset %d: validating", ckpt.PhysicOffset)
	}
	// Scan from the segment holding the earliest offset the checkpoint vouches for.
	from := segs[0].start
	if ckptUsable {
		safe := min(ckpt.PhysicOffset, ckpt.DispatchedOffset)
		for _, sg := range segs {
			if sg.start <= safe {
				from = sg.start
			}
		}
	}
	r.ScannedFrom = from
	return s.scanCommitLog(segs, from)
}

// scanCommitLog validates records from offset from (a segment start) and cuts the log at the
// end of the last valid one.
func (s *Store) scanCommitLog(segs []*segment, from int64) error {
	r := &s.report
	checkCRC := !s.opts.DisableCRCOnRecover
	var rec message.Record
	end := from
	reason := ""
	var bad *segment
scan:
	for _, sg := range segs {
		if sg.start < from {
			continue
		}
		pos := int64(0)
		for pos < sg.size {
			b := sg.data[pos:]
			size := int64(int32(binary.BigEndian.Uint32(b)))
			magic := int32(binary.BigEndian.Uint32(b[4:]))
			if size == 0 && magic == 0 {
				bad, reason = sg, ""
				break scan // clean end of data
			}
			if magic == message.BlankMagicCode {
				if size != sg.size-pos {
					bad, reason = sg, fmt.Sprintf("blank record size %d, %d bytes left", size, sg.size-pos)
					break scan
				}
				end = sg.end()
				break
			}
			n, err := message.DecodeRecord(b, &rec, checkCRC)
			if err == nil {
				err = checkHeader(&rec, sg.start+pos)
			}
			if err == nil && int64(n)+message.BlankMinBytes > sg.size-pos {
				err = fmt.Errorf("record of %d bytes leaves no room for the blank record", n)
			}
			if err != nil {
				bad, reason = sg, err.Error()
				break scan
			}
			r.ScannedRecords++
			sg.lastTimestamp.Store(rec.StoreTimestamp)
			s.flushedTs.Store(rec.StoreTimestamp)
			pos += int64(n)
			end = sg.start + pos
		}
	}
	if bad == nil {
		// The last segment ended with a blank record.
		bad = segs[len(segs)-1]
	}
	if reason != "" {
		r.TruncatedAt, r.TruncateReason, r.TruncatedFile = end, reason, bad.path
		r.action("commitlog cut at offset %d in %s: %s", end, filepath.Base(bad.path), reason)
		s.log.Warn().Str("file", bad.path).Int64("phy_offset", end).Str("reason", reason).Msg("truncating commitlog at invalid record")
	}
	return s.truncateCommitLog(end)
}

// truncateCommitLog makes end the log's end: later segments are deleted and the rest of the
// segment holding end is zeroed, so nothing past the cut can resurface.
func (s *Store) truncateCommitLog(end int64) error {
	r := &s.report
	segs := s.cl.segs.snapshot()
	keepUntil := end
	if end%s.opts.SegmentBytes == 0 && end > segs[0].start {
		keepUntil = end - 1 // end is a boundary: keep the full segment before it
	}
	for _, sg := range segs {
		switch {
		case sg.start > keepUntil:
			// Deleted below.
		case sg.end() <= end:
			sg.wrote.Store(sg.size)
			sg.flushed.Store(sg.size)
		default:
			pos := end - sg.start
			if err := sg.ops.zero(sg.f, sg.data, pos, sg.size-pos); err != nil {
				return err
			}
			sg.wrote.Store(pos)
			sg.flushed.Store(pos)
		}
	}
	removed, err := s.cl.segs.removeFrom(keepUntil + 1)
	for _, p := range removed {
		r.RemovedFiles = append(r.RemovedFiles, p)
		r.action("segment %s lies past the end: removed", filepath.Base(p))
	}
	if err != nil {
		return err
	}
	if s.cl.segs.len() == 0 {
		s.cl.minPhy.Store(end)
	}
	s.cl.maxPhy.Store(end)
	return nil
}

// loadQueues loads every ConsumeQueue, clearing units past maxPhy. Queues whose files are
// inconsistent are emptied and returned for rebuilding; cutPast holds the queues that had
// units cleared (their files reached past the CommitLog's end).
func (s *Store) loadQueues(maxPhy, minPhy int64, thorough bool) (rebuild, cutPast map[*consumeQueue]bool, err error) {
	r := &s.report
	qs, err := s.cqs.discover()
	if err != nil {
		return nil, nil, err
	}
	rebuild = make(map[*consumeQueue]bool)
	cutPast = make(map[*consumeQueue]bool)
	for _, q := range qs {
		cleared, err := q.load(maxPhy, thorough)
		if errors.Is(err, ErrCorrupt) {
			s.log.Warn().Str("topic", q.topic).Int32("queue_id", q.queueID).Err(err).Msg("consume queue damaged, rebuilding")
			r.action("consume queue %s/%d damaged (%v): rebuilding", q.topic, q.queueID, err)
			q.segs.closeAll()
			if err := os.RemoveAll(q.segs.dir); err != nil {
				return nil, nil, err
			}
			q.maxOffset.Store(0)
			q.minOffset.Store(0)
			rebuild[q] = true
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if cleared > 0 {
			cutPast[q] = true
			r.ClearedUnits += cleared
			r.action("consume queue %s/%d: cleared %d units past the commitlog end", q.topic, q.queueID, cleared)
		}
		q.correctMinOffset(minPhy)
	}
	return rebuild, cutPast, nil
}

// verifyQueueTails checks every unit pointing at or after from (the part of the log a crash
// may have touched) against the record it points to; a queue with a unit that disagrees is
// marked for rebuilding.
func (s *Store) verifyQueueTails(from int64, rebuild map[*consumeQueue]bool) {
	var rec message.Record
	for _, q := range s.cqs.all() {
		if rebuild[q] {
			continue
		}
		for off := q.maxOffset.Load() - 1; off >= q.minOffset.Load(); off-- {
			u, err := q.unit(off)
			if err == nil && u.Size == blankUnitSize {
				break
			}
			if err == nil && u.PhyOffset < from {
				break
			}
			why := ""
			if err != nil {
				why = err.Error()
			} else if sg, b, rerr := s.cl.readRecord(u.PhyOffset); rerr != nil {
				why = rerr.Error()
			} else {
				_, derr := message.DecodeRecord(b, &rec, false)
				switch {
				case derr != nil:
					why = derr.Error()
				case string(rec.Topic) != q.topic || rec.QueueID != q.queueID || rec.QueueOffset != off || rec.TotalSize != u.Size:
					why = fmt.Sprintf("record at %d is %s/%d offset %d", u.PhyOffset, rec.Topic, rec.QueueID, rec.QueueOffset)
				}
				sg.release()
			}
			if why != "" {
				s.markRebuild(q, rebuild, fmt.Sprintf("unit %d: %s", off, why))
				break
			}
		}
	}
}

// rebuildIndex replaces the index with one built from the whole CommitLog.
func (s *Store) rebuildIndex(minPhy, maxPhy int64) error {
	if err := s.idx.reset(); err != nil {
		return err
	}
	n := 0
	err := s.walkCommitLog(minPhy, maxPhy, func(rec *message.Record) error {
		n++
		return s.idx.add(rec)
	})
	if err != nil {
		return err
	}
	s.report.action("index rebuilt from the commitlog (%d records)", n)
	s.log.Warn().Int("records", n).Msg("index rebuilt")
	return nil
}

// rebuildQueues empties the given queues and re-dispatches the whole CommitLog into them.
func (s *Store) rebuildQueues(rebuild map[*consumeQueue]bool) error {
	r := &s.report
	for q := range rebuild {
		q.segs.removeAll()
		q.maxOffset.Store(0)
		q.minOffset.Store(0)
		q.maxPhyEnd.Store(0)
		r.RebuiltQueues = append(r.RebuiltQueues, fmt.Sprintf("%s/%d", q.topic, q.queueID))
	}
	n := 0
	err := s.walkCommitLog(s.cl.minPhy.Load(), s.cl.maxPhy.Load(), func(rec *message.Record) error {
		q := s.cqs.getBytes(rec.Topic, rec.QueueID)
		if q == nil || !rebuild[q] || !dispatchesToQueue(rec.SysFlag) {
			return nil
		}
		n++
		return q.put(rec.QueueOffset, CQUnit{PhyOffset: rec.PhysicalOffset, Size: rec.TotalSize,
			TagsCode: s.tagsCode(rec)})
	})
	if err != nil {
		return err
	}
	r.action("rebuilt %d consume queues from the commitlog (%d units)", len(rebuild), n)
	s.log.Warn().Strs("queues", r.RebuiltQueues).Int("units", n).Msg("consume queues rebuilt")
	return nil
}

// walkCommitLog calls fn for every record in [from, to), stopping at the first error.
func (s *Store) walkCommitLog(from, to int64, fn func(*message.Record) error) error {
	var rec message.Record
	for off := from; off < to; {
		sg := s.cl.segs.find(off)
		if sg == nil {
			return fmt.Errorf("storage: no segment holds offset %d", off)
		}
		pos := off - sg.start
		limit := min(sg.wrote.Load(), to-sg.start)
		var err error
		for pos < limit {
			if binary.BigEndian.Uint32(sg.data[pos+4:]) == uint32(blankMagic) {
				pos = sg.size
				break
			}
			n, derr := message.DecodeRecord(sg.data[pos:limit], &rec, false)
			if derr != nil {
				err = corrupt(sg.path, pos, derr)
				break
			}
			if err = fn(&rec); err != nil {
				if !errors.Is(err, ErrCorrupt) {
					err = corrupt(sg.path, pos, err)
				}
				break
			}
			pos += int64(n)
		}
		off = sg.start + pos
		if pos >= limit && limit < sg.size && off < to {
			err = corrupt(sg.path, pos, errors.New("log ends inside a segment"))
		}
		sg.release()
		if err != nil {
			return err
		}
		if pos >= sg.size {
			off = sg.end()
		}
	}
	return nil
}

var blankMagic = message.BlankMagicCode

// checkHeader checks the header fields the body CRC does not cover.
func checkHeader(r *message.Record, phyOffset int64) error {
	switch {
	case r.PhysicalOffset != phyOffset:
		return fmt.Errorf("record says physical offset %d", r.PhysicalOffset)
	case r.QueueOffset < 0 || r.QueueOffset > maxQueueOffset:
		return fmt.Errorf("queue offset %d", r.QueueOffset)
	case r.QueueID < 0:
		return fmt.Errorf("queue id %d", r.QueueID)
	case len(r.Topic) == 0:
		return errors.New("empty topic")
	}
	return nil
}
