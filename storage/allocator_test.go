package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func nextSegment(s *Store) *segment {
	s.cl.nextMu.Lock()
	defer s.cl.nextMu.Unlock()
	return s.cl.next
}

// TestNextSegmentCreatedAhead: the segment after the active one is created once the active
// one is half written, without waiting for the allocator's tick (synctest's clock does not
// move); a roll takes it, and the allocator creates the one after once the new active segment
// is half written in turn. An unused pre-created segment does not outlive Close.
func TestNextSegmentCreatedAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := testOptions(t, "")
		s := openStore(t, opts)
		runStoreInBubble(t, s)
		mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		synctest.Wait()
		if next := nextSegment(s); next != nil {
			t.Fatalf("next segment created after one small append (an idle node reserves one segment): %+v", next)
		}
		for s.cl.maxPhy.Load() < testSegBytes/2 {
			mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		}
		synctest.Wait()
		next := nextSegment(s)
		if next == nil || next.start != testSegBytes {
			t.Fatalf("next segment once the first is half written: %+v", next)
		}
		for s.cl.segs.len() < 2 {
			mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		}
		if s.cl.segs.last() != next {
			t.Fatal("the roll did not take the pre-created segment")
		}
		for s.cl.maxPhy.Load() < testSegBytes+testSegBytes/2 {
			mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		}
		synctest.Wait()
		if n := nextSegment(s); n == nil || n.start != 2*testSegBytes {
			t.Fatalf("next segment once the second is half written: %+v", n)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(opts.Dir, "commitlog", segmentName(2*testSegBytes))); !os.IsNotExist(err) {
			t.Fatalf("unused pre-created segment after Close: %v", err)
		}
		s2 := openStore(t, opts)
		if rep := s2.RecoveryReport(); rep.ScannedFrom != -1 || len(rep.Actions) != 0 {
			t.Fatalf("reopen not a fast clean load: %+v", rep)
		}
	})
}

// TestPrefaultAheadOfWriter: the allocator prefaults the log ahead of the writer, within live
// segments (the active one and the pre-created next), never behind the writer's position at
// the time.
func TestPrefaultAheadOfWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := testOptions(t, "")
		ops := defaultFileOps()
		type span struct{ n int }
		var mu sync.Mutex
		var spans []span
		prefault := ops.prefault
		ops.prefault = func(data []byte) error {
			mu.Lock()
			spans = append(spans, span{len(data)})
			mu.Unlock()
			return prefault(data)
		}
		opts.ops = ops
		s := openStore(t, opts)
		runStoreInBubble(t, s)
		mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		synctest.Wait()
		first := s.MaxPhyOffset()
		prefaulted := func() int {
			mu.Lock()
			defer mu.Unlock()
			total := 0
			for _, sp := range spans {
				total += sp.n
			}
			return total
		}
		// The first segment is warm from where the writer was when the allocator woke (at the
		// segment's creation or after the append) to its end; no next segment exists yet.
		firstWarm := prefaulted()
		if s.cl.warmTo.Load() != testSegBytes || firstWarm < int(testSegBytes-first) || firstWarm > testSegBytes {
			t.Fatalf("warmed to %d, %d bytes prefaulted; want %d and %d to %d (from the writer to the segment's end)",
				s.cl.warmTo.Load(), firstWarm, testSegBytes, testSegBytes-first, testSegBytes)
		}
		for s.cl.maxPhy.Load() < testSegBytes/2 {
			mustPut(t, s, testMsg("T", 0, body(0, 1000), nil))
		}
		synctest.Wait()
		// Half written: the pre-created second segment is warm too, nothing prefaulted twice.
		if want := nextSegment(s).end(); s.cl.warmTo.Load() != want {
			t.Fatalf("warmed to %d, want %d (the end of the pre-created segment)", s.cl.warmTo.Load(), want)
		}
		if total := prefaulted(); total != firstWarm+testSegBytes {
			t.Fatalf("prefaulted %d bytes, want %d (the first segment's %d and all of the next)", total, firstWarm+testSegBytes, firstWarm)
		}
	})
}

// TestCrashWithNextSegmentPreCreated: killed while the next segment exists, created and
// prefaulted but empty, the store reopens with every record and nothing else; the empty
// file is either dropped or appended to like a new one.
func TestCrashWithNextSegmentPreCreated(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t, dir)
	s := openStore(t, opts)
	runStore(t, s)
	var want []written
	put := func(s *Store, i int) {
		m := testMsg("T", int32(i%2), body(i, 900), nil)
		r := mustPut(t, s, m)
		want = append(want, written{r.PhyOffset, r.PhyOffset + int64(r.WroteBytes), "T", m.QueueID, r.QueueOffset, string(m.Body)})
	}
	i := 0
	for s.cl.maxPhy.Load() < testSegBytes+testSegBytes/2 { // the second segment half written
		put(s, i)
		i++
	}
	waitFor(t, 5*time.Second, func() bool { n := nextSegment(s); return n != nil && s.cl.warmTo.Load() >= n.end() })
	pre := filepath.Join(dir, "commitlog", segmentName(2*testSegBytes))
	crash(s)
	if fi, err := os.Stat(pre); err != nil || fi.Size() != testSegBytes {
		t.Fatalf("pre-created segment before reopen: %v %v", fi, err)
	}
	s2 := openStore(t, opts)
	if s2.MaxPhyOffset() != want[len(want)-1].end {
		t.Fatalf("log ends at %d after recovery, want %d", s2.MaxPhyOffset(), want[len(want)-1].end)
	}
	if _, err := s2.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	verifyStore(t, s2, want)
	// The log goes on across the boundary where the empty file was.
	runStore(t, s2)
	for s2.cl.segs.len() < 4 {
		put(s2, i)
		i++
	}
	waitDispatched(t, s2)
	verifyStore(t, s2, want)
	for q := int32(0); q < 2; q++ {
		got := readAll(t, s2, "T", q)
		n := 0
		for _, w := range want {
			if w.qid == q {
				if string(got[n].Body) != w.body {
					t.Fatalf("queue %d offset %d: wrong body", q, n)
				}
				n++
			}
		}
		if len(got) != n {
			t.Fatalf("queue %d: %d readable, want %d", q, len(got), n)
		}
	}
}

// TestFullDiskWhilePreallocating: when the next segment cannot be created ahead (no space),
// sends that fit in the active segment still succeed; the roll reports the full disk, and
// once space returns the log goes on.
func TestFullDiskWhilePreallocating(t *testing.T) {
	opts := testOptions(t, "")
	ops := defaultFileOps()
	var mu sync.Mutex
	fail, refused := false, 0
	alloc := ops.allocate
	ops.allocate = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && filepath.Base(filepath.Dir(f.Name())) == "commitlog" {
			refused++
			return fmt.Errorf("fallocate: %w", errNoSpace)
		}
		return alloc(f, off, n)
	}
	opts.ops = ops
	s := openStore(t, opts)
	mustPut(t, s, testMsg("T", 0, body(0, 1000), nil)) // the first segment, before Run
	mu.Lock()
	fail = true
	mu.Unlock()
	runStore(t, s)
	n := 1
	for s.cl.maxPhy.Load() < testSegBytes/2 { // where the allocator makes the next segment
		mustPut(t, s, testMsg("T", 0, body(n, 1000), nil))
		n++
	}
	waitFor(t, 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return refused > 0 })
	for s.cl.segs.last().wrote.Load()+2*1100 < testSegBytes {
		mustPut(t, s, testMsg("T", 0, body(n, 1000), nil))
		n++
	}
	var r PutResult
	var err error
	for range 10 {
		if r, err = s.PutMessage(testMsg("T", 0, body(n, 1000), nil)); err != nil {
			break
		}
		n++
	}
	if r.Status != CreateMappedFileFailed {
		t.Fatalf("roll on a full disk: status %v err %v", r.Status, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if r := mustPut(t, s, testMsg("T", 0, "after", nil)); r.QueueOffset != int64(n) {
		t.Fatalf("queue offset once space returned %d, want %d", r.QueueOffset, n)
	}
	waitDispatched(t, s)
	if got := len(readAll(t, s, "T", 0)); got != n+1 {
		t.Fatalf("readable %d, want %d", got, n+1)
	}
}
