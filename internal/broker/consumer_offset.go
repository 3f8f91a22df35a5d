package broker

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/mqgo/mq/storage"
)

// consumerOffsetManager keeps each group's committed offset per topic queue (RocketMQ
// ConsumerOffsetManager). The metadata writer persists it to <store>/config/consumerOffset.json
// every FlushConsumerOffsetInterval when it changed, and on close (persist.go).
type consumerOffsetManager struct {
	b    *Broker
	path string

	mu    sync.RWMutex
	table map[string]map[int32]int64 // "topic@group" -> queue id -> next offset to consume
}

// offsetFile is consumerOffset.json.
type offsetFile struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

const topicGroupSeparator = "@"

func offsetKey(topic, group string) string { return topic + topicGroupSeparator + group }

func newConsumerOffsetManager(b *Broker) (*consumerOffsetManager, error) {
	m := &consumerOffsetManager{b: b, path: b.configPath("consumerOffset.json"), table: map[string]map[int32]int64{}}
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

// commit stores offset as the group's next offset for the queue.
func (m *consumerOffsetManager) commit(group, topic string, queueID int32, offset int64) {
	key := offsetKey(topic, group)
	m.mu.Lock()
	q := m.table[key]
	if q == nil {
		q = map[int32]int64{}
		m.table[key] = q
	}
	q[queueID] = offset
	m.mu.Unlock()
	m.b.meta.markDirty(metaOffsets)
}

// query returns the group's stored offset for the queue, or -1 when it has none.
func (m *consumerOffsetManager) query(group, topic string, queueID int32) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off, ok := m.table[offsetKey(topic, group)][queueID]; ok {
		return off
	}
	return -1
}

// topicsOf lists the topics a group has offsets for, sorted.
func (m *consumerOffsetManager) topicsOf(group string) []string {
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

// removeTopic drops every group's offsets of a deleted topic.
func (m *consumerOffsetManager) removeTopic(topic string) {
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
		m.b.meta.markDirty(metaOffsets)
	}
}

// snapshot copies the whole table (slaves sync it from their master).
func (m *consumerOffsetManager) snapshot() map[string]map[int32]int64 {
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

// persist writes consumerOffset.json; only the metadata writer and Close call it.
func (m *consumerOffsetManager) persist() error {
	return storage.WriteJSONFile(m.path, offsetFile{OffsetTable: m.snapshot()})
}
