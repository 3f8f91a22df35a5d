package broker

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// SubscriptionGroupConfig is a consumer group's settings, in RocketMQ's JSON form
// (subscriptionGroup.json, GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
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

// subscriptionGroupManager holds consumer group settings (RocketMQ SubscriptionGroupManager);
// the metadata writer persists them to <store>/config/subscriptionGroup.json (persist.go).
type subscriptionGroupManager struct {
	b    *Broker
	path string

	mu      sync.RWMutex
	table   map[string]SubscriptionGroupConfig
	version route.DataVersion
}

func newSubscriptionGroupManager(b *Broker) (*subscriptionGroupManager, error) {
	m := &subscriptionGroupManager{b: b, path: b.configPath("subscriptionGroup.json"),
		table: map[string]SubscriptionGroupConfig{}}
	var w SubscriptionGroupWrapper
	_, err := storage.ReadJSONFile(m.path, &w)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: load subscription groups: %w", err)
	default:
		if d := dropInvalidGroups(w.SubscriptionGroupTable); d.count > 0 { // as topics.json (topic_config.go)
			d.log(b.log.Error().Str("file", m.path), "subscription groups with invalid names dropped at load")
		}
		for k, v := range w.SubscriptionGroupTable {
			m.table[k] = v
		}
		m.version = w.DataVersion
	}
	return m, nil
}

// get returns the group's settings without creating them.
func (m *subscriptionGroupManager) get(group string) (SubscriptionGroupConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.table[group]
	return c, ok
}

// find returns the group's settings, creating the default ones when auto-creation is on. It
// reports false for an unknown group otherwise.
func (m *subscriptionGroupManager) find(group string) (SubscriptionGroupConfig, bool) {
	c, ok, created := m.findOrAdd(group)
	if created {
		m.b.meta.changed(metaGroups)
	}
	return c, ok
}

// findOrAdd is find without waking the metadata writer: a new group is only marked dirty. A
// caller that creates several groups calls meta.changed(metaGroups) once after the last.
func (m *subscriptionGroupManager) findOrAdd(group string) (c SubscriptionGroupConfig, ok, created bool) {
	m.mu.RLock()
	c, ok = m.table[group]
	m.mu.RUnlock()
	if ok {
		return c, true, false
	}
	if m.b.opts.DisableAutoCreateSubscriptionGroup {
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
	m.b.meta.markDirty(metaGroups)
	m.b.log.Info().Str("group", group).Msg("subscription group created")
	return c, true, true
}

// update creates or replaces a group's settings.
func (m *subscriptionGroupManager) update(c SubscriptionGroupConfig) {
	m.mu.Lock()
	m.table[c.GroupName] = c
	m.bumpLocked()
	m.mu.Unlock()
	m.b.meta.changed(metaGroups)
}

// delete removes a group's settings.
func (m *subscriptionGroupManager) delete(group string) bool {
	m.mu.Lock()
	_, ok := m.table[group]
	delete(m.table, group)
	if ok {
		m.bumpLocked()
	}
	m.mu.Unlock()
	if ok {
		m.b.meta.changed(metaGroups)
	}
	return ok
}

func (m *subscriptionGroupManager) bumpLocked() {
	m.version.Timestamp = time.Now().UnixMilli()
	m.version.Counter++
}

func (m *subscriptionGroupManager) snapshot() SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := make(map[string]SubscriptionGroupConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return SubscriptionGroupWrapper{SubscriptionGroupTable: t, DataVersion: m.version}
}

// persist writes subscriptionGroup.json; only the metadata writer and Close call it.
func (m *subscriptionGroupManager) persist() error {
	return storage.WriteJSONFile(m.path, m.snapshot())
}
