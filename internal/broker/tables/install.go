package tables

import (
	"fmt"
	"strings"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/route"
)

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does: topics and
// subscription groups replace the local tables when the master's data version differs;
// consumer offsets replace the local table. The metadata writer persists what was installed
// (writer.go); internal/broker/ha fetches and decodes what it installs, through the core's
// views.
//
// What a master sends is checked as a request would be: entries whose topic or group is not a
// valid name (internal/names) are left out, queue counts are clamped into [0, MaxQueueNums] and
// offsets of queue ids outside [0, MaxQueueNums) are dropped, each install logging one warning
// when it left anything out. A master is a peer, not an authority: a RocketMQ master whose
// broker name is its host name serves a topic of that name, and nothing a master sends may
// become a path outside the store or a loop bound.

// clampQueueNums brings a queue count a master sent into [0, maxQ], as clampLoadedQueueNums
// does for what is loaded from disk.
func clampQueueNums(n, maxQ int32) int32 { return max(0, min(n, maxQ)) }

// InstallMaster replaces the topic table with a master's, unless it holds that version.
func (m *Topics) InstallMaster(w route.TopicConfigSerializeWrapper) error {
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
	}
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]route.TopicConfig{}
	}
	drops := dropInvalidTopics(w.TopicConfigTable)
	if n := scrubTable(w.TopicConfigTable); n > 0 {
		m.log.Warn().Str("source", "master").Int("topics", n).
			Msg("slave sync: master's topic attributes this broker does not know left out")
	}
	clamped := 0
	for name, tc := range w.TopicConfigTable {
		r, wq := clampQueueNums(tc.ReadQueueNums, m.maxQueueNums), clampQueueNums(tc.WriteQueueNums, m.maxQueueNums)
		if r != tc.ReadQueueNums || wq != tc.WriteQueueNums {
			tc.ReadQueueNums, tc.WriteQueueNums = r, wq
			w.TopicConfigTable[name] = tc
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(m.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", m.maxQueueNums),
			"slave sync: master's topics with invalid names left out, queue counts clamped")
	}
	if n := len(w.TopicConfigTable); n > m.maxTopics+maxUncappedTopics {
		return fmt.Errorf("broker: the master sent %d topics, more than Limits.MaxTopics %d: kept the topics held", n, m.maxTopics)
	}
	m.replace(w.TopicConfigTable, w.DataVersion)
	return nil
}

// InstallMaster replaces the consumer offset table with a master's (topic@group -> queue id ->
// offset, protocol.ConsumerOffsetSerializeWrapper's OffsetTable).
func (m *Offsets) InstallMaster(offsets map[string]map[int32]int64) error {
	var drops nameDrops
	badQueues := 0
	table := make(map[string]map[int32]int64, len(offsets))
	for k, q := range offsets {
		// Neither a topic nor a group may hold '@', so a valid key has exactly one.
		topic, group, _ := strings.Cut(k, topicGroupSeparator)
		if !names.ValidTopic(topic) || !names.ValidGroup(group) {
			drops.add(k)
			continue
		}
		c := make(map[int32]int64, min(len(q), int(m.maxQueueNums)))
		for id, off := range q {
			if id < 0 || id >= m.maxQueueNums {
				badQueues++
				continue
			}
			c[id] = off
		}
		if len(c) > 0 {
			table[k] = c
		}
	}
	if drops.count > 0 || badQueues > 0 {
		drops.log(m.log.Warn().Str("source", "master").Int("bad_queue_ids", badQueues).Int32("max_queue_nums", m.maxQueueNums),
			"slave sync: master's consumer offsets with invalid names or queue ids left out")
	}
	m.mu.Lock()
	m.table = table
	m.mu.Unlock()
	m.w.markDirty(fileOffsets)
	return nil
}

// InstallMaster replaces the subscription group table with a master's, unless it holds
// that version. A table larger than MaxSubscriptionGroups (and the system groups) is not
// installed, as Topics.InstallMaster does for MaxTopics.
func (m *Groups) InstallMaster(w SubscriptionGroupWrapper) error {
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	drops := dropInvalidGroups(w.SubscriptionGroupTable)
	clamped := 0
	for name, c := range w.SubscriptionGroupTable {
		if n := clampQueueNums(c.RetryQueueNums, m.maxQueueNums); n != c.RetryQueueNums {
			c.RetryQueueNums = n
			w.SubscriptionGroupTable[name] = c
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(m.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", m.maxQueueNums),
			"slave sync: master's subscription groups with invalid names left out, retryQueueNums clamped")
	}
	if n := len(w.SubscriptionGroupTable); n > m.maxGroups+len(systemGroups) {
		return fmt.Errorf("broker: the master sent %d subscription groups, more than Limits.MaxSubscriptionGroups %d: "+
			"kept the groups held", n, m.maxGroups)
	}
	m.mu.Lock()
	m.table = make(map[string]SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		m.table[name] = c
	}
	m.version = w.DataVersion
	m.mu.Unlock()
	m.w.changed(fileGroups)
	return nil
}
