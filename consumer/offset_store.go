package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/rs/zerolog"
)

// offsetStore keeps a group's consume offsets: in memory while queues are consumed, persisted
// to the broker (clustering) or a local file (broadcasting). Offsets are the next offset to
// consume (docs/protocol.md §10.4). Implementations are safe for concurrent use.
type offsetStore interface {
	// fetch reads mq's persisted offset (on queue assignment) and keeps it in memory;
	// ErrOffsetNotFound when the group has none.
	fetch(ctx context.Context, mq MessageQueue) (int64, error)
	// read returns the in-memory offset of mq.
	read(mq MessageQueue) (int64, bool)
	// update sets the in-memory offset; with increaseOnly a smaller offset is ignored.
	update(mq MessageQueue, offset int64, increaseOnly bool)
	// persist writes the in-memory offsets of mqs. With wait it returns once the backing store
	// has them (the remote store otherwise sends one-way unless configured to commit synchronously).
	persist(ctx context.Context, mqs []MessageQueue, wait bool) error
	// remove forgets mq's in-memory offset (after it was persisted on drop).
	remove(mq MessageQueue)
}

// memOffsets is the in-memory table both stores share.
type memOffsets struct {
	mu sync.Mutex
	m  map[MessageQueue]int64
}

func (o *memOffsets) read(mq MessageQueue) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	off, ok := o.m[mq]
	return off, ok
}

func (o *memOffsets) update(mq MessageQueue, offset int64, increaseOnly bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[MessageQueue]int64)
	}
	if old, ok := o.m[mq]; ok && increaseOnly && offset < old {
		return
	}
	o.m[mq] = offset
}

func (o *memOffsets) remove(mq MessageQueue) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, mq)
}

func (o *memOffsets) snapshot(mqs []MessageQueue) map[MessageQueue]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[MessageQueue]int64, len(mqs))
	for _, mq := range mqs {
		if off, ok := o.m[mq]; ok {
			out[mq] = off
		}
	}
	return out
}

// remoteOffsetStore keeps a clustering group's offsets on the queues' master brokers
// (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET).
type remoteOffsetStore struct {
	memOffsets
	group string
	inst  instance
	sync  bool
	log   zerolog.Logger
}

func newRemoteOffsetStore(group string, inst instance, sync bool, log zerolog.Logger) *remoteOffsetStore {
	return &remoteOffsetStore{group: group, inst: inst, sync: sync, log: log}
}

func (s *remoteOffsetStore) fetch(ctx context.Context, mq MessageQueue) (int64, error) {
	// Reads may go to a slave when the master is gone (its copy of the offsets); commits go to
	// the master only.
	off, err := queryConsumerOffset(ctx, s.inst.Transport(), s.inst.AdminAddr(mq.BrokerName), s.group, mq)
	if err != nil {
		return 0, err
	}
	s.update(mq, off, false)
	return off, nil
}

func (s *remoteOffsetStore) persist(ctx context.Context, mqs []MessageQueue, wait bool) error {
	var errs []error
	tr := s.inst.Transport()
	for mq, off := range s.snapshot(mqs) {
		if err := updateConsumerOffset(ctx, tr, s.inst.MasterAddr(mq.BrokerName), s.group, mq, off, s.sync || wait); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mq, err))
		}
	}
	return errors.Join(errs...)
}

// localOffsetStore keeps a broadcasting consumer's offsets in
// <dir>/<clientId>/<group>/offsets.json in the Java client's format (LocalFileOffsetStore's
// OffsetSerializeWrapper, fastjson with MessageQueue keys), so a service can switch between
// the Java client and this one on the same file. Like the Java client it keeps the file's
// previous content in offsets.json.bak and falls back to it when the file is missing, empty or
// unreadable; unlike it, the file is replaced atomically (temp file, fsync, rename), and a
// corrupt file without a usable .bak is an error rather than a silent start from nothing.
type localOffsetStore struct {
	memOffsets
	path string

	fileMu sync.Mutex // serializes writes of the file
	stored map[MessageQueue]int64
}

// legacyOffsetFile is the array form mq wrote before it used the Java client's format; it is
// still read, and rewritten in the Java form at once.
type legacyOffsetFile struct {
	OffsetTable []struct {
		Topic      string `json:"topic"`
		BrokerName string `json:"brokerName"`
		QueueID    int    `json:"queueId"`
		Offset     int64  `json:"offset"`
	} `json:"offsetTable"`
}

// pathComponent makes a client id or group safe as one path element.
func pathComponent(s string) string {
	return strings.NewReplacer("/", "_", "\\", "_", "..", "__").Replace(s)
}

// newLocalOffsetStore opens the offsets file of clientID and group under dir (default
// ~/.rocketmq_offsets, the Java client's LOCAL_OFFSET_STORE_DIR).
func newLocalOffsetStore(dir, clientID, group string) (*localOffsetStore, error) {
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("consumer: offset dir: %w", err)
		}
		dir = filepath.Join(home, ".rocketmq_offsets")
	}
	s := &localOffsetStore{path: filepath.Join(dir, pathComponent(clientID), pathComponent(group), "offsets.json")}
	stored, legacy, err := readOffsetFiles(s.path)
	if err != nil {
		return nil, err
	}
	s.stored = stored
	if legacy {
		if err := s.writeLocked(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readOffsetFiles reads path, else path.bak when path is missing, empty or unreadable, as the
// Java client does. legacy reports a table read from mq's old array form.
func readOffsetFiles(path string) (stored map[MessageQueue]int64, legacy bool, err error) {
	stored, legacy, err = readOffsetFile(path)
	if err == nil && stored != nil {
		return stored, legacy, nil
	}
	bak, bakLegacy, bakErr := readOffsetFile(path + ".bak")
	switch {
	case bakErr == nil && bak != nil:
		return bak, bakLegacy, nil
	case err != nil:
		return nil, false, err
	case bakErr != nil:
		return nil, false, bakErr
	}
	return map[MessageQueue]int64{}, false, nil // a new group
}

// readOffsetFile returns nil, false, nil for a missing or empty file.
func readOffsetFile(path string) (map[MessageQueue]int64, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("consumer: read offsets: %w", err)
	}
	stored, err := protocol.DecodeOffsetSerializeWrapper(b)
	if err == nil {
		return stored, false, nil
	}
	var old legacyOffsetFile
	if json.Unmarshal(b, &old) != nil {
		return nil, false, fmt.Errorf("consumer: offsets file %s: %w", path, err)
	}
	stored = make(map[MessageQueue]int64, len(old.OffsetTable))
	for _, e := range old.OffsetTable {
		stored[MessageQueue{Topic: e.Topic, BrokerName: e.BrokerName, QueueID: e.QueueID}] = e.Offset
	}
	return stored, true, nil
}

func (s *localOffsetStore) fetch(_ context.Context, mq MessageQueue) (int64, error) {
	s.fileMu.Lock()
	off, ok := s.stored[mq]
	s.fileMu.Unlock()
	if !ok {
		return 0, ErrOffsetNotFound
	}
	s.update(mq, off, false)
	return off, nil
}

// persist writes the file with the in-memory offsets of mqs merged over what it held.
func (s *localOffsetStore) persist(_ context.Context, mqs []MessageQueue, _ bool) error {
	snap := s.snapshot(mqs)
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	maps.Copy(s.stored, snap)
	return s.writeLocked()
}

// writeLocked replaces the file with the stored table, its previous content kept in the .bak
// file first (the Java client's MixAll.string2File order). s.fileMu must be held, or s not yet
// shared.
func (s *localOffsetStore) writeLocked() error {
	prev, err := os.ReadFile(s.path)
	if err == nil && len(prev) > 0 {
		if err := writeFileAtomic(s.path+".bak", prev); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("consumer: read offsets: %w", err)
	}
	return writeFileAtomic(s.path, protocol.EncodeOffsetSerializeWrapper(s.stored))
}

// writeFileAtomic replaces path with data: a temporary file in the same directory, fsynced,
// renamed over path, and the directory fsynced, so a crash leaves the old or the new file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("consumer: offsets dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".offsets-*.tmp")
	if err != nil {
		return fmt.Errorf("consumer: offsets temp file: %w", err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("consumer: write offsets: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}
