package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// CQUnitBytes is the size of a ConsumeQueue unit. Part of the format; do not change.
const CQUnitBytes = 20

// blankUnitSize is the SIZE of the units RocketMQ writes before the first real unit of a
// queue whose first file does not start at its first offset (fillPreBlank).
const blankUnitSize = math.MaxInt32

// maxQueueOffset bounds queue offsets so that byte positions (offset x 20) cannot overflow.
const maxQueueOffset = math.MaxInt64 / CQUnitBytes / 2

// CQUnit is one ConsumeQueue entry.
type CQUnit struct {
	PhyOffset int64 // CommitLog offset of the record
	Size      int32 // record size
	TagsCode  int64 // tag hash (§9.8) or, for delayed messages, the delivery time
}

// errUnitEmpty reports a unit never written (all zero). It wraps ErrNotFound.
var errUnitEmpty = fmt.Errorf("%w: empty consume queue unit", ErrNotFound)

// DecodeCQUnit decodes the 20-byte unit at the start of b. It never panics: a short input is
// an error. An all-zero unit (never written) is errUnitEmpty-wrapped ErrNotFound.
func DecodeCQUnit(b []byte) (CQUnit, error) {
	if len(b) < CQUnitBytes {
		return CQUnit{}, fmt.Errorf("consume queue unit: %d bytes, want %d", len(b), CQUnitBytes)
	}
	u := CQUnit{
		PhyOffset: int64(binary.BigEndian.Uint64(b)),
		Size:      int32(binary.BigEndian.Uint32(b[8:])),
		TagsCode:  int64(binary.BigEndian.Uint64(b[12:])),
	}
	if u.Size == 0 && u.PhyOffset == 0 && u.TagsCode == 0 {
		return u, errUnitEmpty
	}
	if u.PhyOffset < 0 || u.Size <= 0 {
		return u, fmt.Errorf("consume queue unit: offset %d size %d", u.PhyOffset, u.Size)
	}
	return u, nil
}

func putCQUnit(b []byte, u CQUnit) {
	binary.BigEndian.PutUint64(b, uint64(u.PhyOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(u.Size))
	binary.BigEndian.PutUint64(b[12:], uint64(u.TagsCode))
}

// consumeQueue is the index of one topic queue: unit i describes the message at queue offset
// i. Only the dispatcher (or recovery, before services run) writes; readers use maxOffset.
type consumeQueue struct {
	topic   string
	queueID int32
	segs    segmentList

	// maxOffset is the next queue offset to be written; minOffset the first readable one.
	maxOffset atomic.Int64
	minOffset atomic.Int64
	// maxPhyEnd is the CommitLog end (offset+size) of the last unit; written by the writer.
	maxPhyEnd atomic.Int64
	// removed is set when the queue is deleted (DeleteTopics).
	removed atomic.Bool
}

func (q *consumeQueue) unitsPerFile() int64 { return q.segs.segSize / CQUnitBytes }

// newConsumeQueue makes the queue of <root>/<topic>/<qid>; a topic or queue id that cannot be
// a path under root is refused (ErrUnsafeName, paths.go).
func newConsumeQueue(root, topic string, qid int32, units int, ops *fileOps) (*consumeQueue, error) {
	dir, err := queueDir(root, topic, qid)
	if err != nil {
		return nil, err
	}
	return &consumeQueue{
		topic:   topic,
		queueID: qid,
		segs: segmentList{
			dir:     dir,
			segSize: int64(units) * CQUnitBytes,
			ops:     ops,
			// Reserved as units are written (put): a queue with one message should not cost
			// a whole file of disk, or a flood of new topics fills the disk.
			prealloc: false,
		},
	}, nil
}

// load maps the queue's files and finds its write position; units pointing past maxPhy
// (the recovered CommitLog end) are cleared. It returns the number of units cleared and an
// error wrapping ErrCorrupt if the files are inconsistent (the caller rebuilds the queue).
func (q *consumeQueue) load(maxPhy int64, thorough bool) (cleared int, err error) {
	ext, err := q.segs.load()
	if err != nil {
		return 0, err
	}
	if len(ext) > 0 {
		// Files are created at full size (sparse), so a short one was cut: units past the
		// cut are gone, and a unit cut in two would read as a wrong one.
		return 0, corrupt(ext[0], 0, errors.New("file is shorter than a consume queue file: cut"))
	}
	segs := q.segs.snapshot()
	if len(segs) == 0 {
		return 0, nil
	}
	// Every file but the last must be full: a zero unit inside one means files are missing
	// or damaged.
	for _, s := range segs[:len(segs)-1] {
		if _, err := DecodeCQUnit(s.data[s.size-CQUnitBytes:]); err != nil {
			return 0, corrupt(s.path, s.size-CQUnitBytes, fmt.Errorf("last unit of a non-last file: %w", err))
		}
	}
	last := segs[len(segs)-1]
	pos := int64(0)
	for ; pos < last.size; pos += CQUnitBytes {
		_, err := DecodeCQUnit(last.data[pos:])
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return 0, corrupt(last.path, pos, err)
		}
	}
	// Nothing may follow the first empty unit (checked after a crash: it reads the whole
	// file, which a clean open need not).
	for p := pos; thorough && p < last.size; p += CQUnitBytes {
		if _, err := DecodeCQUnit(last.data[p:]); !errors.Is(err, ErrNotFound) {
			return 0, corrupt(last.path, p, errors.New("unit after the end of the queue"))
		}
	}
	for _, s := range segs {
		s.wrote.Store(s.size)
		s.flushed.Store(s.size)
	}
	last.wrote.Store(pos)
	last.flushed.Store(pos)
	q.maxOffset.Store((last.start + pos) / CQUnitBytes)
	// Drop units that point past the end of the CommitLog (a torn tail was cut).
	cleared = q.truncateByPhy(maxPhy)
	q.setMaxPhyEnd()
	return cleared, nil
}

// unit reads the unit at queue offset off.
func (q *consumeQueue) unit(off int64) (CQUnit, error) {
	s := q.segs.find(off * CQUnitBytes)
	if s == nil {
		return CQUnit{}, ErrNotFound
	}
	defer s.release()
	pos := off*CQUnitBytes - s.start
	if pos+CQUnitBytes > s.wrote.Load() {
		return CQUnit{}, ErrNotFound
	}
	u, err := DecodeCQUnit(s.data[pos:])
	if err != nil && !errors.Is(err, ErrNotFound) {
		return u, corrupt(s.path, pos, err)
	}
	return u, err
}

func (q *consumeQueue) setMaxPhyEnd() {
	max := q.maxOffset.Load()
	if max == 0 {
		q.maxPhyEnd.Store(0)
		return
	}
	u, err := q.unit(max - 1)
	if err != nil || u.Size == blankUnitSize {
		q.maxPhyEnd.Store(0)
		return
	}
	q.maxPhyEnd.Store(u.PhyOffset + int64(u.Size))
}

// truncateByPhy clears units whose record ends after maxPhy, from the end backwards.
func (q *consumeQueue) truncateByPhy(maxPhy int64) int {
	cleared := 0
	for {
		max := q.maxOffset.Load()
		if max <= q.minOffset.Load() || max == 0 {
			break
		}
		u, err := q.unit(max - 1)
		if err == nil && u.Size != blankUnitSize && u.PhyOffset+int64(u.Size) <= maxPhy {
			break
		}
		q.truncateTo(max - 1)
		cleared++
	}
	q.setMaxPhyEnd()
	return cleared
}

// truncateTo drops every unit at or after queue offset off.
func (q *consumeQueue) truncateTo(off int64) {
	byteOff := off * CQUnitBytes
	// Files starting at or after the cut go; the next put recreates what it needs.
	q.segs.removeFrom(byteOff)
	if s := q.segs.last(); s != nil && byteOff < s.end() {
		pos := byteOff - s.start
		if w := s.wrote.Load(); w > pos {
			clear(s.data[pos:w])
		}
		s.wrote.Store(pos)
		if s.flushed.Load() > pos {
			s.flushed.Store(pos)
		}
	}
	q.maxOffset.Store(off)
	if q.minOffset.Load() > off {
		q.minOffset.Store(off)
	}
}

// put writes the unit for queue offset off. It returns an error if off is not the next
// offset (a gap means missing data: the caller rebuilds the queue).
func (q *consumeQueue) put(off int64, u CQUnit) error {
	if off < 0 || off > maxQueueOffset || u.PhyOffset < 0 || u.Size <= 0 {
		return fmt.Errorf("consume queue %s/%d: impossible unit for offset %d: %+v", q.topic, q.queueID, off, u)
	}
	max := q.maxOffset.Load()
	if off != max {
		if max == 0 && q.segs.len() == 0 {
			// First unit of a queue whose earlier units are gone: start at its file.
			return q.putFirst(off, u)
		}
		return fmt.Errorf("consume queue %s/%d: unit for offset %d, queue ends at %d", q.topic, q.queueID, off, max)
	}
	byteOff := off * CQUnitBytes
	s := q.segs.last()
	if s == nil || s.wrote.Load() >= s.size {
		start := byteOff / q.segs.segSize * q.segs.segSize
		ns, err := q.segs.add(start)
		if err != nil {
			return err
		}
		s = ns
	}
	pos := byteOff - s.start
	if err := s.reserveTo(pos + CQUnitBytes); err != nil {
		return err
	}
	if invariants && (pos != s.wrote.Load() || u.PhyOffset < q.maxPhyEnd.Load()) {
		panic(fmt.Sprintf("storage: consume queue %s/%d: unit %d at byte %d (file written to %d), record at %d before the previous end %d",
			q.topic, q.queueID, off, pos, s.wrote.Load(), u.PhyOffset, q.maxPhyEnd.Load()))
	}
	putCQUnit(s.data[pos:], u)
	s.wrote.Store(pos + CQUnitBytes)
	q.maxPhyEnd.Store(u.PhyOffset + int64(u.Size))
	q.maxOffset.Store(off + 1)
	return nil
}

// putFirst starts an empty queue at offset off, filling the units before it in its file with
// blank units (RocketMQ fillPreBlank).
func (q *consumeQueue) putFirst(off int64, u CQUnit) error {
	if err := q.startAt(off); err != nil {
		return err
	}
	return q.put(off, u)
}

// startAt makes the empty queue start at offset off: its file is created with blank units
// before off.
func (q *consumeQueue) startAt(off int64) error {
	byteOff := off * CQUnitBytes
	start := byteOff / q.segs.segSize * q.segs.segSize
	s, err := q.segs.add(start)
	if err != nil {
		return err
	}
	if err := s.reserveTo(byteOff - start + CQUnitBytes); err != nil {
		return err
	}
	for p := int64(0); p < byteOff-start; p += CQUnitBytes {
		putCQUnit(s.data[p:], CQUnit{PhyOffset: 0, Size: blankUnitSize})
	}
	s.wrote.Store(byteOff - start)
	q.minOffset.Store(off)
	q.maxOffset.Store(off)
	return nil
}

// restartAt empties the queue and makes off its next offset (recovery: the records of the
// units it lost are deleted, but their offsets were handed out).
func (q *consumeQueue) restartAt(off int64) error {
	if err := q.segs.removeAll(); err != nil {
		return err
	}
	q.maxOffset.Store(0)
	q.minOffset.Store(0)
	q.maxPhyEnd.Store(0)
	return q.startAt(off)
}

// correctMinOffset sets minOffset to the first unit whose record is at or after minPhy
// (records before it were deleted by retention).
func (q *consumeQueue) correctMinOffset(minPhy int64) {
	s := q.segs.first()
	if s == nil {
		q.minOffset.Store(q.maxOffset.Load())
		return
	}
	if !s.acquire() {
		return
	}
	defer s.release()
	lo := s.start / CQUnitBytes
	if cur := q.minOffset.Load(); cur > lo {
		lo = cur
	}
	max := q.maxOffset.Load()
	for off := lo; off < max; off++ {
		if off*CQUnitBytes >= s.start+s.wrote.Load() {
			// Whole first file is behind: the next file's start.
			q.minOffset.Store(off)
			return
		}
		u, err := DecodeCQUnit(s.data[off*CQUnitBytes-s.start:])
		if err == nil && u.Size != blankUnitSize && u.PhyOffset >= minPhy {
			q.minOffset.Store(off)
			return
		}
	}
	q.minOffset.Store(max)
}

// flushLeast makes written units durable in the files with at least least bytes written
// since their last flush. It returns the CommitLog offset of the first unit it left
// unflushed, or -1 when none is.
func (q *consumeQueue) flushLeast(least int64) (floor int64, err error) {
	floor = -1
	for _, s := range q.segs.snapshot() {
		flushed, wrote := s.flushed.Load(), s.wrote.Load()
		if flushed >= wrote || !s.acquire() {
			continue
		}
		if wrote-flushed < least {
			if floor < 0 {
				floor = firstRealUnit(s.data[flushed:wrote])
			}
			s.release()
			continue
		}
		err = s.flush()
		s.release()
		if err != nil {
			return floor, err
		}
	}
	return floor, nil
}

// firstRealUnit returns the CommitLog offset of the first unit in b that is not a blank
// (fillPreBlank) one, or 0 when it cannot tell: a checkpoint must then claim nothing.
func firstRealUnit(b []byte) int64 {
	for p := 0; p+CQUnitBytes <= len(b); p += CQUnitBytes {
		u, err := DecodeCQUnit(b[p:])
		if err != nil {
			return 0
		}
		if u.Size != blankUnitSize {
			return u.PhyOffset
		}
	}
	return 0
}

// deleteBehind removes files whose every unit points before minPhy, never the last file.
func (q *consumeQueue) deleteBehind(minPhy int64) (removed int) {
	for {
		segs := q.segs.snapshot()
		if len(segs) < 2 {
			break
		}
		s := segs[0]
		if !s.acquire() {
			break // the queue is being deleted
		}
		u, err := DecodeCQUnit(s.data[s.size-CQUnitBytes:])
		s.release()
		if err != nil || u.PhyOffset+int64(u.Size) > minPhy {
			break
		}
		q.segs.removeFirst()
		removed++
	}
	q.correctMinOffset(minPhy)
	return removed
}

// queueTable holds the ConsumeQueues by topic and queue id.
type queueTable struct {
	root  string
	units int
	ops   *fileOps

	mu     sync.RWMutex
	queues map[string]map[int32]*consumeQueue // mu guards

	// unsafeSkipped counts records not dispatched because their topic is not a safe path;
	// unsafeLoggedAt is when that was last logged (the store's dispatchMu guards it).
	unsafeSkipped  atomic.Int64
	unsafeLoggedAt time.Time
}

// get returns the queue, or nil. topic may be a converted byte slice: the lookup does not
// allocate.
func (t *queueTable) get(topic string, qid int32) *consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.queues[topic][qid]
}

func (t *queueTable) getBytes(topic []byte, qid int32) *consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.queues[string(topic)][qid]
}

// getOrCreate returns the queue, creating an empty one; it refuses (ErrUnsafeName) a topic or
// queue id that cannot be a path under the store directory.
func (t *queueTable) getOrCreate(topic string, qid int32) (*consumeQueue, error) {
	if q := t.get(topic, qid); q != nil {
		return q, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if q := t.queues[topic][qid]; q != nil {
		return q, nil
	}
	q, err := newConsumeQueue(t.root, topic, qid, t.units, t.ops)
	if err != nil {
		return nil, err
	}
	m := t.queues[topic]
	if m == nil {
		m = make(map[int32]*consumeQueue)
		t.queues[topic] = m
	}
	m[qid] = q
	return q, nil
}

func (t *queueTable) all() []*consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*consumeQueue
	for _, m := range t.queues {
		for _, q := range m {
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].queueID < out[j].queueID
	})
	return out
}

// discover lists topic/queue directories on disk.
func (t *queueTable) discover() ([]*consumeQueue, error) {
	topics, err := os.ReadDir(t.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*consumeQueue
	for _, te := range topics {
		if !te.IsDir() {
			continue
		}
		qs, err := os.ReadDir(filepath.Join(t.root, te.Name()))
		if err != nil {
			return nil, err
		}
		for _, qe := range qs {
			qid, err := strconv.ParseInt(qe.Name(), 10, 32)
			if !qe.IsDir() || err != nil {
				continue
			}
			q, err := t.getOrCreate(te.Name(), int32(qid))
			if err != nil {
				continue // not a name the store could have made (a reserved device name)
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// detach drops a queue from the table, leaving its files.
func (t *queueTable) detach(q *consumeQueue) {
	t.mu.Lock()
	if m := t.queues[q.topic]; m != nil && m[q.queueID] == q {
		delete(m, q.queueID)
		if len(m) == 0 {
			delete(t.queues, q.topic)
		}
	}
	t.mu.Unlock()
}

// removeFiles deletes a detached queue's files and directories.
func (q *consumeQueue) removeFiles() error {
	q.removed.Store(true)
	err := q.segs.removeAll()
	os.Remove(q.segs.dir)
	os.Remove(filepath.Dir(q.segs.dir))
	return err
}
