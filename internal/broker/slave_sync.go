package broker

import (
	"encoding/json"
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/route"
)

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does: topics and
// subscription groups replace the local tables when the master's data version differs;
// consumer offsets replace the local table; delay offsets replace the schedule cursors. The
// metadata writer persists what was installed (persist.go).

func (b *Broker) installTopicConfigs(body []byte) error {
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("%w: topic configs: %v", protocol.ErrMalformedBody, err)
	}
	m := b.topics
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return nil
	}
	m.table = make(map[string]TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		m.table[name] = tc
	}
	m.version = w.DataVersion
	m.mu.Unlock()
	b.meta.changed(metaTopics)
	return nil
}

func (b *Broker) installConsumerOffsets(body []byte) error {
	w, err := protocol.DecodeConsumerOffsetSerializeWrapper(body)
	if err != nil {
		return err
	}
	table := make(map[string]map[int32]int64, len(w.OffsetTable))
	for k, q := range w.OffsetTable {
		c := make(map[int32]int64, len(q))
		for id, off := range q {
			c[id] = off
		}
		table[k] = c
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
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return nil
	}
	m.table = make(map[string]SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		m.table[name] = c
	}
	m.version = w.DataVersion
	m.mu.Unlock()
	b.meta.changed(metaGroups)
	return nil
}
