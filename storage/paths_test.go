package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathElement(t *testing.T) {
	good := []string{"T", "%RETRY%cg", "a.b", "...", "a..b", "tópico", strings.Repeat("t", 255)}
	bad := []string{"", ".", "..", "a/b", "/abs", "../x", `a\b`, `..\x`, "a\x00b", strings.Repeat("t", 256)}
	for _, name := range good {
		if err := pathElement(name); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	for _, name := range bad {
		if err := pathElement(name); !errors.Is(err, ErrUnsafeName) {
			t.Errorf("%q accepted (%v)", name, err)
		}
	}
	if n := testing.AllocsPerRun(50, func() { _ = pathElement("SomeTopic_1") }); n != 0 {
		t.Errorf("%v allocations for a good name", n)
	}
}

func TestQueueDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "consumequeue")
	dir, err := queueDir(root, "T", 3)
	if err != nil || dir != filepath.Join(root, "T", "3") {
		t.Fatalf("queueDir: %q %v", dir, err)
	}
	for _, c := range []struct {
		topic string
		qid   int32
	}{{"..", 0}, {"../../x", 0}, {"T", -1}, {"", 0}} {
		if dir, err := queueDir(root, c.topic, c.qid); !errors.Is(err, ErrUnsafeName) {
			t.Errorf("queueDir(%q, %d) = %q, %v", c.topic, c.qid, dir, err)
		}
	}
}

func TestPutRefusesUnsafeTopic(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	for _, topic := range []string{"..", ".", "a/b", `a\b`, "a\x00"} {
		r, err := s.PutMessage(testMsg(topic, 0, "x", nil))
		if r.Status != MessageIllegal || !errors.Is(err, ErrUnsafeName) || !errors.Is(err, ErrIllegalMessage) {
			t.Errorf("put to %q: %v %v", topic, r.Status, err)
		}
	}
	if s.MaxPhyOffset() != 0 {
		t.Fatalf("refused puts wrote %d bytes", s.MaxPhyOffset())
	}
}

// TestDispatchSkipsUnsafeTopic feeds a slave store a replicated record whose topic climbs out
// of the store ("../../escape"; a master's put would refuse it, so the test forges it): the
// dispatcher must skip it without creating anything, go on with the next record, and a
// restart (recovery re-dispatches) must do the same.
func TestDispatchSkipsUnsafeTopic(t *testing.T) {
	parent := t.TempDir()
	masterOpts := testOptions(t, filepath.Join(parent, "master"))
	master := openStore(t, masterOpts)
	runStore(t, master)
	const placeholder, evil = "PLACEHOLDER1", "../../escape"
	mustPut(t, master, testMsg(placeholder, 0, "evil", nil))
	mustPut(t, master, testMsg("Good", 0, "good", nil))
	v, err := master.ReadCommitLog(0, int(master.MaxPhyOffset()))
	if err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(append([]byte(nil), v.Data...), []byte(placeholder), []byte(evil), 1)
	v.Release()

	slaveDir := filepath.Join(parent, "slave")
	slaveOpts := testOptions(t, slaveDir)
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	if err := slave.AppendRaw(0, raw); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, slave)
	assertNoEscape(t, parent, "escape")
	if got := slave.MaxOffsetInQueue("Good", 0); got != 1 {
		t.Fatalf("the record after the unsafe one: max offset %d, want 1", got)
	}
	if n := slave.UnsafeRecordsSkipped(); n != 1 {
		t.Fatalf("skipped %d records, want 1", n)
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}

	// Recovery re-dispatches past its checkpoint: same outcome, and the store opens.
	slaveOpts.Logger = masterOpts.Logger
	again := openStore(t, slaveOpts)
	runStore(t, again)
	waitDispatched(t, again)
	if got := again.MaxOffsetInQueue("Good", 0); got != 1 {
		t.Fatalf("after restart: max offset %d, want 1", got)
	}
	assertNoEscape(t, parent, "escape")
}

// assertNoEscape fails if any file or directory named name exists under root.
func assertNoEscape(t *testing.T, root, name string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == name {
			t.Errorf("%s was created", path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
