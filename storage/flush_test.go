package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// syncHook counts CommitLog fsyncs and can hold them until released. durable is the
// CommitLog end seen when the last completed fsync began: data below it is known durable.
type syncHook struct {
	s       atomic.Pointer[Store]
	count   atomic.Int64
	durable atomic.Int64
	block   atomic.Bool
	entered chan struct{}
	gate    chan struct{}
}

func newSyncHook(ops *fileOps) *syncHook {
	h := &syncHook{entered: make(chan struct{}, 100), gate: make(chan struct{})}
	real := ops.sync
	ops.sync = func(f *os.File) error {
		if !strings.Contains(f.Name(), "commitlog") {
			return real(f)
		}
		covered := int64(0)
		if s := h.s.Load(); s != nil {
			covered = s.cl.maxPhy.Load()
		}
		if h.block.Load() {
			h.entered <- struct{}{}
			<-h.gate
		}
		err := real(f)
		h.count.Add(1)
		for {
			old := h.durable.Load()
			if covered <= old || h.durable.CompareAndSwap(old, covered) {
				break
			}
		}
		return err
	}
	return h
}

// heldSyncFlushStore opens a SyncFlush store whose CommitLog fsyncs wait at the hook's gate
// (until h.block is cleared), with only appenders waking the flusher, and runs it in the test's
// synctest bubble. configure adjusts the options first.
func heldSyncFlushStore(t *testing.T, configure func(*Options)) (*Store, *syncHook) {
	t.Helper()
	opts := testOptions(t, "")
	opts.FlushDiskType = SyncFlush
	opts.FlushIntervalCommitLog = time.Hour
	opts.ops = defaultFileOps()
	if configure != nil {
		configure(&opts)
	}
	h := newSyncHook(opts.ops)
	h.block.Store(true)
	s := openStore(t, opts)
	h.s.Store(s)
	runStoreInBubble(t, s)
	return s, h
}

// TestGroupCommitReleasesOnlyAfterFsync runs in a synctest bubble: the held fsync and the
// waiting appenders all block on channels, so synctest.Wait returns exactly when every appender
// has written and waits, and none may have returned by then.
func TestGroupCommitReleasesOnlyAfterFsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h := heldSyncFlushStore(t, func(o *Options) {
			o.FlushIntervalConsumeQueue = 0 // the default: fewer rounds as the fake clock runs
		})
		openGate := sync.OnceFunc(func() { h.block.Store(false); close(h.gate) })
		t.Cleanup(openGate) // a failed test must not leave the flusher held

		const n = 32
		var returned atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.PutMessage(testMsg("G", int32(i%4), body(i, 200), nil))
				if err != nil {
					errs <- err
					return
				}
				end := r.PhyOffset + int64(r.WroteBytes)
				if d := h.durable.Load(); end > d {
					errs <- errors.New("released before its fsync: end beyond the durable offset")
				}
				returned.Add(1)
			}()
		}
		select {
		case <-h.entered: // the flusher is inside the first fsync, held
		case <-time.After(time.Minute): // fake time: fails at once if the flusher never syncs
			t.Fatal("no appender woke the flusher")
		}
		synctest.Wait()
		if !allAppended(s, n) {
			t.Fatal("with the fsync held, not every appender has written and is waiting")
		}
		if got := returned.Load(); got != 0 {
			t.Fatalf("%d appenders returned while the fsync was held", got)
		}
		openGate()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if returned.Load() != n {
			t.Fatalf("%d returned", returned.Load())
		}
		if c := h.count.Load(); c > 4 {
			t.Fatalf("%d fsyncs for %d sync appends: no group commit", c, n)
		}
		t.Logf("%d appenders released by %d fsyncs", n, h.count.Load())
	})
}

// allAppended reports whether n messages are in the log (each appender writes one).
func allAppended(s *Store, n int) bool {
	cnt := 0
	s.cl.mu.Lock()
	for _, qs := range s.cl.queueOffsets {
		for _, next := range qs {
			cnt += int(next)
		}
	}
	s.cl.mu.Unlock()
	return cnt == n
}

// TestSyncFlushTimeout: with the CommitLog's fsync stuck, a sync-flush append is stored but
// answers FLUSH_DISK_TIMEOUT after exactly the default syncFlushTimeout, on synctest's clock.
func TestSyncFlushTimeout(t *testing.T) {
	const syncFlushTimeout = 5 * time.Second // RocketMQ's default
	synctest.Test(t, func(t *testing.T) {
		opts := testOptions(t, "")
		opts.FlushDiskType = SyncFlush
		opts.FlushIntervalCommitLog, opts.FlushIntervalConsumeQueue = 0, 0 // the defaults
		opts.ops = defaultFileOps()
		h := newSyncHook(opts.ops)
		h.block.Store(true)
		s := openStore(t, opts)
		runStoreInBubble(t, s)
		t.Cleanup(func() { h.block.Store(false); close(h.gate) }) // runs before the store stops
		start := time.Now()
		r, err := s.PutMessage(testMsg("T", 0, "slow disk", nil))
		if r.Status != FlushDiskTimeout || !errors.Is(err, ErrFlushTimeout) {
			t.Fatalf("status %v err %v", r.Status, err)
		}
		if got := time.Since(start); got != syncFlushTimeout {
			t.Fatalf("FLUSH_DISK_TIMEOUT after %v, want syncFlushTimeout %v", got, syncFlushTimeout)
		}
		synctest.Wait()
		// Stored, but no consumer sees it before it is durable (readUnCommitted false).
		if m := s.MaxPhyOffset(); m == 0 {
			t.Fatal("timed-out message not stored")
		}
		if got := readAll(t, s, "T", 0); len(got) != 0 {
			t.Fatalf("%d messages visible before their fsync returned", len(got))
		}
		// WAIT=false does not wait at all.
		start = time.Now()
		r, err = s.PutMessage(testMsg("T", 0, "no wait", map[string]string{"WAIT": "false"}))
		if err != nil || r.Status != PutOK || time.Since(start) != 0 {
			t.Fatalf("WAIT=false: %v %v after %v", r.Status, err, time.Since(start))
		}
	})
}

// TestAsyncFlushFlushes: in ASYNC_FLUSH an append is fsynced by the flusher's first round,
// flushIntervalCommitLog after Run started, and not before; synctest's clock makes that exact.
func TestAsyncFlushFlushes(t *testing.T) {
	const flushInterval = 500 * time.Millisecond // RocketMQ's flushIntervalCommitLog, the default
	synctest.Test(t, func(t *testing.T) {
		opts := testOptions(t, "")
		opts.FlushIntervalCommitLog = 0 // the default
		opts.ops = defaultFileOps()
		h := newSyncHook(opts.ops)
		s := openStore(t, opts)
		h.s.Store(s)
		runStoreInBubble(t, s)
		r := mustPut(t, s, testMsg("T", 0, "x", nil))
		end := r.PhyOffset + int64(r.WroteBytes)
		time.Sleep(flushInterval - time.Nanosecond)
		synctest.Wait()
		if f, d := s.FlushedPhyOffset(), h.durable.Load(); f >= end || d >= end {
			t.Fatalf("flushed to %d (durable %d) of %d before the first flush round", f, d, end)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if f, d := s.FlushedPhyOffset(), h.durable.Load(); f < end || d < end {
			t.Fatalf("flushed to %d (durable %d) of %d after the first flush round", f, d, end)
		}
	})
}

// TestCheckpointFlushesQueuesAndIndex: every checkpoint round fsyncs the ConsumeQueue and
// index files written since the last one, not only the first time.
func TestCheckpointFlushesQueuesAndIndex(t *testing.T) {
	opts := testOptions(t, "")
	opts.ops = defaultFileOps()
	var mu sync.Mutex
	synced := map[string]int{}
	real := opts.ops.sync
	opts.ops.sync = func(f *os.File) error {
		mu.Lock()
		switch {
		case strings.Contains(f.Name(), "consumequeue"):
			synced["cq"]++
		case strings.Contains(f.Name(), "index"):
			synced["index"]++
		}
		mu.Unlock()
		return real(f)
	}
	s := openStore(t, opts)
	for round := 1; round <= 3; round++ {
		mustPut(t, s, testMsg("T", 0, "x", map[string]string{"KEYS": "k"}))
		s.dispatchAvailable(nil)
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		cq, idx := synced["cq"], synced["index"]
		mu.Unlock()
		if cq != round || idx != round {
			t.Fatalf("round %d: %d consume queue and %d index fsyncs", round, cq, idx)
		}
	}
	// Nothing new: no fsync.
	s.flushQueuesAndCheckpoint(true)
	if synced["cq"] != 3 || synced["index"] != 3 {
		t.Fatalf("idle round synced: %v", synced)
	}
}

// TestSyncFlushAppendsWriteTheFile: a SyncFlush store writes each append to the CommitLog file
// rather than through its mapping (commitLog.writeLocked); the records read back through the
// mapping all the same, and survive a crash after their sends were answered. An append whose
// write fails goes into the mapping instead and is not lost either.
func TestSyncFlushAppendsWriteTheFile(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t, dir)
	opts.FlushDiskType = SyncFlush
	opts.ops = defaultFileOps()
	var mu sync.Mutex
	logWrites, failNext := 0, false
	realWrite := opts.ops.writeAt
	opts.ops.writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		if strings.Contains(f.Name(), "commitlog") && len(b) > 0 && b[4] != 0 { // a record, not zeros
			mu.Lock()
			defer mu.Unlock()
			logWrites++
			if failNext {
				failNext = false
				return 0, errors.New("injected write failure")
			}
		}
		return realWrite(f, b, off)
	}
	s := openStore(t, opts)
	runStore(t, s)
	for i := range 20 {
		if i == 10 {
			mu.Lock()
			failNext = true
			mu.Unlock()
		}
		mustPut(t, s, testMsg("T", 0, fmt.Sprintf("m%d", i), nil))
	}
	mu.Lock()
	if logWrites != 20 {
		t.Errorf("%d CommitLog writes for 20 SyncFlush appends, want one each", logWrites)
	}
	mu.Unlock()
	waitDispatched(t, s)
	check := func(s *Store) {
		t.Helper()
		got := readAll(t, s, "T", 0)
		if len(got) != 20 {
			t.Fatalf("read %d of 20 records", len(got))
		}
		for i, m := range got {
			if want := fmt.Sprintf("m%d", i); string(m.Body) != want {
				t.Fatalf("record %d is %q, want %q", i, m.Body, want)
			}
		}
	}
	check(s)
	crash(s)
	check(openStore(t, testOptions(t, dir)))
}
