package storage

// LockTimeMills is how long the append in progress has held the CommitLog's append lock, in
// ms at now (unix ms), 0 when no append holds it: RocketMQ's CommitLog.lockTimeMills, which
// runtime info reports as pageCacheLockTimeMills.
func (s *Store) LockTimeMills(now int64) int64 {
	if at := s.cl.lockedAt.Load(); at != 0 && now > at {
		return now - at
	}
	return 0
}
