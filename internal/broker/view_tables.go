package broker

import (
	"fmt"
	"strings"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The core's registries as services see them: topics, subscription groups and consumer
// offsets, each a view over its manager, so that a service reads b.Offsets().Commit(group,
// topic, q, off) and Broker keeps no method per table operation.

// Topics is the topic table as services see it.
type Topics struct{ b *Broker }

// Topics is the topic table's view for services.
func (b *Broker) Topics() Topics { return Topics{b} }

// Get returns a topic's config.
func (v Topics) Get(topic string) (TopicConfig, bool) { return v.b.topics.get(topic) }

// Count is how many topics the broker has.
func (v Topics) Count() int { return len(v.b.topics.names()) }

// AddSystem adds a topic the broker's services write (half, op, timer topics) unless it
// exists; MaxTopics never refuses it.
func (v Topics) AddSystem(topic string, queueNums int32) { v.b.topics.addSystemTopic(topic, queueNums) }

// QueueLoopBound is n capped at MaxQueueNums: what an admin read visits of a stored count.
func (v Topics) QueueLoopBound(n int32) int32 { return v.b.queueLoopBound(n) }

// Groups is the subscription group table as services see it.
type Groups struct{ b *Broker }

// Groups is the subscription group table's view for services.
func (b *Broker) Groups() Groups { return Groups{b} }

// All copies the subscription group table.
func (v Groups) All() SubscriptionGroupWrapper { return v.b.groups.snapshot() }

// Update checks c (its name and retry queue count) and stores it; the error is the refusal,
// with RocketMQ's code and a remark naming the field.
func (v Groups) Update(c SubscriptionGroupConfig) error {
	if c.GroupName == "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "subscription group config without groupName"}
	}
	if resp := reqnames.CheckGroupField("groupName", c.GroupName); resp != nil {
		return &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
	}
	// 0 is valid: RocketMQ reads it as "no retries for this group" (send-back answers SUCCESS).
	if remark := v.b.queueNumsRemark("retryQueueNums", c.RetryQueueNums, 0); remark != "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "subscription group[" + c.GroupName + "]: " + remark}
	}
	v.b.groups.update(c)
	return nil
}

// Delete removes a group's settings and reports whether it had any.
func (v Groups) Delete(group string) bool { return v.b.groups.delete(group) }

// Offsets are the committed consumer offsets as services see them.
type Offsets struct{ b *Broker }

// Offsets is the consumer offset table's view for services.
func (b *Broker) Offsets() Offsets { return Offsets{b} }

// All copies the committed offsets: topic@group -> queue -> offset (SplitOffsetKey splits the
// key).
func (v Offsets) All() map[string]map[int32]int64 { return v.b.offsets.snapshot() }

// Query is a group's committed offset in a queue, -1 when it has none.
func (v Offsets) Query(group, topic string, queueID int32) int64 {
	return v.b.offsets.query(group, topic, queueID)
}

// Commit commits a group's offset in a queue.
func (v Offsets) Commit(group, topic string, queueID int32, offset int64) {
	v.b.offsets.commit(group, topic, queueID, offset)
}

// TopicsOf are the topics a group has committed offsets in.
func (v Offsets) TopicsOf(group string) []string { return v.b.offsets.topicsOf(group) }

// SplitOffsetKey splits a key of Offsets.All into its topic and group.
func SplitOffsetKey(key string) (topic, group string, ok bool) {
	return strings.Cut(key, topicGroupSeparator)
}

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does: topics and
// subscription groups replace the local tables when the master's data version differs;
// consumer offsets replace the local table. The metadata writer persists what was installed
// (persist.go); internal/broker/ha fetches and decodes what it installs.
//
// What a master sends is checked as a request would be: entries whose topic or group is not a
// valid name (internal/names) are left out, queue counts are clamped into [0, MaxQueueNums] and
// offsets of queue ids outside [0, MaxQueueNums) are dropped, each install logging one warning
// when it left anything out. A master is a peer, not an authority: a RocketMQ master whose
// broker name is its host name serves a topic of that name, and nothing a master sends may
// become a path outside the store or a loop bound.

// InstallMaster replaces the topic table with a master's, unless it holds that version.
func (v Topics) InstallMaster(w route.TopicConfigSerializeWrapper) error {
	b := v.b
	m := b.topics
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
	}
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	drops := dropInvalidTopics(w.TopicConfigTable)
	clamped := 0
	for name, tc := range w.TopicConfigTable {
		r, wq := b.clampQueueNums(tc.ReadQueueNums), b.clampQueueNums(tc.WriteQueueNums)
		if r != tc.ReadQueueNums || wq != tc.WriteQueueNums {
			tc.ReadQueueNums, tc.WriteQueueNums = r, wq
			w.TopicConfigTable[name] = tc
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.Limits.MaxQueueNums),
			"slave sync: master's topics with invalid names left out, queue counts clamped")
	}
	if n := len(w.TopicConfigTable); n > b.opts.Limits.MaxTopics+maxUncappedTopics {
		return fmt.Errorf("broker: the master sent %d topics, more than Limits.MaxTopics %d: kept the topics held", n, b.opts.Limits.MaxTopics)
	}
	m.replace(w.TopicConfigTable, w.DataVersion)
	return nil
}

// InstallMaster replaces the consumer offset table with a master's.
func (v Offsets) InstallMaster(w *protocol.ConsumerOffsetSerializeWrapper) error {
	b := v.b
	var drops nameDrops
	badQueues := 0
	table := make(map[string]map[int32]int64, len(w.OffsetTable))
	for k, q := range w.OffsetTable {
		// Neither a topic nor a group may hold '@', so a valid key has exactly one.
		topic, group, _ := strings.Cut(k, topicGroupSeparator)
		if !names.ValidTopic(topic) || !names.ValidGroup(group) {
			drops.add(k)
			continue
		}
		c := make(map[int32]int64, min(len(q), int(b.opts.Limits.MaxQueueNums)))
		for id, off := range q {
			if id < 0 || id >= b.opts.Limits.MaxQueueNums {
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
		drops.log(b.log.Warn().Str("source", "master").Int("bad_queue_ids", badQueues).Int32("max_queue_nums", b.opts.Limits.MaxQueueNums),
			"slave sync: master's consumer offsets with invalid names or queue ids left out")
	}
	m := b.offsets
	m.mu.Lock()
	m.table = table
	m.mu.Unlock()
	b.meta.markDirty(metaOffsets)
	return nil
}

// InstallMaster replaces the subscription group table with a master's, unless it holds
// that version.
func (v Groups) InstallMaster(w SubscriptionGroupWrapper) error {
	b := v.b
	m := b.groups
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
		if n := b.clampQueueNums(c.RetryQueueNums); n != c.RetryQueueNums {
			c.RetryQueueNums = n
			w.SubscriptionGroupTable[name] = c
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.Limits.MaxQueueNums),
			"slave sync: master's subscription groups with invalid names left out, retryQueueNums clamped")
	}
	m.mu.Lock()
	m.table = make(map[string]SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		m.table[name] = c
	}
	m.version = w.DataVersion
	m.mu.Unlock()
	b.meta.changed(metaGroups)
	return nil
}
