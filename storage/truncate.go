package storage

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/mqgo/mq/internal/message"
)

// truncateAtOpen cuts the recovered CommitLog at to (Options.TruncateTo) and truncates the
// epoch history there. It returns the offset dispatching must resume from at the latest: the
// start of the record the cut falls in (math.MaxInt64 when nothing was cut). Recovery then
// clears what was dispatched past the cut, as for a torn tail.
//
// A crash part way must leave a store that opens and agrees with itself, so before touching
// the log it marks the store unclean and lowers the checkpoint to the start of the segment
// holding the cut: the next Open validates from there whatever state the cut reached. The
// zeroed tail is synced before any later segment goes, and those go newest first, so a crash
// never leaves a gap between segments (which Open refuses) nor old records behind zeros.
func (s *Store) truncateAtOpen(to int64) (int64, error) {
	r := &s.report
	if to >= s.cl.maxPhy.Load() {
		return math.MaxInt64, s.TruncateEpochs(to)
	}
	segs := s.cl.segs.snapshot()
	var cut *segment
	for _, sg := range segs {
		if sg.start <= to {
			cut = sg
		}
	}
	recStart := to
	safe := to
	if cut != nil {
		var exact bool
		recStart, exact = recordStartAt(cut, to)
		if !exact && !s.opts.Slave {
			return 0, fmt.Errorf("storage: TruncateTo %d falls inside the record at %d: only a slave store (Options.Slave) may be cut mid-record", to, recStart)
		}
		safe = cut.start
	} else if len(segs) > 0 {
		safe = segs[0].start
	}
	if err := s.markUncleanBeforeCut(safe); err != nil {
		return 0, err
	}
	if cut != nil {
		pos := to - cut.start
		if err := cut.ops.zero(cut.f, cut.data, pos, cut.size-pos); err != nil {
			return 0, err
		}
		if err := cut.ops.sync(cut.f); err != nil {
			return 0, fmt.Errorf("storage: sync %s: %w", cut.path, err)
		}
	}
	for i := len(segs) - 1; i >= 0 && segs[i].start > to; i-- {
		removed, err := s.cl.segs.removeFrom(segs[i].start)
		for _, p := range removed {
			r.RemovedFiles = append(r.RemovedFiles, p)
			r.action("segment %s lies past the cut: removed", filepath.Base(p))
		}
		if err != nil {
			return 0, err
		}
	}
	file := ""
	if cut != nil {
		if err := s.truncateCommitLog(to); err != nil {
			return 0, err
		}
		if last := s.cl.segs.last(); last != nil {
			file = last.path
		}
	} else {
		// Nothing of the log is kept. An empty log starts at a segment boundary (the next
		// segment is created there), so it continues at the first one at or after the cut.
		start := (to + s.opts.SegmentBytes - 1) / s.opts.SegmentBytes * s.opts.SegmentBytes
		s.cl.minPhy.Store(start)
		s.cl.maxPhy.Store(start)
		recStart = start
	}
	if err := syncDir(s.cl.segs.dir); err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	end := s.cl.maxPhy.Load()
	r.TruncatedAt, r.TruncatedFile = end, file
	r.TruncateReason = fmt.Sprintf("Options.TruncateTo %d", to)
	r.action("commitlog cut at offset %d (Options.TruncateTo %d)", end, to)
	s.log.Warn().Int64("phy_offset", end).Int64("truncate_to", to).Str("file", file).Msg("commitlog cut as asked")
	return recStart, s.TruncateEpochs(to)
}

// markUncleanBeforeCut makes the next Open validate the log from safe, should the process die
// during the cut: it writes the abort marker and lowers the checkpoint's offsets to safe.
func (s *Store) markUncleanBeforeCut(safe int64) error {
	if err := os.WriteFile(s.abortPath(), nil, 0o644); err != nil {
		return err
	}
	if c, err := readCheckpoint(s.checkpointPath()); err == nil && (c.PhysicOffset > safe || c.DispatchedOffset > safe) {
		c.PhysicOffset = min(c.PhysicOffset, safe)
		c.DispatchedOffset = min(c.DispatchedOffset, safe)
		if err := writeCheckpoint(s.checkpointPath(), c, s.opts.ops); err != nil {
			return err
		}
	}
	return syncDir(s.opts.Dir)
}

// recordStartAt returns the start of the record (or blank record) of sg holding offset off,
// and whether one starts exactly at off. Records never cross segments, so it walks the record
// headers from the segment's start; every step moves forward, so the walk ends whatever the
// bytes say.
func recordStartAt(sg *segment, off int64) (int64, bool) {
	target := off - sg.start
	limit := sg.wrote.Load()
	pos := int64(0)
	for pos < target {
		if limit-pos < 8 {
			break
		}
		size := int64(int32(binary.BigEndian.Uint32(sg.data[pos:])))
		magic := int32(binary.BigEndian.Uint32(sg.data[pos+4:]))
		if magic == message.BlankMagicCode || size <= 0 || pos+size > target {
			break
		}
		pos += size
	}
	return sg.start + pos, pos == target
}

// dropEpochsPastEnd drops the epoch entries starting past the log's end: the data they name
// was cut (a torn tail, or a cut at Open that a crash interrupted), and a master appending its
// epoch at the log's end must find the history ending at or before it.
func (s *Store) dropEpochsPastEnd() error {
	end := s.cl.maxPhy.Load()
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	h := s.epochs.entries
	n := len(h)
	for n > 0 && h[n-1].StartOffset > end {
		n--
	}
	if n == len(h) {
		return nil
	}
	s.report.action("epoch entries starting past the log end %d dropped: %v", end, h[n:])
	s.log.Warn().Int64("phy_offset", end).Int("dropped", len(h)-n).Msg("epoch entries past the commitlog end dropped")
	return s.setEpochsLocked(h[:n:n])
}

// cutIncompleteTail cuts the incomplete record a slave's copy may end with (replication copies
// bytes, not records) when the store opens as a master: a master appends at the log's end,
// which must be a record boundary, and its new epoch starts there. Dispatching stops at such a
// record, so finding it costs nothing.
func (s *Store) cutIncompleteTail() error {
	at, end := s.reputFrom.Load(), s.cl.maxPhy.Load()
	if at >= end {
		return nil
	}
	if err := s.truncateCommitLog(at); err != nil {
		return err
	}
	r := &s.report
	r.TruncatedAt, r.MaxPhyOffset = at, at
	r.TruncateReason = "incomplete record at the end of a slave's copy, opened as a master"
	if last := s.cl.segs.last(); last != nil {
		r.TruncatedFile = last.path
	}
	r.action("commitlog cut at offset %d: the record there is incomplete (%d of its bytes)", at, end-at)
	s.log.Warn().Int64("phy_offset", at).Int64("bytes", end-at).Msg("incomplete record at the commitlog end cut")
	s.cl.flushedPhy.Store(min(s.cl.flushedPhy.Load(), at))
	return s.dropEpochsPastEnd()
}
