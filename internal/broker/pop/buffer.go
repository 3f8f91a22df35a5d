package pop

// Buffer merge, our take on RocketMQ 5's PopBufferMergeService (enablePopBufferMerge): on a
// master under ASYNC_FLUSH and ASYNC_MASTER an ack only sets its message's bit in the
// checkpoint held in memory, and flushAcks writes each checkpoint's acks as one record once
// they waited half of popCkStayBufferTime (the revive loop's flush tick comes every half of it,
// so none waits a whole stay time unless a revive round holds the loop longer). A batch acked
// from a goroutine per message thus costs one "bAck" record, not one "ack" per message, and no
// ack waits for the store. The flush shares the revive loop's goroutine so that it never
// writes a checkpoint's acks while the revive loop re-puts that checkpoint's messages.
//
// Unlike RocketMQ's, the checkpoint record itself is still written at the pop, before the pop
// is answered: a kill -9 loses at most the acks of the last stay time (500 ms, the store's
// default flush interval: what ASYNC_FLUSH loses to a power cut), whose messages come back
// after their invisible time, as unacknowledged ones do; nothing popped is lost, and nothing
// comes back before its invisible time. A checkpoint whose invisible time passed has its
// buffered acks written before its unacknowledged messages are re-put, so a crash between the
// re-put and the revive offset's flush re-puts nothing acknowledged; a checkpoint all of whose
// messages are acknowledged leaves the table once its acks are written.

// markDirtyLocked lists c among the checkpoints with acks to write, since now unless it is
// listed already. s.mu must be held.
func (s *Service) markDirtyLocked(c *checkpoint, now int64) {
	if !c.dirty {
		c.dirty, c.dirtyAt = true, now
		s.dirty = append(s.dirty, c)
	}
}

// dropIfDoneLocked takes c out of the table once all its messages are acknowledged and the
// acks written. s.mu must be held.
func (s *Service) dropIfDoneLocked(c *checkpoint) {
	if c.done() && c.unwritten == 0 && s.cks[c.key] == c {
		delete(s.cks, c.key)
	}
}

// putAcks writes the acks of c's messages at bits as one revive record: an "ack" for one
// message, a "bAck" (5.x's BatchAckMsg) for more.
func (s *Service) putAcks(c *checkpoint, bits uint32) error {
	var buf [maxPopNums]int64
	offs := buf[:0]
	for i, o := range c.offsets {
		if bits&(1<<i) != 0 {
			offs = append(offs, o)
		}
	}
	rec := ackRecord{StartOffset: c.key.start, Group: c.key.group, Topic: c.key.topic, QueueID: c.key.queueID,
		PopTime: c.key.popTime, BrokerName: s.brokerName}
	var err error
	if len(offs) == 1 {
		rec.AckOffset = offs[0]
		_, err = s.putRecord(c.reviveQid, ackTag, &rec)
	} else {
		rec.AckOffset = -1 // as 5.x's batch ack: the offsets are the list's
		_, err = s.putRecord(c.reviveQid, batchAckTag, &batchAckRecord{ackRecord: rec, AckOffsets: offs})
	}
	return err
}

// flushAcks writes the merged acks of every checkpoint whose first unwritten ack came at least
// age ms before now (every one when age is 0). A record the store does not take is tried
// again at the next flush.
func (s *Service) flushAcks(now, age int64) {
	type job struct {
		c    *checkpoint
		bits uint32
	}
	var jobs []job
	s.mu.Lock()
	keep := s.dirty[:0]
	for _, c := range s.dirty {
		switch {
		case c.unwritten == 0: // written by the revive loop meanwhile
			c.dirty = false
		case age > 0 && now-c.dirtyAt < age:
			keep = append(keep, c)
		default:
			jobs = append(jobs, job{c, c.unwritten})
			c.unwritten, c.dirty = 0, false
		}
	}
	clear(s.dirty[len(keep):])
	s.dirty = keep
	s.mu.Unlock()
	var failed int
	var lastErr error
	for _, j := range jobs {
		err := s.putAcks(j.c, j.bits)
		s.mu.Lock()
		if err != nil {
			failed++
			lastErr = err
			j.c.unwritten |= j.bits
			s.markDirtyLocked(j.c, now-age) // due again at the next flush
		} else {
			s.dropIfDoneLocked(j.c)
		}
		s.mu.Unlock()
	}
	if failed > 0 {
		s.log.Warn().Err(lastErr).Int("checkpoints", failed).Msg("merged pop acks not stored; trying again")
	}
}

// writeBuffered writes c's merged acks now, for the revive loop before it re-puts c's
// unacknowledged messages.
func (s *Service) writeBuffered(c *checkpoint) error {
	s.mu.Lock()
	bits := c.unwritten
	c.unwritten = 0
	s.mu.Unlock()
	if bits == 0 {
		return nil
	}
	if err := s.putAcks(c, bits); err != nil {
		s.mu.Lock()
		c.unwritten |= bits
		s.mu.Unlock()
		return err
	}
	return nil
}
