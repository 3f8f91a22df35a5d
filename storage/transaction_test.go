package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mqgo/mq/internal/message"
)

// putTransactionMix appends to T/0 lead plain messages, one message of each transaction type
// between two plain ones, then trail plain messages, dispatching inline, and returns the bodies
// a consumer may see, in queue order.
func putTransactionMix(t *testing.T, s *Store, lead, trail int) []string {
	t.Helper()
	var visible []string
	plain := func(n int) {
		for range n {
			b := body(len(visible), 20)
			mustPut(t, s, testMsg("T", 0, b, nil))
			visible = append(visible, b)
		}
	}
	plain(lead)
	n := int64(lead)
	for _, c := range []struct {
		body    string
		sysFlag int32
		qoff    int64 // what the log must record; prepared and rolled back get none (0)
	}{
		{"plain-1", message.TransactionNotType, n},
		{"prepared", message.TransactionPreparedType, 0},
		{"commit", message.TransactionCommitType, n + 1},
		{"rollback", message.TransactionRollbackType, 0},
		{"plain-2", message.TransactionNotType, n + 2},
	} {
		m := testMsg("T", 0, c.body, map[string]string{"KEYS": "k-" + c.body})
		m.SysFlag = c.sysFlag
		if r := mustPut(t, s, m); r.QueueOffset != c.qoff {
			t.Fatalf("%s: queue offset %d, want %d", c.body, r.QueueOffset, c.qoff)
		}
	}
	visible = append(visible, "plain-1", "commit", "plain-2")
	plain(trail)
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	return visible
}

// checkTransactionVisibility checks RocketMQ's CommitLogDispatcherBuildConsumeQueue rule:
// only plain and committed records get a ConsumeQueue unit, so a consumer never sees a
// prepared or rolled-back one, and the index (CommitLogDispatcherBuildIndex) keeps every
// record's keys but a rolled-back one's.
func checkTransactionVisibility(t *testing.T, s *Store, visible []string) {
	t.Helper()
	var got []string
	for _, r := range readAll(t, s, "T", 0) {
		got = append(got, string(r.Body))
	}
	if !slices.Equal(got, visible) {
		t.Fatalf("queue T/0 serves %q, want %q", got, visible)
	}
	if max := s.MaxOffsetInQueue("T", 0); max != int64(len(visible)) {
		t.Fatalf("max offset %d, want %d", max, len(visible))
	}
	for body, indexed := range map[string]bool{"prepared": true, "commit": true, "rollback": false} {
		res, err := s.QueryMessage("T", "k-"+body, 4, 0, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if (len(res.Messages) == 1) != indexed {
			t.Errorf("key of %s: %d hits, indexed should be %t", body, len(res.Messages), indexed)
		}
	}
	// The next plain message takes the next offset: hidden records left no gap.
	r := mustPut(t, s, testMsg("T", 0, "after", nil))
	if r.QueueOffset != int64(len(visible)) {
		t.Fatalf("next message at queue offset %d, want %d", r.QueueOffset, len(visible))
	}
}

func TestTransactionRecordsHiddenFromConsumeQueue(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	checkTransactionVisibility(t, s, putTransactionMix(t, s, 0, 0))
	// A hidden record first in its queue has the queue offset the next record takes (0).
	hidden := []int32{message.TransactionPreparedType, message.TransactionRollbackType}
	for qid, f := range hidden {
		m := testMsg("First", int32(qid), "hidden", nil)
		m.SysFlag = f
		mustPut(t, s, m)
		mustPut(t, s, testMsg("First", int32(qid), "shown", nil))
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	for qid := range hidden {
		recs := readAll(t, s, "First", int32(qid))
		if len(recs) != 1 || string(recs[0].Body) != "shown" {
			t.Errorf("First/%d serves %d records, want only the plain one", qid, len(recs))
		}
	}
}

// TestTransactionRecordsHiddenAfterRecovery rebuilds the ConsumeQueue of a store holding
// prepared and rolled-back records along each recovery path: a clean restart, re-dispatch after
// a crash (no checkpoint: from the log's start) into lost queue files, and a rebuild from the
// whole log after one of the queue's files was lost.
func TestTransactionRecordsHiddenAfterRecovery(t *testing.T) {
	for _, c := range []struct {
		name    string
		stop    func(t *testing.T, s *Store, dir string)
		rebuilt bool
	}{
		{"clean restart", func(t *testing.T, s *Store, _ string) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"crash re-dispatch", func(t *testing.T, s *Store, dir string) {
			crash(s)
			if err := os.RemoveAll(filepath.Join(dir, "consumequeue")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"queue file lost", func(t *testing.T, s *Store, dir string) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The middle file holds the mix; the log still has it.
			qfile := filepath.Join(dir, "consumequeue", "T", "0", segmentName(64*CQUnitBytes))
			if err := os.Remove(qfile); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions(t, "")
			s := openStore(t, opts)
			visible := putTransactionMix(t, s, 64, 64) // the mix is in the second of three files
			c.stop(t, s, opts.Dir)
			s2 := openStore(t, opts)
			rep := s2.RecoveryReport()
			if rebuilt := slices.Contains(rep.RebuiltQueues, "T/0"); rebuilt != c.rebuilt {
				t.Fatalf("T/0 rebuilt %t, want %t (report %+v)", rebuilt, c.rebuilt, rep)
			}
			checkTransactionVisibility(t, s2, visible)
		})
	}
}
