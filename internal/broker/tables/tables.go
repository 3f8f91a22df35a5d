// Package tables holds a broker's metadata tables and their files: the topics (topics.json
// and its journal, the system topics, auto-creation from TBW102, RocketMQ 5's topic
// attributes and their checks in attributes.go), the subscription groups
// (subscriptionGroup.json), the consumer offsets (consumerOffset.json), the metadata writer
// that persists them off the request path, and the per-connection bound on topic
// auto-creation. They are RocketMQ's TopicConfigManager, SubscriptionGroupManager and
// ConsumerOffsetManager; the broker core (internal/broker) answers the requests that read and
// change them and hands services views over them.
//
// The package knows nothing of the broker: what it needs of it (the logger, where the files
// live, the settings it reads, the name servers' registration round a topic change waits for)
// comes in a Config, so the core imports it and not the other way round.
//
// Locks: each table's mutex is a leaf; none is held while calling another table, the store or
// Config.OnTopicsChanged, and what a table calls of the writer under it (its dirty bits) is
// atomic.
package tables

import (
	"time"

	"github.com/rs/zerolog"
)

// Config is what the tables need of the broker that holds them.
type Config struct {
	// Log is the broker's logger: the tables log as the broker (component "broker"), as they
	// did when they were part of it.
	Log zerolog.Logger
	// Path is where a metadata file lives: <store>/config/<name> (storage.Store.ConfigPath).
	Path func(name string) string

	// ClusterName and BrokerName name two of the system topics every broker has.
	ClusterName, BrokerName string
	// DisableAutoCreateTopic leaves TBW102 out of the table, so sends create no topic from it.
	DisableAutoCreateTopic bool
	// DefaultTopicQueueNums is TBW102's queue count.
	DefaultTopicQueueNums int32
	// DisableAutoCreateSubscriptionGroup refuses groups that were not created first.
	DisableAutoCreateSubscriptionGroup bool
	// MaxSubscriptionGroups caps the groups auto-creation and Groups.Update may take the
	// table to (system groups aside, IsSystemGroup).
	MaxSubscriptionGroups int
	// MaxTopics caps the topics a send, a send-back or an admin request may take the table
	// to; MaxQueueNums caps the queue counts loaded from disk or copied from a master.
	MaxTopics    int
	MaxQueueNums int32
	// FlushInterval is FlushConsumerOffsetInterval: the writer's periodic pass, which writes
	// the offsets commits mark dirty and retries failed writes.
	FlushInterval time.Duration
	// TopicWriteWait bounds how long a topic change waits for the writer's pass that writes it.
	TopicWriteWait time.Duration
	// OnTopicsChanged is called by every topic change that waits (Topics.Changed) after the
	// change is handed to the writer: the broker's registration round, which returns once the
	// name servers were sent the change. Nil registers nothing.
	OnTopicsChanged func()
}

// Tables are a broker's three tables and the writer that persists them.
type Tables struct {
	Topics  *Topics
	Groups  *Groups
	Offsets *Offsets
	Writer  *Writer
}

// Load reads the tables from their files (a missing file is an empty table), adds the system
// topics and clamps what an older build or a hand edit left above MaxQueueNums. It starts
// nothing: the caller runs Writer.Run, and calls Writer.FlushAll once Run has returned.
func Load(cfg Config) (*Tables, error) {
	w := newWriter(cfg)
	t := &Tables{Writer: w}
	var err error
	if t.Topics, err = loadTopics(cfg, w); err != nil {
		return nil, err
	}
	if t.Groups, err = loadGroups(cfg, w); err != nil {
		return nil, err
	}
	if t.Offsets, err = loadOffsets(cfg, w); err != nil {
		return nil, err
	}
	w.topics, w.groups, w.offsets = t.Topics, t.Groups, t.Offsets
	t.clampLoadedQueueNums(cfg)
	return t, nil
}

// clampLoadedQueueNums caps the queue counts of the topics and subscription groups loaded
// from disk, which an older build or a hand-edited file may have left above MaxQueueNums: a
// topic with 2^31 queues would make every admin read loop that many times and every client
// that routes to it allocate as many queues. The clamped configs are written back.
func (t *Tables) clampLoadedQueueNums(cfg Config) {
	limit := cfg.MaxQueueNums
	clamp := func(n int32) int32 { return clampQueueNums(n, limit) }
	for name, tc := range t.Topics.Snapshot().TopicConfigTable {
		r, w := clamp(tc.ReadQueueNums), clamp(tc.WriteQueueNums)
		if r == tc.ReadQueueNums && w == tc.WriteQueueNums {
			continue
		}
		cfg.Log.Error().Str("topic", name).Int32("read_queues", tc.ReadQueueNums).Int32("write_queues", tc.WriteQueueNums).
			Int32("max_queue_nums", limit).Msg("loaded topic has a queue count out of range; clamped (raise MaxQueueNums to keep it)")
		tc.ReadQueueNums, tc.WriteQueueNums = r, w
		_ = t.Topics.Update(tc) // an existing topic: MaxTopics never refuses it
	}
	for name, gc := range t.Groups.Snapshot().SubscriptionGroupTable {
		n := clamp(gc.RetryQueueNums)
		if n == gc.RetryQueueNums {
			continue
		}
		cfg.Log.Error().Str("group", name).Int32("retry_queues", gc.RetryQueueNums).Int32("max_queue_nums", limit).
			Msg("loaded subscription group has retryQueueNums out of range; clamped")
		gc.RetryQueueNums = n
		_ = t.Groups.Update(gc) // an existing group: MaxSubscriptionGroups never refuses it
	}
}
