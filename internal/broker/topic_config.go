package broker

import (
	"errors"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// scheduleTopicQueues is the queue count of names.TopicSchedule: one queue per delay level.
const scheduleTopicQueues = 18

// TopicConfig is one topic's configuration, in the JSON form RocketMQ keeps in topics.json and
// sends in REGISTER_BROKER.
type TopicConfig = route.TopicConfig

// topicConfigManager holds the broker's topics (RocketMQ TopicConfigManager); the metadata
// writer persists them to <store>/config/topics.json (persist.go).
type topicConfigManager struct {
	b    *Broker
	path string

	mu      sync.RWMutex
	table   map[string]TopicConfig
	version route.DataVersion
}

func newTopicConfigManager(b *Broker) (*topicConfigManager, error) {
	// A fresh table's version carries its birth time, as RocketMQ's DataVersion does, so a broker
	// that comes back with an empty store is not mistaken for the one the name servers still
	// hold ({0, 0} both times would keep the old routes).
	m := &topicConfigManager{b: b, path: b.configPath("topics.json"), table: map[string]TopicConfig{},
		version: route.DataVersion{Timestamp: time.Now().UnixMilli()}}
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
	m.addSystemTopics()
	return m, nil
}

// addSystemTopics creates the topics every RocketMQ broker has.
func (m *topicConfigManager) addSystemTopics() {
	o := m.b.opts
	rw := int32(route.PermReadWrite)
	sys := []TopicConfig{
		{TopicName: names.TopicSelfTest, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: o.ClusterName, ReadQueueNums: 16, WriteQueueNums: 16, Perm: int32(route.PermInherit) | rw},
		{TopicName: o.BrokerName, ReadQueueNums: 1, WriteQueueNums: 1, Perm: int32(route.PermInherit) | rw},
		{TopicName: names.TopicOffsetMoved, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		// RocketMQ creates the trace topic only with traceTopicEnable (default off); the official
		// clients' trace dispatchers never auto-create it, so without it WithTrace records nothing.
		{TopicName: names.TopicTrace, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
		{TopicName: names.TopicSchedule, ReadQueueNums: scheduleTopicQueues, WriteQueueNums: scheduleTopicQueues, Perm: rw},
		{TopicName: o.ClusterName + names.ReplyTopicSuffix, ReadQueueNums: 1, WriteQueueNums: 1, Perm: rw},
	}
	if !o.DisableAutoCreateTopic {
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
	if !o.DisableAutoCreateTopic {
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

// createInSendMessage creates topic from defaultTopic when that topic carries the inherit bit,
// as RocketMQ's createTopicInSendMessageMethod does: min(clientQueueNums, default's write
// queues) queues and the default's perm without the inherit bit. It returns false when the topic
// may not be created.
func (m *topicConfigManager) createInSendMessage(topic, defaultTopic string, clientQueueNums, sysFlag int32) (TopicConfig, bool) {
	if tc, ok := m.get(topic); ok {
		return tc, true
	}
	def, ok := m.get(defaultTopic)
	if !ok || !route.IsInherited(def.Perm) {
		return TopicConfig{}, false
	}
	if defaultTopic == names.TopicAutoCreate && m.b.opts.DisableAutoCreateTopic {
		return TopicConfig{}, false
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	if n <= 0 {
		n = def.WriteQueueNums
	}
	tc := TopicConfig{TopicName: topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: def.Perm &^ int32(route.PermInherit), TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}
	tc, created := m.putIfAbsent(tc)
	if created {
		m.b.log.Info().Str("topic", topic).Str("default_topic", defaultTopic).Int32("queues", n).
			Msg("topic created on send")
		m.changed()
	}
	return tc, true
}

// createIfAbsent creates a system-made topic (retry, DLQ, half topics) with the given shape;
// when it created it, it returns once the name servers were sent the topic (changed).
func (m *topicConfigManager) createIfAbsent(topic string, queueNums, perm, sysFlag int32) TopicConfig {
	tc, created := m.addIfAbsent(topic, queueNums, perm, sysFlag)
	if created {
		m.changed()
	}
	return tc
}

// addIfAbsent is createIfAbsent without the wait: the topic is marked for the writer but
// neither written nor registered. A caller that creates several topics calls changed once
// after the last, before answering.
func (m *topicConfigManager) addIfAbsent(topic string, queueNums, perm, sysFlag int32) (TopicConfig, bool) {
	tc, created := m.putIfAbsent(TopicConfig{TopicName: topic, ReadQueueNums: queueNums,
		WriteQueueNums: queueNums, Perm: perm, TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag})
	if created {
		m.b.log.Info().Str("topic", topic).Int32("queues", queueNums).Msg("topic created")
	}
	return tc, created
}

// putIfAbsent adds tc unless its topic exists and marks the table dirty; the caller calls
// changed when it added it.
func (m *topicConfigManager) putIfAbsent(tc TopicConfig) (TopicConfig, bool) {
	m.mu.Lock()
	if old, ok := m.table[tc.TopicName]; ok {
		m.mu.Unlock()
		return old, false
	}
	m.table[tc.TopicName] = tc
	m.bumpLocked()
	m.mu.Unlock()
	m.b.meta.markDirty(metaTopics)
	return tc, true
}

// update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC).
func (m *topicConfigManager) update(tc TopicConfig) {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = route.FilterSingleTag
	}
	m.mu.Lock()
	m.table[tc.TopicName] = tc
	m.bumpLocked()
	m.mu.Unlock()
	m.changed()
}

// delete removes a topic; it reports whether it existed.
func (m *topicConfigManager) delete(topic string) bool {
	m.mu.Lock()
	_, ok := m.table[topic]
	if ok {
		delete(m.table, topic)
		m.bumpLocked()
	}
	m.mu.Unlock()
	if ok {
		m.changed()
	}
	return ok
}

// bumpLocked advances the data version. m.mu must be held.
func (m *topicConfigManager) bumpLocked() {
	m.version.Timestamp = time.Now().UnixMilli()
	m.version.Counter++
}

// changed hands the table to the metadata writer and returns once a registration round that
// started after the change has ended, as RocketMQ's createTopicInSendMessageMethod registers
// before answering: once a send that created a topic (or a heartbeat that created retry
// topics) is answered, the name servers have its route. Concurrent changes share one round
// (registration.go); the file is written a few milliseconds later by the writer.
func (m *topicConfigManager) changed() {
	m.b.meta.changed(metaTopics)
	m.b.registerChanged()
}

// snapshot returns a copy of the table and its version.
func (m *topicConfigManager) snapshot() route.TopicConfigSerializeWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := make(map[string]TopicConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return route.TopicConfigSerializeWrapper{TopicConfigTable: t, DataVersion: m.version}
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

// persist writes topics.json; only the metadata writer and Close call it (persist.go).
func (m *topicConfigManager) persist() error {
	return storage.WriteJSONFile(m.path, m.snapshot())
}
