package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Topic auto-creation on the send path, bounded (issue 25). RocketMQ creates any topic a send
// names while autoCreateTopicEnable is on, as many as are asked for, as fast as they are asked
// for. Here:
//
//   - the broker holds at most MaxTopics topics; a send that would create one more is answered
//     TOPIC_NOT_EXIST (RocketMQ's answer for a topic it will not create) with a remark naming
//     the limit, and so are admin requests and send-backs that would;
//   - each connection's sends may create topics at AutoCreateTopicRate a second with bursts of
//     AutoCreateTopicBurst (a token bucket per connection); beyond it the send is answered
//     SYSTEM_BUSY, a refusal clients retry later, and the connection stays open
//     (tables.CreateLimiter).
//
// A creation itself costs O(1), amortised: one journal record (internal/broker/tables) and one
// entry of an incremental registration (registration.go), both shared with the creations made
// at the same time.

// autoCreateTopic creates an unknown topic for a send. A retry topic %RETRY%<group> of a known
// group gets the group's retry queue count and read-write permission; any other topic (or a
// retry topic of a group that cannot be found) is created from the request's default topic
// when that one carries the inherit bit (createTopicInSendMessageMethod). It returns the
// response refusing the send when the topic cannot be created.
//
// The queue count never exceeds MaxQueueNums: like RocketMQ, a defaultTopicQueueNums above the
// default topic's write queue count gets that count (so a send asking 2^31 queues off TBW102
// gets TBW102's 8), and the counts it is clamped to were capped when stored; the explicit
// min here keeps that true whatever path stored them.
func (b *Broker) autoCreateTopic(ch remoting.Channel, h *protocol.SendMessageRequestHeader) (TopicConfig, *remoting.Command) {
	retry := strings.HasPrefix(h.Topic, names.RetryPrefix)
	var sysFlag int32
	if h.UnitMode {
		sysFlag = topicSysFlagUnit
		if retry {
			sysFlag = topicSysFlagUnitSub
		}
	}
	var tc TopicConfig
	ok := false
	if retry {
		if gc, found := b.groups.Find(h.Topic[len(names.RetryPrefix):]); found {
			queues := min(max(gc.RetryQueueNums, 1), b.opts.Limits.MaxQueueNums)
			tc = TopicConfig{TopicName: h.Topic, ReadQueueNums: queues, WriteQueueNums: queues,
				Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}
			ok = true
		}
	}
	if !ok {
		tc, ok = b.topics.InSendMessageConfig(h.Topic, h.DefaultTopic, min(h.DefaultTopicQueueNums, b.opts.Limits.MaxQueueNums), sysFlag)
	}
	if !ok {
		if e := b.log.Debug(); e.Enabled() {
			e.Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Msg("send to a topic that does not exist")
		}
		return TopicConfig{}, sendResponse(remoting.TopicNotExist, "topic["+h.Topic+"] not exist, apply first please!")
	}
	// A full table refuses before a token is spent: the connection's bucket is for topics
	// it could create.
	if b.topics.Count() >= b.opts.Limits.MaxTopics {
		return TopicConfig{}, b.topicsFullResponse(ch, h.Topic)
	}
	if !b.topicCreates.Allow(ch.ID(), time.Now()) {
		b.topicCreates.Refused(&b.log, ch.RemoteAddr(), h.Topic)
		return TopicConfig{}, sendResponse(remoting.SystemBusy, b.topicCreates.Remark())
	}
	tc, created, err := b.topics.PutIfAbsent(tc, true)
	if err != nil {
		return TopicConfig{}, b.topicsFullResponse(ch, h.Topic)
	}
	if created {
		if e := b.log.Debug(); e.Enabled() {
			e.Str("topic", h.Topic).Str("default_topic", h.DefaultTopic).Int32("queues", tc.WriteQueueNums).
				Str("addr", ch.RemoteAddr()).Msg("topic created on send")
		}
		b.topics.Changed()
	}
	return tc, nil
}

// topicsFullRemark is the remark refusing topic because the broker holds MaxTopics.
func (b *Broker) topicsFullRemark(topic string) string {
	return fmt.Sprintf("topic[%s] not exist and cannot be created: the broker holds %d topics, its MaxTopics "+
		"(-max-topics); delete unused topics or raise the limit", topic, b.topics.Count())
}

// topicsFullResponse answers a send whose topic the full table could not take, logging the
// first refusal a minute.
func (b *Broker) topicsFullResponse(ch remoting.Channel, topic string) *remoting.Command {
	if n, logIt := b.topicsFull.Note(time.Now()); logIt {
		b.log.Warn().Str("addr", ch.RemoteAddr()).Str("topic", topic).Int("max_topics", b.opts.Limits.MaxTopics).
			Int64("refused_total", n).Msg("topic table full (MaxTopics); refusing sends that would create topics")
	}
	return sendResponse(remoting.TopicNotExist, b.topicsFullRemark(topic))
}
