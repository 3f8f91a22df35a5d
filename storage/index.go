package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/rs/zerolog"
)

// Index file layout (RocketMQ IndexFile). Part of the format; do not change.
//
//	header (40 bytes):
//	  0 beginTimestamp int64   8 endTimestamp int64   16 beginPhyOffset int64
//	 24 endPhyOffset   int64  32 hashSlotCount int32  36 indexCount int32 (starts at 1)
//	slots: hashSlotNum x int32    the latest entry number of keys hashing to the slot
//	entries: indexNum x 20 bytes  keyHash int32, phyOffset int64, timeDiff int32 (seconds
//	                              since beginTimestamp), prevIndex int32 (chain in the slot)
const (
	indexHeaderBytes = 40
	indexEntryBytes  = 20
	indexSlotBytes   = 4
)

// indexFile is one mapped index file, named by its creation time (yyyyMMddHHmmssSSS).
type indexFile struct {
	seg      *segment
	slotNum  int
	entryNum int
	// Header fields mirrored from the mapping. indexService.mu guards them.
	beginTs, endTs   int64
	beginPhy, endPhy int64
	slotCount, count int32
	// dirty is set by put and cleared by flush. indexService.mu guards it.
	dirty bool
}

func (f *indexFile) readHeader() {
	b := f.seg.data
	be := binary.BigEndian
	f.beginTs = int64(be.Uint64(b[0:]))
	f.endTs = int64(be.Uint64(b[8:]))
	f.beginPhy = int64(be.Uint64(b[16:]))
	f.endPhy = int64(be.Uint64(b[24:]))
	f.slotCount = int32(be.Uint32(b[32:]))
	f.count = int32(be.Uint32(b[36:]))
}

func (f *indexFile) writeHeader() {
	b := f.seg.data
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(f.beginTs))
	be.PutUint64(b[8:], uint64(f.endTs))
	be.PutUint64(b[16:], uint64(f.beginPhy))
	be.PutUint64(b[24:], uint64(f.endPhy))
	be.PutUint32(b[32:], uint32(f.slotCount))
	be.PutUint32(b[36:], uint32(f.count))
}

func (f *indexFile) full() bool { return int(f.count) >= f.entryNum }

// keyHash is RocketMQ's indexKeyHashMethod of topic#key: |String.hashCode|, 0 for MIN_VALUE.
func keyHash(topic, key []byte) int32 {
	h := message.JavaHashContinue(message.JavaHashContinue(message.JavaBytesHash(topic), []byte{'#'}), key)
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

// put adds one entry. indexService.mu must be held.
func (f *indexFile) put(h int32, phy, ts int64) {
	be := binary.BigEndian
	b := f.seg.data
	slotPos := indexHeaderBytes + int(h)%f.slotNum*indexSlotBytes
	prev := int32(be.Uint32(b[slotPos:]))
	if prev <= 0 || prev >= f.count {
		prev = 0 // never chain an entry to itself (see repairTornPut)
	}
	if f.count <= 1 {
		f.beginTs, f.beginPhy = ts, phy
	}
	diff := (ts - f.beginTs) / 1000
	if diff < 0 {
		diff = 0
	}
	if diff > int64(^uint32(0)>>1) {
		diff = int64(^uint32(0) >> 1)
	}
	pos := indexHeaderBytes + f.slotNum*indexSlotBytes + int(f.count)*indexEntryBytes
	be.PutUint32(b[pos:], uint32(h))
	be.PutUint64(b[pos+4:], uint64(phy))
	be.PutUint32(b[pos+12:], uint32(diff))
	be.PutUint32(b[pos+16:], uint32(prev))
	be.PutUint32(b[slotPos:], uint32(f.count))
	if prev == 0 {
		f.slotCount++
	}
	f.count++
	f.endPhy, f.endTs = phy, ts
	f.writeHeader()
	f.dirty = true
}

// repairTornPut undoes what a put killed part-way leaves for later puts to follow. put
// writes its entry, then points the slot at it, then counts it in the header: killed between
// the last two, the slot names the uncounted entry at count, whose prev holds the chain's
// real head. Re-dispatch then indexes the record again. Called by load.
func (f *indexFile) repairTornPut() {
	if f.full() {
		return
	}
	be := binary.BigEndian
	b := f.seg.data
	pos := indexHeaderBytes + f.slotNum*indexSlotBytes + int(f.count)*indexEntryBytes
	h := int32(be.Uint32(b[pos:]))
	if h < 0 {
		return
	}
	slotPos := indexHeaderBytes + int(h)%f.slotNum*indexSlotBytes
	if int32(be.Uint32(b[slotPos:])) != f.count {
		return
	}
	prev := int32(be.Uint32(b[pos+16:]))
	if prev <= 0 || prev >= f.count {
		prev = 0
	}
	be.PutUint32(b[slotPos:], uint32(prev))
	f.dirty = true
}

// lookup appends the offsets of entries with hash h stored within [begin, end] ms.
// indexService.mu must be held (read).
func (f *indexFile) lookup(out []int64, h int32, begin, end int64, max int) []int64 {
	be := binary.BigEndian
	b := f.seg.data
	slotPos := indexHeaderBytes + int(h)%f.slotNum*indexSlotBytes
	idx := int32(be.Uint32(b[slotPos:]))
	for steps := 0; idx > 0 && idx < f.count && len(out) < max && steps < f.entryNum; steps++ {
		pos := indexHeaderBytes + f.slotNum*indexSlotBytes + int(idx)*indexEntryBytes
		eh := int32(be.Uint32(b[pos:]))
		phy := int64(be.Uint64(b[pos+4:]))
		ts := f.beginTs + int64(int32(be.Uint32(b[pos+12:])))*1000
		prev := int32(be.Uint32(b[pos+16:]))
		// Timestamps are kept in whole seconds: widen the window by one second at each end.
		if eh == h && ts >= begin-999 && ts <= end {
			out = append(out, phy)
		}
		if prev >= idx {
			break
		}
		idx = prev
	}
	return out
}

// indexService keeps the index files and answers key lookups.
type indexService struct {
	dir      string
	slotNum  int
	entryNum int
	ops      *fileOps
	log      zerolog.Logger
	clock    func() time.Time

	mu    sync.RWMutex
	files []*indexFile // mu guards; oldest first
	// skipUpTo is the last CommitLog offset known indexed; re-dispatch after a crash skips
	// records up to it. mu guards it. After load it is before the last record the index
	// names: a crash may have cut that record's keys short, so it is indexed again (query
	// drops the duplicate offsets).
	skipUpTo int64
}

func (x *indexService) fileBytes() int64 {
	return int64(indexHeaderBytes + x.slotNum*indexSlotBytes + x.entryNum*indexEntryBytes)
}

// load maps existing index files; damaged ones are removed and reported.
func (x *indexService) load() (removed []string, err error) {
	x.skipUpTo = -1
	ents, err := os.ReadDir(x.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && len(e.Name()) == 17 {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(x.dir, n)
		s, ext, err := openSegment(path, 0, x.fileBytes(), x.ops)
		if err == nil && ext {
			// Index files are created at full size: a short one was cut, its entries lost.
			s.release()
			err = corrupt(path, 0, errors.New("index file is short: cut"))
		}
		if errors.Is(err, ErrCorrupt) {
			x.log.Warn().Str("file", path).Err(err).Msg("removing damaged index file")
			os.Remove(path)
			removed = append(removed, path)
			continue
		}
		if err != nil {
			return removed, err
		}
		f := &indexFile{seg: s, slotNum: x.slotNum, entryNum: x.entryNum}
		f.readHeader()
		if f.count < 1 || int(f.count) > x.entryNum || f.slotCount < 0 {
			x.log.Warn().Str("file", path).Int32("count", f.count).Msg("removing damaged index file")
			s.remove()
			removed = append(removed, path)
			continue
		}
		f.repairTornPut()
		x.files = append(x.files, f)
		if f.count > 1 && f.endPhy-1 > x.skipUpTo {
			x.skipUpTo = f.endPhy - 1
		}
	}
	return removed, nil
}

// truncate makes re-dispatch index everything after maxPhy again (entries beyond it stay in
// the file and are filtered out by verification at lookup).
func (x *indexService) truncate(maxPhy int64) {
	x.mu.Lock()
	if x.skipUpTo >= maxPhy {
		x.skipUpTo = maxPhy - 1
	}
	x.mu.Unlock()
}

func (x *indexService) activeLocked() (*indexFile, error) {
	if n := len(x.files); n > 0 && !x.files[n-1].full() {
		return x.files[n-1], nil
	}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return nil, err
	}
	now := x.clock()
	name := now.Format("20060102150405.000")
	name = name[:14] + name[15:]
	if n := len(x.files); n > 0 {
		// Names must increase even when files fill within one millisecond.
		prev := filepath.Base(x.files[n-1].seg.path)
		if name <= prev {
			t, _ := time.ParseInLocation("20060102150405.000", prev[:14]+"."+prev[14:], time.Local)
			name = t.Add(time.Millisecond).Format("20060102150405.000")
			name = name[:14] + name[15:]
		}
	}
	s, err := createSegmentAt(filepath.Join(x.dir, name), 0, x.fileBytes(), x.ops, false)
	if err != nil {
		return nil, err
	}
	f := &indexFile{seg: s, slotNum: x.slotNum, entryNum: x.entryNum, count: 1}
	if err := x.reserve(f); err != nil {
		_ = s.remove()
		return nil, err
	}
	f.writeHeader()
	x.files = append(x.files, f)
	return f, nil
}

// reserve makes sure the blocks under f's header, its slots and its next entry are allocated
// before put writes there through the mapping, so that a full disk fails the put rather than
// raising SIGBUS. Index files are otherwise sparse (RocketMQ's are too): the slots, which
// every put may touch anywhere, are reserved whole when the file is created (or first written
// after Open), the entries, written in order, reserveAheadMax at a time. It uses fallocate
// rather than zeros (segment.reserveTo): the file holds data beyond the writer's position (the
// slots), which zeros would erase. x.mu must be held.
func (x *indexService) reserve(f *indexFile) error {
	need := int64(indexHeaderBytes+f.slotNum*indexSlotBytes) + int64(f.count+1)*indexEntryBytes
	if need <= f.seg.reserved {
		return nil
	}
	to := min(f.seg.size, need+reserveAheadMax)
	if err := x.ops.allocate(f.seg.f, f.seg.reserved, to-f.seg.reserved); err != nil {
		return fmt.Errorf("reserve index file %s: %w", f.seg.path, err)
	}
	f.seg.reserved = to
	return nil
}

// add indexes the record's keys: every KEYS word and the UNIQ_KEY, as topic#key.
func (x *indexService) add(r *message.Record) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r.PhysicalOffset <= x.skipUpTo {
		return nil
	}
	if message.TransactionType(r.SysFlag) == message.TransactionRollbackType {
		return nil
	}
	var err error
	put := func(key []byte) {
		if len(key) == 0 || err != nil {
			return
		}
		var f *indexFile
		if f, err = x.activeLocked(); err == nil {
			if err = x.reserve(f); err == nil {
				f.put(keyHash(r.Topic, key), r.PhysicalOffset, r.StoreTimestamp)
			}
		}
	}
	if v, ok := message.PropertyValue(r.Properties, message.PropertyUniqKey); ok {
		put(v)
	}
	if v, ok := message.PropertyValue(r.Properties, message.PropertyKeys); ok {
		for len(v) > 0 {
			i := 0
			for i < len(v) && v[i] != ' ' {
				i++
			}
			put(v[:i])
			if i < len(v) {
				i++
			}
			v = v[i:]
		}
	}
	x.skipUpTo = r.PhysicalOffset
	return err
}

// query returns candidate CommitLog offsets for topic#key stored in [begin, end] ms, newest
// files first. Candidates may be hash collisions: the caller verifies them.
func (x *indexService) query(topic, key string, max int, begin, end int64) []int64 {
	h := keyHash([]byte(topic), []byte(key))
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []int64
	for i := len(x.files) - 1; i >= 0 && len(out) < max; i-- {
		f := x.files[i]
		if f.count <= 1 || f.endTs < begin-999 || f.beginTs > end {
			continue
		}
		out = f.lookup(out, h, begin, end, max)
	}
	return out
}

// flush makes the index files durable and returns, for the manifest, each file's entry count
// and last offset as they were before the sync (so as durable as the sync made them).
func (x *indexService) flush() ([]manifestIndex, error) {
	x.mu.Lock()
	var dirty []*indexFile
	counts := make([]manifestIndex, 0, len(x.files))
	for _, f := range x.files {
		if f.count > 1 {
			counts = append(counts, manifestIndex{name: filepath.Base(f.seg.path), count: f.count, endPhy: f.endPhy})
		}
		if f.dirty && f.seg.acquire() {
			f.dirty = false
			dirty = append(dirty, f)
		}
	}
	x.mu.Unlock()
	var err error
	for _, f := range dirty {
		if e := x.ops.sync(f.seg.f); e != nil && err == nil {
			err = fmt.Errorf("sync %s: %w", f.seg.path, e)
			x.mu.Lock()
			f.dirty = true
			x.mu.Unlock()
		}
		f.seg.release()
	}
	return counts, err
}

// deleteBehind removes index files whose last entry is before minPhy, never the last file.
func (x *indexService) deleteBehind(minPhy int64) int {
	x.mu.Lock()
	var drop []*indexFile
	for len(x.files) > 1 && x.files[0].endPhy < minPhy {
		drop = append(drop, x.files[0])
		x.files = x.files[1:]
	}
	x.mu.Unlock()
	for _, f := range drop {
		f.seg.remove()
	}
	return len(drop)
}

// reset deletes every index file.
func (x *indexService) reset() error {
	x.mu.Lock()
	files := x.files
	x.files = nil
	x.skipUpTo = -1
	x.mu.Unlock()
	var err error
	for _, f := range files {
		if e := f.seg.remove(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

func (x *indexService) close() {
	x.mu.Lock()
	files := x.files
	x.files = nil
	x.mu.Unlock()
	for _, f := range files {
		f.seg.release()
	}
}
