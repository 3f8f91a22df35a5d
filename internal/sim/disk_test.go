package sim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/storage"
)

var testHost = netip.MustParseAddrPort("127.0.0.1:10911")

func openDiskStore(t *testing.T, dir string, flush storage.FlushDiskType) *storage.Store {
	t.Helper()
	s, err := storage.Open(storage.Options{Dir: dir, SegmentBytes: segmentBytes, ConsumeQueueUnits: 2000,
		MaxHashSlotNum: maxHashSlots, MaxIndexNum: maxIndexEntries, FlushDiskType: flush,
		FlushIntervalCommitLog: time.Hour, FlushIntervalConsumeQueue: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runStore runs s until the test ends, then closes it.
func runStore(t *testing.T, s *storage.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	})
}

func put(t *testing.T, s *storage.Store, n int) {
	t.Helper()
	for i := range n {
		m := &storage.Message{Topic: "T", Body: fmt.Appendf(nil, "m%d", i), StoreHost: testHost, BornHost: testHost}
		if _, err := s.PutMessage(m); err != nil {
			t.Fatal(err)
		}
	}
}

// The disk keeps apart what a power cut loses from what it keeps: records written through the
// mapping reach the file only when a sync writes them back, so the directory as it stands is the
// disk after a power cut, and after writeBack the disk after a process crash.
func TestDiskPowerCutLosesWhatWasNotSynced(t *testing.T) {
	dir := t.TempDir()
	d := newDisk(dir, 1)
	defer d.install()()
	s := openDiskStore(t, dir, storage.AsyncFlush) // the flusher waits an hour: nothing synced
	put(t, s, 10)
	root := t.TempDir()
	power, crash := filepath.Join(root, "power"), filepath.Join(root, "crash")
	if err := image(dir, power); err != nil {
		t.Fatal(err)
	}
	if err := d.writeBack(); err != nil {
		t.Fatal(err)
	}
	if err := image(dir, crash); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, c := range []struct {
		dir  string
		want int64
	}{{power, 0}, {crash, 10}} {
		s := openDiskStore(t, c.dir, storage.AsyncFlush)
		if got := s.MaxOffsetInQueue("T", 0); got != c.want {
			t.Errorf("%s: %d messages after the cut, want %d", filepath.Base(c.dir), got, c.want)
		}
		s.Close()
	}
}

// Under SYNC_FLUSH an acknowledged append was synced: a power cut keeps it.
func TestDiskPowerCutKeepsSyncedAppends(t *testing.T) {
	synctest.Test(t, testDiskPowerCutKeepsSyncedAppends)
}

func testDiskPowerCutKeepsSyncedAppends(t *testing.T) {
	dir := t.TempDir()
	d := newDisk(dir, 1)
	defer d.install()()
	s := openDiskStore(t, dir, storage.SyncFlush)
	runStore(t, s)
	put(t, s, 10)
	power := filepath.Join(t.TempDir(), "power")
	if err := image(dir, power); err != nil {
		t.Fatal(err)
	}
	s2 := openDiskStore(t, power, storage.AsyncFlush)
	defer s2.Close()
	if got := s2.MaxOffsetInQueue("T", 0); got != 10 {
		t.Fatalf("%d messages after a power cut, want the 10 acknowledged", got)
	}
}

// A failing disk fails syncs and writes as set, with the errors a disk gives, and only while
// set; its decisions follow from the seed, file by file.
func TestDiskFaults(t *testing.T) { synctest.Test(t, testDiskFaults) }

func testDiskFaults(t *testing.T) {
	dir := t.TempDir()
	d := newDisk(dir, 7)
	defer d.install()()
	s := openDiskStore(t, dir, storage.SyncFlush)
	runStore(t, s)
	d.set(diskFaults{syncFail: 1})
	m := &storage.Message{Topic: "T", Body: []byte("x"), StoreHost: testHost, BornHost: testHost}
	if _, err := s.PutMessage(m); !errors.Is(err, storage.ErrFlushTimeout) {
		t.Fatalf("a send on a disk whose syncs fail: %v, want a flush timeout", err)
	}
	d.set(diskFaults{})
	put(t, s, 1)
	d.set(diskFaults{writeFail: 1})
	if err := s.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("closing a store on a disk whose writes fail: %v, want EIO", err)
	}
	if _, err := storage.Open(storage.Options{Dir: dir, SegmentBytes: segmentBytes}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("opening a store on a disk whose writes fail: %v, want EIO", err)
	}
	a, b := newDisk(dir, 7), newDisk(dir, 7)
	for i := range 100 {
		file := fmt.Sprintf("%s/f%d", dir, i%3)
		if x, y := a.roll("sync", file), b.roll("sync", file); x != y || x < 0 || x >= 1 {
			t.Fatalf("draw %d: %v and %v from one seed", i, x, y)
		}
	}
	if newDisk(dir, 8).roll("sync", dir+"/f0") == newDisk(dir, 7).roll("sync", dir+"/f0") {
		t.Fatal("two seeds drew the same")
	}
}
