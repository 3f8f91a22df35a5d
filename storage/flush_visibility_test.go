package storage

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestSyncFlushShowsOnlyDurable: in SYNC_FLUSH a message is dispatched, and so seen by
// consumers, only once the fsync covering it returned (RocketMQ 5.3's reput end under
// SYNC_FLUSH, readUnCommitted false). Before, a consumer could read and commit past a message
// that a power cut then erased, and skip the acknowledged message stored at its offset after
// the restart (internal/sim seeds 327 and 443: a failing fsync, then a power cut).
func TestSyncFlushShowsOnlyDurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h := heldSyncFlushStore(t, nil)
		answer := putAsync(s, testMsg("T", 0, "m0", nil))
		<-h.entered // the flusher holds the fsync covering m0
		synctest.Wait()
		if s.MaxPhyOffset() == 0 {
			t.Fatal("m0 not appended")
		}
		if got := s.MaxOffsetInQueue("T", 0); got != 0 {
			t.Fatalf("queue ends at %d before the fsync returned, want 0", got)
		}
		if got := readAll(t, s, "T", 0); len(got) != 0 {
			t.Fatalf("%d messages visible before their fsync returned", len(got))
		}
		if d := s.DispatchedPhyOffset(); d != 0 {
			t.Fatalf("dispatched to %d before any fsync returned", d)
		}
		h.block.Store(false)
		h.gate <- struct{}{}
		a := <-answer
		if a.err != nil || a.r.Status != PutOK {
			t.Fatalf("m0: %v %v", a.r.Status, a.err)
		}
		// Visible by the time its sender is answered, as without the bound.
		if got := readAll(t, s, "T", 0); len(got) != 1 || string(got[0].Body) != "m0" {
			t.Fatalf("after the fsync: %d messages, want m0 alone", len(got))
		}
	})
}

// TestSyncFlushReadUnCommitted: with ReadUnCommitted a SYNC_FLUSH store shows what it wrote
// at once, fsync or not (RocketMQ's readUnCommitted true).
func TestSyncFlushReadUnCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h := heldSyncFlushStore(t, func(o *Options) { o.ReadUnCommitted = true })
		answer := putAsync(s, testMsg("T", 0, "m0", nil))
		<-h.entered
		synctest.Wait()
		if got := readAll(t, s, "T", 0); len(got) != 1 {
			t.Fatalf("%d messages visible with ReadUnCommitted, want 1", len(got))
		}
		h.block.Store(false)
		h.gate <- struct{}{}
		<-answer
	})
}

// TestSyncFlushSlaveShowsReplicatedOnceFlushed: a SYNC_FLUSH slave, which no appender makes
// flush, flushes what it replicated on its own and then shows it; never before.
func TestSyncFlushSlaveShowsReplicatedOnceFlushed(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	runStore(t, master)
	mustPut(t, master, testMsg("T", 0, "m0", nil))
	mustPut(t, master, testMsg("T", 0, "m1", nil))
	v, err := master.ReadCommitLog(0, int(master.MaxPhyOffset()))
	if err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), v.Data...)
	v.Release()

	synctest.Test(t, func(t *testing.T) {
		slave, h := heldSyncFlushStore(t, func(o *Options) { o.Slave = true })
		if err := slave.AppendRaw(0, raw); err != nil {
			t.Fatal(err)
		}
		<-h.entered // the append woke the flusher (its periodic round is an hour away)
		synctest.Wait()
		got := slave.MaxOffsetInQueue("T", 0)
		h.block.Store(false)
		h.gate <- struct{}{}
		if got != 0 {
			t.Fatalf("queue ends at %d before the replicated messages' fsync returned, want 0", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := readAll(t, slave, "T", 0); len(got) != 2 {
			t.Fatalf("%d of 2 replicated messages visible once flushed", len(got))
		}
	})
}

// TestPullPastVisibleButWrittenWaits: a consumer may hold an offset past what a SYNC_FLUSH
// master shows, having read the message from a slave whose fsync returned first. The master
// has that message in its log, waiting for its own fsync: a pull there is "not yet" at the
// same offset, not an illegal offset sending the consumer back to the queue's start
// (internal/sim seed 123: a slow disk on the master, the consumer back at 0 and 53).
func TestPullPastVisibleButWrittenWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h := heldSyncFlushStore(t, nil)
		answer := putAsync(s, testMsg("T", 0, "m0", nil))
		<-h.entered
		synctest.Wait()
		r := s.GetMessage("g", "T", 0, 1, 32, 0, nil)
		st, next := r.Status, r.NextBeginOffset
		r.Release()
		if st != OffsetOverflowOne || next != 1 {
			t.Errorf("pull at 1 with m0 written, unflushed: %v next %d, want %v next 1", st, next, OffsetOverflowOne)
		}
		r = s.GetMessage("g", "T", 0, 2, 32, 0, nil)
		st, next = r.Status, r.NextBeginOffset
		r.Release()
		if st != NoMessageInQueue || next != 0 {
			t.Errorf("pull at 2, past anything written: %v next %d, want %v next 0", st, next, NoMessageInQueue)
		}
		h.block.Store(false)
		h.gate <- struct{}{}
		<-answer
	})
}
