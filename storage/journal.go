package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A journal is the incremental half of a metadata table whose whole form is a JSON file
// rewritten now and then (WriteJSONFile): an append-only file of records, one per line, each
// append fsynced before the caller counts it as written. Rewriting a table of n entries costs
// O(n); appending the entries that changed costs what changed, so a table that grows one entry
// at a time is written in O(1) per entry, and rewritten whole only once its journal has grown
// about as large as the table (the caller decides when, and starts the journal afresh with
// ResetJournal).
//
// A crash can cut the last append short. A record therefore counts only once its line is
// whole (ends in '\n'); ReadJournal returns the whole lines before the first one that is not,
// and AppendJournal cuts what follows the last whole line off before it appends, so a failed
// append never glues a torn record to the next one.

// ReadJournal returns the records of the journal at path and the length of the file prefix
// they fill; bytes after the last whole line are left out. A missing file is no records and
// no error.
func ReadJournal(path string) (records [][]byte, size int64, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("storage: read journal %s: %w", path, err)
	}
	for {
		i := bytes.IndexByte(b[size:], '\n')
		if i < 0 {
			return records, size, nil
		}
		records = append(records, b[size:size+int64(i)])
		size += int64(i) + 1
	}
}

// AppendJournal appends records, each as one line, to the journal at path whose whole lines
// end at valid (what ReadJournal, ResetJournal or the last AppendJournal returned), and makes
// them durable. It returns the journal's new length. Bytes past valid, left by an append that
// failed, are cut off first. A record may not hold '\n'.
func AppendJournal(path string, valid int64, records [][]byte) (int64, error) {
	n := 0
	for _, r := range records {
		if bytes.IndexByte(r, '\n') >= 0 {
			return valid, fmt.Errorf("storage: journal %s: a record holds a newline", path)
		}
		n += len(r) + 1
	}
	buf := make([]byte, 0, n)
	for _, r := range records {
		buf = append(append(buf, r...), '\n')
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return valid, fmt.Errorf("storage: open journal %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != valid {
		err = f.Truncate(valid)
	}
	ops := metaOps(path)
	if err == nil {
		_, err = ops.writeAt(f, buf, valid)
	}
	if err == nil {
		err = ops.sync(f)
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return valid, fmt.Errorf("storage: append to journal %s: %w", path, err)
	}
	return valid + int64(len(buf)), nil
}

// ResetJournal replaces the journal at path with one holding only first (a header naming the
// whole file it follows) atomically: a crash leaves either the old journal or the new one. It
// returns the new journal's length.
func ResetJournal(path string, first []byte) (int64, error) {
	if bytes.IndexByte(first, '\n') >= 0 {
		return 0, fmt.Errorf("storage: journal %s: a record holds a newline", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("storage: reset journal %s: %w", path, err)
	}
	tmp := f.Name()
	buf := append(append([]byte(nil), first...), '\n')
	ops := metaOps(path)
	_, err = ops.writeAt(f, buf, 0)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = ops.sync(f)
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("storage: reset journal %s: %w", path, err)
	}
	return int64(len(buf)), syncDir(dir)
}
