package storage

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// fillForCut writes n messages to topic C, queues 0 and 1 alternately, each with a unique key,
// as the crash tests do (so checkAfterCrash can judge the result), across several segments.
func fillForCut(t *testing.T, s *Store, n int) []ack {
	t.Helper()
	var acks []ack
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		b := key + "-" + strings.Repeat("x", 700+i%300)
		m := testMsg("C", int32(i%2), b, map[string]string{"KEYS": key})
		r := mustPut(t, s, m)
		acks = append(acks, ack{qid: m.QueueID, qoff: r.QueueOffset, phy: r.PhyOffset, body: b})
	}
	waitDispatched(t, s)
	return acks
}

func before(acks []ack, end int64) []ack {
	return slices.DeleteFunc(slices.Clone(acks), func(a ack) bool { return a.phy >= end })
}

func TestTruncateAtOpenRecordBoundary(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	acks := fillForCut(t, s, 300)
	if s.cl.segs.len() < 4 {
		t.Fatalf("want several segments, have %d", s.cl.segs.len())
	}
	cutAck := acks[110]
	cut := cutAck.phy
	for _, e := range []EpochEntry{{1, 0}, {2, acks[50].phy}, {3, cut}, {4, acks[200].phy}} {
		if err := s.AppendEpoch(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	opts.Truncate, opts.TruncateTo = true, cut
	s2 := openStore(t, opts)
	rep := s2.RecoveryReport()
	if s2.MaxPhyOffset() != cut || rep.TruncatedAt != cut || !strings.Contains(rep.TruncateReason, "TruncateTo") {
		t.Fatalf("max %d, report cut at %d (%q), want %d", s2.MaxPhyOffset(), rep.TruncatedAt, rep.TruncateReason, cut)
	}
	if len(rep.RemovedFiles) == 0 || rep.ClearedUnits == 0 {
		t.Fatalf("report: removed %v, cleared %d units", rep.RemovedFiles, rep.ClearedUnits)
	}
	if got, want := s2.Epochs(), []EpochEntry{{1, 0}, {2, acks[50].phy}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	kept := before(acks, cut)
	checkAfterCrash(t, s2, kept)
	for q := range int32(2) {
		var want []string
		for _, a := range kept {
			if a.qid == q {
				want = append(want, a.body)
			}
		}
		var got []string
		for _, r := range readAll(t, s2, "C", q) {
			got = append(got, string(r.Body))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("queue %d: %d messages, want %d", q, len(got), len(want))
		}
	}
	for _, k := range []string{"k110", "k111", "k299"} {
		if res, err := s2.QueryMessage("C", k, 4, 0, 1<<62); err != nil || len(res.Messages) != 0 {
			t.Fatalf("cut key %s: %d hits, %v", k, len(res.Messages), err)
		}
	}
	// New appends land at the cut and continue the queues.
	m := testMsg("C", cutAck.qid, "after-cut", map[string]string{"KEYS": "k110"})
	r := mustPut(t, s2, m)
	if r.PhyOffset != cut || r.QueueOffset != cutAck.qoff {
		t.Fatalf("append after the cut at %d queue offset %d, want %d %d", r.PhyOffset, r.QueueOffset, cut, cutAck.qoff)
	}
	waitDispatched(t, s2)
	if res, err := s2.QueryMessage("C", "k110", 4, 0, 1<<62); err != nil || len(res.Messages) != 1 {
		t.Fatalf("new k110: %d hits, %v", len(res.Messages), err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening with the same cut again cuts nothing more than the new message.
	opts.Truncate = false
	s3 := openStore(t, opts)
	if s3.MaxPhyOffset() != r.PhyOffset+int64(r.WroteBytes) || !s3.RecoveryReport().Clean {
		t.Fatalf("reopened: max %d", s3.MaxPhyOffset())
	}
}

func TestTruncateAtOpenRefusesMidRecordOnMaster(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	acks := fillForCut(t, s, 20)
	s.Close()
	opts.Truncate, opts.TruncateTo = true, acks[10].phy+7
	if s2, err := Open(opts); err == nil || !strings.Contains(err.Error(), "inside the record") {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("mid-record cut on a master: %v", err)
	}
	// Nothing was touched: the store opens whole.
	opts.Truncate = false
	s3 := openStore(t, opts)
	checkAfterCrash(t, s3, acks)
}

// TestTruncateAtOpenMidRecordSlave: a slave's copy cut mid-record ends there, and the master's
// bytes from there complete it; the completed record is dispatched and indexed.
func TestTruncateAtOpenMidRecordSlave(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	acks := fillForCut(t, master, 150)
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	copyLog(t, master, slave, master.MaxPhyOffset())
	waitDispatched(t, slave)
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}

	split := acks[90]
	cut := split.phy + 100
	slaveOpts.Truncate, slaveOpts.TruncateTo = true, cut
	slave2 := openStore(t, slaveOpts)
	if slave2.MaxPhyOffset() != cut || slave2.RecoveryReport().TruncatedAt != cut {
		t.Fatalf("slave max %d, report %d, want %d", slave2.MaxPhyOffset(), slave2.RecoveryReport().TruncatedAt, cut)
	}
	if got, want := slave2.MaxOffsetInQueue("C", split.qid), split.qoff; got != want {
		t.Fatalf("queue of the split record: max %d, want %d", got, want)
	}
	if res, _ := slave2.QueryMessage("C", "k90", 4, 0, 1<<62); len(res.Messages) != 0 {
		t.Fatal("the split record is found before it is whole")
	}
	runStore(t, slave2)
	copyLog(t, master, slave2, master.MaxPhyOffset())
	waitDispatched(t, slave2)
	for q := range int32(2) {
		a, b := readAll(t, master, "C", q), readAll(t, slave2, "C", q)
		if len(a) != len(b) {
			t.Fatalf("queue %d: master %d, slave %d", q, len(a), len(b))
		}
		for i := range a {
			if a[i].PhysicalOffset != b[i].PhysicalOffset || !bytes.Equal(a[i].Body, b[i].Body) {
				t.Fatalf("queue %d message %d differs", q, i)
			}
		}
	}
	for _, k := range []string{"k89", "k90", "k149"} {
		if res, err := slave2.QueryMessage("C", k, 4, 0, 1<<62); err != nil || len(res.Messages) != 1 {
			t.Fatalf("slave key %s: %d hits, %v", k, len(res.Messages), err)
		}
	}
}

// copyLog appends the master's log from the slave's end to end, as replication does.
func copyLog(t *testing.T, master, slave *Store, end int64) {
	t.Helper()
	for off := slave.MaxPhyOffset(); off < end; {
		v, err := master.ReadCommitLog(off, 3000)
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(off, v.Data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(v.Data))
		v.Release()
	}
}

// TestTruncateAtOpenBelowMinOffset: a cut below the oldest segment left empties the log,
// which continues at the next segment boundary, where the master's bytes follow.
func TestTruncateAtOpenBelowMinOffset(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	acks := fillForCut(t, master, 300)
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	copyLog(t, master, slave, master.MaxPhyOffset())
	waitDispatched(t, slave)
	slave.Close()
	// Retention took the first two segments.
	for _, start := range []int64{0, testSegBytes} {
		if err := os.Remove(filepath.Join(slaveOpts.Dir, "commitlog", segmentName(start))); err != nil {
			t.Fatal(err)
		}
	}
	slaveOpts.Truncate, slaveOpts.TruncateTo = true, testSegBytes+10
	slave2 := openStore(t, slaveOpts)
	if min, max := slave2.MinPhyOffset(), slave2.MaxPhyOffset(); min != 2*testSegBytes || max != 2*testSegBytes {
		t.Fatalf("log [%d, %d), want empty at %d", min, max, 2*testSegBytes)
	}
	if res, _ := slave2.QueryMessage("C", "k299", 4, 0, 1<<62); len(res.Messages) != 0 {
		t.Fatal("a cut message is found")
	}
	runStore(t, slave2)
	copyLog(t, master, slave2, master.MaxPhyOffset())
	waitDispatched(t, slave2)
	last := acks[len(acks)-1]
	if got := slave2.MaxOffsetInQueue("C", last.qid); got != last.qoff+1 {
		t.Fatalf("queue %d max %d, want %d", last.qid, got, last.qoff+1)
	}
	if phy, err := slave2.GetCommitLogOffsetInQueue("C", last.qid, last.qoff); err != nil || phy != last.phy {
		t.Fatalf("last message at %d %v, want %d", phy, err, last.phy)
	}
	if res, err := slave2.QueryMessage("C", "k299", 4, 0, 1<<62); err != nil || len(res.Messages) != 1 {
		t.Fatalf("k299 after following: %d hits %v", len(res.Messages), err)
	}
}

// TestTruncateAtOpenCrash: the process dies at each step of the cut (the directory as it is
// then is copied); each copy opens, agrees with itself, holds every message below the cut,
// and a second Open with the same cut finishes it.
func TestTruncateAtOpenCrash(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	acks := fillForCut(t, s, 300)
	if err := s.AppendEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEpoch(2, acks[250].phy); err != nil {
		t.Fatal(err)
	}
	s.Close()
	cut := acks[120].phy

	var snaps []string
	var cutting atomic.Bool
	ops := defaultFileOps()
	zero, sync := ops.zero, ops.sync
	snap := func(why string) {
		d := filepath.Join(t.TempDir(), why)
		copyDir(t, opts.Dir, d)
		snaps = append(snaps, d)
	}
	isLog := func(f *os.File) bool { return filepath.Base(filepath.Dir(f.Name())) == "commitlog" }
	ops.zero = func(f *os.File, data []byte, off, n int64) error {
		if isLog(f) && !cutting.Swap(true) {
			snap("before-zero")
			// The far half of the tail zeroed, the records right after the cut not yet: a
			// crash inside the punch.
			clear(data[off+n/2 : off+n])
			snap("far-half-zeroed")
		}
		return zero(f, data, off, n)
	}
	ops.sync = func(f *os.File) error {
		err := sync(f)
		if isLog(f) && cutting.Load() && len(snaps) == 2 {
			snap("zeroed")
		}
		return err
	}
	cutOpts := opts
	cutOpts.Truncate, cutOpts.TruncateTo, cutOpts.ops = true, cut, ops
	s2 := openStore(t, cutOpts)
	if s2.MaxPhyOffset() != cut {
		t.Fatalf("cut to %d, want %d", s2.MaxPhyOffset(), cut)
	}
	s2.Close()
	if len(snaps) != 3 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	// And a crash after the zeroed tail was synced and the newest later segment removed.
	segDir := filepath.Join(snaps[2], "commitlog")
	ents, err := os.ReadDir(segDir)
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(t.TempDir(), "partly-removed")
	copyDir(t, snaps[2], partial)
	os.Remove(filepath.Join(partial, "commitlog", ents[len(ents)-1].Name()))
	snaps = append(snaps, partial)

	for _, dir := range snaps {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			o := testOptions(t, dir)
			s := openStore(t, o)
			if s.RecoveryReport().Clean {
				t.Fatal("a crash during the cut is not detected")
			}
			max := s.MaxPhyOffset()
			if max < cut {
				t.Fatalf("log ends at %d, below the cut %d", max, cut)
			}
			checkAfterCrash(t, s, before(acks, max))
			if e := s.Epochs(); len(e) == 0 || e[len(e)-1].StartOffset > max {
				t.Fatalf("epochs %v past the log end %d", e, max)
			}
			s.Close()
			o.Truncate, o.TruncateTo = true, cut
			s2 := openStore(t, o)
			if s2.MaxPhyOffset() != cut {
				t.Fatalf("second cut: log ends at %d", s2.MaxPhyOffset())
			}
			checkAfterCrash(t, s2, before(acks, cut))
			if e := s2.Epochs(); !slices.Equal(e, []EpochEntry{{1, 0}}) {
				t.Fatalf("epochs %v", e)
			}
		})
	}
}

// TestTruncateAtOpenSlaveAnyOffset cuts copies of a slave at offsets all over the log, record
// boundaries, mid-record and inside blank records alike; each copy then follows the master
// to an identical log and queues.
func TestTruncateAtOpenSlaveAnyOffset(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	acks := fillForCut(t, master, 200)
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	copyLog(t, master, slave, master.MaxPhyOffset())
	waitDispatched(t, slave)
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	end := master.MaxPhyOffset()
	rng := rand.New(rand.NewPCG(16, 2))
	cuts := []int64{0, 1, testSegBytes - 1, testSegBytes, acks[77].phy, end - 1}
	for range 6 {
		cuts = append(cuts, rng.Int64N(end))
	}
	want := map[int32][]message.Record{0: readAll(t, master, "C", 0), 1: readAll(t, master, "C", 1)}
	for _, cut := range cuts {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			o := testOptions(t, filepath.Join(t.TempDir(), "slave"))
			copyDir(t, slaveOpts.Dir, o.Dir)
			os.Remove(filepath.Join(o.Dir, "lock"))
			o.Slave, o.Truncate, o.TruncateTo = true, true, cut
			s := openStore(t, o)
			if s.MaxPhyOffset() != cut {
				t.Fatalf("log ends at %d", s.MaxPhyOffset())
			}
			runStore(t, s)
			copyLog(t, master, s, end)
			waitDispatched(t, s)
			for q, recs := range want {
				got := readAll(t, s, "C", q)
				if len(got) != len(recs) {
					t.Fatalf("queue %d: %d messages, want %d", q, len(got), len(recs))
				}
				for i := range got {
					if got[i].PhysicalOffset != recs[i].PhysicalOffset || !bytes.Equal(got[i].Body, recs[i].Body) {
						t.Fatalf("queue %d message %d differs", q, i)
					}
				}
			}
			if res, err := s.QueryMessage("C", "k77", 4, 0, 1<<62); err != nil || len(res.Messages) != 1 {
				t.Fatalf("k77: %d hits %v", len(res.Messages), err)
			}
		})
	}
}

// TestOpenAsMasterCutsIncompleteRecord: a slave's copy that ends mid-record, opened as a
// master, ends at that record's start, where the master's appends (and its epoch) begin.
func TestOpenAsMasterCutsIncompleteRecord(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	acks := fillForCut(t, master, 60)
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	split := acks[40]
	copyLog(t, master, slave, split.phy+10)
	if err := slave.SetEpochs([]EpochEntry{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	opts := slaveOpts
	opts.Slave = false
	s := openStore(t, opts)
	rep := s.RecoveryReport()
	if s.MaxPhyOffset() != split.phy || rep.TruncatedAt != split.phy {
		t.Fatalf("log ends at %d (report %d), want %d", s.MaxPhyOffset(), rep.TruncatedAt, split.phy)
	}
	checkAfterCrash(t, s, acks[:40])
	if err := s.AppendEpoch(2, s.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	r := mustPut(t, s, testMsg("C", split.qid, "new master", nil))
	if r.PhyOffset != split.phy || r.QueueOffset != split.qoff {
		t.Fatalf("append at %d queue offset %d, want %d %d", r.PhyOffset, r.QueueOffset, split.phy, split.qoff)
	}
}

// SetConfirmOffset keeps records past the bound out of the ConsumeQueues until it rises.
func TestConfirmOffsetBoundsDispatch(t *testing.T) {
	s := openStore(t, testOptions(t, t.TempDir()))
	runStore(t, s)
	dispatchedTo := func(off int64) {
		t.Helper()
		waitFor(t, 5*time.Second, func() bool { return s.DispatchedPhyOffset() >= off })
	}
	first := mustPut(t, s, testMsg("Confirm", 0, "a", nil))
	firstEnd := first.PhyOffset + int64(first.WroteBytes)
	s.SetConfirmOffset(firstEnd)
	second := mustPut(t, s, testMsg("Confirm", 0, "b", nil))
	dispatchedTo(firstEnd)
	// The second record stays out however long the dispatcher runs: it ends past the bound.
	time.Sleep(20 * time.Millisecond)
	if got := s.MaxOffsetInQueue("Confirm", 0); got != 1 || s.DispatchedPhyOffset() != firstEnd {
		t.Fatalf("queue max offset %d, dispatched to %d, with the second record past the confirm offset %d; want 1 and %d",
			got, s.DispatchedPhyOffset(), firstEnd, firstEnd)
	}
	if s.ConfirmOffset() != firstEnd {
		t.Fatalf("ConfirmOffset %d, want %d", s.ConfirmOffset(), firstEnd)
	}
	s.SetConfirmOffset(second.PhyOffset + int64(second.WroteBytes))
	dispatchedTo(second.PhyOffset + int64(second.WroteBytes))
	if got := s.MaxOffsetInQueue("Confirm", 0); got != 2 {
		t.Fatalf("queue max offset %d after the confirm offset rose, want 2", got)
	}
	s.SetConfirmOffset(math.MaxInt64)
	mustPut(t, s, testMsg("Confirm", 0, "c", nil))
	waitDispatched(t, s)
	if got := s.MaxOffsetInQueue("Confirm", 0); got != 3 {
		t.Fatalf("queue max offset %d without a bound, want 3", got)
	}
}
