package broker

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/tickets"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// scheduleTopicQueues is the queue count of names.TopicSchedule: one queue per delay level.
const scheduleTopicQueues = 18

// TopicConfig is one topic's configuration, in the JSON form RocketMQ keeps in topics.json and
// sends in REGISTER_BROKER.
type TopicConfig = route.TopicConfig

// topicConfigManager holds the broker's topics (RocketMQ TopicConfigManager); the metadata
// writer persists them to <store>/config/topics.json and its journal (topic_journal.go), and
// the registration loop sends what changed to the name servers (registration.go).
type topicConfigManager struct {
	b           *Broker
	path        string // topics.json
	journalPath string // topics.journal
	maxTopics   int

	mu      sync.RWMutex
	table   map[string]TopicConfig
	version route.DataVersion
	// jPending are the changes made since the writer's last pass, for the journal; jCompact
	// asks the next pass to write topics.json whole instead (topic_journal.go).
	jPending []topicRecord
	jCompact bool
	// regPending are the topics changed since a registration round last took them; regLast
	// is the version the last REGISTER_BROKER carried; regPartial says an incremental round
	// ran since the last whole one (registration.go).
	regPending map[string]struct{}
	regLast    route.DataVersion
	regPartial bool

	// Only the metadata writer touches these (or Close, after Run returned): the journal's
	// length in whole records (0: topics.json must be written whole first) and the length of
	// the topics.json last written.
	jSize, snapSize int64
	// wholeWrites and appends count the passes that wrote topics.json whole and those that
	// appended to the journal (tests).
	wholeWrites, appends atomic.Int64
	// durable holds the tickets of changes waiting for the pass that writes them (changed).
	durable *tickets.Rounds
}

func newTopicConfigManager(b *Broker) (*topicConfigManager, error) {
	// A fresh table's version carries its birth time, as RocketMQ's DataVersion does, so a broker
	// that comes back with an empty store is not mistaken for the one the name servers still
	// hold ({0, 0} both times would keep the old routes).
	m := &topicConfigManager{b: b, path: b.configPath("topics.json"), journalPath: b.configPath(topicJournalFile),
		maxTopics: b.opts.Limits.MaxTopics, table: map[string]TopicConfig{}, regPending: map[string]struct{}{},
		version: route.DataVersion{Timestamp: time.Now().UnixMilli()}, durable: tickets.New()}
	var w route.TopicConfigSerializeWrapper
	fromBak, err := storage.ReadJSONFile(m.path, &w)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: load topics: %w", err)
	default:
		if fromBak {
			b.log.Warn().Str("file", m.path).Msg("topics loaded from backup")
		}
		// An older build or a hand edit may have left names no request may carry: the broker
		// must neither register nor serve them. The file loses them at its next write.
		if d := dropInvalidTopics(w.TopicConfigTable); d.count > 0 {
			d.log(b.log.Error().Str("file", m.path), "topics with invalid names dropped at load")
		}
		for name, tc := range w.TopicConfigTable {
			m.table[name] = tc
		}
		m.version = w.DataVersion
		if fixed := fixDLQPerms(m.table); len(fixed) > 0 {
			// A new version makes name servers that compare versions take the new perm too.
			b.log.Warn().Str("file", m.path).Strs("topics", fixed).
				Msg("dead-letter topics created write-only by an earlier mq made read+write, as RocketMQ 4.9 creates them")
			m.bumpLocked()
			b.meta.markDirty(metaTopics)
		}
	}
	if err := m.replayJournal(); err != nil {
		return nil, err
	}
	if n := len(m.table); n > m.maxTopics {
		b.log.Warn().Int("topics", n).Int("max_topics", m.maxTopics).
			Msg("more topics loaded than MaxTopics: none can be created until some are deleted")
	}
	m.addSystemTopics()
	return m, nil
}

// addSystemTopics creates the topics every RocketMQ broker has.
func (m *topicConfigManager) addSystemTopics() {
	o := m.b.opts
	rw := int32(route.PermReadWrite)
	sys := []TopicConfig{
		{TopicName: names.TopicSelfTest, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: o.Broker.ClusterName, ReadQueueNums: 16, WriteQueueNums: 16, Perm: int32(route.PermInherit) | rw},
		{TopicName: o.Broker.Name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: int32(route.PermInherit) | rw},
		{TopicName: names.TopicOffsetMoved, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		// RocketMQ creates the trace topic only with traceTopicEnable (default off); the official
		// clients' trace dispatchers never auto-create it, so without it WithTrace records nothing.
		{TopicName: names.TopicTrace, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: names.TopicSchedule, ReadQueueNums: scheduleTopicQueues, WriteQueueNums: scheduleTopicQueues, Perm: rw},
		{TopicName: o.Broker.ClusterName + names.ReplyTopicSuffix, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
	}
	if !o.Broker.DisableAutoCreateTopic {
		sys = append(sys, TopicConfig{TopicName: names.TopicAutoCreate, ReadQueueNums: o.DefaultTopicQueueNums,
			WriteQueueNums: o.DefaultTopicQueueNums, Perm: int32(route.PermInherit) | rw})
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
	if !o.Broker.DisableAutoCreateTopic {
		return
	}
	delete(m.table, names.TopicAutoCreate)
}

// get returns a topic's configuration.
func (m *topicConfigManager) get(topic string) (TopicConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc, ok := m.table[topic]
	return tc, ok
}

// maxUncappedTopics bounds the topics a table may hold beyond MaxTopics: the system topics,
// which MaxTopics never refuses (addSystemTopics, addSystemTopic).
const maxUncappedTopics = 64

// errTooManyTopics refuses a new topic when the broker holds MaxTopics (topicsFullRemark).
var errTooManyTopics = errors.New("the broker holds MaxTopics topics")

// inSendMessageConfig is the config a send to topic creates it with, from defaultTopic when
// that topic carries the inherit bit, as RocketMQ's createTopicInSendMessageMethod does:
// min(clientQueueNums, default's write queues) queues and the default's perm without the
// inherit bit. It returns false when defaultTopic does not let a send create topics.
func (m *topicConfigManager) inSendMessageConfig(topic, defaultTopic string, clientQueueNums, sysFlag int32) (TopicConfig, bool) {
	def, ok := m.get(defaultTopic)
	if !ok || !route.IsInherited(def.Perm) {
		return TopicConfig{}, false
	}
	if defaultTopic == names.TopicAutoCreate && m.b.opts.Broker.DisableAutoCreateTopic {
		return TopicConfig{}, false
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	if n <= 0 {
		n = def.WriteQueueNums
	}
	return TopicConfig{TopicName: topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: def.Perm &^ int32(route.PermInherit), TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}, true
}

// createIfAbsent creates a system-made topic (retry, DLQ) with the given shape; when it
// created it, it returns once the topic is written and the name servers were sent it
// (changed). It returns errTooManyTopics, creating nothing, when the broker holds MaxTopics.
func (m *topicConfigManager) createIfAbsent(topic string, queueNums, perm, sysFlag int32) (TopicConfig, error) {
	tc, created, err := m.addIfAbsent(topic, queueNums, perm, sysFlag)
	if created {
		m.changed()
	}
	return tc, err
}

// addIfAbsent is createIfAbsent without the wait: the topic is marked for the writer but
// neither written nor registered. A caller that creates several topics calls changed once
// after the last, before answering.
func (m *topicConfigManager) addIfAbsent(topic string, queueNums, perm, sysFlag int32) (TopicConfig, bool, error) {
	tc, created, err := m.putIfAbsent(TopicConfig{TopicName: topic, ReadQueueNums: queueNums,
		WriteQueueNums: queueNums, Perm: perm, TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}, true)
	if created {
		if e := m.b.log.Debug(); e.Enabled() {
			e.Str("topic", topic).Int32("queues", queueNums).Msg("topic created")
		}
	}
	return tc, created, err
}

// addSystemTopic adds one of the topics the broker's own services write (the transaction and
// timer topics) unless it exists. MaxTopics never refuses it: a full table must not stop
// those services.
func (m *topicConfigManager) addSystemTopic(topic string, queueNums int32) {
	_, created, _ := m.putIfAbsent(TopicConfig{TopicName: topic, ReadQueueNums: queueNums,
		WriteQueueNums: queueNums, Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}, false)
	if created {
		m.b.log.Info().Str("topic", topic).Int32("queues", queueNums).Msg("system topic created")
	}
}

// putIfAbsent adds tc unless its topic exists and marks the table dirty; the caller calls
// changed when it added it. With capped, a topic that would take the table past MaxTopics is
// refused with errTooManyTopics.
func (m *topicConfigManager) putIfAbsent(tc TopicConfig, capped bool) (TopicConfig, bool, error) {
	m.mu.Lock()
	if old, ok := m.table[tc.TopicName]; ok {
		m.mu.Unlock()
		return old, false, nil
	}
	if capped && len(m.table) >= m.maxTopics {
		m.mu.Unlock()
		return TopicConfig{}, false, errTooManyTopics
	}
	m.table[tc.TopicName] = tc
	m.putLocked(tc)
	m.mu.Unlock()
	m.b.meta.markDirty(metaTopics)
	return tc, true, nil
}

// update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC). A new topic that would take
// the table past MaxTopics is refused with errTooManyTopics.
func (m *topicConfigManager) update(tc TopicConfig) error {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = route.FilterSingleTag
	}
	m.mu.Lock()
	if _, ok := m.table[tc.TopicName]; !ok && len(m.table) >= m.maxTopics {
		m.mu.Unlock()
		return errTooManyTopics
	}
	m.table[tc.TopicName] = tc
	m.putLocked(tc)
	m.mu.Unlock()
	m.changed()
	return nil
}

// delete removes a topic; it reports whether it existed.
func (m *topicConfigManager) delete(topic string) bool {
	m.mu.Lock()
	_, ok := m.table[topic]
	if ok {
		delete(m.table, topic)
		m.bumpLocked()
		m.journalLocked(topicRecord{Delete: topic})
	}
	m.mu.Unlock()
	if ok {
		m.changed()
	}
	return ok
}

// replace installs a whole table (a slave's copy of its master's): the next pass writes
// topics.json whole and the next round registers it whole.
func (m *topicConfigManager) replace(table map[string]TopicConfig, version route.DataVersion) {
	m.mu.Lock()
	m.table = table
	m.version = version
	m.jPending, m.jCompact = nil, true
	clear(m.regPending)
	m.mu.Unlock()
	m.b.meta.changed(metaTopics)
}

// putLocked records a new or replaced topic for the journal and the next registration round,
// under a new data version. m.mu must be held.
func (m *topicConfigManager) putLocked(tc TopicConfig) {
	m.bumpLocked()
	m.journalLocked(topicRecord{Put: &tc})
	m.regPending[tc.TopicName] = struct{}{}
}

// bumpLocked advances the data version. m.mu must be held.
func (m *topicConfigManager) bumpLocked() {
	m.version.Timestamp = time.Now().UnixMilli()
	m.version.Counter++
}

// changed hands the change to the metadata writer and the registration loop and returns once
// a registration round that started after the change has ended and the writer's pass that
// took it has written it, as RocketMQ's createTopicInSendMessageMethod persists and registers
// before answering: once a send that created a topic (or a heartbeat that created retry
// topics) is answered, the topic survives a crash and the name servers have its route.
// Concurrent changes share one round and one pass (registration.go, persist.go), each of
// which costs what changed, not the whole table.
func (m *topicConfigManager) changed() {
	ticket, wait := m.durable.Ask()
	m.b.meta.changed(metaTopics)
	m.b.registrar.registerChanged()
	if wait && !m.durable.Wait(ticket, topicWriteWaitTimeout) {
		m.b.log.Debug().Msg("topic change answered before the metadata writer wrote it")
	}
}

// topicWriteWaitTimeout bounds how long a topic change waits for the writer: its pass and
// the one before.
const topicWriteWaitTimeout = 2 * registerTimeout

// snapshot returns a copy of the table and its version.
func (m *topicConfigManager) snapshot() route.TopicConfigSerializeWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.snapshotLocked()
}

// snapshotLocked is snapshot with m.mu held (read or write).
func (m *topicConfigManager) snapshotLocked() route.TopicConfigSerializeWrapper {
	t := make(map[string]TopicConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: m.version}
}

// count returns the number of topics.
func (m *topicConfigManager) count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.table)
}

// names returns the topic names, sorted.
func (m *topicConfigManager) names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.table))
	for k := range m.table {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// takeRegistrationPending returns the topics changed since the last round took them, sorted,
// and forgets them.
func (m *topicConfigManager) takeRegistrationPending() []string {
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

// registrationIncrement returns the configs of topics (those still in the table) under a
// version no earlier REGISTER_BROKER carried: a name server reads a registration's topics only
// when its version is new to it, so a second request of one round, or a round taking changes
// whose version the previous round already sent, bumps it.
func (m *topicConfigManager) registrationIncrement(topics []string) route.TopicConfigSerializeWrapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == m.regLast {
		m.bumpLocked()
		m.journalLocked(topicRecord{})
		m.b.meta.markDirty(metaTopics)
	}
	t := make(map[string]TopicConfig, len(topics))
	for _, name := range topics {
		if tc, ok := m.table[name]; ok {
			t[name] = tc
		}
	}
	m.regLast, m.regPartial = m.version, true
	return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: m.version}
}

// registrationWhole returns the whole table for a registration round. After incremental
// rounds it first bumps the version: a name server that met this broker through an increment
// (it restarted, or expired the broker) holds only that increment under the increment's
// version, and would ignore the whole table sent under the same one.
func (m *topicConfigManager) registrationWhole() route.TopicConfigSerializeWrapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.regPartial {
		m.bumpLocked()
		m.journalLocked(topicRecord{})
		m.b.meta.markDirty(metaTopics)
		m.regPartial = false
	}
	clear(m.regPending)
	m.regLast = m.version
	return m.snapshotLocked()
}
