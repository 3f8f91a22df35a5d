package tables

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// SubscriptionGroupConfig is a consumer group's settings, in RocketMQ's JSON form
// (subscriptionGroup.json, GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
type SubscriptionGroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeFromMinEnable   bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	// ConsumeMessageOrderly marks a FIFO consumer group (RocketMQ 5): POP hands its messages
	// out in order per message group, and 5.x's proxy reports the group to SDKs as fifo.
	ConsumeMessageOrderly          bool  `json:"consumeMessageOrderly"`
	RetryQueueNums                 int32 `json:"retryQueueNums"`
	RetryMaxTimes                  int32 `json:"retryMaxTimes"`
	BrokerID                       int64 `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64 `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool  `json:"notifyConsumerIdsChangedEnable"`
}

// NewSubscriptionGroupConfig returns RocketMQ's defaults for a group.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// SubscriptionGroupWrapper is the persisted and wire form of all groups.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            route.DataVersion                  `json:"dataVersion"`
}

// Groups holds consumer group settings (RocketMQ SubscriptionGroupManager); the metadata
// writer persists them to <store>/config/subscriptionGroup.json (writer.go).
type Groups struct {
	w    *Writer
	log  zerolog.Logger
	path string
	// maxQueueNums caps the retryQueueNums a master's table brings (InstallMaster).
	maxQueueNums int32
	// autoCreate is !DisableAutoCreateSubscriptionGroup: Find creates unknown groups.
	autoCreate bool

	mu      sync.RWMutex
	table   map[string]SubscriptionGroupConfig
	version route.DataVersion
}

func loadGroups(cfg Config, w *Writer) (*Groups, error) {
	m := &Groups{w: w, log: cfg.Log, path: cfg.Path("subscriptionGroup.json"),
		maxQueueNums: cfg.MaxQueueNums, autoCreate: !cfg.DisableAutoCreateSubscriptionGroup,
		table: map[string]SubscriptionGroupConfig{}}
	var f SubscriptionGroupWrapper
	_, err := storage.ReadJSONFile(m.path, &f)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: load subscription groups: %w", err)
	default:
		if d := dropInvalidGroups(f.SubscriptionGroupTable); d.count > 0 { // as topics.json (topics.go)
			d.log(m.log.Error().Str("file", m.path), "subscription groups with invalid names dropped at load")
		}
		for k, v := range f.SubscriptionGroupTable {
			m.table[k] = v
		}
		m.version = f.DataVersion
	}
	return m, nil
}

// Get returns the group's settings without creating them.
func (m *Groups) Get(group string) (SubscriptionGroupConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.table[group]
	return c, ok
}

// Find returns the group's settings, creating the default ones when auto-creation is on. It
// reports false for an unknown group otherwise.
func (m *Groups) Find(group string) (SubscriptionGroupConfig, bool) {
	c, ok, created := m.FindOrAdd(group)
	if created {
		m.w.changed(fileGroups)
	}
	return c, ok
}

// FindOrAdd is Find without waking the metadata writer: a new group is only marked dirty. A
// caller that creates several groups calls Changed once after the last.
func (m *Groups) FindOrAdd(group string) (c SubscriptionGroupConfig, ok, created bool) {
	m.mu.RLock()
	c, ok = m.table[group]
	m.mu.RUnlock()
	if ok {
		return c, true, false
	}
	if !m.autoCreate {
		return SubscriptionGroupConfig{}, false, false
	}
	c = NewSubscriptionGroupConfig(group)
	m.mu.Lock()
	if old, ok := m.table[group]; ok {
		m.mu.Unlock()
		return old, true, false
	}
	m.table[group] = c
	m.bumpLocked()
	m.mu.Unlock()
	m.w.markDirty(fileGroups)
	m.log.Info().Str("group", group).Msg("subscription group created")
	return c, true, true
}

// Changed wakes the metadata writer for groups FindOrAdd created. It never blocks.
func (m *Groups) Changed() { m.w.changed(fileGroups) }

// Update creates or replaces a group's settings.
func (m *Groups) Update(c SubscriptionGroupConfig) {
	m.mu.Lock()
	m.table[c.GroupName] = c
	m.bumpLocked()
	m.mu.Unlock()
	m.w.changed(fileGroups)
}

// Delete removes a group's settings.
func (m *Groups) Delete(group string) bool {
	m.mu.Lock()
	_, ok := m.table[group]
	delete(m.table, group)
	if ok {
		m.bumpLocked()
	}
	m.mu.Unlock()
	if ok {
		m.w.changed(fileGroups)
	}
	return ok
}

func (m *Groups) bumpLocked() {
	m.version.Timestamp = time.Now().UnixMilli()
	m.version.Counter++
}

// Snapshot copies the table and its version.
func (m *Groups) Snapshot() SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := make(map[string]SubscriptionGroupConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return SubscriptionGroupWrapper{SubscriptionGroupTable: t, DataVersion: m.version}
}

// persist writes subscriptionGroup.json; only the metadata writer and FlushAll call it.
func (m *Groups) persist() error {
	return storage.WriteJSONFile(m.path, m.Snapshot())
}
