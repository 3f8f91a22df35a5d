package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cqFile returns the path of the first ConsumeQueue file of topic's queue 0.
func cqFile(s *Store, topic string) string {
	return filepath.Join(s.opts.Dir, "consumequeue", topic, "0", segmentName(0))
}

// TestConsumeQueueReservedAsWritten: a queue holding one unit reserves a few KiB of its 6 MB
// file, not the whole file (a flood of new topics would otherwise fill the disk at 6 MB a
// topic), and what is reserved grows with what is written, ahead of the writer.
func TestConsumeQueueReservedAsWritten(t *testing.T) {
	opts := testOptions(t, "")
	opts.ConsumeQueueUnits = DefaultConsumeQueueUnits
	s := openStore(t, opts)
	runStore(t, s)
	mustPut(t, s, testMsg("One", 0, "x", nil))
	waitDispatched(t, s)
	path := cqFile(s, "One")
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != DefaultConsumeQueueUnits*CQUnitBytes {
		t.Fatalf("file size %d, want %d", st.Size, DefaultConsumeQueueUnits*CQUnitBytes)
	}
	if used := st.Blocks * 512; used > 64<<10 {
		t.Errorf("a queue with one unit holds %d bytes of disk, want a few KiB", used)
	}
	q, err := s.cqs.getOrCreate("One", 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000 // 20,000 bytes of units: past the first reservation
	for i := range n {
		mustPut(t, s, testMsg("One", 0, fmt.Sprint(i), nil))
	}
	waitDispatched(t, s)
	last := q.segs.last()
	if w := last.wrote.Load(); last.reserved < w || last.reserved > 2*w+reserveAheadMin {
		t.Errorf("wrote %d bytes of units, reserved %d: want at least that, at most about twice", w, last.reserved)
	}
	if got := len(readAll(t, s, "One", 0)); got != n+1 {
		t.Errorf("read %d messages, want %d", got, n+1)
	}
}

// TestConsumeQueueReserveFailureResumes: when the disk cannot give a ConsumeQueue file more
// blocks, dispatch stops before writing there (no write through the mapping into an
// unreserved page) and carries on once it can; nothing appended is lost.
func TestConsumeQueueReserveFailureResumes(t *testing.T) {
	opts := testOptions(t, "")
	opts.ConsumeQueueUnits = DefaultConsumeQueueUnits
	ops := defaultFileOps()
	var mu sync.Mutex
	fail := false
	fill := ops.zeroFill
	ops.zeroFill = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && strings.Contains(f.Name(), "consumequeue") {
			return fmt.Errorf("write: %w", errNoSpace)
		}
		return fill(f, off, n)
	}
	opts.ops = ops
	s := openStore(t, opts)
	runStore(t, s)
	mustPut(t, s, testMsg("Full", 0, "first", nil))
	waitDispatched(t, s)
	q, err := s.cqs.getOrCreate("Full", 0)
	if err != nil {
		t.Fatal(err)
	}
	reserved := q.segs.last().reserved
	mu.Lock()
	fail = true
	mu.Unlock()
	// Enough units to pass what is reserved.
	n := int(reserved/CQUnitBytes) + 10
	for i := range n {
		mustPut(t, s, testMsg("Full", 0, fmt.Sprint(i), nil))
	}
	waitFor(t, 5*time.Second, func() bool { return q.maxOffset.Load() == reserved/CQUnitBytes })
	if w := q.segs.last().wrote.Load(); w > reserved {
		t.Fatalf("wrote %d bytes of units with %d reserved", w, reserved)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	waitDispatched(t, s)
	if got := len(readAll(t, s, "Full", 0)); got != n+1 {
		t.Errorf("read %d messages after the disk recovered, want %d", got, n+1)
	}
}

// TestConsumeQueueFlushLeastPages: a periodic flush leaves a queue with less than
// FlushConsumeQueueLeastPages unsynced for a later one (a flood of new topics is not an fsync
// per topic per second) and the checkpoint then claims nothing past that queue's first
// unsynced unit; a queue with more is synced; a thorough flush syncs every queue.
func TestConsumeQueueFlushLeastPages(t *testing.T) {
	opts := testOptions(t, "")
	opts.ConsumeQueueUnits = DefaultConsumeQueueUnits
	opts.FlushIntervalConsumeQueue = time.Hour // the test flushes
	opts.ops = defaultFileOps()
	var mu sync.Mutex
	synced := map[string]int{}
	real := opts.ops.sync
	opts.ops.sync = func(f *os.File) error {
		mu.Lock()
		if strings.Contains(f.Name(), "consumequeue") {
			synced[filepath.Base(filepath.Dir(filepath.Dir(f.Name())))]++
		}
		mu.Unlock()
		return real(f)
	}
	s := openStore(t, opts)
	small := mustPut(t, s, testMsg("Small", 0, "one", nil))
	for i := range 2*cqPageBytes/CQUnitBytes + 1 { // two pages of units
		mustPut(t, s, testMsg("Big", 0, fmt.Sprint(i), nil))
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.flushQueuesAndCheckpoint(false); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if synced["Small"] != 0 || synced["Big"] != 1 {
		t.Errorf("periodic flush synced %v, want Big only", synced)
	}
	mu.Unlock()
	c, err := readCheckpoint(s.checkpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if c.DispatchedOffset > small.PhyOffset {
		t.Errorf("checkpoint claims dispatch durable to %d, past Small's unsynced unit at %d", c.DispatchedOffset, small.PhyOffset)
	}
	if err := s.flushQueuesAndCheckpoint(true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if synced["Small"] != 1 {
		t.Errorf("thorough flush synced Small %d times, want 1", synced["Small"])
	}
	mu.Unlock()
	if c, err = readCheckpoint(s.checkpointPath()); err != nil || c.DispatchedOffset != s.DispatchedPhyOffset() {
		t.Errorf("after a thorough flush the checkpoint's dispatched offset is %d (%v), want %d", c.DispatchedOffset, err,
			s.DispatchedPhyOffset())
	}
}

// TestAppenderCreatesNewQueueFile: the file of a queue's first unit is created by the
// appender, before the append returns, not by the dispatcher (which would make every later
// message of every queue wait for it): with the dispatcher held, the file is there.
func TestAppenderCreatesNewQueueFile(t *testing.T) {
	opts := testOptions(t, "")
	opts.ConsumeQueueUnits = DefaultConsumeQueueUnits
	s := openStore(t, opts)
	runStore(t, s)
	s.dispatchMu.Lock()
	mustPut(t, s, testMsg("Fresh", 0, "first", nil))
	_, err := os.Stat(cqFile(s, "Fresh"))
	s.dispatchMu.Unlock()
	if err != nil {
		t.Fatalf("the new queue's file after the append, with the dispatcher held: %v", err)
	}
	waitDispatched(t, s)
	if got := readAll(t, s, "Fresh", 0); len(got) != 1 || string(got[0].Body) != "first" {
		t.Fatalf("read %d messages", len(got))
	}
}
