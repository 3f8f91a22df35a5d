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
//
// The table holds at most MaxSubscriptionGroups groups besides the predefined ones
// (systemGroups): RocketMQ creates a group for any heartbeat, pull or send-back that names one
// while autoCreateSubscriptionGroup is on, so without a cap one client could grow the table,
// its file and every reader of it for ever.
type Groups struct {
	w    *Writer
	log  zerolog.Logger
	path string
	// maxQueueNums caps the retryQueueNums a master's table brings (InstallMaster).
	maxQueueNums int32
	// autoCreate is !DisableAutoCreateSubscriptionGroup: Find creates unknown groups.
	autoCreate bool
	// maxGroups is MaxSubscriptionGroups; full counts its refusals and spaces their warnings.
	maxGroups int
	full      Refusals

	mu      sync.RWMutex
	table   map[string]SubscriptionGroupConfig
	version route.DataVersion
}

// systemGroups are the groups MaxSubscriptionGroups never refuses: RocketMQ's predefined ones
// (MixAll.PREDEFINE_GROUP_SET), which its tools and its own services use (admin pulls
// messages as TOOLS_CONSUMER, so a full table must not take the operator's tools away), and the
// groups whose offsets this broker's services keep (internal/broker/pop's revive group,
// internal/broker/schedule's timer group; the transaction service's CID_RMQ_SYS_TRANS is
// predefined). A fixed list rather than RocketMQ's CID_RMQ_SYS_ prefix: a prefix would let a
// client create as many uncapped groups as it has names.
var systemGroups = map[string]bool{
	"DEFAULT_CONSUMER": true, "DEFAULT_PRODUCER": true, "TOOLS_CONSUMER": true, "SCHEDULE_CONSUMER": true,
	"FILTERSRV_CONSUMER": true, "__MONITOR_CONSUMER": true, "CLIENT_INNER_PRODUCER": true,
	"SELF_TEST_P_GROUP": true, "SELF_TEST_C_GROUP": true, "CID_ONS-HTTP-PROXY": true,
	"CID_ONSAPI_PERMISSION": true, "CID_ONSAPI_OWNER": true, "CID_ONSAPI_PULL": true, "CID_RMQ_SYS_TRANS": true,
	"CID_RMQ_SYS_REVIVE_GROUP": true, "CID_RMQ_SYS_WHEEL_TIMER": true,
}

// IsSystemGroup reports whether MaxSubscriptionGroups never refuses group (systemGroups).
func IsSystemGroup(group string) bool { return systemGroups[group] }

// ErrGroupNotExist is Lookup's answer for an unknown group while auto-creation is off.
var ErrGroupNotExist = errors.New("subscription group does not exist")

// ErrTooManyGroups matches (errors.Is) every *TooManyGroupsError.
var ErrTooManyGroups = errors.New("the broker holds MaxSubscriptionGroups subscription groups")

// TooManyGroupsError refuses a new group because the broker holds MaxSubscriptionGroups
// groups. Its text is the remark of the refusal, for the client to read.
type TooManyGroupsError struct {
	Group string
	Max   int
}

func (e *TooManyGroupsError) Error() string {
	return fmt.Sprintf("subscription group [%s] does not exist and cannot be created: the broker holds "+
		"MaxSubscriptionGroups (%d) groups; delete groups no longer used (mqadmin deleteSubGroup) or raise the "+
		"limit (-max-subscription-groups)", e.Group, e.Max)
}

// Is makes errors.Is(err, ErrTooManyGroups) true.
func (e *TooManyGroupsError) Is(target error) bool { return target == ErrTooManyGroups }

func loadGroups(cfg Config, w *Writer) (*Groups, error) {
	m := &Groups{w: w, log: cfg.Log, path: cfg.Path("subscriptionGroup.json"),
		maxQueueNums: cfg.MaxQueueNums, autoCreate: !cfg.DisableAutoCreateSubscriptionGroup,
		maxGroups: cfg.MaxSubscriptionGroups, table: map[string]SubscriptionGroupConfig{}}
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
	// Kept: they were created under a higher limit or by hand, and dropping an operator's
	// groups would stop their consumers.
	if n := m.cappedLocked(); n > m.maxGroups {
		m.log.Warn().Int("groups", n).Int("max_subscription_groups", m.maxGroups).
			Msg("more subscription groups loaded than MaxSubscriptionGroups: none can be created until some are deleted")
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

// Count is how many groups the table holds.
func (m *Groups) Count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.table)
}

// Find returns the group's settings, creating the default ones when auto-creation is on and
// the table has room. It reports false for an unknown group otherwise; Lookup says why.
func (m *Groups) Find(group string) (SubscriptionGroupConfig, bool) {
	c, err := m.Lookup(group)
	return c, err == nil
}

// Lookup is Find with the reason it found nothing: ErrGroupNotExist while auto-creation is
// off, a *TooManyGroupsError when the table holds MaxSubscriptionGroups.
func (m *Groups) Lookup(group string) (SubscriptionGroupConfig, error) {
	c, created, err := m.FindOrAdd(group)
	if created {
		m.w.changed(fileGroups)
	}
	return c, err
}

// FindOrAdd is Lookup without waking the metadata writer: a new group is only marked dirty. A
// caller that creates several groups calls Changed once after the last.
func (m *Groups) FindOrAdd(group string) (c SubscriptionGroupConfig, created bool, err error) {
	m.mu.RLock()
	c, ok := m.table[group]
	m.mu.RUnlock()
	if ok {
		return c, false, nil
	}
	if !m.autoCreate {
		return SubscriptionGroupConfig{}, false, ErrGroupNotExist
	}
	c = NewSubscriptionGroupConfig(group)
	m.mu.Lock()
	if old, ok := m.table[group]; ok {
		m.mu.Unlock()
		return old, false, nil
	}
	if !m.roomLocked(group) {
		m.mu.Unlock()
		return SubscriptionGroupConfig{}, false, m.refuse(group)
	}
	m.table[group] = c
	m.bumpLocked()
	m.mu.Unlock()
	m.w.markDirty(fileGroups)
	m.log.Info().Str("group", group).Msg("subscription group created")
	return c, true, nil
}

// roomLocked reports whether the table may take group as a new group: it is a system group, or
// the table holds fewer than MaxSubscriptionGroups others. m.mu must be held.
func (m *Groups) roomLocked(group string) bool {
	return systemGroups[group] || len(m.table) < m.maxGroups || m.cappedLocked() < m.maxGroups
}

// cappedLocked counts the groups MaxSubscriptionGroups applies to: all but the system groups.
// A walk of systemGroups, so only done once the table is near the cap. m.mu must be held.
func (m *Groups) cappedLocked() int {
	n := len(m.table)
	for g := range systemGroups {
		if _, ok := m.table[g]; ok {
			n--
		}
	}
	return n
}

// refuse is the refusal of a new group the table had no room for: it counts it and logs the
// first one a minute, so a client hammering the limit cannot flood the log.
func (m *Groups) refuse(group string) error {
	if n, logIt := m.full.Note(time.Now()); logIt {
		m.log.Warn().Str("group", group).Int("max_subscription_groups", m.maxGroups).Int64("refused_total", n).
			Msg("subscription group table full (MaxSubscriptionGroups); refusing new groups")
	}
	return &TooManyGroupsError{Group: group, Max: m.maxGroups}
}

// Changed wakes the metadata writer for groups FindOrAdd created. It never blocks.
func (m *Groups) Changed() { m.w.changed(fileGroups) }

// Update creates or replaces a group's settings. A new group the table has no room for is
// refused with a *TooManyGroupsError; an existing one is always replaced.
func (m *Groups) Update(c SubscriptionGroupConfig) error {
	m.mu.Lock()
	if _, ok := m.table[c.GroupName]; !ok && !m.roomLocked(c.GroupName) {
		m.mu.Unlock()
		return m.refuse(c.GroupName)
	}
	m.table[c.GroupName] = c
	m.bumpLocked()
	m.mu.Unlock()
	m.w.changed(fileGroups)
	return nil
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
