package tables

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Offsets keeps each group's committed offset per topic queue (RocketMQ
// ConsumerOffsetManager). The metadata writer persists it to <store>/config/consumerOffset.json
// every FlushConsumerOffsetInterval when it changed, and on close (writer.go).
type Offsets struct {
	w    *Writer
	log  zerolog.Logger
	path string
	// maxQueueNums bounds the queue ids a master's table may bring (InstallMaster).
	maxQueueNums int32

	mu    sync.RWMutex
	table map[string]map[int32]int64 // "topic@group" -> queue id -> next offset to consume
}

// offsetFile is consumerOffset.json.
type offsetFile struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

const topicGroupSeparator = "@"

func offsetKey(topic, group string) string { return topic + topicGroupSeparator + group }

// SplitOffsetKey splits a key of Offsets.Snapshot ("topic@group") into its topic and group.
func SplitOffsetKey(key string) (topic, group string, ok bool) {
	return strings.Cut(key, topicGroupSeparator)
}

func loadOffsets(cfg Config, w *Writer) (*Offsets, error) {
	m := &Offsets{w: w, log: cfg.Log, path: cfg.Path("consumerOffset.json"), maxQueueNums: cfg.MaxQueueNums,
		table: map[string]map[int32]int64{}}
	var f offsetFile
	_, err := storage.ReadJSONFile(m.path, &f)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: load consumer offsets: %w", err)
	default:
		for k, v := range f.OffsetTable {
			m.table[k] = v
		}
	}
	return m, nil
}

// Commit stores offset as the group's next offset for the queue.
func (m *Offsets) Commit(group, topic string, queueID int32, offset int64) {
	key := offsetKey(topic, group)
	m.mu.Lock()
	q := m.table[key]
	if q == nil {
		q = map[int32]int64{}
		m.table[key] = q
	}
	q[queueID] = offset
	m.mu.Unlock()
	m.w.markDirty(fileOffsets)
}

// Query returns the group's stored offset for the queue, or -1 when it has none.
func (m *Offsets) Query(group, topic string, queueID int32) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off, ok := m.table[offsetKey(topic, group)][queueID]; ok {
		return off
	}
	return -1
}

// TopicsOf lists the topics a group has offsets for, sorted.
func (m *Offsets) TopicsOf(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if t, g, ok := strings.Cut(k, topicGroupSeparator); ok && g == group {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// RemoveTopic drops every group's offsets of a deleted topic.
func (m *Offsets) RemoveTopic(topic string) {
	m.mu.Lock()
	removed := false
	for k := range m.table {
		if t, _, ok := strings.Cut(k, topicGroupSeparator); ok && t == topic {
			delete(m.table, k)
			removed = true
		}
	}
	m.mu.Unlock()
	if removed {
		m.w.markDirty(fileOffsets)
	}
}

// RemoveGroup drops a group's offsets of every topic (ConsumerOffsetManager.removeOffset) and
// returns how many topics it had offsets in.
func (m *Offsets) RemoveGroup(group string) int {
	m.mu.Lock()
	removed := 0
	for k := range m.table {
		if _, g, ok := strings.Cut(k, topicGroupSeparator); ok && g == group {
			delete(m.table, k)
			removed++
		}
	}
	m.mu.Unlock()
	if removed > 0 {
		m.w.markDirty(fileOffsets)
	}
	return removed
}

// Snapshot copies the whole table (slaves sync it from their master).
func (m *Offsets) Snapshot() map[string]map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]map[int32]int64, len(m.table))
	for k, q := range m.table {
		c := make(map[int32]int64, len(q))
		for id, off := range q {
			c[id] = off
		}
		out[k] = c
	}
	return out
}

// Slowest is, by topic and queue, the lowest offset any group committed: the store's
// ConsumedOffsets, against which a retention round that deleted unexpired segments counts the
// messages it took before a group consumed them.
func (m *Offsets) Slowest() map[string]map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]map[int32]int64{}
	for k, qs := range m.table {
		topic, _, _ := strings.Cut(k, topicGroupSeparator)
		low := out[topic]
		if low == nil {
			low = make(map[int32]int64, len(qs))
			out[topic] = low
		}
		for id, off := range qs {
			if cur, ok := low[id]; !ok || off < cur {
				low[id] = off
			}
		}
	}
	return out
}

// persist writes consumerOffset.json; only the metadata writer and FlushAll call it.
func (m *Offsets) persist() error {
	return storage.WriteJSONFile(m.path, offsetFile{OffsetTable: m.Snapshot()})
}
