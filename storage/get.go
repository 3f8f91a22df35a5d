package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mqgo/mq/internal/message"
)

// GetStatus is the outcome of GetMessage (RocketMQ GetMessageStatus).
type GetStatus int

// Get statuses; String gives RocketMQ's names. docs/protocol.md §5.6 maps them to pull responses.
const (
	Found               GetStatus = iota // messages returned
	NoMatchedMessage                     // units scanned, none passed the filter
	MessageWasRemoving                   // units point to CommitLog data being deleted
	OffsetFoundNull                      // the ConsumeQueue file holding offset is gone
	OffsetOverflowBadly                  // offset > max offset
	OffsetOverflowOne                    // offset == max offset: nothing new yet
	OffsetTooSmall                       // offset < min offset
	NoMatchedLogicQueue                  // no such topic/queue
	NoMessageInQueue                     // the queue is empty
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING",
	"OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL",
	"NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

func (s GetStatus) String() string {
	if int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return fmt.Sprintf("GetStatus(%d)", int(s))
}

// Filter decides which messages a pull returns; the broker builds one from the subscription.
// A nil Filter matches everything.
type Filter interface {
	// IsMatchedByConsumeQueue is asked first, with the unit's tag code.
	IsMatchedByConsumeQueue(tagsCode int64) bool
	// IsMatchedByCommitLog is asked for messages that passed the first test, with the whole
	// stored record (valid only during the call).
	IsMatchedByCommitLog(record []byte) bool
}

// GetResult is the answer to GetMessage. Messages are the stored records, unchanged: slices
// of the mapped CommitLog segments. They stay valid until Release, which must be called
// exactly once (also for results without messages); after it the result must not be used.
type GetResult struct {
	Status GetStatus
	// NextBeginOffset is where the consumer's next pull starts (docs/protocol.md §5.6).
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Messages are the raw records; QueueOffsets their queue offsets.
	Messages     [][]byte
	QueueOffsets []int64
	// TotalBytes is the sum of len(Messages[i]).
	TotalBytes int
	// SuggestPullingFromSlave is set when the messages lie so far behind the log's end that
	// they are likely not in memory (more than AccessMessageInMemoryMaxRatio percent of RAM):
	// the broker may suggest a slave for the next pull (docs/protocol.md §5.6
	// suggestWhichBrokerId).
	SuggestPullingFromSlave bool

	segs []*segment
}

var getResultPool = sync.Pool{New: func() any { return new(GetResult) }}

// Release gives back the mapped segments the messages point into.
func (r *GetResult) Release() {
	for _, s := range r.segs {
		s.release()
	}
	clear(r.Messages)
	clear(r.segs)
	*r = GetResult{Messages: r.Messages[:0], QueueOffsets: r.QueueOffsets[:0], segs: r.segs[:0]}
	getResultPool.Put(r)
}

// correct applies RocketMQ's nextOffsetCorrection: a slave echoes the requested offset.
func (s *Store) correct(old, next int64) int64 {
	if !s.opts.Slave || s.opts.OffsetCheckInSlave {
		return next
	}
	return old
}

// maxScanUnits bounds the units scanned per GetMessage when filtering skips many
// (RocketMQ: max(16000 bytes, maxMsgNums*20) of units).
func maxScanUnits(maxMsgs int) int64 { return int64(max(16000, maxMsgs*CQUnitBytes) / CQUnitBytes) }

// GetMessage reads up to maxMsgs messages (at least one; <= 0 means 1) of at most maxBytes in
// total (0 means Options.MaxTransferBytes; the first message is returned whatever its size)
// from (topic, queueID) starting at queue offset offset, skipping those the filter rejects.
// group is for the caller's bookkeeping. The result must be released.
func (s *Store) GetMessage(group, topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter Filter) *GetResult {
	r := getResultPool.Get().(*GetResult)
	r.NextBeginOffset = offset
	if s.closed.Load() {
		r.Status = NoMatchedLogicQueue
		return r
	}
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	if maxBytes <= 0 {
		maxBytes = s.opts.MaxTransferBytes
	}
	q := s.cqs.get(topic, queueID)
	if q == nil && offset > 0 && s.writtenUpTo(topic, queueID, offset) {
		r.Status = OffsetOverflowOne
		return r
	}
	if q == nil {
		r.Status = NoMatchedLogicQueue
		r.NextBeginOffset = s.correct(offset, 0)
		return r
	}
	minOff, maxOff := q.minOffset.Load(), q.maxOffset.Load()
	r.MinOffset, r.MaxOffset = minOff, maxOff
	switch {
	case offset > maxOff && s.writtenUpTo(topic, queueID, offset):
		r.Status = OffsetOverflowOne
		r.NextBeginOffset = s.correct(offset, offset)
		return r
	case maxOff == 0:
		r.Status = NoMessageInQueue
		r.NextBeginOffset = s.correct(offset, 0)
		return r
	case offset < minOff:
		r.Status = OffsetTooSmall
		r.NextBeginOffset = s.correct(offset, minOff)
		return r
	case offset == maxOff:
		r.Status = OffsetOverflowOne
		r.NextBeginOffset = s.correct(offset, offset)
		return r
	case offset > maxOff:
		r.Status = OffsetOverflowBadly
		if minOff == 0 {
			r.NextBeginOffset = s.correct(offset, minOff)
		} else {
			r.NextBeginOffset = s.correct(offset, maxOff)
		}
		return r
	}
	s.readQueue(r, q, offset, maxOff, maxMsgs, maxBytes, filter)
	return r
}

// writtenUpTo reports whether the queue's messages before offset are all in the CommitLog,
// some not yet dispatched: dispatching waits for their fsync (SYNC_FLUSH) or the confirm
// offset. A consumer may hold such an offset, having read the messages from a slave whose
// fsync returned first; it is not past the data, so a pull there is "not yet", where RocketMQ
// would send the consumer back to the queue's start (docs/rocketmq-differences.md).
//
// Only while dispatching lags the log end is anything written but not visible: otherwise the
// answer is no without the append lock, which a flood of pulls at bogus offsets must not take.
func (s *Store) writtenUpTo(topic string, queueID int32, offset int64) bool {
	if s.reputFrom.Load() >= s.cl.maxPhy.Load() {
		return false
	}
	return offset <= s.WrittenOffsetInQueue(topic, queueID)
}

// readQueue fills r from the ConsumeQueue units at [offset, maxOff).
func (s *Store) readQueue(r *GetResult, q *consumeQueue, offset, maxOff int64, maxMsgs, maxBytes int, filter Filter) {
	cqSeg := q.segs.find(offset * CQUnitBytes)
	if cqSeg == nil {
		// The file holding offset is gone: continue at the next file.
		r.Status = OffsetFoundNull
		per := q.unitsPerFile()
		r.NextBeginOffset = s.correct(offset, (offset/per+1)*per)
		return
	}
	defer cqSeg.release()
	r.Status = NoMatchedMessage
	minPhy := s.cl.minPhy.Load()
	end := min(maxOff, (cqSeg.start+cqSeg.wrote.Load())/CQUnitBytes, offset+maxScanUnits(maxMsgs))
	var cur *segment // CommitLog segment of the last message, held by r
	next := offset
	lastPhy := s.cl.maxPhy.Load()
	for ; next < end; next++ {
		u, err := DecodeCQUnit(cqSeg.data[next*CQUnitBytes-cqSeg.start:])
		if err != nil || u.Size == blankUnitSize {
			continue
		}
		lastPhy = u.PhyOffset
		if u.PhyOffset < minPhy {
			if len(r.Messages) == 0 {
				r.Status = MessageWasRemoving
			}
			continue
		}
		if len(r.Messages) > 0 && (len(r.Messages) >= maxMsgs || r.TotalBytes+int(u.Size) > maxBytes) {
			break
		}
		if filter != nil && !filter.IsMatchedByConsumeQueue(u.TagsCode) {
			continue
		}
		if cur == nil || u.PhyOffset < cur.start || u.PhyOffset >= cur.end() {
			cur = s.cl.segs.find(u.PhyOffset)
			if cur == nil {
				if len(r.Messages) == 0 {
					r.Status = MessageWasRemoving
				}
				continue
			}
			r.segs = append(r.segs, cur)
		}
		pos := u.PhyOffset - cur.start
		if pos+int64(u.Size) > cur.wrote.Load() {
			if len(r.Messages) == 0 {
				r.Status = MessageWasRemoving
			}
			continue
		}
		rec := cur.data[pos : pos+int64(u.Size) : pos+int64(u.Size)]
		if !unitMatchesRecord(rec, u, next) {
			// A damaged unit must not send a consumer bytes that are not its message.
			s.badUnits.Add(1)
			continue
		}
		if filter != nil && !filter.IsMatchedByCommitLog(rec) {
			continue
		}
		r.Messages = append(r.Messages, rec)
		r.QueueOffsets = append(r.QueueOffsets, next)
		r.TotalBytes += len(rec)
	}
	if len(r.Messages) > 0 {
		r.Status = Found
	}
	r.SuggestPullingFromSlave = s.memBytes > 0 && s.cl.maxPhy.Load()-lastPhy > s.memBytes
	r.NextBeginOffset = next
}

// unitMatchesRecord checks, cheaply, that rec is the record the unit for queue offset off
// describes: size, magic and queue offset agree.
func unitMatchesRecord(rec []byte, u CQUnit, off int64) bool {
	return len(rec) >= message.MinRecordBytes && int32(be32(rec)) == u.Size &&
		int32(be32(rec[message.OffMagic:])) == message.MagicCode &&
		int64(binary.BigEndian.Uint64(rec[message.OffQueueOffset:])) == off
}

// MaxOffsetInQueue returns the queue offset one past the last message (0 if the queue does not
// exist).
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if q := s.cqs.get(topic, queueID); q != nil {
		return q.maxOffset.Load()
	}
	return 0
}

// WrittenOffsetInQueue returns the queue offset past the queue's last message in the
// CommitLog, dispatched or not: MaxOffsetInQueue until dispatching catches up with the log
// (RocketMQ's getMaxOffsetInQueue with committed false). A slave's appends, copied bytes,
// are counted only once dispatched.
func (s *Store) WrittenOffsetInQueue(topic string, queueID int32) int64 {
	s.cl.mu.Lock()
	next := s.cl.nextQueueOffsetLocked(topic, queueID)
	s.cl.mu.Unlock()
	return max(next, s.MaxOffsetInQueue(topic, queueID))
}

// MinOffsetInQueue returns the smallest queue offset still readable (0 if none).
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	if q := s.cqs.get(topic, queueID); q != nil {
		return q.minOffset.Load()
	}
	return 0
}

// ConsumeQueueUnits returns copies of up to max units of a queue from queue offset offset (the
// scheduled-message service reads delivery times from the tag codes this way). Units of a
// blank prefix have Size 0x7FFFFFFF.
func (s *Store) ConsumeQueueUnits(topic string, queueID int32, offset int64, max int) ([]CQUnit, error) {
	q := s.cqs.get(topic, queueID)
	if q == nil {
		return nil, ErrNotFound
	}
	end := min(q.maxOffset.Load(), offset+int64(max))
	if offset < q.minOffset.Load() || offset >= end {
		return nil, ErrNotFound
	}
	var out []CQUnit
	for off := offset; off < end; off++ {
		u, err := q.unit(off)
		if err != nil {
			if len(out) > 0 {
				break
			}
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// GetCommitLogOffsetInQueue returns the CommitLog offset of the message at a queue offset.
func (s *Store) GetCommitLogOffsetInQueue(topic string, queueID int32, offset int64) (int64, error) {
	q := s.cqs.get(topic, queueID)
	if q == nil || offset < q.minOffset.Load() || offset >= q.maxOffset.Load() {
		return 0, ErrNotFound
	}
	u, err := q.unit(offset)
	if err != nil {
		return 0, err
	}
	return u.PhyOffset, nil
}

// InMemory reports whether the message at a queue offset lies within the CommitLog's last
// AccessMessageInMemoryMaxRatio percent of physical memory, so is likely in the page cache
// (DefaultMessageStore.checkInMemByConsumeOffset). False when the queue has no such message;
// true when the memory size is unknown.
func (s *Store) InMemory(topic string, queueID int32, offset int64) bool {
	phy, err := s.GetCommitLogOffsetInQueue(topic, queueID, offset)
	if err != nil {
		return false
	}
	return s.memBytes <= 0 || s.cl.maxPhy.Load()-phy <= s.memBytes
}

// storeTimestampAt returns the store time of the record at phyOffset.
func (s *Store) storeTimestampAt(phyOffset int64) (int64, error) {
	sg, b, err := s.cl.readRecord(phyOffset)
	if err != nil {
		return 0, err
	}
	defer sg.release()
	return recordStoreTimestamp(b)
}

// GetOffsetInQueueByTime returns the queue offset of the earliest message stored at or after
// timestamp (ms), by binary search over the queue; the max offset if every message is older.
func (s *Store) GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64 {
	q := s.cqs.get(topic, queueID)
	if q == nil {
		return 0
	}
	lo, hi := q.minOffset.Load(), q.maxOffset.Load()
	// Find the first offset in [lo, hi) whose store time >= timestamp. Unreadable units
	// count as older (they precede readable ones).
	n := sort.Search(int(hi-lo), func(i int) bool {
		u, err := q.unit(lo + int64(i))
		if err != nil || u.Size == blankUnitSize {
			return false
		}
		ts, err := s.storeTimestampAt(u.PhyOffset)
		return err == nil && ts >= timestamp
	})
	return lo + int64(n)
}

// GetEarliestMessageTime returns the store time of the first readable message of a queue.
func (s *Store) GetEarliestMessageTime(topic string, queueID int32) (int64, error) {
	off, err := s.GetCommitLogOffsetInQueue(topic, queueID, s.MinOffsetInQueue(topic, queueID))
	if err != nil {
		return 0, err
	}
	return s.storeTimestampAt(off)
}

// GetMessageStoreTimestamp returns the store time of the message at a queue offset.
func (s *Store) GetMessageStoreTimestamp(topic string, queueID int32, offset int64) (int64, error) {
	off, err := s.GetCommitLogOffsetInQueue(topic, queueID, offset)
	if err != nil {
		return 0, err
	}
	return s.storeTimestampAt(off)
}

// LookMessageByOffset returns a copy of the record at a CommitLog offset (VIEW_MESSAGE_BY_ID),
// validated: a damaged record is an error wrapping ErrCorrupt naming file and offset.
func (s *Store) LookMessageByOffset(phyOffset int64) ([]byte, error) {
	sg, b, err := s.cl.readRecord(phyOffset)
	if err != nil {
		return nil, err
	}
	defer sg.release()
	var rec message.Record
	if _, err := message.DecodeRecord(b, &rec, true); err != nil {
		return nil, corrupt(sg.path, phyOffset-sg.start, err)
	}
	if rec.PhysicalOffset != phyOffset {
		return nil, corrupt(sg.path, phyOffset-sg.start, fmt.Errorf("record says physical offset %d", rec.PhysicalOffset))
	}
	return append([]byte(nil), b...), nil
}

// QueryResult is the answer to QueryMessage: copies of the matching records.
type QueryResult struct {
	Messages [][]byte
	// IndexLastUpdateTimestamp and IndexLastUpdatePhyOffset are what QUERY_MESSAGE answers in
	// its response header.
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64
}

// QueryMessage finds up to maxNum messages of topic whose KEYS contain key, or whose UNIQ_KEY
// is key, stored within [begin, end] ms (QUERY_MESSAGE). Index hits are verified against the
// records, so hash collisions and entries past a recovered log's end are dropped.
func (s *Store) QueryMessage(topic, key string, maxNum int, begin, end int64) (QueryResult, error) {
	var res QueryResult
	if s.idx == nil {
		return res, errors.New("storage: the message index is disabled")
	}
	if maxNum <= 0 {
		maxNum = 64
	}
	res.IndexLastUpdatePhyOffset = s.reputFrom.Load()
	res.IndexLastUpdateTimestamp = s.lastCQTs.Load()
	seen := make(map[int64]bool)
	for _, off := range s.idx.query(topic, key, maxNum*4, begin, end) {
		if seen[off] || len(res.Messages) >= maxNum {
			continue
		}
		seen[off] = true
		b, err := s.LookMessageByOffset(off)
		if err != nil {
			continue
		}
		var rec message.Record
		if _, err := message.DecodeRecord(b, &rec, false); err != nil || string(rec.Topic) != topic ||
			rec.StoreTimestamp < begin || rec.StoreTimestamp > end || !hasKey(rec.Properties, key) {
			continue
		}
		res.Messages = append(res.Messages, b)
	}
	return res, nil
}

func hasKey(props []byte, key string) bool {
	if v, ok := message.PropertyValue(props, message.PropertyUniqKey); ok && string(v) == key {
		return true
	}
	if v, ok := message.PropertyValue(props, message.PropertyKeys); ok {
		for _, k := range strings.Fields(string(v)) {
			if k == key {
				return true
			}
		}
	}
	return false
}

// CommitLogView is a range of CommitLog bytes for replication. Data stays valid until Release.
type CommitLogView struct {
	Offset int64
	Data   []byte
	seg    *segment
}

// Release gives back the mapped segment.
func (v *CommitLogView) Release() {
	if v.seg != nil {
		v.seg.release()
		v.seg = nil
	}
}

// ReadCommitLog returns up to maxBytes of CommitLog bytes from offset, within one segment,
// blank records included (a slave writes them at the same offsets). Empty Data means offset
// is at the log's end. offset below MinPhyOffset is ErrNotFound.
func (s *Store) ReadCommitLog(offset int64, maxBytes int) (*CommitLogView, error) {
	sg, b, err := s.cl.readRange(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	return &CommitLogView{Offset: offset, Data: b, seg: sg}, nil
}

// QueueInfo describes one ConsumeQueue.
type QueueInfo struct {
	Topic     string
	QueueID   int32
	MinOffset int64
	MaxOffset int64
}

// Queues lists every ConsumeQueue, sorted by topic and queue id.
func (s *Store) Queues() []QueueInfo {
	var out []QueueInfo
	for _, q := range s.cqs.all() {
		out = append(out, QueueInfo{Topic: q.topic, QueueID: q.queueID,
			MinOffset: q.minOffset.Load(), MaxOffset: q.maxOffset.Load()})
	}
	return out
}

// DeleteTopics removes the ConsumeQueues (and queue offsets) of the topics. Their records
// stay in the CommitLog until retention deletes the segments.
//
// The manifest without them is written before their files go: a crash in between must not
// make the next Open see their missing directories as damage and rebuild them.
func (s *Store) DeleteTopics(topics ...string) error {
	var errs []error
	s.dispatchMu.Lock()
	var drop []*consumeQueue
	for _, t := range topics {
		for _, q := range s.cqs.all() {
			if q.topic == t {
				s.cqs.detach(q)
				drop = append(drop, q)
			}
		}
	}
	if len(drop) > 0 {
		s.ckptMu.Lock()
		m := &s.manifestScratch
		m.queues = m.queues[:0]
		for _, q := range s.cqs.all() {
			m.addQueue(q)
		}
		errs = append(errs, s.writeManifestLocked(true))
		s.ckptMu.Unlock()
	}
	for _, q := range drop {
		errs = append(errs, q.removeFiles())
	}
	s.dispatchMu.Unlock()
	for _, t := range topics {
		s.cl.mu.Lock()
		delete(s.cl.queueOffsets, t)
		s.cl.mu.Unlock()
	}
	return errors.Join(errs...)
}

// EarliestMessageTime returns the store time of the first message still in the CommitLog.
func (s *Store) EarliestMessageTime() (int64, error) {
	off := s.cl.minPhy.Load()
	sg := s.cl.segs.find(off)
	if sg == nil {
		return 0, ErrNotFound
	}
	pos := off - sg.start
	if sg.wrote.Load()-pos < message.MinRecordBytes {
		sg.release()
		return 0, ErrNotFound
	}
	sg.release()
	return s.storeTimestampAt(off)
}
