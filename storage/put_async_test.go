package storage

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type asyncPut struct {
	r   PutResult
	err error
}

// putAsync calls PutMessageAsync and returns the channel its outcome arrives on.
func putAsync(s *Store, m *Message) <-chan asyncPut {
	out := make(chan asyncPut, 1)
	s.PutMessageAsync(m, func(r PutResult, err error) { out <- asyncPut{r, err} })
	return out
}

// TestPutMessageAsyncAnswersAfterFsync: with the fsync held, several async puts are all
// appended and none answered (no goroutine waits for them); releasing the fsync answers every
// one as durable, from one round.
func TestPutMessageAsyncAnswersAfterFsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h := heldSyncFlushStore(t, nil)

		first := putAsync(s, testMsg("T", 0, "m0", nil))
		<-h.entered // the flusher holds the fsync covering m0
		var rest []<-chan asyncPut
		for i := 1; i < 8; i++ {
			rest = append(rest, putAsync(s, testMsg("T", 0, "m", nil)))
		}
		synctest.Wait()
		if !allAppended(s, 8) {
			t.Fatal("not all 8 appended while the fsync is held")
		}
		for i, c := range append([]<-chan asyncPut{first}, rest...) {
			select {
			case a := <-c:
				t.Fatalf("put %d answered (%v) before its fsync returned", i, a.r.Status)
			default:
			}
		}
		h.block.Store(false)
		h.gate <- struct{}{} // the first fsync returns; the next one covers the other seven
		for i, c := range append([]<-chan asyncPut{first}, rest...) {
			a := <-c
			if a.err != nil || a.r.Status != PutOK {
				t.Fatalf("put %d: %v %v", i, a.r.Status, a.err)
			}
			if end := a.r.PhyOffset + int64(a.r.WroteBytes); end > h.durable.Load() {
				t.Fatalf("put %d answered at %d, durable only to %d", i, end, h.durable.Load())
			}
		}
		if got := len(readAll(t, s, "T", 0)); got != 8 {
			t.Fatalf("%d of 8 visible once durable", got)
		}
		if n := h.count.Load(); n > 2 {
			t.Errorf("%d fsyncs for 8 puts waiting together, want at most 2", n)
		}
	})
}

// TestPutMessageAsyncTimeout: an fsync that never returns answers FLUSH_DISK_TIMEOUT after
// SyncFlushTimeout; WAIT=false answers before PutMessageAsync returns.
func TestPutMessageAsyncTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const syncFlushTimeout = 5 * time.Second
		s, h := heldSyncFlushStore(t, func(o *Options) { o.SyncFlushTimeout = syncFlushTimeout })
		t.Cleanup(func() { h.block.Store(false); close(h.gate) }) // runs before the store stops

		start := time.Now()
		a := <-putAsync(s, testMsg("T", 0, "slow disk", nil))
		if a.r.Status != FlushDiskTimeout || !errors.Is(a.err, ErrFlushTimeout) {
			t.Fatalf("status %v err %v", a.r.Status, a.err)
		}
		if got := time.Since(start); got != syncFlushTimeout {
			t.Fatalf("answered after %v, want SyncFlushTimeout %v", got, syncFlushTimeout)
		}

		select {
		case a := <-putAsync(s, testMsg("T", 0, "no wait", map[string]string{"WAIT": "false"})):
			if a.err != nil || a.r.Status != PutOK {
				t.Fatalf("WAIT=false: %v %v", a.r.Status, a.err)
			}
		default:
			t.Fatal("WAIT=false waited for the flush")
		}
	})
}

// TestPutMessageAsyncAnsweredByClose: a put waiting on an fsync that has not started when the
// store closes gets its answer from Close, and nothing runs after Close returns.
func TestPutMessageAsyncAnsweredByClose(t *testing.T) {
	opts := testOptions(t, "")
	opts.FlushDiskType = SyncFlush
	s, err := Open(opts) // not run: no flusher
	if err != nil {
		t.Fatal(err)
	}
	c := putAsync(s, testMsg("T", 0, "m", nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-c:
		// Close's own flush made it durable before releasing it.
		if a.err != nil || a.r.Status != PutOK {
			t.Fatalf("answered %v %v, want PUT_OK after Close's flush", a.r.Status, a.err)
		}
	default:
		t.Fatal("Close returned before answering the waiting put")
	}
	// After Close, a put is refused at once.
	a := <-putAsync(s, testMsg("T", 0, "late", nil))
	if a.r.Status != ServiceNotAvailable {
		t.Fatalf("put after Close: %v %v", a.r.Status, a.err)
	}
}
