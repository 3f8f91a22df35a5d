package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/message"
)

// crash drops the store as a killed process would: no flush, no checkpoint, abort marker
// left. Mapped writes are in the page cache, so they reach the files as after SIGKILL.
func crash(s *Store) {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.runMu.Lock()
		cancel, done := s.runCancel, s.runDone
		s.runMu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
		s.cl.mu.Lock()
		s.cl.closed = true
		s.cl.mu.Unlock()
		s.closeFiles()
	})
}

type written struct {
	phy, end int64
	topic    string
	qid      int32
	qoff     int64
	body     string
}

// fill appends n messages over 2 queues without running services, dispatching inline.
func fill(t *testing.T, s *Store, n int) []written {
	t.Helper()
	var out []written
	for i := range n {
		m := testMsg("T", int32(i%2), body(i, 300+i%50), map[string]string{"KEYS": "k"})
		r := mustPut(t, s, m)
		out = append(out, written{r.PhyOffset, r.PhyOffset + int64(r.WroteBytes), "T", m.QueueID, r.QueueOffset, string(m.Body)})
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func segPath(dir string, phy int64) string {
	return filepath.Join(dir, "commitlog", segmentName(phy/testSegBytes*testSegBytes))
}

// verifyStore checks that the log holds exactly want (every record valid), and that every
// ConsumeQueue agrees with it.
func verifyStore(t *testing.T, s *Store, want []written) {
	t.Helper()
	var got []written
	err := s.walkCommitLog(s.MinPhyOffset(), s.MaxPhyOffset(), func(r *message.Record) error {
		if message.BodyCRC(r.Body) != r.BodyCRC {
			t.Fatalf("record at %d: bad CRC", r.PhysicalOffset)
		}
		got = append(got, written{r.PhysicalOffset, r.PhysicalOffset + int64(r.TotalSize), string(r.Topic), r.QueueID, r.QueueOffset, string(r.Body)})
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("log holds %d records, want %d", len(got), len(want))
	}
	perQueue := map[int32][]written{}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d: got %+v want %+v", i, got[i], want[i])
		}
		perQueue[got[i].qid] = append(perQueue[got[i].qid], got[i])
	}
	if last := len(got); last > 0 && s.MaxPhyOffset() != got[last-1].end {
		// The log may end with a blank record.
		if s.MaxPhyOffset()%testSegBytes != 0 {
			t.Fatalf("max phy %d, last record ends at %d", s.MaxPhyOffset(), got[last-1].end)
		}
	}
	for qid, ws := range perQueue {
		recs := readAll(t, s, "T", qid)
		if len(recs) != len(ws) {
			t.Fatalf("queue %d: %d units, log has %d", qid, len(recs), len(ws))
		}
		for i, r := range recs {
			if r.PhysicalOffset != ws[i].phy || r.QueueOffset != int64(i) {
				t.Fatalf("queue %d unit %d: phy %d offset %d, log has %d", qid, i, r.PhysicalOffset, r.QueueOffset, ws[i].phy)
			}
		}
	}
}

func TestRecoveryRepairs(t *testing.T) {
	cases := []struct {
		name string
		// damage breaks the files of a crashed store holding ws and returns how many records
		// survive.
		damage     func(t *testing.T, dir string, ws []written) int
		wantReason string
		wantCut    bool
	}{
		{"truncated segment mid-record", func(t *testing.T, dir string, ws []written) int {
			last := ws[len(ws)-1]
			if err := os.Truncate(segPath(dir, last.phy), last.phy%testSegBytes+40); err != nil {
				t.Fatal(err)
			}
			return len(ws) - 1
		}, "", true},
		{"flipped byte in a record body", func(t *testing.T, dir string, ws []written) int {
			k := len(ws) - 5
			flip(t, segPath(dir, ws[k].phy), ws[k].phy%testSegBytes+100)
			return k
		}, "body CRC", true},
		{"flipped byte in a record header", func(t *testing.T, dir string, ws []written) int {
			k := len(ws) - 3
			flip(t, segPath(dir, ws[k].phy), ws[k].phy%testSegBytes+2)
			return k
		}, "", true},
		{"zeroed tail", func(t *testing.T, dir string, ws []written) int {
			k := len(ws) - 4
			zero(t, segPath(dir, ws[k].phy), ws[k].phy%testSegBytes, testSegBytes-ws[k].phy%testSegBytes)
			return k
		}, "", false},
		{"garbage after the end", func(t *testing.T, dir string, ws []written) int {
			last := ws[len(ws)-1]
			f, _ := os.OpenFile(segPath(dir, last.end), os.O_RDWR, 0)
			f.WriteAt([]byte("\x00\x00\x01\x00garbage garbage garbage"), last.end%testSegBytes)
			f.Close()
			return len(ws)
		}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions(t, "")
			s := openStore(t, opts)
			ws := fill(t, s, 400)
			crash(s)
			keep := c.damage(t, opts.Dir, ws)
			s2 := openStore(t, opts)
			rep := s2.RecoveryReport()
			t.Logf("report: %+v", rep)
			if rep.Clean {
				t.Fatal("crash not detected")
			}
			if c.wantCut != (rep.TruncatedAt >= 0) {
				t.Fatalf("truncated at %d, want cut %v", rep.TruncatedAt, c.wantCut)
			}
			if c.wantCut {
				wantAt := ws[len(ws)-1].end
				if keep < len(ws) {
					wantAt = ws[keep].phy
				}
				if rep.TruncatedAt != wantAt || rep.TruncatedFile == "" || !strings.Contains(rep.TruncateReason, c.wantReason) {
					t.Fatalf("cut at %d (%q in %s), want %d (%q)", rep.TruncatedAt, rep.TruncateReason, rep.TruncatedFile, wantAt, c.wantReason)
				}
			}
			if len(rep.Actions) < 2 {
				t.Fatalf("actions not reported: %q", rep.Actions)
			}
			verifyStore(t, s2, ws[:keep])
			// Appending continues without reusing queue offsets, and survives a clean restart.
			r := mustPut(t, s2, testMsg("T", 0, "after", nil))
			var want0 int64
			for _, w := range ws[:keep] {
				if w.qid == 0 {
					want0++
				}
			}
			if r.QueueOffset != want0 {
				t.Fatalf("next queue offset %d, want %d", r.QueueOffset, want0)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			s3 := openStore(t, opts)
			if rep := s3.RecoveryReport(); !rep.Clean || len(rep.Actions) != 0 {
				t.Fatalf("second open not clean: %+v", rep)
			}
			if got := s3.MaxOffsetInQueue("T", 0); got != want0+1 {
				t.Fatalf("queue 0 max %d after restart", got)
			}
		})
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x5A
	f.WriteAt(b, off)
}

func zero(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteAt(make([]byte, n), off)
}

func TestRecoveryRebuildsDeletedConsumeQueueFile(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		name := "clean"
		if crashed {
			name = "crashed"
		}
		t.Run(name, func(t *testing.T) {
			opts := testOptions(t, "")
			s := openStore(t, opts)
			ws := fill(t, s, 400) // 200 per queue: 4 files of 64 units
			dir := filepath.Join(opts.Dir, "consumequeue", "T", "1")
			if crashed {
				crash(s)
				// Lose the last file of queue 1; the log still has its messages.
				os.Remove(filepath.Join(dir, segmentName(3*64*CQUnitBytes)))
			} else {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(dir, segmentName(64*CQUnitBytes)))
			}
			s2 := openStore(t, opts)
			rep := s2.RecoveryReport()
			t.Logf("report: %+v", rep)
			if crashed {
				// Re-dispatch from the last checkpoint (none here: from the start) writes the
				// lost units again.
				if rep.RedispatchedRecords == 0 {
					t.Fatalf("nothing re-dispatched")
				}
			} else if len(rep.RebuiltQueues) != 1 || rep.RebuiltQueues[0] != "T/1" {
				t.Fatalf("rebuilt %v", rep.RebuiltQueues)
			}
			verifyStore(t, s2, ws)
		})
	}
}

func TestRecoveryWithoutCheckpoint(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	runStore(t, s)
	ws := fill(t, s, 300)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage the checkpoint: the whole log is validated.
	flip(t, filepath.Join(opts.Dir, "checkpoint"), 3)
	s2 := openStore(t, opts)
	rep := s2.RecoveryReport()
	if rep.CheckpointValid || rep.ScannedFrom != 0 || rep.ScannedRecords != 300 {
		t.Fatalf("report %+v", rep)
	}
	verifyStore(t, s2, ws)
}

func TestCorruptDataIsAnErrorNotAPanic(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	ws := fill(t, s, 50)
	// Corrupt a record in place while open: reads that validate report file and offset.
	sg := s.cl.segs.find(ws[10].phy)
	sg.data[ws[10].phy-sg.start+95] ^= 0xFF
	sg.release()
	_, err := s.LookMessageByOffset(ws[10].phy)
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Offset != ws[10].phy%testSegBytes || !strings.HasSuffix(ce.File, segmentName(0)) {
		t.Fatalf("err %v", err)
	}
	// A segment file longer than the segment size is corrupt, named.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segPath(opts.Dir, 0), testSegBytes+1); err != nil {
		t.Fatal(err)
	}
	_, err = Open(opts)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(0)) {
		t.Fatalf("long segment: %v", err)
	}
}

func TestCheckpointCodec(t *testing.T) {
	c := checkpoint{1, 2, 3, 4, 5}
	b := c.encode()
	got, err := decodeCheckpoint("cp", b)
	if err != nil || got != c {
		t.Fatalf("%+v %v", got, err)
	}
	for i := range 48 {
		bb := append([]byte(nil), b...)
		bb[i] ^= 1
		if _, err := decodeCheckpoint("cp", bb); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d not detected", i)
		}
	}
	if _, err := decodeCheckpoint("cp", b[:10]); !errors.Is(err, ErrCorrupt) {
		t.Fatal("short checkpoint accepted")
	}
	_ = binary.BigEndian
}

// TestDamagedUnitNeverServesWrongBytes: a ConsumeQueue unit damaged behind a clean
// shutdown (not re-validated at open) is skipped by reads, never served.
func TestDamagedUnitNeverServesWrongBytes(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	fill(t, s, 40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cq := filepath.Join(opts.Dir, "consumequeue", "T", "0", segmentName(0))
	f, _ := os.OpenFile(cq, os.O_RDWR, 0)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], 7) // unit 3 now points into the middle of a record
	f.WriteAt(b[:], 3*CQUnitBytes)
	f.Close()
	s2 := openStore(t, opts)
	recs := readAll(t, s2, "T", 0)
	if len(recs) != 19 {
		t.Fatalf("%d messages read, want the 19 intact ones", len(recs))
	}
	for _, r := range recs {
		if r.QueueOffset == 3 {
			t.Fatal("damaged unit served")
		}
	}
	if st := s2.Stats(); st.BadUnitsSkipped != 1 {
		t.Fatalf("bad units %d", st.BadUnitsSkipped)
	}
}

func TestRecoveryRebuildsDamagedIndex(t *testing.T) {
	opts := testOptions(t, "")
	opts.MaxIndexNum = 100
	s := openStore(t, opts)
	for i := range 120 {
		mustPut(t, s, testMsg("T", 0, body(i, 10), map[string]string{"KEYS": fmt.Sprintf("key%d", i)}))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(opts.Dir, "index"))
	if len(ents) < 2 {
		t.Fatalf("%d index files", len(ents))
	}
	// Damage the first file's header: an entry count beyond the file.
	f, _ := os.OpenFile(filepath.Join(opts.Dir, "index", ents[0].Name()), os.O_RDWR, 0)
	f.WriteAt([]byte{0x7F, 0, 0, 0}, 36)
	f.Close()
	s2 := openStore(t, opts)
	rep := s2.RecoveryReport()
	if len(rep.RemovedFiles) != 1 || !strings.Contains(strings.Join(rep.Actions, ";"), "index rebuilt") {
		t.Fatalf("report %+v", rep)
	}
	for _, i := range []int{0, 50, 119} {
		res, err := s2.QueryMessage("T", fmt.Sprintf("key%d", i), 4, 0, 1<<62)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("key%d: %d hits %v", i, len(res.Messages), err)
		}
	}
}
