package controller

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

func openTestStore(t *testing.T, path string) *logStore {
	t.Helper()
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// entry is the log at index i as these tests write it: its data tells its index, so a read
// of the wrong entry or of damaged bytes shows.
func entry(i uint64, size int) *raft.Log {
	data := bytes.Repeat([]byte(fmt.Sprintf("entry-%d;", i)), size/8+1)[:size]
	return &raft.Log{Index: i, Term: i/100 + 1, Type: raft.LogCommand, Data: data,
		Extensions: []byte("ext"), AppendedAt: time.Unix(1700000000, int64(i)).UTC()}
}

// sameLog compares every field of raft.Log (bytes.Equal, not cmp: the Data of the big entries
// would be compared a byte at a time through reflection).
func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt)
}

func describeLog(l *raft.Log) string {
	data := l.Data
	if len(data) > 32 {
		data = data[:32]
	}
	return fmt.Sprintf("{index %d term %d type %v data %d bytes %q... ext %q at %v}",
		l.Index, l.Term, l.Type, len(l.Data), data, l.Extensions, l.AppendedAt)
}

func entries(from, to uint64, size int) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, entry(i, size))
	}
	return logs
}

// checkEntries fails unless the store holds exactly the indexes in want (between lo and hi),
// each as entry wrote it.
func checkEntries(t *testing.T, s *logStore, lo, hi uint64, size int, want func(i uint64) bool) {
	t.Helper()
	for i := lo; i <= hi; i++ {
		var got raft.Log
		err := s.GetLog(i, &got)
		if !want(i) {
			if !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("GetLog(%d) = %v, want ErrLogNotFound", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if want := entry(i, size); !sameLog(want, &got) {
			t.Fatalf("GetLog(%d) = %s, want %s", i, describeLog(&got), describeLog(want))
		}
	}
}

func checkEdges(t *testing.T, s *logStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil || f != first {
		t.Fatalf("FirstIndex = %d, %v; want %d", f, err, first)
	}
	l, err := s.LastIndex()
	if err != nil || l != last {
		t.Fatalf("LastIndex = %d, %v; want %d", l, err, last)
	}
}

func TestLogStoreEmpty(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "raft.db"))
	checkEdges(t, s, 0, 0)
	var l raft.Log
	if err := s.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog on an empty store: %v, want ErrLogNotFound", err)
	}
	// Raft tells a missing key from a failure by the error's text.
	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("Get of a missing key: %v, want \"not found\"", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" || v != 0 {
		t.Fatalf("GetUint64 of a missing key: %d, %v; want 0, \"not found\"", v, err)
	}
	if err := s.DeleteRange(1, 100); err != nil {
		t.Fatalf("DeleteRange on an empty store: %v", err)
	}
	existing, err := raft.HasExistingState(s, s, raft.NewInmemSnapshotStore())
	if err != nil || existing {
		t.Fatalf("HasExistingState = %v, %v; want false", existing, err)
	}
}

func TestLogStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s := openTestStore(t, path)
	if err := s.StoreLog(entry(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(2, 50, 10)); err != nil {
		t.Fatal(err)
	}
	// Raft may overwrite entries a new leader truncated (after DeleteRange) and reuse the
	// caller's Log values: the store must have copied what it wrote.
	reused := entry(51, 10)
	if err := s.StoreLog(reused); err != nil {
		t.Fatal(err)
	}
	copy(reused.Data, "XXXXXXXX")
	checkEdges(t, s, 1, 51)
	checkEntries(t, s, 0, 60, 10, func(i uint64) bool { return i >= 1 && i <= 51 })

	val := []byte("n1")
	if err := s.Set([]byte("LastVoteCand"), val); err != nil {
		t.Fatal(err)
	}
	copy(val, "zz")
	if err := s.SetUint64([]byte("CurrentTerm"), 1<<40+7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	check := func(s *logStore) {
		t.Helper()
		if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n1" {
			t.Fatalf("Get = %q, %v; want n1", v, err)
		}
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 1<<40+7 {
			t.Fatalf("GetUint64 = %d, %v", v, err)
		}
		if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
			t.Fatalf("Get of an empty value = %q, %v; want empty, nil", v, err)
		}
	}
	check(s)
	existing, err := raft.HasExistingState(s, s, raft.NewInmemSnapshotStore())
	if err != nil || !existing {
		t.Fatalf("HasExistingState = %v, %v; want true", existing, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, path)
	checkEdges(t, s, 1, 51)
	checkEntries(t, s, 0, 60, 10, func(i uint64) bool { return i >= 1 && i <= 51 })
	check(s)
}

// DeleteRange removes exactly [min, max]: from the head (compaction after a snapshot), from
// the tail (a follower's conflicting suffix), from the middle, past either end, and not at
// all when min > max. The entries span many bbolt pages, so deletes cross page boundaries.
func TestLogStoreDeleteRange(t *testing.T) {
	const n, size = 3000, 200
	s := openTestStore(t, filepath.Join(t.TempDir(), "raft.db"))
	if err := s.StoreLogs(entries(1, n, size)); err != nil {
		t.Fatal(err)
	}
	deleted := map[uint64]bool{}
	for _, r := range []struct{ min, max uint64 }{
		{1, 500},        // head
		{2701, 3000},    // tail
		{1200, 1800},    // middle
		{1000, 999},     // empty range: nothing
		{0, 520},        // from before the first entry
		{2600, 1 << 62}, // past the last entry
		{1500, 1900},    // overlapping what is gone
	} {
		if err := s.DeleteRange(r.min, r.max); err != nil {
			t.Fatalf("DeleteRange(%d, %d): %v", r.min, r.max, err)
		}
		for i := r.min; i <= r.max && i <= n; i++ {
			deleted[i] = true
		}
	}
	checkEdges(t, s, 521, 2599)
	checkEntries(t, s, 0, n+10, size, func(i uint64) bool { return i >= 1 && i <= n && !deleted[i] })

	if err := s.DeleteRange(0, 1<<63); err != nil {
		t.Fatal(err)
	}
	checkEdges(t, s, 0, 0)
}

// One StoreLogs call with many entries, some larger than a page (bbolt overflow pages) and
// one of 4 MiB, lands whole and reads back after a reopen.
func TestLogStoreBigBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s := openTestStore(t, path)
	logs := entries(1, 20000, 64)
	for _, i := range []int{0, 7, 9999, 19999} {
		logs[i] = entry(uint64(i+1), 64<<10)
	}
	logs[5000] = entry(5001, 4<<20)
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, path)
	checkEdges(t, s, 1, 20000)
	for _, want := range logs {
		var got raft.Log
		if err := s.GetLog(want.Index, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", want.Index, err)
		}
		if !sameLog(want, &got) {
			t.Fatalf("GetLog(%d) = %s, want %s", want.Index, describeLog(&got), describeLog(want))
		}
	}
}

const crashChildEnv = "MQ_LOGSTORE_CRASH_PATH"

// TestLogStoreCrashChild is the process TestLogStoreSurvivesCrash kills: it appends batches
// and says which index each committed batch ended at, until it is killed.
func TestLogStoreCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestLogStoreSurvivesCrash")
	}
	s, err := openLogStore(path)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	for i := uint64(1); ; i += 10 {
		if err := s.StoreLogs(entries(i, i+9, 300)); err != nil {
			fmt.Println("error", err)
			return
		}
		if err := s.SetUint64([]byte("CurrentTerm"), i+9); err != nil {
			fmt.Println("error", err)
			return
		}
		fmt.Println("committed", i+9)
	}
}

// A controller killed (SIGKILL) while it appends keeps every entry whose write returned, and
// the store opens again without repair.
func TestLogStoreSurvivesCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogStoreCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked uint64
	lines := bufio.NewScanner(out)
	for acked < 1000 && lines.Scan() {
		line := lines.Text()
		if n, ok := strings.CutPrefix(line, "committed "); ok {
			if acked, err = strconv.ParseUint(n, 10, 64); err != nil {
				t.Fatalf("child said %q", line)
			}
		} else if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out)
	_ = cmd.Wait()
	if acked < 1000 {
		t.Fatalf("child stopped after index %d", acked)
	}

	s := openTestStore(t, path)
	last, err := s.LastIndex()
	if err != nil || last < acked || last%10 != 0 {
		t.Fatalf("LastIndex after the crash = %d, %v; want a whole batch at or past %d", last, err, acked)
	}
	checkEdges(t, s, 1, last)
	checkEntries(t, s, 1, last, 300, func(uint64) bool { return true })
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term < acked {
		t.Fatalf("CurrentTerm after the crash = %d, %v; want at least %d", term, err, acked)
	}
}

// A second opener of the same file (another controller on the same Dir) gets an error that
// says so, instead of waiting for ever for the lock.
func TestLogStoreLockedByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	openTestStore(t, path)
	s, err := openLogStore(path)
	if err == nil {
		_ = s.Close()
		t.Fatal("a second open of a held store succeeded")
	}
	if !strings.Contains(err.Error(), "locked by another process") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open: %v, want an error naming the file and the lock", err)
	}
}

// A file that is not a store, and a store with damaged keys or values, give errors, not
// panics.
func TestLogStoreDamagedFile(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a bolt file "), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := openLogStore(garbage); err == nil {
		_ = s.Close()
		t.Fatal("opened a file that is no bbolt database")
	} else if !strings.Contains(err.Error(), garbage) {
		t.Fatalf("open of garbage: %v, want the path in the error", err)
	}

	path := filepath.Join(dir, "raft.db")
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(1, 3, 10)); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketLogs).Put([]byte{0, 0, 0}, []byte("x")); err != nil {
			return err
		}
		if err := tx.Bucket(bucketLogs).Put(indexKey(9), []byte{0xc1, 0xc1}); err != nil {
			return err
		}
		return tx.Bucket(bucketConf).Put([]byte("CurrentTerm"), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FirstIndex(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("FirstIndex over a 3-byte key: %v, want a damaged-file error", err)
	}
	var l raft.Log
	if err := s.GetLog(9, &l); err == nil || errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog of undecodable bytes: %v, want a decode error", err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("GetUint64 of 3 bytes: %v, want a damaged-file error", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFixture copies the raft.db an earlier mq (raft-boltdb/v2) wrote into dir: one
// controller, n0, with broker-a's group registered and its SyncStateSet altered, no snapshot.
func copyFixture(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "raftboltdb-v2", "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raft.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The store reads, entry by entry, the file raft-boltdb/v2 wrote.
func TestLogStoreReadsRaftBoltDBFile(t *testing.T) {
	dir := t.TempDir()
	copyFixture(t, dir)
	s := openTestStore(t, filepath.Join(dir, "raft.db"))
	first, err := s.FirstIndex()
	if err != nil || first != 1 {
		t.Fatalf("FirstIndex = %d, %v; want 1", first, err)
	}
	last, err := s.LastIndex()
	if err != nil || last < 3 {
		t.Fatalf("LastIndex = %d, %v; want the bootstrap, a no-op and the commands", last, err)
	}
	var commands int
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if l.Index != i || l.Term == 0 {
			t.Fatalf("entry %d reads as index %d term %d", i, l.Index, l.Term)
		}
		if l.Type == raft.LogCommand {
			commands++
			if l.AppendedAt.IsZero() {
				t.Fatalf("entry %d lost its AppendedAt", i)
			}
		}
	}
	if commands == 0 {
		t.Fatal("no command entries in the fixture")
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term == 0 {
		t.Fatalf("CurrentTerm = %d, %v", term, err)
	}
}

// A controller whose data directory an earlier mq wrote starts on it, keeps its log, and
// recovers the groups from it.
func TestControllerStartsOnRaftBoltDBDirectory(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "raftboltdb-v2", "groups.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1, true, false)
	c.kill("n0")
	if err := os.RemoveAll(c.dirs["n0"]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.dirs["n0"], 0o700); err != nil {
		t.Fatal(err)
	}
	copyFixture(t, c.dirs["n0"])
	c.start("n0")
	_, ctl := c.leader()
	poll(t, "the controller recovered broker-a's group from the old log", func() bool {
		got, _ := json.Marshal(ctl.Groups())
		return string(got) == string(bytes.TrimSpace(want))
	})
	info, err := ctl.GetReplicaInfo("broker-a")
	if err != nil || info.MasterID != 1 || info.MasterEpoch != 1 {
		t.Fatalf("recovered %+v %v, want master 1 at epoch 1", info, err)
	}
}
