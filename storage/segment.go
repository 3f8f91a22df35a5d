package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
)

// segment is one fixed-size memory-mapped file of a CommitLog or ConsumeQueue, named by the
// offset of its first byte in the whole log (20 decimal digits).
//
// Reference counting: the segment list owns one reference. Readers acquire one before
// touching data and release it when done; remove drops the list's reference and unlinks the
// file, and the last release unmaps and closes it. So bytes returned to a reader stay mapped
// until the reader releases them, whatever retention does meanwhile.
type segment struct {
	path  string
	start int64 // offset of data[0] in the log
	size  int64
	f     *os.File
	data  mmap.MMap
	ops   *fileOps

	// reserved is how much of the file, from its start, has its blocks reserved: the whole
	// of a preallocated segment; of a ConsumeQueue file, what its writer reserved ahead of
	// itself so far (reserveTo). Only the writer touches it.
	reserved int64

	wrote   atomic.Int64 // bytes written and visible to readers
	flushed atomic.Int64 // bytes known durable
	refs    atomic.Int64
	// lastTimestamp is the store timestamp of the last message appended (0 = unknown).
	lastTimestamp atomic.Int64
}

func segmentName(start int64) string { return fmt.Sprintf("%020d", start) }

// createSegment creates and maps a new segment file, with prealloc reserving its blocks
// (otherwise the file is sparse until its writer reserves ahead of itself, reserveTo).
func createSegment(dir string, start, size int64, ops *fileOps, prealloc bool) (*segment, error) {
	return createSegmentAt(filepath.Join(dir, segmentName(start)), start, size, ops, prealloc)
}

// createSegmentAt is createSegment with an explicit path.
func createSegmentAt(path string, start, size int64, ops *fileOps, prealloc bool) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if prealloc {
		err = ops.allocate(f, 0, size)
	} else {
		err = f.Truncate(size)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("allocate %s: %w", path, err)
	}
	s, err := mapSegment(f, path, start, size, ops)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	if prealloc {
		s.reserved = size
	}
	return s, nil
}

// Reservation ahead of a ConsumeQueue's writer: the first reserves reserveAheadMin bytes, each
// next one as much again as is reserved, up to reserveAheadMax at a time. A queue's file then
// costs disk in proportion to what it holds (a 6 MB file holding one unit costs 4 KiB, not
// 6 MB), at a few writes per file. It writes zeros (fileOps.zeroFill) rather than fallocate:
// the file system reserves the blocks as it takes the write (or refuses it, disk full), and
// the pages are then in the page cache, so the writer's first store into each is a plain
// memory write; into an fallocated (unwritten) page it is a fault that converts the extent,
// milliseconds on a busy disk.
const (
	reserveAheadMin = 4 << 10
	reserveAheadMax = 1 << 20
)

// reserveTo makes sure the blocks of [0, end) are reserved before the writer writes there
// through the mapping, so that a full disk fails the write here rather than as SIGBUS.
// Writer-only (or before the segment is published, add).
func (s *segment) reserveTo(end int64) error {
	if end <= s.reserved {
		return nil
	}
	step := min(max(s.reserved, reserveAheadMin), reserveAheadMax)
	to := min(s.size, max(end, s.reserved+step))
	// Zeros only where nothing is written: a segment opened at recovery starts unreserved
	// with units in it.
	from := max(s.reserved, s.wrote.Load())
	if from < to {
		if err := s.ops.zeroFill(s.f, from, to-from); err != nil {
			return fmt.Errorf("reserve %s: %w", s.path, err)
		}
	}
	s.reserved = to
	return nil
}

// openSegment maps an existing segment file. A file shorter than size (cut short) is
// extended with zeros and reported through extended; a longer one is corrupt.
func openSegment(path string, start, size int64, ops *fileOps) (s *segment, extended bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	switch {
	case fi.Size() > size:
		f.Close()
		return nil, false, corrupt(path, size, fmt.Errorf("file is %d bytes, segments are %d", fi.Size(), size))
	case fi.Size() < size:
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, false, err
		}
		extended = true
	}
	s, err = mapSegment(f, path, start, size, ops)
	return s, extended, err
}

func mapSegment(f *os.File, path string, start, size int64, ops *fileOps) (*segment, error) {
	data, err := ops.mmap(f, int(size))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	s := &segment{path: path, start: start, size: size, f: f, data: data, ops: ops}
	s.refs.Store(1)
	return s, nil
}

func (s *segment) end() int64 { return s.start + s.size }

// acquire takes a reference; false if the segment is already released for good.
func (s *segment) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one unmaps and closes the file.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.ops.unmap(s.f, s.data)
		s.f.Close()
	}
}

// remove unlinks the file and drops the owner's reference.
func (s *segment) remove() error {
	err := os.Remove(s.path)
	s.release()
	return err
}

// flush makes everything written so far durable.
func (s *segment) flush() error {
	w := s.wrote.Load()
	if s.flushed.Load() >= w {
		return nil
	}
	if err := s.ops.sync(s.f); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	s.flushed.Store(w)
	return nil
}

// segmentList is the ordered, contiguous list of segments of one log.
//
// Lock order: segmentList.mu is a leaf lock; no I/O other than unmapping happens under it.
type segmentList struct {
	dir      string
	segSize  int64
	ops      *fileOps
	prealloc bool

	// createMu serializes add: a ConsumeQueue's first file may be created by an appender
	// (Store.prepareQueue) and by the dispatcher at once.
	createMu sync.Mutex
	mu       sync.RWMutex
	segs     []*segment // mu guards
}

// load opens the segment files in dir. extended lists files that were short and extended.
func (l *segmentList) load() (extended []string, err error) {
	ents, err := os.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var starts []int64
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		n, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		starts = append(starts, n)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	for i, st := range starts {
		path := filepath.Join(l.dir, segmentName(st))
		if st%l.segSize != 0 {
			l.closeAll()
			return nil, corrupt(path, 0, fmt.Errorf("start offset %d is not a multiple of the segment size %d", st, l.segSize))
		}
		if i > 0 && st != starts[i-1]+l.segSize {
			l.closeAll()
			return nil, corrupt(path, 0, fmt.Errorf("gap: previous segment starts at %d", starts[i-1]))
		}
		s, ext, err := openSegment(path, st, l.segSize, l.ops)
		if err != nil {
			l.closeAll()
			return nil, err
		}
		if ext {
			extended = append(extended, path)
		}
		// Until recovery says otherwise, a loaded segment counts as full and durable.
		s.wrote.Store(l.segSize)
		s.flushed.Store(l.segSize)
		l.segs = append(l.segs, s)
	}
	return extended, nil
}

// closeAll releases every segment without removing files.
func (l *segmentList) closeAll() {
	l.mu.Lock()
	segs := l.segs
	l.segs = nil
	l.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
}

// last returns the last segment (not acquired), or nil.
func (l *segmentList) last() *segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[len(l.segs)-1]
}

// first returns the first segment (not acquired), or nil.
func (l *segmentList) first() *segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[0]
}

// snapshot returns a copy of the segment slice (segments not acquired).
func (l *segmentList) snapshot() []*segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]*segment(nil), l.segs...)
}

// flushedPrefix returns the offset up to which the log is durable from its first segment
// on: the first segment not flushed to its end ends it.
func (l *segmentList) flushedPrefix() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	end := int64(0)
	for _, s := range l.segs {
		f := s.flushed.Load()
		end = s.start + f
		if f < s.size {
			break
		}
	}
	return end
}

// len returns the number of segments.
func (l *segmentList) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// find returns the segment holding offset, acquired; the caller releases it. nil if none.
func (l *segmentList) find(offset int64) *segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 || offset < l.segs[0].start {
		return nil
	}
	i := int((offset - l.segs[0].start) / l.segSize)
	if i >= len(l.segs) {
		return nil
	}
	s := l.segs[i]
	if !s.acquire() {
		return nil
	}
	return s
}

// acquireRange appends to dst the segments overlapping [from, to), acquired; the caller
// releases them.
func (l *segmentList) acquireRange(from, to int64, dst []*segment) []*segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		if s.end() > from && s.start < to && s.acquire() {
			dst = append(dst, s)
		}
	}
	return dst
}

// add creates the segment starting at start and appends it to the list, or returns the last
// segment when it starts there already (created meanwhile by another caller). A segment
// without prealloc has its first reserveAheadMin bytes reserved before anyone sees it.
func (l *segmentList) add(start int64) (*segment, error) {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if last := l.last(); last != nil && last.start == start {
		return last, nil
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	s, err := createSegment(l.dir, start, l.segSize, l.ops, l.prealloc)
	if err != nil {
		return nil, err
	}
	if !l.prealloc {
		if err := s.reserveTo(min(reserveAheadMin, s.size)); err != nil {
			_ = s.remove()
			return nil, err
		}
	}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	return s, nil
}

// removeFirst removes the first segment from the list and deletes its file.
func (l *segmentList) removeFirst() error {
	l.mu.Lock()
	if len(l.segs) == 0 {
		l.mu.Unlock()
		return nil
	}
	s := l.segs[0]
	l.segs = append(l.segs[:0:0], l.segs[1:]...)
	l.mu.Unlock()
	return s.remove()
}

// removeFrom removes every segment starting at or after start, deleting the files.
func (l *segmentList) removeFrom(start int64) (removed []string, err error) {
	l.mu.Lock()
	var keep, drop []*segment
	for _, s := range l.segs {
		if s.start >= start {
			drop = append(drop, s)
		} else {
			keep = append(keep, s)
		}
	}
	l.segs = keep
	l.mu.Unlock()
	for _, s := range drop {
		removed = append(removed, s.path)
		if e := s.remove(); e != nil && err == nil {
			err = e
		}
	}
	return removed, err
}

// removeAll removes every segment and its file.
func (l *segmentList) removeAll() error {
	_, err := l.removeFrom(-1)
	return err
}
