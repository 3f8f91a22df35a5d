package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// NamespaceOrderTopicConfig is the KV namespace whose values are the orderTopicConf of routes:
// key = topic, value = "brokerName:queueCount;brokerName:queueCount".
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// kvConfig is the name server's namespace -> key -> value store (RocketMQ's KVConfigManager),
// optionally persisted to a JSON file in RocketMQ's kvConfig.json format:
//
//	{"configTable":{"namespace":{"key":"value"}}}
//
// Lock order: persistMu before mu.
type kvConfig struct {
	log  zerolog.Logger
	path string // "" = memory only

	persistMu sync.Mutex // serializes file writes; held while snapshotting so writes stay ordered

	mu    sync.RWMutex
	table map[string]map[string]string
}

func newKVConfig(path string, log zerolog.Logger) *kvConfig {
	return &kvConfig{path: path, log: log, table: make(map[string]map[string]string)}
}

type kvFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// load replaces the table with the file's content; a missing file is an empty table.
func (k *kvConfig) load() error {
	if k.path == "" {
		return nil
	}
	data, err := os.ReadFile(k.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("route: load kv config: %w", err)
	}
	var f kvFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("route: load kv config %s: %w: %v", k.path, ErrMalformed, err)
	}
	if f.ConfigTable == nil {
		f.ConfigTable = make(map[string]map[string]string)
	}
	k.mu.Lock()
	k.table = f.ConfigTable
	k.mu.Unlock()
	return nil
}

func (k *kvConfig) put(ns, key, value string) {
	k.mu.Lock()
	m := k.table[ns]
	if m == nil {
		m = make(map[string]string)
		k.table[ns] = m
	}
	m[key] = value
	k.mu.Unlock()
	k.persist()
}

func (k *kvConfig) get(ns, key string) (string, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.table[ns][key]
	return v, ok
}

func (k *kvConfig) delete(ns, key string) {
	k.mu.Lock()
	m := k.table[ns]
	_, ok := m[key]
	delete(m, key)
	if m != nil && len(m) == 0 {
		delete(k.table, ns)
	}
	k.mu.Unlock()
	if ok {
		k.persist()
	}
}

// list returns a copy of a namespace's table; ok is false when the namespace is empty.
func (k *kvConfig) list(ns string) (map[string]string, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	m := k.table[ns]
	if len(m) == 0 {
		return nil, false
	}
	return maps.Clone(m), true
}

// persist writes the whole table to the file (temp file, fsync, rename). Like RocketMQ, a failed
// write is logged and the in-memory change stands.
func (k *kvConfig) persist() {
	if k.path == "" {
		return
	}
	k.persistMu.Lock()
	defer k.persistMu.Unlock()
	k.mu.RLock()
	data, err := json.Marshal(kvFile{ConfigTable: k.table})
	k.mu.RUnlock()
	if err == nil {
		err = writeFileAtomic(k.path, data)
	}
	if err != nil {
		k.log.Error().Err(err).Str("path", k.path).Msg("kv config not persisted")
	}
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// validOrderTopicConf reports whether s is "brokerName:count(;brokerName:count)*", the only form
// the Go client's producer survives (docs/protocol.md §3.1.2).
func validOrderTopicConf(s string) bool {
	if s == "" {
		return false
	}
	for piece := range strings.SplitSeq(s, ";") {
		name, count, ok := strings.Cut(piece, ":")
		if !ok || name == "" || strings.ContainsAny(name, ",\"") {
			return false
		}
		if n, err := strconv.Atoi(count); err != nil || n < 0 {
			return false
		}
	}
	return true
}
