package controller

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// logStore is the controller's Raft log and stable store: one bbolt file, raft.db in
// Options.Dir. It keeps the layout raft-boltdb/v2 gave that file in earlier versions, so a
// controller's data directory opens unchanged:
//   - bucket "logs": key the entry's index as 8 big-endian bytes, value the raft.Log in
//     MessagePack (hashicorp/go-msgpack, time.Time as raft-boltdb's default writes it);
//   - bucket "conf": the stable keys Raft sets (current term, last vote), uint64 values as 8
//     big-endian bytes.
//
// Writing it ourselves on bbolt alone, instead of through raft-boltdb, drops the second bolt
// database (boltdb/bolt) raft-boltdb/v2 links for its v1 migration; go-msgpack comes with Raft.
// Every write is one bbolt transaction, synced before it returns.
type logStore struct {
	db *bbolt.DB
}

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")
)

// errStableKeyNotFound is Get's and GetUint64's answer for a key never set. Raft tells it from a
// failure by its text alone (raft.HasExistingState and NewRaft compare err.Error() with "not
// found", as its in-memory store answers), so the text must stay exactly this.
var errStableKeyNotFound = errors.New("not found")

// logStoreLockTimeout bounds the wait for raft.db's file lock. Another process holding it is
// another controller on the same directory: waiting for ever would hang the node's start.
const logStoreLockTimeout = 3 * time.Second

// msgpackHandle encodes raft.Log values as raft-boltdb/v2 does by default (TimeNotBuiltin:
// AppendedAt in go-msgpack's pre-1.1.5 time format), so a file we write still reads back with
// raft-boltdb should an operator go back to an older mq. Decoding accepts both time formats.
// A handle is safe for concurrent use once configured.
var msgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = true
	return h
}()

// openLogStore opens or creates the store at path.
func openLogStore(path string) (*logStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: logStoreLockTimeout})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked by another process (is another controller using this directory?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketLogs, bucketConf} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &logStore{db: db}, nil
}

// Close releases the file and its lock.
func (s *logStore) Close() error { return s.db.Close() }

func indexKey(index uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), index) }

// keyIndex reads a key of the logs bucket; a key of another length is a damaged file.
func keyIndex(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("raft log store: log key of %d bytes, want 8: the file is damaged", len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

// FirstIndex implements raft.LogStore: the lowest index stored, 0 when empty.
func (s *logStore) FirstIndex() (uint64, error) { return s.edgeIndex(true) }

// LastIndex implements raft.LogStore: the highest index stored, 0 when empty.
func (s *logStore) LastIndex() (uint64, error) { return s.edgeIndex(false) }

func (s *logStore) edgeIndex(first bool) (index uint64, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		k, _ := c.Last()
		if first {
			k, _ = c.First()
		}
		if k == nil {
			return nil
		}
		index, err = keyIndex(k)
		return err
	})
	return index, err
}

// GetLog implements raft.LogStore; an index not stored is raft.ErrLogNotFound.
func (s *logStore) GetLog(index uint64, log *raft.Log) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		// v is bbolt's memory map, valid only inside the transaction, and the decoder may
		// hand out slices of its input (log.Data): it decodes a copy.
		if err := codec.NewDecoderBytes(bytes.Clone(v), msgpackHandle).Decode(log); err != nil {
			return fmt.Errorf("raft log store: entry %d: %w", index, err)
		}
		return nil
	})
}

// StoreLog implements raft.LogStore.
func (s *logStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore: all of logs in one transaction, or none.
func (s *logStore) StoreLogs(logs []*raft.Log) error {
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, msgpackHandle)
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, log := range logs {
			buf.Reset()
			enc.Reset(&buf)
			if err := enc.Encode(log); err != nil {
				return fmt.Errorf("raft log store: entry %d: %w", log.Index, err)
			}
			// Put keeps a reference to the value until the commit: it needs its own copy.
			if err := b.Put(indexKey(log.Index), bytes.Clone(buf.Bytes())); err != nil {
				return fmt.Errorf("raft log store: entry %d: %w", log.Index, err)
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore: deletes the entries from min to max, both included.
func (s *logStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		from := indexKey(min)
		// Seek again after each delete rather than Next: bbolt does not document where a
		// cursor stands after Delete, and a skipped entry would outlive its deletion.
		for k, _ := c.Seek(from); k != nil; k, _ = c.Seek(from) {
			index, err := keyIndex(k)
			if err != nil {
				return err
			}
			if index > max {
				return nil
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set implements raft.StableStore.
func (s *logStore) Set(key, val []byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketConf).Put(key, bytes.Clone(val))
	})
}

// Get implements raft.StableStore: a copy of key's value, or errStableKeyNotFound.
func (s *logStore) Get(key []byte) (val []byte, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(key)
		if v == nil {
			return errStableKeyNotFound
		}
		val = bytes.Clone(v)
		return nil
	})
	return val, err
}

// SetUint64 implements raft.StableStore.
func (s *logStore) SetUint64(key []byte, val uint64) error { return s.Set(key, indexKey(val)) }

// GetUint64 implements raft.StableStore: key's value, or errStableKeyNotFound.
func (s *logStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft stable store: %q holds %d bytes, want 8: the file is damaged", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
