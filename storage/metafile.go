package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
)

// WriteJSONFile writes v as indented JSON to path atomically, as RocketMQ's ConfigManager
// keeps broker metadata (topics, subscription groups, consumer offsets, delay offsets): the
// JSON goes to path.tmp, is fsynced, the current file becomes path.bak, and path.tmp is renamed
// to path; the directory is fsynced. A crash at any point leaves path or path.bak whole.
func WriteJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return fmt.Errorf("storage: encode %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: write %s: %w", tmp, err)
	}
	if _, err := os.Stat(path); err == nil {
		// Keep the previous version: a hard link leaves path in place until the rename.
		os.Remove(path + ".bak")
		if err := os.Link(path, path+".bak"); err != nil {
			// No hard links here: copy instead.
			if err := copyFile(path, path+".bak"); err != nil {
				return fmt.Errorf("storage: back up %s: %w", path, err)
			}
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storage: rename %s: %w", tmp, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
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
