package broker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does: topics and
// subscription groups replace the local tables when the master's data version differs;
// consumer offsets replace the local table; delay offsets replace the schedule cursors. The
// metadata writer persists what was installed (persist.go).
//
// What a master sends is checked as a request would be: entries whose topic or group is not a
// valid name (internal/names) are left out, queue counts are clamped into [0, MaxQueueNums] and
// offsets of queue ids outside [0, MaxQueueNums) are dropped, each install logging one warning
// when it left anything out. A master is a peer, not an authority: a RocketMQ master whose
// broker name is its host name serves a topic of that name, and nothing a master sends may
// become a path outside the store or a loop bound.

func (b *Broker) installTopicConfigs(body []byte) error {
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("%w: topic configs: %v", protocol.ErrMalformedBody, err)
	}
	m := b.topics
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
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
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.MaxQueueNums),
			"slave sync: master's topics with invalid names left out, queue counts clamped")
	}
	if n := len(w.TopicConfigTable); n > b.opts.MaxTopics+maxUncappedTopics {
		return fmt.Errorf("broker: the master sent %d topics, more than MaxTopics %d: kept the topics held", n, b.opts.MaxTopics)
	}
	m.replace(w.TopicConfigTable, w.DataVersion)
	return nil
}

func (b *Broker) installConsumerOffsets(body []byte) error {
	w, err := protocol.DecodeConsumerOffsetSerializeWrapper(body)
	if err != nil {
		return err
	}
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
		c := make(map[int32]int64, min(len(q), int(b.opts.MaxQueueNums)))
		for id, off := range q {
			if id < 0 || id >= b.opts.MaxQueueNums {
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
		drops.log(b.log.Warn().Str("source", "master").Int("bad_queue_ids", badQueues).Int32("max_queue_nums", b.opts.MaxQueueNums),
			"slave sync: master's consumer offsets with invalid names or queue ids left out")
	}
	m := b.offsets
	m.mu.Lock()
	m.table = table
	m.mu.Unlock()
	b.meta.markDirty(metaOffsets)
	return nil
}

func (b *Broker) installDelayOffsets(body []byte) error {
	w, err := protocol.DecodeDelayOffsetSerializeWrapper(body)
	if err != nil {
		return err
	}
	return b.updateDelayOffsets(*w)
}

func (b *Broker) installSubscriptionGroups(body []byte) error {
	var w SubscriptionGroupWrapper
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("%w: subscription groups: %v", protocol.ErrMalformedBody, err)
	}
	m := b.groups
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
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
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.MaxQueueNums),
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

// clampQueueNums brings a queue count a master sent into [0, MaxQueueNums], as
// clampLoadedQueueNums does for what is loaded from disk.
func (b *Broker) clampQueueNums(n int32) int32 { return max(0, min(n, b.opts.MaxQueueNums)) }

// maxLoggedNames bounds how many dropped names one log line quotes.
const maxLoggedNames = 8

// nameDrops is what a table lost for invalid names, for one log line: a count, and the
// first maxLoggedNames keys quoted by internal/names (escaped, each at most 64 bytes).
type nameDrops struct {
	count  int
	quoted []string
}

func (d *nameDrops) add(key string) {
	d.count++
	if len(d.quoted) < maxLoggedNames {
		d.quoted = append(d.quoted, names.Quote(key, len(key)))
	}
}

// log writes e with the count and the quoted names (sorted, so one table logs alike each time).
func (d *nameDrops) log(e *zerolog.Event, msg string) {
	slices.Sort(d.quoted)
	e.Int("dropped", d.count).Strs("names", d.quoted).Msg(msg)
}

// dropInvalidTopics deletes from a topics table (topics.json, or a master's) every entry whose
// key is not a valid topic name or whose topicName is not its key; an empty topicName takes
// the key. The broker would otherwise register and serve a name no request may carry.
func dropInvalidTopics(table map[string]TopicConfig) nameDrops {
	return dropInvalidNames(table, func(c *TopicConfig) *string { return &c.TopicName }, names.ValidTopic)
}

// dropInvalidGroups is dropInvalidTopics for a subscription group table (groupName and group
// names).
func dropInvalidGroups(table map[string]SubscriptionGroupConfig) nameDrops {
	return dropInvalidNames(table, func(c *SubscriptionGroupConfig) *string { return &c.GroupName }, names.ValidGroup)
}

// dropInvalidNames deletes every entry whose key fails valid or whose own name (name(entry),
// filled in from the key when empty) is not its key.
func dropInvalidNames[C any](table map[string]C, name func(*C) *string, valid func(string) bool) nameDrops {
	var d nameDrops
	for key, c := range table {
		if n := name(&c); *n == "" {
			*n = key
			table[key] = c
		}
		if *name(&c) != key || !valid(key) {
			delete(table, key)
			d.add(key)
		}
	}
	return d
}
