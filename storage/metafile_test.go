package storage

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// metaValue is large enough that a torn or interleaved write would show in Pad.
type metaValue struct {
	Writer int    `json:"writer"`
	Pad    string `json:"pad"`
}

func padOf(i int) string { return strings.Repeat(string(rune('a'+i%26)), 4096+i) }

// checkMetaValue reads path and fails unless it holds one of the values written, whole.
func checkMetaValue(t *testing.T, path string, writers int) {
	t.Helper()
	var v metaValue
	if err := readJSON(path, &v); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if v.Writer < 0 || v.Writer >= writers || v.Pad != padOf(v.Writer) {
		t.Fatalf("%s holds writer %d with a %d-byte pad: not a value that was written", filepath.Base(path), v.Writer, len(v.Pad))
	}
}

func TestWriteJSONFileConcurrent(t *testing.T) {
	const writers = 480
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "topics.json")
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = WriteJSONFile(path, metaValue{Writer: i, Pad: padOf(i)}) })
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("writer %d: %v", i, err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d concurrent writes failed", failed, writers)
	}
	checkMetaValue(t, path, writers)
	checkMetaValue(t, path+".bak", writers)
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "topics.json" && e.Name() != "topics.json.bak" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of %s: %v %v", path, fi.Mode(), err)
	}
}

func TestWriteJSONFileBackupIsPreviousVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "groups.json")
	for i := range 3 {
		if err := WriteJSONFile(path, metaValue{Writer: i, Pad: padOf(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var cur, bak metaValue
	if err := readJSON(path, &cur); err != nil || cur.Writer != 2 {
		t.Fatalf("current: %d %v", cur.Writer, err)
	}
	if err := readJSON(path+".bak", &bak); err != nil || bak.Writer != 1 {
		t.Fatalf("backup: %d %v", bak.Writer, err)
	}
	// A temp file left by a crash is ignored by readers and does not block writers.
	if err := os.WriteFile(path+".123.tmp", []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONFile(path, metaValue{Writer: 3, Pad: padOf(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSONFile(path, &cur); err != nil || cur.Writer != 3 {
		t.Fatalf("after a crash's temp file: %d %v", cur.Writer, err)
	}
}
