package broker

import (
	"errors"
	"fmt"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The core's registries as services see them: topics, subscription groups and consumer
// offsets, each a view over its table (internal/broker/tables), so that a service reads
// b.Offsets().Commit(group, topic, q, off) and Broker keeps no method per table operation.

// TopicConfig is one topic's configuration, in the JSON form RocketMQ keeps in topics.json and
// sends in REGISTER_BROKER.
type TopicConfig = route.TopicConfig

// SubscriptionGroupConfig is a consumer group's settings, in RocketMQ's JSON form
// (subscriptionGroup.json, GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
type SubscriptionGroupConfig = tables.SubscriptionGroupConfig

// SubscriptionGroupWrapper is the persisted and wire form of all groups.
type SubscriptionGroupWrapper = tables.SubscriptionGroupWrapper

// NewSubscriptionGroupConfig returns RocketMQ's defaults for a group.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return tables.NewSubscriptionGroupConfig(group)
}

// Topics is the topic table as services see it.
type Topics struct{ b *Broker }

// Topics is the topic table's view for services.
func (b *Broker) Topics() Topics { return Topics{b} }

// Get returns a topic's config.
func (v Topics) Get(topic string) (TopicConfig, bool) { return v.b.topics.Get(topic) }

// Count is how many topics the broker has.
func (v Topics) Count() int { return v.b.topics.Count() }

// AddSystem adds a topic the broker's services write (half, op, timer topics) unless it
// exists; MaxTopics never refuses it.
func (v Topics) AddSystem(topic string, queueNums int32) { v.b.topics.AddSystemTopic(topic, queueNums) }

// QueueLoopBound is n capped at MaxQueueNums: what an admin read visits of a stored count.
func (v Topics) QueueLoopBound(n int32) int32 { return v.b.queueLoopBound(n) }

// All copies the topic table with its data version.
func (v Topics) All() route.TopicConfigSerializeWrapper { return v.b.topics.Snapshot() }

// maxPermValue bounds a topic's perm: PermName.isValid accepts 0 <= perm < PERM_PRIORITY.
const maxPermValue = route.PermPriority - 1

// Update creates or replaces a topic with the attribute modifications mods
// (tables.ParseAttributes) and returns once the name servers have it. It refuses queue counts
// outside [1, MaxQueueNums] and a perm outside PermName.isValid's [0, 8): RocketMQ's broker
// stores whatever arrives and leaves the checks to its tools; we refuse because every later
// admin read loops over the queue counts and every client that routes to the topic allocates
// that many queues. The error is the refusal, with RocketMQ's code and a remark naming the
// field.
func (v Topics) Update(tc TopicConfig, mods map[string]string) error {
	remark := v.b.queueNumsRemark("readQueueNums", tc.ReadQueueNums, 1)
	if remark == "" {
		remark = v.b.queueNumsRemark("writeQueueNums", tc.WriteQueueNums, 1)
	}
	if remark == "" && (tc.Perm < 0 || tc.Perm > maxPermValue) {
		remark = fmt.Sprintf("perm %d is out of range [0, %d]", tc.Perm, maxPermValue)
	}
	if remark != "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "topic[" + tc.TopicName + "]: " + remark}
	}
	if err := v.b.topics.UpdateAttributes(tc, mods); err != nil {
		// RocketMQ 5 answers a refused modification with SYSTEM_ERROR and the reason.
		var ae *tables.AttributeError
		if errors.As(err, &ae) {
			return &remoting.ResponseError{Code: remoting.SystemError, Remark: ae.Error()}
		}
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: v.b.topicsFullRemark(tc.TopicName)}
	}
	return nil
}

// Delete removes a topic's config, every group's offsets in it, its counters and its
// ConsumeQueues, and reports whether it had a config. The records stay in the CommitLog until
// retention removes them.
func (v Topics) Delete(topic string) (existed bool, err error) {
	existed = v.b.topics.Delete(topic)
	v.b.offsets.RemoveTopic(topic)
	v.b.seams.forgetTopicCounters(topic)
	return existed, v.b.store.DeleteTopics(topic)
}

// Groups is the subscription group table as services see it.
type Groups struct{ b *Broker }

// Groups is the subscription group table's view for services.
func (b *Broker) Groups() Groups { return Groups{b} }

// All copies the subscription group table.
func (v Groups) All() SubscriptionGroupWrapper { return v.b.groups.Snapshot() }

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
	if err := v.b.groups.Update(c); err != nil {
		// Past MaxSubscriptionGroups: the code a request creating a group gets (GroupRemark).
		return &remoting.ResponseError{Code: remoting.SubscriptionGroupNotExist, Remark: err.Error()}
	}
	return nil
}

// Find returns a group's settings, creating RocketMQ's defaults for an unknown group unless
// the broker does not auto-create subscription groups (SubscriptionGroupManager
// .findSubscriptionGroupConfig) or holds MaxSubscriptionGroups groups; ok is false when the
// group has none.
func (v Groups) Find(group string) (SubscriptionGroupConfig, bool) { return v.b.groups.Find(group) }

// Lookup is Find with the reason it found nothing, for the request's answer: a request
// refused for it answers SUBSCRIPTION_GROUP_NOT_EXIST with GroupRemark(err, its own remark).
func (v Groups) Lookup(group string) (SubscriptionGroupConfig, error) {
	return v.b.groups.Lookup(group)
}

// GroupRemark is the remark of a SUBSCRIPTION_GROUP_NOT_EXIST answering err, an error of
// Groups.Lookup: the one naming MaxSubscriptionGroups when the table was full, else notExist,
// the request's own (RocketMQ's) remark for an unknown group.
func GroupRemark(err error, notExist string) string {
	if errors.Is(err, tables.ErrTooManyGroups) {
		return err.Error()
	}
	return notExist
}

// Get returns the group's settings without creating them.
func (v Groups) Get(group string) (SubscriptionGroupConfig, bool) { return v.b.groups.Get(group) }

// Delete removes a group's settings and reports whether it had any.
func (v Groups) Delete(group string) bool { return v.b.groups.Delete(group) }

// Offsets are the committed consumer offsets as services see them.
type Offsets struct{ b *Broker }

// Offsets is the consumer offset table's view for services.
func (b *Broker) Offsets() Offsets { return Offsets{b} }

// All copies the committed offsets: topic@group -> queue -> offset (SplitOffsetKey splits the
// key).
func (v Offsets) All() map[string]map[int32]int64 { return v.b.offsets.Snapshot() }

// Query is a group's committed offset in a queue, -1 when it has none.
func (v Offsets) Query(group, topic string, queueID int32) int64 {
	return v.b.offsets.Query(group, topic, queueID)
}

// Commit commits a group's offset in a queue.
func (v Offsets) Commit(group, topic string, queueID int32, offset int64) {
	v.b.offsets.Commit(group, topic, queueID, offset)
}

// TopicsOf are the topics a group has committed offsets in.
func (v Offsets) TopicsOf(group string) []string { return v.b.offsets.TopicsOf(group) }

// SplitOffsetKey splits a key of Offsets.All into its topic and group.
func SplitOffsetKey(key string) (topic, group string, ok bool) { return tables.SplitOffsetKey(key) }

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does, checked as a
// request would be (internal/broker/tables' install.go: names validated, queue counts
// clamped, the topic count bounded); internal/broker/ha fetches and decodes what it installs.

// InstallMaster replaces the topic table with a master's, unless it holds that version.
func (v Topics) InstallMaster(w route.TopicConfigSerializeWrapper) error {
	return v.b.topics.InstallMaster(w)
}

// InstallMaster replaces the consumer offset table with a master's.
func (v Offsets) InstallMaster(w *protocol.ConsumerOffsetSerializeWrapper) error {
	return v.b.offsets.InstallMaster(w.OffsetTable)
}

// InstallMaster replaces the subscription group table with a master's, unless it holds
// that version.
func (v Groups) InstallMaster(w SubscriptionGroupWrapper) error { return v.b.groups.InstallMaster(w) }
