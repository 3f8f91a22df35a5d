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
	alloc := ops.allocate
	ops.allocate = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && strings.Contains(f.Name(), "consumequeue") {
			return fmt.Errorf("fallocate: %w", errNoSpace)
		}
		return alloc(f, off, n)
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
