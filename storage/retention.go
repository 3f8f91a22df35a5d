package storage

import (
	"context"
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
// (RocketMQ getDiskPartitionSpaceUsedPercent).
func (d DiskSpace) UsedRatio() float64 {
	if d.Total == 0 {
		return 0
	}
	return float64(d.used) / float64(d.Total)
}

// DiskSpace measures the file system the store lies on.
func (s *Store) DiskSpace() (DiskSpace, error) { return diskSpace(s.opts.Dir) }

// CleanStats counts what one retention round deleted.
type CleanStats struct {
	CommitLogSegments  int
	ConsumeQueueFiles  int
	IndexFiles         int
	DiskUsedRatio      float64
	DeletedForDiskFull bool
}

// CleanExpired runs one retention round: at a DeleteWhen hour, on manual request, or when the
// disk is fuller than DiskMaxUsedSpaceRatio, it deletes up to DeleteFilesBatchMax CommitLog
// segments, oldest first, that are older than FileReservedTime (when the disk is too full:
// whatever their age). The active segment is never deleted. Then ConsumeQueue and index files
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
	full := ratio*100 > float64(s.opts.DiskMaxUsedSpaceRatio)
	timeUp := s.deleteHours[now.Hour()]
	manual := s.manualClean.Swap(0) == 1
	if full || timeUp || manual {
		st.DeletedForDiskFull = full
		st.CommitLogSegments = s.deleteCommitLog(now, full)
	}
	minPhy := s.cl.minPhy.Load()
	for _, q := range s.cqs.all() {
		st.ConsumeQueueFiles += q.deleteBehind(minPhy)
	}
	if s.idx != nil {
		st.IndexFiles = s.idx.deleteBehind(minPhy)
	}
	if st.CommitLogSegments+st.ConsumeQueueFiles+st.IndexFiles > 0 {
		s.log.Info().Int("segments", st.CommitLogSegments).Int("cq_files", st.ConsumeQueueFiles).
			Int("index_files", st.IndexFiles).Bool("disk_full", full).Float64("disk_used", ratio).
			Int64("min_phy_offset", minPhy).Msg("retention deleted files")
	}
	return st
}

// deleteCommitLog removes old segments, never the last (active) one.
func (s *Store) deleteCommitLog(now time.Time, force bool) int {
	n := 0
	for n < s.opts.DeleteFilesBatchMax {
		segs := s.cl.segs.snapshot()
		if len(segs) < 2 {
			break
		}
		first := segs[0]
		needed := s.opts.RetentionFloor != nil && s.opts.RetentionFloor() < segs[1].start
		if !force {
			ts := s.segmentTime(first)
			if ts == 0 || now.Sub(time.UnixMilli(ts)) < s.opts.FileReservedTime || needed {
				break
			}
		} else if needed {
			s.log.Warn().Str("segment", first.path).
				Msg("deleting a commitlog segment still needed (pending timer messages) to free disk space")
		}
		s.cl.minPhy.Store(segs[1].start)
		if err := s.cl.segs.removeFirst(); err != nil {
			s.log.Warn().Err(err).Str("segment", first.path).Msg("cannot remove commitlog segment")
		}
		n++
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
