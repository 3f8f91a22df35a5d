package storage

import (
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetention(t *testing.T) {
	opts := testOptions(t, "")
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local)
	clk := newFakeClock(start)
	opts.clock = clk.now
	var diskUsed float64 = 0.10
	opts.diskUsage = func(string) (float64, error) { return diskUsed, nil }
	opts.DeleteWhen = "04"
	opts.MaxIndexNum = 100
	s := openStore(t, opts)
	// 12 segments; segment i's messages are stored at hour i.
	for seg := 0; s.cl.segs.len() < 12; seg++ {
		first := s.cl.segs.len()
		for s.cl.segs.len() == first {
			mustPut(t, s, testMsg("T", 0, body(0, 1000), map[string]string{"KEYS": "k"}))
		}
		clk.advance(time.Hour)
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	nSegs := s.cl.segs.len()
	cqFiles := s.cqs.get("T", 0).segs.len()
	idxFiles := len(s.idx.files)
	if cqFiles < 3 || idxFiles < 3 {
		t.Fatalf("cq files %d, index files %d: too few to test", cqFiles, idxFiles)
	}

	// Not the hour, disk fine: nothing goes, even though everything is older than 72 h.
	clk.advance(80 * time.Hour)
	for clk.now().Hour() == 4 {
		clk.advance(time.Hour)
	}
	if st := s.CleanExpired(); st.CommitLogSegments != 0 {
		t.Fatalf("deleted %d segments outside the delete hour", st.CommitLogSegments)
	}
	// At 04:00, segments whose last message is older than 72 h go; the newest ones stay.
	now := clk.now()
	at4 := time.Date(now.Year(), now.Month(), now.Day()+1, 4, 0, 0, 0, time.Local)
	clk.ms.Store(at4.UnixMilli())
	// Expect the segments whose last message is at least 72 h old to go.
	cutoff := at4.Add(-72 * time.Hour)
	want := 0
	for _, sg := range s.cl.segs.snapshot()[:nSegs-1] {
		if time.UnixMilli(sg.lastTimestamp.Load()).Before(cutoff) || time.UnixMilli(sg.lastTimestamp.Load()).Equal(cutoff) {
			want++
		}
	}
	want = min(want, opts.withDefaults().DeleteFilesBatchMax)
	if want == 0 || want >= nSegs-1 {
		t.Fatalf("test setup: %d segments expired of %d (cutoff %v, start %v)", want, nSegs, cutoff, start)
	}
	st := s.CleanExpired()
	if st.CommitLogSegments != want {
		t.Fatalf("deleted %d segments at 04:00, want %d", st.CommitLogSegments, want)
	}
	if st.ConsumeQueueFiles == 0 || st.IndexFiles == 0 {
		t.Fatalf("nothing deleted behind the commitlog: %+v", st)
	}
	minPhy := s.MinPhyOffset()
	if minPhy != int64(want)*testSegBytes {
		t.Fatalf("min phy %d", minPhy)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "commitlog", segmentName(0))); !os.IsNotExist(err) {
		t.Fatalf("first segment still on disk: %v", err)
	}
	// The queue's min offset moved to the first message still in the log; reading below it
	// answers OFFSET_TOO_SMALL with the min offset.
	minOff := s.MinOffsetInQueue("T", 0)
	phy, err := s.GetCommitLogOffsetInQueue("T", 0, minOff)
	if err != nil || phy < minPhy {
		t.Fatalf("min offset %d points to %d (%v), log starts at %d", minOff, phy, err, minPhy)
	}
	if prev, err := s.cqs.get("T", 0).unit(minOff - 1); err == nil && prev.PhyOffset >= minPhy {
		t.Fatalf("unit before min offset still readable in the log")
	}
	r := s.GetMessage("g", "T", 0, 0, 32, 0, nil)
	if r.Status != OffsetTooSmall || r.NextBeginOffset != minOff {
		t.Fatalf("read at 0: %v next %d, want OFFSET_TOO_SMALL %d", r.Status, r.NextBeginOffset, minOff)
	}
	r.Release()
	r = s.GetMessage("g", "T", 0, minOff, 32, 0, nil)
	if r.Status != Found || r.QueueOffsets[0] != minOff {
		t.Fatalf("read at min: %v", r.Status)
	}
	r.Release()

	// A reader holding bytes keeps them mapped while retention deletes their segment.
	held := s.GetMessage("g", "T", 0, minOff, 1, 0, nil)
	heldCopy := append([]byte(nil), held.Messages[0]...)

	// Disk over the ratio: everything but the active segment goes, whatever the time.
	diskUsed = 0.9
	clk.ms.Store(at4.Add(2 * time.Hour).UnixMilli())
	st = s.CleanExpired()
	if !st.DeletedForDiskFull || s.cl.segs.len() != 1 {
		t.Fatalf("disk full: %+v, %d segments left", st, s.cl.segs.len())
	}
	if string(held.Messages[0]) != string(heldCopy) {
		t.Fatal("held bytes changed after their segment was deleted")
	}
	held.Release()
	// The active segment is never deleted, even forced.
	st = s.CleanExpired()
	if st.CommitLogSegments != 0 || s.cl.segs.len() != 1 {
		t.Fatalf("active segment deleted: %+v", st)
	}
	// Appends go on; a restart keeps the trimmed state.
	mustPut(t, s, testMsg("T", 0, "after", nil))
	s.dispatchAvailable(nil)
	max := s.MaxOffsetInQueue("T", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, opts)
	if s2.MinPhyOffset() != s.cl.minPhy.Load() || s2.MaxOffsetInQueue("T", 0) != max {
		t.Fatalf("after restart: min phy %d (was %d) max offset %d (was %d)", s2.MinPhyOffset(), s.cl.minPhy.Load(), s2.MaxOffsetInQueue("T", 0), max)
	}
	if got := len(readAll(t, s2, "T", 0)); int64(got) != max-s2.MinOffsetInQueue("T", 0) || got == 0 {
		t.Fatalf("readable after restart: %d", got)
	}
	// Manual deletion ignores the hour.
	s2.ExecuteDeleteFilesManually()
	_ = s2.CleanExpired()
}

// TestRetentionAfterRestart: segment ages come from their records when the store was
// reopened (nothing in memory).
func TestRetentionAfterRestart(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local))
	opts.clock = clk.now
	opts.diskUsage = func(string) (float64, error) { return 0.1, nil }
	s := openStore(t, opts)
	advanced := false
	for s.cl.segs.len() < 5 {
		mustPut(t, s, testMsg("T", 0, body(0, 2000), nil))
		if s.cl.segs.len() == 3 && !advanced {
			clk.advance(100 * time.Hour) // segments 0 and 1 are now 100 h old
			advanced = true
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, opts)
	if clk.now().Hour() == 4 {
		t.Fatal("test clock at the delete hour")
	}
	if st := s2.CleanExpired(); st.CommitLogSegments != 0 {
		t.Fatalf("deleted %d segments outside the delete hour", st.CommitLogSegments)
	}
	s2.ExecuteDeleteFilesManually()
	if st := s2.CleanExpired(); st.CommitLogSegments != 2 {
		t.Fatalf("deleted %d segments, want the 2 old ones", st.CommitLogSegments)
	}
	if s2.MinPhyOffset() != 2*testSegBytes {
		t.Fatalf("min phy %d", s2.MinPhyOffset())
	}
}

// TestGetMessageWhileRemoving covers the statuses of reads racing retention: the units are
// still there but their records are gone (MESSAGE_WAS_REMOVING), or the unit's file is gone
// before the min offset moved (OFFSET_FOUND_NULL).
func TestGetMessageWhileRemoving(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	for s.cl.segs.len() < 5 {
		mustPut(t, s, testMsg("T", 0, body(0, 1500), nil))
	}
	s.dispatchAvailable(nil)
	q := s.cqs.get("T", 0)
	// Drop the first two CommitLog segments only (as retention does before it trims
	// queues): every unit of the first ConsumeQueue file points into them.
	s.cl.minPhy.Store(2 * testSegBytes)
	for range 2 {
		if err := s.cl.segs.removeFirst(); err != nil {
			t.Fatal(err)
		}
	}
	if u, _ := q.unit(q.unitsPerFile() - 1); u.PhyOffset >= 2*testSegBytes {
		t.Fatalf("test setup: unit %d at %d", q.unitsPerFile()-1, u.PhyOffset)
	}
	r := s.GetMessage("g", "T", 0, 0, 4, 0, nil)
	if r.Status != MessageWasRemoving || r.NextBeginOffset != q.unitsPerFile() || len(r.Messages) != 0 {
		t.Fatalf("status %v next %d n %d", r.Status, r.NextBeginOffset, len(r.Messages))
	}
	r.Release()
	// Drop the first ConsumeQueue file without moving the min offset.
	if err := q.segs.removeFirst(); err != nil {
		t.Fatal(err)
	}
	r = s.GetMessage("g", "T", 0, 3, 4, 0, nil)
	if r.Status != OffsetFoundNull || r.NextBeginOffset != q.unitsPerFile() {
		t.Fatalf("status %v next %d", r.Status, r.NextBeginOffset)
	}
	r.Release()
	// Retention's pass fixes the min offset; reads below it are too small.
	s.CleanExpired()
	min := s.MinOffsetInQueue("T", 0)
	if min < q.unitsPerFile() {
		t.Fatalf("min offset %d", min)
	}
	r = s.GetMessage("g", "T", 0, 3, 4, 0, nil)
	if r.Status != OffsetTooSmall || r.NextBeginOffset != min {
		t.Fatalf("status %v next %d", r.Status, r.NextBeginOffset)
	}
	r.Release()
}

// TestRetentionFloor: a segment holding the RetentionFloor's offset, and those after it, stay
// whatever their age; the ones before it go.
func TestRetentionFloor(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local))
	opts.clock = clk.now
	opts.diskUsage = func(string) (float64, error) { return 0.1, nil }
	var floor atomic.Int64
	floor.Store(math.MaxInt64)
	opts.RetentionFloor = floor.Load
	s := openStore(t, opts)
	for s.cl.segs.len() < 5 {
		mustPut(t, s, testMsg("T", 0, body(0, 2000), nil))
	}
	clk.advance(100 * time.Hour)   // every full segment is old now
	floor.Store(testSegBytes + 10) // inside segment 1
	s.ExecuteDeleteFilesManually()
	if st := s.CleanExpired(); st.CommitLogSegments != 1 {
		t.Fatalf("deleted %d segments, want only segment 0, before the floor", st.CommitLogSegments)
	}
	floor.Store(math.MaxInt64) // nothing pending any more
	s.ExecuteDeleteFilesManually()
	if st := s.CleanExpired(); st.CommitLogSegments == 0 {
		t.Fatal("nothing deleted once the floor was lifted")
	}
}
