package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDiskRatios: RocketMQ 4.9's three thresholds. Above DiskMaxUsedSpaceRatio only expired
// segments go; above DiskSpaceCleanForciblyRatio the oldest go expired or not (counted);
// above DiskSpaceWarningLevelRatio appends are refused until a round measures less.
func TestDiskRatios(t *testing.T) {
	for _, noForce := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableCleanFileForcibly=%v", noForce), func(t *testing.T) {
			opts := testOptions(t, "")
			start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local)
			clk := newFakeClock(start)
			opts.clock = clk.now
			var mu sync.Mutex
			used := 0.10
			opts.diskUsage = func(string) (float64, error) { mu.Lock(); defer mu.Unlock(); return used, nil }
			setUsed := func(r float64) { mu.Lock(); used = r; mu.Unlock() }
			opts.DeleteWhen = "04"
			opts.DisableCleanFileForcibly = noForce
			var consumed int64
			opts.ConsumedOffsets = func() map[string]map[int32]int64 {
				return map[string]map[int32]int64{"T": {0: consumed}, "Other": {0: 0}}
			}
			s := openStore(t, opts)
			// Segments 0..2 are old (stored 100 h before the rounds), 3..7 recent.
			n := 0
			advanced := false
			for s.cl.segs.len() < 8 {
				if s.cl.segs.len() == 4 && !advanced {
					clk.advance(100 * time.Hour)
					advanced = true
				}
				mustPut(t, s, testMsg("T", 0, body(n, 1000), nil))
				n++
			}
			if clk.now().Hour() == 4 {
				clk.advance(time.Hour)
			}
			waitDispatched(t, s)

			// 80 %: above diskMaxUsedSpaceRatio, the expired segments go, no others.
			setUsed(0.80)
			st := s.CleanExpired()
			if st.CommitLogSegments != 3 || st.UnexpiredSegments != 0 || !st.DeletedForDiskFull || st.Forcibly || st.DiskFull {
				t.Fatalf("at 80%%: %+v, want the 3 expired segments deleted and nothing else", st)
			}
			// The segment holding the last old message and the first new ones has a recent
			// timestamp: it stays at 80 %.
			if st := s.CleanExpired(); st.CommitLogSegments != 0 {
				t.Fatalf("at 80%% again: %+v, unexpired segments deleted", st)
			}
			min80 := s.MinPhyOffset()
			// A group has consumed 10 messages past the new start.
			minOff80 := s.MinOffsetInQueue("T", 0)
			consumed = minOff80 + 10

			// 86 %: above diskSpaceCleanForciblyRatio, unexpired ones go too (unless disabled).
			setUsed(0.86)
			st = s.CleanExpired()
			if noForce {
				if st.CommitLogSegments != 0 || st.Forcibly || s.MinPhyOffset() != min80 {
					t.Fatalf("at 86%% without cleanFileForciblyEnable: %+v", st)
				}
			} else {
				if !st.Forcibly || st.CommitLogSegments != s.opts.DeleteFilesBatchMax && s.cl.segs.len() != 1 ||
					st.UnexpiredSegments != st.CommitLogSegments || st.UnexpiredMessages == 0 {
					t.Fatalf("at 86%%: %+v, %d segments left", st, s.cl.segs.len())
				}
				if want := s.MinOffsetInQueue("T", 0) - consumed; st.UnconsumedMessages != want || want <= 0 ||
					st.UnexpiredMessages != s.MinOffsetInQueue("T", 0)-minOff80 {
					t.Fatalf("at 86%%: %d unconsumed, %d unexpired messages went; want %d and %d",
						st.UnconsumedMessages, st.UnexpiredMessages, want, s.MinOffsetInQueue("T", 0)-minOff80)
				}
				// Whatever is left is still readable, from the new start.
				if got := readAll(t, s, "T", 0); len(got) == 0 || got[len(got)-1].QueueOffset != int64(n-1) {
					t.Fatalf("after forced deletion: %d readable", len(got))
				}
			}
			if _, err := s.PutMessage(testMsg("T", 0, "at 86", nil)); err != nil {
				t.Fatalf("put at 86%%: %v", err)
			}
			n++

			// 91 %: above diskSpaceWarningLevelRatio, appends are refused with a clear error.
			setUsed(0.91)
			if st := s.CleanExpired(); !st.DiskFull || !s.DiskFull() {
				t.Fatalf("at 91%%: %+v", st)
			}
			r, err := s.PutMessage(testMsg("T", 0, "refused", nil))
			if r.Status != ServiceNotAvailable || !errors.Is(err, ErrDiskFull) ||
				!strings.Contains(err.Error(), "91.0% of the disk") || !strings.Contains(err.Error(), "above 90%") {
				t.Fatalf("put at 91%%: %v %v", r.Status, err)
			}
			r, err = s.PutMessages([]*Message{testMsg("T", 0, "refused", nil)})
			if r.Status != ServiceNotAvailable || !errors.Is(err, ErrDiskFull) {
				t.Fatalf("batch at 91%%: %v %v", r.Status, err)
			}
			if got := s.DiskUsedRatio(); got != 0.91 {
				t.Fatalf("DiskUsedRatio %v", got)
			}
			// Exactly 90 % is not above the level; space returns: appends go again.
			setUsed(0.90)
			s.CleanExpired()
			mustPut(t, s, testMsg("T", 0, "after", nil))
			n++
			waitDispatched(t, s)
			if got := readAll(t, s, "T", 0); got[len(got)-1].QueueOffset != int64(n-1) || string(got[len(got)-1].Body) != "after" {
				t.Fatalf("last readable %d %q, want %d", got[len(got)-1].QueueOffset, got[len(got)-1].Body, n-1)
			}
		})
	}
}

func TestDiskRatiosValidated(t *testing.T) {
	for _, o := range []Options{{DiskSpaceWarningLevelRatio: 101}, {DiskSpaceCleanForciblyRatio: -1}, {DiskMaxUsedSpaceRatio: 200}} {
		o.Dir = t.TempDir()
		_, err := Open(o)
		if err == nil || !strings.Contains(err.Error(), "not in [0, 100]") {
			t.Fatalf("Open(%+v): %v", o, err)
		}
	}
}

// TestIndexAllocationFailure: an index file whose blocks cannot be reserved is not written
// (no SIGBUS); appends and reads go on, and keys are indexed again once space returns.
func TestIndexAllocationFailure(t *testing.T) {
	opts := testOptions(t, "")
	ops := defaultFileOps()
	var mu sync.Mutex
	fail := ""
	alloc := ops.allocate
	ops.allocate = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail != "" && strings.Contains(f.Name(), fail) {
			return fmt.Errorf("fallocate: %w", errNoSpace)
		}
		return alloc(f, off, n)
	}
	zeroFill := ops.zeroFill
	ops.zeroFill = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail != "" && strings.Contains(f.Name(), fail) {
			return fmt.Errorf("write: %w", errNoSpace)
		}
		return zeroFill(f, off, n)
	}
	setFail := func(s string) { mu.Lock(); fail = s; mu.Unlock() }
	opts.ops = ops
	s := openStore(t, opts)
	runStore(t, s)
	put := func(i int) {
		mustPut(t, s, testMsg("T", 0, body(i, 200), map[string]string{"KEYS": fmt.Sprintf("k%d", i)}))
	}
	// The index's files fail from the first: none can be created.
	setFail(string(filepath.Separator) + "index" + string(filepath.Separator))
	for i := range 20 {
		put(i)
	}
	waitDispatched(t, s)
	if got := len(readAll(t, s, "T", 0)); got != 20 {
		t.Fatalf("readable %d, want 20", got)
	}
	if len(s.idx.files) != 0 {
		t.Fatalf("%d index files exist though none could be reserved", len(s.idx.files))
	}
	if ents, _ := os.ReadDir(filepath.Join(opts.Dir, "index")); len(ents) != 0 {
		t.Fatalf("index files left behind: %v", ents)
	}
	setFail("")
	// The index fills a file (500 entries) and fails when the next one is created and when
	// the current one reserves its next entries.
	for i := 20; i < 1200; i++ {
		put(i)
		if i == 700 {
			waitDispatched(t, s)
			setFail(string(filepath.Separator) + "index" + string(filepath.Separator))
		}
	}
	waitDispatched(t, s)
	setFail("")
	put(1200)
	waitDispatched(t, s)
	for _, k := range []string{"k30", "k600", "k1200"} {
		if got, err := s.QueryMessage("T", k, 10, 0, time.Now().Add(time.Hour).UnixMilli()); err != nil || len(got.Messages) != 1 {
			t.Fatalf("key %s: %d messages, %v", k, len(got.Messages), err)
		}
	}

	// A ConsumeQueue that cannot reserve its next blocks holds back dispatch, which goes on
	// from where it stopped once space returns: nothing appended is lost.
	setFail(string(filepath.Separator) + "consumequeue" + string(filepath.Separator))
	for i := 1201; i < 1600; i++ {
		put(i)
	}
	setFail("")
	waitDispatched(t, s)
	if got := readAll(t, s, "T", 0); len(got) != 1600 || got[1599].QueueOffset != 1599 {
		t.Fatalf("readable %d, want 1600", len(got))
	}
}

// mountTmpfs mounts a tmpfs of size bytes for the test, or skips it when the test cannot
// mount (not root) and CI is unset.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	skipOrFail := func(why string) {
		if os.Getenv("CI") == "" {
			t.Skipf("needs a small file system: %s (run as root, or set CI to make this a failure)", why)
		}
		t.Fatalf("cannot mount a tmpfs: %s", why)
	}
	if os.Geteuid() != 0 {
		skipOrFail("mounting a tmpfs needs root")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		skipOrFail(err.Error())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFullTmpfs fills a real small file system. With RocketMQ's levels, appends are refused
// (ErrDiskFull) before the disk is full and accepted again once space is freed. Without them
// (levels at 100 %), appends run into ENOSPC, which every mapped file (CommitLog,
// ConsumeQueue, index) reports as an error rather than SIGBUS. Every acknowledged message
// stays readable, across a restart.
func TestFullTmpfs(t *testing.T) {
	dir := mountTmpfs(t, 8<<20)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, filepath.Join(dir, "store"))
	opts.SegmentBytes = 512 << 10
	opts.ConsumeQueueUnits = 2000
	opts.MaxHashSlotNum = 20000
	opts.MaxIndexNum = 20000
	// Nothing may be deleted: the test counts every acknowledged message.
	opts.DiskMaxUsedSpaceRatio, opts.DiskSpaceCleanForciblyRatio = 100, 100
	opts.CleanResourceInterval = 10 * time.Millisecond
	s := openStore(t, opts)
	runStore(t, s)

	const topics, queues = 20, 4
	acked := map[string]int{}
	i := 0
	put := func() (PutResult, error) {
		topic, q := fmt.Sprintf("T%d", i%topics), int32(i%queues)
		r, err := s.PutMessage(testMsg(topic, q, body(i, 500), map[string]string{"KEYS": fmt.Sprintf("k%d", i)}))
		if err == nil {
			acked[fmt.Sprintf("%s/%d", topic, q)]++
		}
		i++
		return r, err
	}
	// Fill until the warning level refuses appends. A burst may reach a full disk before the
	// next round measures it: that answer is an error too, and the loop waits for the round.
	refused := false
	for range 100_000 {
		r, err := put()
		if errors.Is(err, ErrDiskFull) && r.Status == ServiceNotAvailable {
			refused = true
			break
		}
		if err != nil {
			if r.Status != CreateMappedFileFailed {
				t.Fatalf("put %d: %v %v", i, r.Status, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !refused {
		t.Fatalf("no refusal after %d appends (disk %.2f)", i, s.DiskUsedRatio())
	}
	if ratio := s.DiskUsedRatio(); ratio <= 0.90 {
		t.Fatalf("refused at %.3f of the disk, want above 0.90", ratio)
	}
	// Space is freed: appends go again once a round measured it.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return !s.DiskFull() })
	for range 100 {
		if _, err := put(); err != nil {
			t.Fatalf("put after space returned: %v", err)
		}
	}
	checkAcked := func(s *Store) {
		t.Helper()
		waitDispatched(t, s)
		for qk, n := range acked {
			var topic string
			var q int32
			fmt.Sscanf(strings.Replace(qk, "/", " ", 1), "%s %d", &topic, &q)
			if got := readAll(t, s, topic, q); len(got) != n {
				t.Fatalf("%s: %d readable, %d acknowledged", qk, len(got), n)
			}
		}
	}
	checkAcked(s)

	// Without the warning level, appends fill the disk to ENOSPC: a clear error, no SIGBUS.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.DiskSpaceWarningLevelRatio = 100
	s = openStore(t, opts)
	runStore(t, s)
	var lastErr error
	var lastStatus PutStatus
	for range 100_000 {
		r, err := put()
		if err != nil {
			lastErr, lastStatus = err, r.Status
			break
		}
	}
	if lastStatus != CreateMappedFileFailed || !errors.Is(lastErr, syscall.ENOSPC) {
		t.Fatalf("put on a full disk: %v %v, want CREATE_MAPEDFILE_FAILED with ENOSPC", lastStatus, lastErr)
	}
	checkAcked(s)
	// The metadata written at close (checkpoint, manifest) may find no room: the store says
	// so, and recovery after it loses nothing acknowledged.
	if err := s.Close(); err != nil {
		t.Logf("close on a full disk: %v", err)
	}
	s = openStore(t, opts)
	checkAcked(s)
}

// TestFullTmpfsIndex: an index whose slots cover much of a small file system. Its pages are
// written in no order as keys hash; written unreserved on a full disk they raise SIGBUS,
// which kills the test binary. Reserved, the disk fills with a clear error.
func TestFullTmpfsIndex(t *testing.T) {
	dir := mountTmpfs(t, 6<<20)
	opts := testOptions(t, filepath.Join(dir, "store"))
	opts.SegmentBytes = 512 << 10
	opts.ConsumeQueueUnits = 2000
	opts.MaxHashSlotNum = 500_000 // 2 MB of slots
	opts.MaxIndexNum = 100_000
	opts.DiskMaxUsedSpaceRatio, opts.DiskSpaceCleanForciblyRatio, opts.DiskSpaceWarningLevelRatio = 100, 100, 100
	opts.CleanResourceInterval = time.Hour
	s := openStore(t, opts)
	runStore(t, s)
	acked := 0
	var lastErr error
	var lastStatus PutStatus
	for i := range 200_000 {
		r, err := s.PutMessage(testMsg("T", 0, body(i, 100), map[string]string{"KEYS": fmt.Sprintf("k%d a%d b%d", i, i, i)}))
		if err != nil {
			lastErr, lastStatus = err, r.Status
			break
		}
		acked++
	}
	if lastStatus != CreateMappedFileFailed || !errors.Is(lastErr, syscall.ENOSPC) {
		t.Fatalf("after %d appends: %v %v, want CREATE_MAPEDFILE_FAILED with ENOSPC", acked, lastStatus, lastErr)
	}
	waitDispatched(t, s)
	if got := len(readAll(t, s, "T", 0)); got != acked {
		t.Fatalf("readable %d, acknowledged %d", got, acked)
	}
}
