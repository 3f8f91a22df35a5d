package storage

import (
	"context"
	"math"
	"time"
)

// runRetention deletes expired data every CleanResourceInterval.
func (s *Store) runRetention(ctx context.Context) error {
	t := time.NewTicker(s.opts.CleanResourceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.CleanExpired()
		}
	}
}

// ExecuteDeleteFilesManually asks the next retention round to delete expired segments
// whatever the hour (RocketMQ executeDeleteFilesManually).
func (s *Store) ExecuteDeleteFilesManually() { s.manualClean.Store(1) }

// DiskSpace is the space of the file system the store lies on.
type DiskSpace struct {
	Total, Free uint64 // bytes; Free is what an unprivileged writer may still use
	used        uint64 // bytes in use, reserved blocks not counted
}

// UsedRatio is the part of the disk in use, 0 to 1, as the retention rounds measure it
// (RocketMQ getDiskPartitionSpaceUsedPercent): used / (used + Free), so blocks reserved for
// root count as unavailable.
func (d DiskSpace) UsedRatio() float64 {
	if d.used+d.Free == 0 {
		return 0
	}
	return float64(d.used) / float64(d.used+d.Free)
}

// DiskSpace measures the file system the store lies on.
func (s *Store) DiskSpace() (DiskSpace, error) { return diskSpace(s.opts.Dir) }

// CleanStats counts what one retention round deleted.
type CleanStats struct {
	CommitLogSegments int
	ConsumeQueueFiles int
	IndexFiles        int
	DiskUsedRatio     float64
	// DeletedForDiskFull is set when the disk was fuller than DiskMaxUsedSpaceRatio;
	// Forcibly when it was fuller than DiskSpaceCleanForciblyRatio, so unexpired segments
	// went too: UnexpiredSegments of them, holding UnexpiredMessages messages.
	DeletedForDiskFull bool
	Forcibly           bool
	UnexpiredSegments  int
	UnexpiredMessages  int64
	// UnconsumedMessages is how many of the messages that went were at or past the offset a
	// group had committed in their queue (Options.ConsumedOffsets; queues no group committed
	// in are not counted).
	UnconsumedMessages int64
	// DiskFull is the store's refusal of appends after the round (DiskSpaceWarningLevelRatio).
	DiskFull bool
}

// DiskUsedRatio is the disk use, 0 to 1, the last retention round measured (0 before the
// first).
func (s *Store) DiskUsedRatio() float64 { return math.Float64frombits(s.diskUsed.Load()) }

// DiskFull reports whether the store refuses appends because the last retention round found
// the disk fuller than DiskSpaceWarningLevelRatio (RocketMQ's DISK_FULL running flag).
func (s *Store) DiskFull() bool { return s.diskFull.Load() }

// CleanExpired runs one retention round, as RocketMQ 4.9's CleanCommitLogService and
// CleanConsumeQueueService. It measures the disk first: above DiskSpaceWarningLevelRatio the
// store refuses appends (ErrDiskFull) until a round measures it at or below. At a DeleteWhen
// hour, on manual request, or when the disk is fuller than DiskMaxUsedSpaceRatio, it deletes up
// to DeleteFilesBatchMax CommitLog segments older than FileReservedTime, oldest first; when
// the disk is fuller than DiskSpaceCleanForciblyRatio (and DisableCleanFileForcibly is not
// set) the oldest segments go whatever their age, and the round logs how many unexpired
// messages went. The active segment is never deleted. Then ConsumeQueue and index files
// wholly behind the CommitLog's new start are deleted. Run calls it periodically.
func (s *Store) CleanExpired() CleanStats {
	var st CleanStats
	if s.closed.Load() {
		return st
	}
	now := s.opts.clock()
	ratio, err := s.opts.diskUsage(s.opts.Dir)
	if err != nil {
		s.log.Warn().Err(err).Msg("disk usage unknown")
	}
	st.DiskUsedRatio = ratio
	s.diskUsed.Store(math.Float64bits(ratio))
	pct := ratio * 100
	st.DiskFull = s.markDiskFull(pct > float64(s.opts.DiskSpaceWarningLevelRatio), pct)
	full := pct > float64(s.opts.DiskMaxUsedSpaceRatio)
	st.Forcibly = !s.opts.DisableCleanFileForcibly && pct > float64(s.opts.DiskSpaceCleanForciblyRatio)
	timeUp := s.deleteHours[now.Hour()]
	manual := s.manualClean.Swap(0) == 1
	var mins map[*consumeQueue]int64
	if st.Forcibly && s.opts.ConsumedOffsets != nil {
		mins = s.queueMinOffsets()
	}
	if full || timeUp || manual {
		st.DeletedForDiskFull = full
		st.CommitLogSegments, st.UnexpiredSegments, st.UnexpiredMessages = s.deleteCommitLog(now, st.Forcibly)
		if st.CommitLogSegments == 0 && full {
			s.log.Warn().Float64("disk_used_pct", pct).Int("disk_max_used_space_ratio", s.opts.DiskMaxUsedSpaceRatio).
				Msg("disk space will be full soon, but no commitlog segment could be deleted")
		}
	}
	minPhy := s.cl.minPhy.Load()
	for _, q := range s.cqs.all() {
		st.ConsumeQueueFiles += q.deleteBehind(minPhy)
	}
	if s.idx != nil {
		st.IndexFiles = s.idx.deleteBehind(minPhy)
	}
	if st.UnexpiredSegments > 0 {
		if mins != nil {
			st.UnconsumedMessages = unconsumedBetween(mins, s.opts.ConsumedOffsets())
		}
		s.log.Warn().Int("segments", st.UnexpiredSegments).Int64("messages", st.UnexpiredMessages).
			Int64("unconsumed_messages", st.UnconsumedMessages).
			Float64("disk_used_pct", pct).Int("disk_space_clean_forcibly_ratio", s.opts.DiskSpaceCleanForciblyRatio).
			Int64("min_phy_offset", minPhy).
			Msg("disk nearly full: deleted commitlog segments before they expired, with messages consumers may not have read")
	}
	if st.CommitLogSegments+st.ConsumeQueueFiles+st.IndexFiles > 0 {
		s.log.Info().Int("segments", st.CommitLogSegments).Int("cq_files", st.ConsumeQueueFiles).
			Int("index_files", st.IndexFiles).Bool("disk_full", full).Float64("disk_used", ratio).
			Int64("min_phy_offset", minPhy).Msg("retention deleted files")
	}
	return st
}

// queueMinOffsets is every ConsumeQueue's first readable offset.
func (s *Store) queueMinOffsets() map[*consumeQueue]int64 {
	qs := s.cqs.all()
	m := make(map[*consumeQueue]int64, len(qs))
	for _, q := range qs {
		m[q] = q.minOffset.Load()
	}
	return m
}

// unconsumedBetween counts the units that left the queues since their minimum offsets were
// before, at or past the slowest group's committed offset.
func unconsumedBetween(before map[*consumeQueue]int64, consumed map[string]map[int32]int64) int64 {
	var n int64
	for q, old := range before {
		c, ok := consumed[q.topic][q.queueID]
		if now := q.minOffset.Load(); ok && now > old && c < now {
			n += now - max(old, c)
		}
	}
	return n
}

// markDiskFull sets or clears the DISK_FULL flag, logging each change, and returns it.
func (s *Store) markDiskFull(full bool, pct float64) bool {
	if s.diskFull.Swap(full) != full {
		if full {
			s.log.Error().Float64("disk_used_pct", pct).Int("disk_space_warning_level_ratio", s.opts.DiskSpaceWarningLevelRatio).
				Msg("disk nearly full: refusing appends until space is freed")
		} else {
			s.log.Info().Float64("disk_used_pct", pct).Int("disk_space_warning_level_ratio", s.opts.DiskSpaceWarningLevelRatio).
				Msg("disk space OK again: accepting appends")
		}
	}
	return full
}

// deleteCommitLog removes old segments, never the last (active) one: expired ones, or with
// force the oldest whatever their age. It returns how many went, and how many of them were
// unexpired with the messages they held.
func (s *Store) deleteCommitLog(now time.Time, force bool) (n, unexpired int, unexpiredMsgs int64) {
	for n < s.opts.DeleteFilesBatchMax {
		segs := s.cl.segs.snapshot()
		if len(segs) < 2 {
			break
		}
		first := segs[0]
		needed := s.opts.RetentionFloor != nil && s.opts.RetentionFloor() < segs[1].start
		ts := s.segmentTime(first)
		expired := ts != 0 && now.Sub(time.UnixMilli(ts)) >= s.opts.FileReservedTime && !needed
		if !expired && !force {
			break
		}
		if needed {
			s.log.Warn().Str("segment", first.path).
				Msg("deleting a commitlog segment still needed (pending timer messages) to free disk space")
		}
		if !expired {
			unexpired++
			unexpiredMsgs += s.segmentRecords(first)
		}
		s.cl.minPhy.Store(segs[1].start)
		if err := s.cl.segs.removeFirst(); err != nil {
			s.log.Warn().Err(err).Str("segment", first.path).Msg("cannot remove commitlog segment")
		}
		n++
	}
	return n, unexpired, unexpiredMsgs
}

// segmentRecords counts the message records of a segment (blank records not counted).
func (s *Store) segmentRecords(sg *segment) int64 {
	if !sg.acquire() {
		return 0
	}
	defer sg.release()
	var n int64
	for pos := int64(0); pos+8 <= sg.size; {
		size := int64(int32(be32(sg.data[pos:])))
		if int32(be32(sg.data[pos+4:])) != magicV1 || size < 91 || pos+size > sg.size {
			break
		}
		n++
		pos += size
	}
	return n
}

// segmentTime returns the store time of the last message of a full segment, reading its
// records once if it is not known yet (segments loaded at Open).
func (s *Store) segmentTime(sg *segment) int64 {
	if ts := sg.lastTimestamp.Load(); ts != 0 {
		return ts
	}
	if !sg.acquire() {
		return 0
	}
	defer sg.release()
	var last int64
	for pos := int64(0); pos+8 <= sg.size; {
		size := int64(int32(be32(sg.data[pos:])))
		if int32(be32(sg.data[pos+4:])) != magicV1 || size < 91 || pos+size > sg.size {
			break
		}
		ts, err := recordStoreTimestamp(sg.data[pos : pos+size])
		if err != nil {
			break
		}
		last = ts
		pos += size
	}
	sg.lastTimestamp.Store(last)
	return last
}
