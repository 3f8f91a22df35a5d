package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"reflect"
	"sync"
)

// metaLocks serialize the backup-and-rename step of WriteJSONFile per path (striped by a hash
// of the path, so the set stays bounded however many stores a process opens). Unique temp files
// already keep concurrent writers from renaming each other's half-written file; the lock is for
// path.bak. Unserialized, writer A could remove path.bak, writer B remove it too and link it,
// and A's link then fail with EEXIST; or A could link path.bak after B's rename, making the
// backup the version that is current instead of the one before it.
var metaLocks [64]sync.Mutex

func metaLock(path string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(path))
	return &metaLocks[h.Sum32()%uint32(len(metaLocks))]
}

// WriteJSONFile writes v as indented JSON to path atomically, as RocketMQ's ConfigManager
// keeps broker metadata (topics, subscription groups, consumer offsets, delay offsets): the
// JSON goes to a temp file of its own in path's directory and is fsynced, the current file
// becomes path.bak, the temp file is renamed to path and the directory is fsynced. A crash at
// any point leaves path or path.bak whole. Safe for concurrent use, also on one path: each call
// succeeds, and path ends as one of the values written, whole.
func WriteJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return fmt.Errorf("storage: encode %s: %w", path, err)
	}
	return writeFileAtomic(path, b)
}

// replaceKeepingBackup makes the current path path.bak and renames tmp to path. The caller
// holds path's metaLock.
func replaceKeepingBackup(tmp, path string) error {
	if _, err := os.Stat(path); err == nil {
		// A hard link leaves path in place until the rename.
		bak := path + ".bak"
		os.Remove(bak)
		if err := os.Link(path, bak); err != nil {
			// No hard links here: copy instead.
			if err := copyFile(path, bak); err != nil {
				return fmt.Errorf("storage: back up %s: %w", path, err)
			}
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storage: rename %s: %w", tmp, err)
	}
	return nil
}

// ReadJSONFile decodes the JSON in path into v. If path is missing, empty or not valid JSON it
// tries path.bak, and reports fromBackup. If neither exists the error wraps os.ErrNotExist.
func ReadJSONFile(path string, v any) (fromBackup bool, err error) {
	errMain := readJSON(path, v)
	if errMain == nil {
		return false, nil
	}
	// Forget whatever the damaged main file left in v.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	errBak := readJSON(path+".bak", v)
	if errBak == nil {
		return true, nil
	}
	if errors.Is(errMain, os.ErrNotExist) && errors.Is(errBak, os.ErrNotExist) {
		return false, errMain
	}
	return false, fmt.Errorf("storage: read %s: %w (backup: %v)", path, errMain, errBak)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return corrupt(path, 0, errors.New("empty file"))
	}
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return corrupt(path, se.Offset, err)
		}
		return corrupt(path, 0, err)
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
