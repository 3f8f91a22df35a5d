package storage

// prepareQueue makes sure the ConsumeQueue of a message about to be appended has its first
// file when the message will be its first unit. Creating the file (two directories, the file,
// its mapping, its first reserved page) takes milliseconds on a busy disk; the dispatcher,
// which dispatches every queue's messages in CommitLog order, would make every later message
// of every queue wait for it, so a flood of new topics would delay the consumers of all the
// others. Here the appender pays, alongside the other appenders. A queue the store knows
// already, or whose next unit is not its first, is left to the dispatcher, as are names that
// cannot be paths (the dispatcher skips and reports those) and any failure (the dispatcher
// tries again and reports it).
func (s *Store) prepareQueue(topic string, qid int32, sysFlag int32) {
	if !dispatchesToQueue(sysFlag) || s.cqs.get(topic, qid) != nil {
		return
	}
	s.cl.mu.Lock()
	next := s.cl.nextQueueOffsetLocked(topic, qid)
	s.cl.mu.Unlock()
	if next != 0 {
		return
	}
	q, err := s.cqs.getOrCreate(topic, qid)
	if err != nil || q.segs.len() > 0 {
		return
	}
	_, _ = q.segs.add(0)
}
