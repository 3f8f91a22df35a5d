package tables

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/tickets"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// ScheduleTopicQueues is the queue count of names.TopicSchedule: one queue per delay level.
// The core's MaxQueueNums may not go below it, or clamping would cut delay levels off.
const ScheduleTopicQueues = 18

// Topics holds the broker's topics (RocketMQ TopicConfigManager); the metadata writer
// persists them to <store>/config/topics.json and its journal (journal.go), and the broker's
// registration loop sends what changed to the name servers.
type Topics struct {
	w           *Writer
	log         zerolog.Logger
	onChanged   func() // Config.OnTopicsChanged
	writeWait   time.Duration
	path        string // topics.json
	journalPath string // topics.journal
	maxTopics   int
	// maxQueueNums caps the queue counts a master's table brings (InstallMaster).
	maxQueueNums int32
	// autoCreate is !DisableAutoCreateTopic: TBW102 is in the table and sends may create
	// topics from it.
	autoCreate bool

	mu      sync.RWMutex
	table   map[string]route.TopicConfig
	version route.DataVersion
	// jPending are the changes made since the writer's last pass, for the journal; jCompact
	// asks the next pass to write topics.json whole instead (journal.go).
	jPending []topicRecord
	jCompact bool
	// regPending are the topics changed since a registration round last took them; regLast
	// is the version the last REGISTER_BROKER carried; regPartial says an incremental round
	// ran since the last whole one (the core's registration.go).
	regPending map[string]struct{}
	regLast    route.DataVersion
	regPartial bool

	// Only the metadata writer touches these (or FlushAll, after Run returned): the journal's
	// length in whole records (0: topics.json must be written whole first) and the length of
	// the topics.json last written.
	jSize, snapSize int64
	// wholeWrites and appends count the passes that wrote topics.json whole and those that
	// appended to the journal (tests).
	wholeWrites, appends atomic.Int64
	// durable holds the tickets of changes waiting for the pass that writes them (Changed).
	durable *tickets.Rounds
}

func loadTopics(cfg Config, w *Writer) (*Topics, error) {
	// A fresh table's version carries its birth time, as RocketMQ's DataVersion does, so a broker
	// that comes back with an empty store is not mistaken for the one the name servers still
	// hold ({0, 0} both times would keep the old routes).
	m := &Topics{w: w, log: cfg.Log, onChanged: cfg.OnTopicsChanged, writeWait: cfg.TopicWriteWait,
		path: cfg.Path("topics.json"), journalPath: cfg.Path(topicJournalFile),
		maxTopics: cfg.MaxTopics, maxQueueNums: cfg.MaxQueueNums, autoCreate: !cfg.DisableAutoCreateTopic,
		table: map[string]route.TopicConfig{}, regPending: map[string]struct{}{},
		version: route.DataVersion{Timestamp: time.Now().UnixMilli()}, durable: tickets.New()}
	var f route.TopicConfigSerializeWrapper
	fromBak, err := storage.ReadJSONFile(m.path, &f)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: load topics: %w", err)
	default:
		if fromBak {
			m.log.Warn().Str("file", m.path).Msg("topics loaded from backup")
		}
		// An older build or a hand edit may have left names no request may carry: the broker
		// must neither register nor serve them. The file loses them at its next write.
		if d := dropInvalidTopics(f.TopicConfigTable); d.count > 0 {
			d.log(m.log.Error().Str("file", m.path), "topics with invalid names dropped at load")
		}
		for name, tc := range f.TopicConfigTable {
			m.table[name] = tc
		}
		m.version = f.DataVersion
		if fixed := fixDLQPerms(m.table); len(fixed) > 0 {
			// A new version makes name servers that compare versions take the new perm too.
			m.log.Warn().Str("file", m.path).Strs("topics", fixed).
				Msg("dead-letter topics created write-only by an earlier mq made read+write, as RocketMQ 4.9 creates them")
			m.bumpLocked()
			w.markDirty(fileTopics)
		}
	}
	if err := m.replayJournal(); err != nil {
		return nil, err
	}
	if n := scrubTable(m.table); n > 0 {
		m.log.Error().Str("file", m.path).Int("topics", n).
			Msg("topic attributes no request could set (unknown keys or values) dropped at load")
	}
	if n := len(m.table); n > m.maxTopics {
		m.log.Warn().Int("topics", n).Int("max_topics", m.maxTopics).
			Msg("more topics loaded than MaxTopics: none can be created until some are deleted")
	}
	m.addSystemTopics(cfg)
	return m, nil
}

// fixDLQPerms gives read back to dead-letter topics an earlier mq created write-only (perm
// exactly PERM_WRITE, what it always wrote) and returns their names, sorted. A topics.json
// from before dead-letter topics were made read+write holds such entries; other permissions
// were set by an operator and are kept. Read+write is what the core's send-back paths create
// dead-letter topics with (its dlqPerm, as RocketMQ 4.9 does).
func fixDLQPerms(table map[string]route.TopicConfig) []string {
	var fixed []string
	for name, tc := range table {
		if strings.HasPrefix(name, names.DLQPrefix) && tc.Perm == route.PermWrite {
			tc.Perm = route.PermReadWrite
			table[name] = tc
			fixed = append(fixed, name)
		}
	}
	slices.Sort(fixed)
	return fixed
}

// addSystemTopics creates the topics every RocketMQ broker has.
func (m *Topics) addSystemTopics(cfg Config) {
	rw := int32(route.PermReadWrite)
	sys := []route.TopicConfig{
		{TopicName: names.TopicSelfTest, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: cfg.ClusterName, ReadQueueNums: 16, WriteQueueNums: 16, Perm: int32(route.PermInherit) | rw},
		{TopicName: cfg.BrokerName, ReadQueueNums: 1, WriteQueueNums: 1, Perm: int32(route.PermInherit) | rw},
		{TopicName: names.TopicOffsetMoved, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		// RocketMQ creates the trace topic only with traceTopicEnable (default off); the official
		// clients' trace dispatchers never auto-create it, so without it WithTrace records nothing.
		{TopicName: names.TopicTrace, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: names.TopicSchedule, ReadQueueNums: ScheduleTopicQueues, WriteQueueNums: ScheduleTopicQueues, Perm: rw},
		{TopicName: cfg.ClusterName + names.ReplyTopicSuffix, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
	}
	if !cfg.DisableAutoCreateTopic {
		sys = append(sys, route.TopicConfig{TopicName: names.TopicAutoCreate, ReadQueueNums: cfg.DefaultTopicQueueNums,
			WriteQueueNums: cfg.DefaultTopicQueueNums, Perm: int32(route.PermInherit) | rw})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tc := range sys {
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = route.FilterSingleTag
		}
		if _, ok := m.table[tc.TopicName]; !ok {
			m.table[tc.TopicName] = tc
		}
	}
	if !cfg.DisableAutoCreateTopic {
		return
	}
	delete(m.table, names.TopicAutoCreate)
}

// Get returns a topic's configuration.
func (m *Topics) Get(topic string) (route.TopicConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc, ok := m.table[topic]
	return tc, ok
}

// maxUncappedTopics bounds the topics a table may hold beyond MaxTopics: the system topics,
// which MaxTopics never refuses (addSystemTopics, AddSystemTopic).
const maxUncappedTopics = 64

// ErrTooManyTopics refuses a new topic when the broker holds MaxTopics (the core's
// topicsFullRemark says so to the client).
var ErrTooManyTopics = errors.New("the broker holds MaxTopics topics")

// InSendMessageConfig is the config a send to topic creates it with, from defaultTopic when
// that topic carries the inherit bit, as RocketMQ's createTopicInSendMessageMethod does:
// min(clientQueueNums, default's write queues) queues and the default's perm without the
// inherit bit. It returns false when defaultTopic does not let a send create topics.
func (m *Topics) InSendMessageConfig(topic, defaultTopic string, clientQueueNums, sysFlag int32) (route.TopicConfig, bool) {
	def, ok := m.Get(defaultTopic)
	if !ok || !route.IsInherited(def.Perm) {
		return route.TopicConfig{}, false
	}
	if defaultTopic == names.TopicAutoCreate && !m.autoCreate {
		return route.TopicConfig{}, false
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	if n <= 0 {
		n = def.WriteQueueNums
	}
	return route.TopicConfig{TopicName: topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: def.Perm &^ int32(route.PermInherit), TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}, true
}

// CreateIfAbsent creates a system-made topic (retry, DLQ) with the given shape; when it
// created it, it returns once the topic is written and the name servers were sent it
// (Changed). It returns ErrTooManyTopics, creating nothing, when the broker holds MaxTopics.
func (m *Topics) CreateIfAbsent(topic string, queueNums, perm, sysFlag int32) (route.TopicConfig, error) {
	tc, created, err := m.AddIfAbsent(topic, queueNums, perm, sysFlag)
	if created {
		m.Changed()
	}
	return tc, err
}

// AddIfAbsent is CreateIfAbsent without the wait: the topic is marked for the writer but
// neither written nor registered. A caller that creates several topics calls Changed once
// after the last, before answering.
func (m *Topics) AddIfAbsent(topic string, queueNums, perm, sysFlag int32) (route.TopicConfig, bool, error) {
	tc, created, err := m.PutIfAbsent(route.TopicConfig{TopicName: topic, ReadQueueNums: queueNums,
		WriteQueueNums: queueNums, Perm: perm, TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}, true)
	if created {
		if e := m.log.Debug(); e.Enabled() {
			e.Str("topic", topic).Int32("queues", queueNums).Msg("topic created")
		}
	}
	return tc, created, err
}

// AddSystemTopic adds one of the topics the broker's own services write (the transaction and
// timer topics) unless it exists. MaxTopics never refuses it: a full table must not stop
// those services.
func (m *Topics) AddSystemTopic(topic string, queueNums int32) {
	_, created, _ := m.PutIfAbsent(route.TopicConfig{TopicName: topic, ReadQueueNums: queueNums,
		WriteQueueNums: queueNums, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}, false)
	if created {
		m.log.Info().Str("topic", topic).Int32("queues", queueNums).Msg("system topic created")
	}
}

// PutIfAbsent adds tc unless its topic exists and marks the table dirty; the caller calls
// Changed when it added it. With capped, a topic that would take the table past MaxTopics is
// refused with ErrTooManyTopics.
func (m *Topics) PutIfAbsent(tc route.TopicConfig, capped bool) (route.TopicConfig, bool, error) {
	m.mu.Lock()
	if old, ok := m.table[tc.TopicName]; ok {
		m.mu.Unlock()
		return old, false, nil
	}
	if capped && len(m.table) >= m.maxTopics {
		m.mu.Unlock()
		return route.TopicConfig{}, false, ErrTooManyTopics
	}
	m.table[tc.TopicName] = tc
	m.putLocked(tc)
	m.mu.Unlock()
	m.w.markDirty(fileTopics)
	return tc, true, nil
}

// Update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC), its attributes kept.
func (m *Topics) Update(tc route.TopicConfig) error { return m.UpdateAttributes(tc, nil) }

// UpdateAttributes creates or replaces a topic (UPDATE_AND_CREATE_TOPIC) and applies an
// attributes modification (ParseAttributes) to the attributes it holds, as RocketMQ 5's
// TopicConfigManager.updateTopicConfig does: tc.Attributes is ignored; with no modification
// the topic keeps its attributes. A refused modification is an *AttributeError and changes
// nothing; a new topic that would take the table past MaxTopics is refused with
// ErrTooManyTopics.
func (m *Topics) UpdateAttributes(tc route.TopicConfig, mods map[string]string) error {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = route.FilterSingleTag
	}
	m.mu.Lock()
	old, exists := m.table[tc.TopicName]
	if !exists && len(m.table) >= m.maxTopics {
		m.mu.Unlock()
		return ErrTooManyTopics
	}
	attrs, err := AlterAttributes(!exists, old.Attributes, mods)
	if err != nil {
		m.mu.Unlock()
		return &AttributeError{Err: err}
	}
	tc.Attributes = attrs
	m.table[tc.TopicName] = tc
	m.putLocked(tc)
	m.mu.Unlock()
	m.Changed()
	return nil
}

// Delete removes a topic; it reports whether it existed.
func (m *Topics) Delete(topic string) bool {
	m.mu.Lock()
	_, ok := m.table[topic]
	if ok {
		delete(m.table, topic)
		m.bumpLocked()
		m.journalLocked(topicRecord{Delete: topic})
	}
	m.mu.Unlock()
	if ok {
		m.Changed()
	}
	return ok
}

// replace installs a whole table (a slave's copy of its master's): the next pass writes
// topics.json whole and the next round registers it whole.
func (m *Topics) replace(table map[string]route.TopicConfig, version route.DataVersion) {
	m.mu.Lock()
	m.table = table
	m.version = version
	m.jPending, m.jCompact = nil, true
	clear(m.regPending)
	m.mu.Unlock()
	m.w.changed(fileTopics)
}

// putLocked records a new or replaced topic for the journal and the next registration round,
// under a new data version. m.mu must be held.
func (m *Topics) putLocked(tc route.TopicConfig) {
	m.bumpLocked()
	m.journalLocked(topicRecord{Put: &tc})
	m.regPending[tc.TopicName] = struct{}{}
}

// bumpLocked advances the data version. m.mu must be held.
func (m *Topics) bumpLocked() {
	m.version.Timestamp = time.Now().UnixMilli()
	m.version.Counter++
}

// Changed hands the change to the metadata writer and the registration loop and returns once
// a registration round that started after the change has ended and the writer's pass that
// took it has written it, as RocketMQ's createTopicInSendMessageMethod persists and registers
// before answering: once a send that created a topic (or a heartbeat that created retry
// topics) is answered, the topic survives a crash and the name servers have its route.
// Concurrent changes share one round and one pass (the core's registration.go, writer.go),
// each of which costs what changed, not the whole table.
func (m *Topics) Changed() {
	ticket, wait := m.durable.Ask()
	m.w.changed(fileTopics)
	if m.onChanged != nil {
		m.onChanged()
	}
	if wait && !m.durable.Wait(ticket, m.writeWait) {
		m.log.Debug().Msg("topic change answered before the metadata writer wrote it")
	}
}

// Snapshot returns a copy of the table and its version.
func (m *Topics) Snapshot() route.TopicConfigSerializeWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.snapshotLocked()
}

// snapshotLocked is Snapshot with m.mu held (read or write).
func (m *Topics) snapshotLocked() route.TopicConfigSerializeWrapper {
	t := make(map[string]route.TopicConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: m.version}
}

// Count returns the number of topics.
func (m *Topics) Count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.table)
}

// Names returns the topic names, sorted.
func (m *Topics) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.table))
	for k := range m.table {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PendAll marks every topic changed, so the next incremental registration round sends them
// all: for a change to every topic's registered form, such as the broker's permission.
func (m *Topics) PendAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.table {
		m.regPending[name] = struct{}{}
	}
}

// TakeRegistrationPending returns the topics changed since the last round took them, sorted,
// and forgets them.
func (m *Topics) TakeRegistrationPending() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.regPending) == 0 {
		return nil
	}
	out := make([]string, 0, len(m.regPending))
	for name := range m.regPending {
		out = append(out, name)
	}
	clear(m.regPending)
	sort.Strings(out)
	return out
}

// RegistrationIncrement returns the configs of topics (those still in the table) under a
// version no earlier REGISTER_BROKER carried: a name server reads a registration's topics only
// when its version is new to it, so a second request of one round, or a round taking changes
// whose version the previous round already sent, bumps it.
func (m *Topics) RegistrationIncrement(topics []string) route.TopicConfigSerializeWrapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == m.regLast {
		m.bumpLocked()
		m.journalLocked(topicRecord{})
		m.w.markDirty(fileTopics)
	}
	t := make(map[string]route.TopicConfig, len(topics))
	for _, name := range topics {
		if tc, ok := m.table[name]; ok {
			t[name] = tc
		}
	}
	m.regLast, m.regPartial = m.version, true
	return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: m.version}
}

// RegistrationWhole returns the whole table for a registration round. After incremental
// rounds it first bumps the version: a name server that met this broker through an increment
// (it restarted, or expired the broker) holds only that increment under the increment's
// version, and would ignore the whole table sent under the same one.
func (m *Topics) RegistrationWhole() route.TopicConfigSerializeWrapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.regPartial {
		m.bumpLocked()
		m.journalLocked(topicRecord{})
		m.w.markDirty(fileTopics)
		m.regPartial = false
	}
	clear(m.regPending)
	m.regLast = m.version
	return m.snapshotLocked()
}

// FileWrites returns how many passes wrote topics.json whole and how many appended to its
// journal (tests measure what a flood of creations costs the disk).
func (m *Topics) FileWrites() (whole, appends int64) {
	return m.wholeWrites.Load(), m.appends.Load()
}
