package pop

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
)

// replayBatch is how many revive-queue units one read looks at.
const replayBatch = 256

// propertyFirstPopTime is MessageConst.PROPERTY_FIRST_POP_TIME, set on a message's first
// return to the retry topic.
const propertyFirstPopTime = "1ST_POP_TIME"

// reviveOffset is where revive queue q's live records start.
func (s *Service) reviveOffset(q int32) int64 {
	off := s.b.Offsets().Query(reviveGroup, s.reviveTopic, q)
	return max(off, s.b.Store().MinOffsetInQueue(s.reviveTopic, q))
}

// replay rebuilds the checkpoint table from the revive topic, past each queue's revive
// offset, and raises each popped queue's offset past its replayed checkpoints.
func (s *Service) replay() error {
	st := s.b.Store()
	popped := map[ckKey]int64{} // (group, topic, queue) -> offset past the last popped message
	for q := range reviveQueueNum {
		end := st.MaxOffsetInQueue(s.reviveTopic, q)
		for off := s.reviveOffset(q); off < end; {
			units, err := st.ConsumeQueueUnits(s.reviveTopic, q, off, replayBatch)
			if err != nil {
				return fmt.Errorf("pop: read revive queue %d at %d: %w", q, off, err)
			}
			if len(units) == 0 {
				break
			}
			for _, u := range units {
				s.replayRecord(q, off, u, popped)
				off++
			}
		}
	}
	for k, next := range popped {
		if s.b.Offsets().Query(k.group, k.topic, k.queueID) < next {
			s.b.Offsets().Commit(k.group, k.topic, k.queueID, next)
		}
	}
	if n := len(s.cks); n > 0 {
		s.log.Info().Int("checkpoints", n).Msg("pop checkpoints replayed from the revive topic")
	}
	return nil
}

// replayRecord applies one revive record; one that does not read is logged and skipped.
func (s *Service) replayRecord(q int32, off int64, u storage.CQUnit, popped map[ckKey]int64) {
	var rec message.Record
	if err := s.b.Messages().Read(u.PhyOffset, &rec); err != nil {
		s.log.Warn().Err(err).Int32("revive_queue", q).Int64("offset", off).Msg("unreadable revive record skipped")
		return
	}
	switch recordTag(&rec) {
	case ckTag:
		var r ckRecord
		err := json.Unmarshal(rec.Body, &r)
		var c *checkpoint
		if err == nil {
			c, err = ckOf(&r, q, off)
		}
		if err != nil {
			s.log.Warn().Err(err).Int32("revive_queue", q).Int64("offset", off).Msg("bad checkpoint record skipped")
			return
		}
		s.cks[c.key] = c
		qk := ckKey{group: c.key.group, topic: c.key.topic, queueID: c.key.queueID}
		for _, o := range c.offsets {
			popped[qk] = max(popped[qk], o+1)
		}
	case ackTag, batchAckTag:
		var r batchAckRecord
		if err := json.Unmarshal(rec.Body, &r); err != nil {
			return
		}
		k := ckKey{group: r.Group, topic: r.Topic, queueID: r.QueueID, start: r.StartOffset, popTime: r.PopTime}
		c := s.cks[k]
		if c == nil {
			return
		}
		if len(r.AckOffsets) == 0 {
			r.AckOffsets = []int64{r.AckOffset}
		}
		for j, o := range r.AckOffsets {
			if j == maxPopNums {
				break // a checkpoint holds no more; the rest of a forged list is not read
			}
			if i := c.index(o); i >= 0 {
				c.acked |= 1 << i
			}
		}
		if c.done() {
			delete(s.cks, k)
		}
	}
}

// revive brings back the messages of every checkpoint whose invisible time passed by now,
// then moves the revive offsets.
func (s *Service) revive(now int64) {
	s.mu.Lock()
	var due []*checkpoint
	for k, c := range s.cks {
		if c.deadline() <= now {
			due = append(due, c)
			delete(s.cks, k)
		}
	}
	s.mu.Unlock()
	for _, c := range due {
		// Merged acks first: once c leaves the table the revive offset may pass its record,
		// and a crash before that offset is flushed replays c with the acks written only.
		err := s.writeBuffered(c)
		if err == nil {
			err = s.reviveOne(c)
		}
		if err != nil {
			// Kept for the next round: nothing is lost, a message may come back twice.
			s.log.Warn().Err(err).Str("group", c.key.group).Str("topic", c.key.topic).Msg("revive failed; retrying")
			s.mu.Lock()
			if _, ok := s.cks[c.key]; !ok {
				s.cks[c.key] = c
			}
			s.mu.Unlock()
		}
	}
	s.advance()
}

// reviveOne re-puts c's unacknowledged messages into the group's pop retry topic, or its
// dead-letter topic once a message was consumed retryMaxTimes times. It stops at the first
// failure; c's messages re-put before it may then be re-put again.
func (s *Service) reviveOne(c *checkpoint) error {
	cfg, ok := s.b.Groups().Find(c.key.group)
	maxTimes := int32(16)
	if ok {
		maxTimes = cfg.RetryMaxTimes
	}
	retryTopic := c.key.topic
	if !strings.HasPrefix(retryTopic, names.RetryPrefix) {
		retryTopic = protocol.PopRetryTopicV1(c.key.topic, c.key.group)
	}
	st := s.b.Store()
	for i, o := range c.offsets {
		if c.acked&(1<<i) != 0 {
			continue
		}
		units, err := st.ConsumeQueueUnits(c.key.topic, c.key.queueID, o, 1)
		if err != nil || len(units) == 0 {
			continue // gone with its file (retention): nothing to bring back
		}
		var rec message.Record
		if err := s.b.Messages().Read(units[0].PhyOffset, &rec); err != nil {
			continue
		}
		props := string(rec.Properties)
		if _, ok := message.PropertyValueString(props, propertyFirstPopTime); !ok {
			props = message.SetProperty(props, propertyFirstPopTime, strconv.FormatInt(c.key.popTime, 10))
		}
		target := retryTopic
		// A group and topic too long together for a retry topic name go to the dead letters.
		if rec.ReconsumeTimes >= maxTimes || names.CheckTopic(retryTopic) != nil {
			target = names.DLQTopic(c.key.group)
		}
		s.b.Topics().AddSystem(target, 1)
		m := (*storage.Message)(rec.Copy(target, 0, props))
		m.ReconsumeTimes = rec.ReconsumeTimes + 1
		m.StoreHost = s.b.Messages().StoreHost()
		m.BodyCRC = rec.BodyCRC
		m.SysFlag &^= message.TransactionRollbackType
		r, err := s.b.Messages().Put(m)
		if err != nil || !broker.PutStored(r.Status) {
			return fmt.Errorf("re-put of %s@%d:%d to %s: %s %v", c.key.topic, c.key.queueID, o, target, r.Status, err)
		}
		c.acked |= 1 << i // re-put: not again if a later message fails
		s.b.Messages().CountPut(target, 1, r.WroteBytes)
	}
	return nil
}

// advance moves each revive queue's offset to its oldest live checkpoint record, or its end.
// Holding every reviveMu keeps out the checkpoints being written.
func (s *Service) advance() {
	for q := range reviveQueueNum {
		s.reviveMu[q].Lock()
	}
	var low [reviveQueueNum]int64
	st := s.b.Store()
	for q := range reviveQueueNum {
		low[q] = st.MaxOffsetInQueue(s.reviveTopic, q)
	}
	s.mu.Lock()
	for _, c := range s.cks {
		low[c.reviveQid] = min(low[c.reviveQid], c.recOffset)
	}
	s.mu.Unlock()
	for q := range reviveQueueNum {
		s.reviveMu[q].Unlock()
	}
	// No stored offset reads as 0 (replay starts at the queue's head), so an idle broker never
	// commits and never dirties the offsets file.
	for q := range reviveQueueNum {
		if low[q] > max(s.b.Offsets().Query(reviveGroup, s.reviveTopic, q), 0) {
			s.b.Offsets().Commit(reviveGroup, s.reviveTopic, q, low[q])
		}
	}
}
