package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// fillKeys appends n messages over 2 queues of topic T, message i with key "key<i>", and
// dispatches them inline.
func fillKeys(t *testing.T, s *Store, from, n int) []written {
	return fillKeysTo(t, s, from, n, func(i int) int32 { return int32(i % 2) })
}

// fillKeysTo is fillKeys with message i in queue qid(i).
func fillKeysTo(t *testing.T, s *Store, from, n int, qid func(int) int32) []written {
	t.Helper()
	var out []written
	for i := from; i < from+n; i++ {
		m := testMsg("T", qid(i), body(i, 300+i%50), map[string]string{"KEYS": fmt.Sprintf("key%d", i)})
		r := mustPut(t, s, m)
		out = append(out, written{r.PhyOffset, r.PhyOffset + int64(r.WroteBytes), "T", m.QueueID, r.QueueOffset, string(m.Body)})
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func queueFile(dir string, qid int32, unit int64) string {
	return filepath.Join(dir, "consumequeue", "T", fmt.Sprint(qid), segmentName(unit*CQUnitBytes))
}

func indexFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.Join(dir, "index", e.Name()))
	}
	return out
}

func mustTruncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryRepairsDamagedQueueAndIndexFiles damages the ConsumeQueue and index files of a
// store closed cleanly, or crashed after a checkpoint, and checks that Open detects each
// damage, names the repair in its report and makes every message readable again at its old
// queue offset and by its key.
func TestRecoveryRepairsDamagedQueueAndIndexFiles(t *testing.T) {
	// 220 messages over 2 queues of 64-unit files: queue 1 has units 0..109 in the files
	// starting at units 0 (full) and 64 (46 units).
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		// rebuilt is the queue the report must name rebuilt ("" for none); index says the
		// index must be rebuilt; manifest says the manifest was lost.
		rebuilt  string
		index    bool
		manifest bool
		// want is a fragment of the report's actions.
		want string
	}{
		{"last queue file removed", func(t *testing.T, dir string) {
			mustRemove(t, queueFile(dir, 1, 64))
		}, "T/1", false, false, "ends at offset 64, the manifest says"},
		{"middle queue file removed", func(t *testing.T, dir string) {
			// Queue 1 holds 3 files here: the test adds more messages first.
			mustRemove(t, queueFile(dir, 0, 64))
		}, "T/0", false, false, "gap"},
		{"last queue file cut mid-unit", func(t *testing.T, dir string) {
			mustTruncate(t, queueFile(dir, 1, 64), 10*CQUnitBytes+13)
		}, "T/1", false, false, "cut"},
		{"last queue file cut to 0", func(t *testing.T, dir string) {
			mustTruncate(t, queueFile(dir, 1, 64), 0)
		}, "T/1", false, false, "cut"},
		{"first queue file cut to 0", func(t *testing.T, dir string) {
			mustTruncate(t, queueFile(dir, 1, 0), 0)
		}, "T/1", false, false, "cut"},
		{"queue directory removed", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, "consumequeue", "T", "1"))
		}, "T/1", false, false, "directory is missing"},
		{"topic directory removed", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, "consumequeue", "T"))
		}, "T/0", false, false, "directory is missing"},
		{"last index file removed", func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			mustRemove(t, files[len(files)-1])
		}, "", true, false, "is missing"},
		{"first index file removed", func(t *testing.T, dir string) {
			mustRemove(t, indexFiles(t, dir)[0])
		}, "", true, false, "is missing"},
		{"last index file cut", func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			mustTruncate(t, files[len(files)-1], indexHeaderBytes+64*indexSlotBytes+7*indexEntryBytes+5)
		}, "", true, false, "damaged"},
		{"last index file cut to 0", func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			mustTruncate(t, files[len(files)-1], 0)
		}, "", true, false, "damaged"},
		{"manifest removed", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, manifestFile))
		}, "", false, true, "manifest missing"},
		{"manifest garbled", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, manifestFile), 30)
		}, "", false, true, "manifest unreadable"},
		{"manifest cut", func(t *testing.T, dir string) {
			mustTruncate(t, filepath.Join(dir, manifestFile), 9)
		}, "", false, true, "manifest unreadable"},
		{"manifest and a queue file removed", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, manifestFile))
			mustRemove(t, queueFile(dir, 1, 64))
		}, "", false, true, "manifest missing"},
	}
	for _, crashed := range []bool{false, true} {
		for _, c := range cases {
			mode := "clean"
			if crashed {
				mode = "crashed"
			}
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				opts := testOptions(t, "")
				opts.MaxIndexNum = 150 // several index files
				s := openStore(t, opts)
				n := 220
				if strings.HasPrefix(c.name, "middle") {
					n = 300
				}
				ws := fillKeys(t, s, 0, n)
				if crashed {
					// Queue 0 moves on (so that the records of queue 1 lie before the segment
					// recovery validates and dispatches again from), the CommitLog flusher and
					// the checkpointer run, more messages come, then the process dies.
					ws = append(ws, fillKeysTo(t, s, len(ws), 200, func(int) int32 { return 0 })...)
					if _, err := s.flushCommitLog(); err != nil {
						t.Fatal(err)
					}
					if err := s.flushQueuesAndCheckpoint(true); err != nil {
						t.Fatal(err)
					}
					ws = append(ws, fillKeys(t, s, len(ws), 6)...)
					crash(s)
				} else if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				c.damage(t, opts.Dir)
				s2 := openStore(t, opts)
				rep := s2.RecoveryReport()
				t.Logf("report: %+v", rep)
				actions := strings.Join(rep.Actions, "; ")
				if rep.Clean == crashed || rep.ManifestValid == c.manifest || !strings.Contains(actions, c.want) {
					t.Fatalf("clean %v, manifest valid %v, actions %q: want %q", rep.Clean, rep.ManifestValid, actions, c.want)
				}
				if c.rebuilt != "" && !slices.Contains(rep.RebuiltQueues, c.rebuilt) {
					t.Fatalf("rebuilt %v, want %s", rep.RebuiltQueues, c.rebuilt)
				}
				if c.index && !strings.Contains(actions, "index rebuilt") {
					t.Fatalf("index not rebuilt: %q", actions)
				}
				checkEverything(t, s2, ws)
				// The repaired store continues each queue after its last offset, and closes
				// and opens again with nothing to repair.
				r := mustPut(t, s2, testMsg("T", 1, "after", nil))
				want := int64(0)
				for _, w := range ws {
					if w.qid == 1 {
						want++
					}
				}
				if r.QueueOffset != want {
					t.Fatalf("next offset of queue 1: %d, want %d", r.QueueOffset, want)
				}
				if err := s2.Close(); err != nil {
					t.Fatal(err)
				}
				s3 := openStore(t, opts)
				if rep := s3.RecoveryReport(); !rep.Clean || !rep.ManifestValid || len(rep.Actions) != 0 {
					t.Fatalf("open after the repair: %+v", rep)
				}
			})
		}
	}
}

// checkEverything checks that the store holds ws, every message readable at its queue offset
// and found by its key.
func checkEverything(t *testing.T, s *Store, ws []written) {
	t.Helper()
	verifyStore(t, s, ws)
	for i, w := range ws {
		key := fmt.Sprintf("key%d", i)
		res, err := s.QueryMessage("T", key, 4, 0, 1<<62)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("%s: %d hits, %v", key, len(res.Messages), err)
		}
		var rec message.Record
		if _, err := message.DecodeRecord(res.Messages[0], &rec, true); err != nil || rec.PhysicalOffset != w.phy {
			t.Fatalf("%s found at %d (%v), stored at %d", key, rec.PhysicalOffset, err, w.phy)
		}
	}
}

// TestManifestLegitimateDifferences: what a queue lacks against its manifest entry without
// damage (records past a CommitLog cut, a deleted topic) is not rebuilt.
func TestManifestLegitimateDifferences(t *testing.T) {
	t.Run("commitlog tail cut after a crash", func(t *testing.T) {
		opts := testOptions(t, "")
		s := openStore(t, opts)
		ws := fillKeys(t, s, 0, 220)
		// The manifest names units whose records the crash then tears.
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			t.Fatal(err)
		}
		crash(s)
		last := ws[len(ws)-1]
		mustTruncate(t, segPath(opts.Dir, last.phy), last.phy%testSegBytes+40)
		s2 := openStore(t, opts)
		rep := s2.RecoveryReport()
		if rep.TruncatedAt != last.phy || len(rep.RebuiltQueues) != 0 || !rep.ManifestValid {
			t.Fatalf("report %+v", rep)
		}
		verifyStore(t, s2, ws[:len(ws)-1])
	})
	t.Run("commitlog tail cut after a crash and a queue file lost", func(t *testing.T) {
		// Queue 1's manifest entry ends past the cut, but its lost units lay before it, and
		// before the segment recovery dispatches again from: rebuilt.
		opts := testOptions(t, "")
		s := openStore(t, opts)
		ws := fillKeys(t, s, 0, 220)
		ws = append(ws, fillKeysTo(t, s, len(ws), 200, func(int) int32 { return 0 })...)
		ws = append(ws, fillKeysTo(t, s, len(ws), 1, func(int) int32 { return 1 })...)
		if _, err := s.flushCommitLog(); err != nil {
			t.Fatal(err)
		}
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			t.Fatal(err)
		}
		crash(s)
		// A torn record (a short file would make recovery validate the whole log).
		last := ws[len(ws)-1]
		flip(t, segPath(opts.Dir, last.phy), last.phy%testSegBytes+100)
		mustRemove(t, queueFile(opts.Dir, 1, 64))
		s2 := openStore(t, opts)
		rep := s2.RecoveryReport()
		t.Logf("report: %+v", rep)
		if rep.TruncatedAt != last.phy || rep.ScannedFrom != 2*testSegBytes || !slices.Equal(rep.RebuiltQueues, []string{"T/1"}) {
			t.Fatalf("report %+v", rep)
		}
		verifyStore(t, s2, ws[:len(ws)-1])
	})
	t.Run("deleted topic", func(t *testing.T) {
		opts := testOptions(t, "")
		s := openStore(t, opts)
		fillKeys(t, s, 0, 20)
		for i := range 6 {
			mustPut(t, s, testMsg("Drop", int32(i%3), "x", nil))
		}
		if _, err := s.dispatchAvailable(nil); err != nil {
			t.Fatal(err)
		}
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTopics("Drop"); err != nil {
			t.Fatal(err)
		}
		// The manifest without the topic is on disk before its files go, so a crash in
		// between cannot make Open take the missing directories for damage.
		m, err := readManifest(filepath.Join(opts.Dir, manifestFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range m.queues {
			if e.topic == "Drop" {
				t.Fatalf("manifest still names %+v", e)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := openStore(t, opts)
		for _, q := range s2.Queues() {
			if q.Topic == "Drop" {
				t.Fatalf("deleted topic back: %+v (report %+v)", q, s2.RecoveryReport())
			}
		}
		if rep := s2.RecoveryReport(); len(rep.Actions) != 0 {
			t.Fatalf("report %+v", rep)
		}
	})
}

// TestManifestQueueWithExpiredRecords: a queue whose directory is lost after retention deleted
// every record it pointed to has nothing to rebuild, but keeps its offsets.
func TestManifestQueueWithExpiredRecords(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local))
	opts.clock = clk.now
	opts.diskUsage = func(string) (float64, error) { return 0.1, nil }
	s := openStore(t, opts)
	for range 5 {
		mustPut(t, s, testMsg("Old", 0, body(0, 2000), nil))
	}
	advanced := false
	for s.cl.segs.len() < 4 {
		mustPut(t, s, testMsg("T", 0, body(0, 2000), nil))
		if s.cl.segs.len() == 3 && !advanced {
			clk.advance(100 * time.Hour) // segments 0 and 1 are now old
			advanced = true
		}
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	s.ExecuteDeleteFilesManually()
	if st := s.CleanExpired(); st.CommitLogSegments == 0 {
		t.Fatal("nothing expired")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, filepath.Join(opts.Dir, "consumequeue", "Old"))
	s2 := openStore(t, opts)
	rep := s2.RecoveryReport()
	if !strings.Contains(strings.Join(rep.Actions, ";"), "restarting it at offset 5") || len(rep.RebuiltQueues) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if r := mustPut(t, s2, testMsg("Old", 0, "new", nil)); r.QueueOffset != 5 {
		t.Fatalf("queue restarted at %d, want 5", r.QueueOffset)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s3 := openStore(t, opts)
	if got := s3.MaxOffsetInQueue("Old", 0); got != 6 {
		t.Fatalf("max offset %d after reopening, want 6 (report %+v)", got, s3.RecoveryReport())
	}
	if recs := readAll(t, s3, "Old", 0); len(recs) != 1 || string(recs[0].Body) != "new" || recs[0].QueueOffset != 5 {
		t.Fatalf("read %d records", len(recs))
	}
}

func TestManifestCodec(t *testing.T) {
	m := &manifest{
		queues: []manifestQueue{{"T", 0, 12, 3400}, {strings.Repeat("x", 255), 7, 1, 99}},
		index:  []manifestIndex{{"20260301100000000", 5, 1234}},
	}
	b := m.encode(nil)
	got, err := decodeManifest("m", b)
	if err != nil || !slices.Equal(got.queues, m.queues) || !slices.Equal(got.index, m.index) {
		t.Fatalf("%+v %v", got, err)
	}
	for i := range b {
		bb := slices.Clone(b)
		bb[i] ^= 0x10
		if _, err := decodeManifest("m", bb); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d not detected", i)
		}
	}
	for n := range len(b) {
		if _, err := decodeManifest("m", b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d not detected", n)
		}
	}
	// Counts beyond the bytes present are refused before anything is allocated for them.
	huge := slices.Clone(b[:manifestHeader])
	binary.BigEndian.PutUint32(huge[8:], 1<<31)
	huge = binary.BigEndian.AppendUint32(huge, crc32.ChecksumIEEE(huge))
	if _, err := decodeManifest("m", huge); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "claims") {
		t.Fatalf("huge count: %v", err)
	}
	// Another version is refused, with its number.
	v2 := slices.Clone(b[:len(b)-4])
	binary.BigEndian.PutUint16(v2[4:], 2)
	v2 = binary.BigEndian.AppendUint32(v2, crc32.ChecksumIEEE(v2))
	if _, err := decodeManifest("m", v2); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2: %v", err)
	}
}

// TestManifestWrittenOnlyWhenChanged: a checkpoint with nothing new leaves the file alone.
func TestManifestWrittenOnlyWhenChanged(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	fillKeys(t, s, 0, 10)
	if err := s.flushQueuesAndCheckpoint(true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(opts.Dir, manifestFile)
	if _, err := readManifest(path); err != nil {
		t.Fatal(err)
	}
	// Replace the file: a write would put it back.
	os.WriteFile(path, []byte("marker"), 0o644)
	if err := s.flushQueuesAndCheckpoint(true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "marker" {
		t.Fatal("unchanged manifest written again")
	}
	fillKeys(t, s, 10, 1)
	if err := s.flushQueuesAndCheckpoint(true); err != nil {
		t.Fatal(err)
	}
	m, err := readManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.queues) != 2 || m.queues[0] != (manifestQueue{"T", 0, 6, m.queues[0].phyEnd}) || m.queues[1].units != 5 {
		t.Fatalf("manifest %+v", m.queues)
	}
}
