package broker

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
//     SYSTEM_BUSY, a refusal clients retry later, and the connection stays open.
//
// A creation itself costs O(1), amortised: one journal record (topic_journal.go) and one
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
		sysFlag = sendSysFlagUnitTopic
		if retry {
			sysFlag = sendSysFlagUnitSubTopic
		}
	}
	var tc TopicConfig
	ok := false
	if retry {
		if gc, found := b.groups.find(h.Topic[len(names.RetryPrefix):]); found {
			queues := min(max(gc.RetryQueueNums, 1), b.opts.Limits.MaxQueueNums)
			tc = TopicConfig{TopicName: h.Topic, ReadQueueNums: queues, WriteQueueNums: queues,
				Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag, TopicSysFlag: sysFlag}
			ok = true
		}
	}
	if !ok {
		tc, ok = b.topics.inSendMessageConfig(h.Topic, h.DefaultTopic, min(h.DefaultTopicQueueNums, b.opts.Limits.MaxQueueNums), sysFlag)
	}
	if !ok {
		if e := b.log.Debug(); e.Enabled() {
			e.Str("topic", h.Topic).Str("addr", ch.RemoteAddr()).Msg("send to a topic that does not exist")
		}
		return TopicConfig{}, sendResponse(remoting.TopicNotExist, "topic["+h.Topic+"] not exist, apply first please!")
	}
	// A full table refuses before a token is spent: the connection's bucket is for topics
	// it could create.
	if b.topics.count() >= b.opts.Limits.MaxTopics {
		return TopicConfig{}, b.topicsFullResponse(ch, h.Topic)
	}
	if !b.topicCreates.allow(ch.ID(), time.Now()) {
		b.topicCreates.refused(b, ch, h.Topic)
		return TopicConfig{}, sendResponse(remoting.SystemBusy, b.topicCreates.remark)
	}
	tc, created, err := b.topics.putIfAbsent(tc, true)
	if err != nil {
		return TopicConfig{}, b.topicsFullResponse(ch, h.Topic)
	}
	if created {
		if e := b.log.Debug(); e.Enabled() {
			e.Str("topic", h.Topic).Str("default_topic", h.DefaultTopic).Int32("queues", tc.WriteQueueNums).
				Str("addr", ch.RemoteAddr()).Msg("topic created on send")
		}
		b.topics.changed()
	}
	return tc, nil
}

// topicsFullRemark is the remark refusing topic because the broker holds MaxTopics.
func (b *Broker) topicsFullRemark(topic string) string {
	return fmt.Sprintf("topic[%s] not exist and cannot be created: the broker holds %d topics, its MaxTopics "+
		"(-max-topics); delete unused topics or raise the limit", topic, b.topics.count())
}

// topicsFullResponse answers a send whose topic the full table could not take, logging the
// first refusal a minute.
func (b *Broker) topicsFullResponse(ch remoting.Channel, topic string) *remoting.Command {
	n := b.topicsFull.count.Add(1)
	if b.topicsFull.log.allow(time.Now(), topicLimitLogPeriod) {
		b.log.Warn().Str("addr", ch.RemoteAddr()).Str("topic", topic).Int("max_topics", b.opts.Limits.MaxTopics).
			Int64("refused_total", n).Msg("topic table full (MaxTopics); refusing sends that would create topics")
	}
	return sendResponse(remoting.TopicNotExist, b.topicsFullRemark(topic))
}

// createRefusal counts refusals of one kind and keeps their warning to one per period.
type createRefusal struct {
	count atomic.Int64
	log   logLimiter
}

// topicLimitLogPeriod spaces the warnings about refused creations.
const topicLimitLogPeriod = time.Minute

// createLimiter is the per-connection token bucket of topic auto-creation. Buckets live in a
// map by connection id; one that has refilled is the same as none, so the map is swept of
// them whenever it has doubled since the last sweep, which bounds it by the connections that
// created a topic lately without a close hook.
type createLimiter struct {
	rate   float64 // tokens a second
	burst  float64
	remark string // the SYSTEM_BUSY remark

	mu        sync.Mutex
	buckets   map[uint64]*createBucket
	nextSweep int

	refusals createRefusal
}

type createBucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// createLimiterMinSweep is the map size below which the limiter never sweeps.
const createLimiterMinSweep = 1024

func newCreateLimiter(burst, rate int) *createLimiter {
	return &createLimiter{rate: float64(rate), burst: float64(burst), buckets: map[uint64]*createBucket{},
		nextSweep: createLimiterMinSweep,
		remark: fmt.Sprintf("[AUTO_CREATE_TOPIC_LIMITED]this connection creates topics faster than the broker allows "+
			"(AutoCreateTopicRate %d a second, AutoCreateTopicBurst %d); send to existing topics, create topics "+
			"with the admin tools, or retry later", rate, burst)}
}

// allow takes a token from connection id's bucket and reports whether there was one.
func (l *createLimiter) allow(id uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	bk := l.buckets[id]
	if bk == nil {
		if len(l.buckets) >= l.nextSweep {
			l.sweepLocked(now)
		}
		bk = &createBucket{tokens: l.burst, at: now}
		l.buckets[id] = bk
	} else if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(l.burst, bk.tokens+d.Seconds()*l.rate)
		bk.at = now
	}
	if bk.tokens < 1 {
		return false
	}
	bk.tokens--
	return true
}

// sweepLocked drops the buckets that have refilled. l.mu must be held.
func (l *createLimiter) sweepLocked(now time.Time) {
	for id, bk := range l.buckets {
		if bk.tokens+now.Sub(bk.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, id)
		}
	}
	l.nextSweep = max(createLimiterMinSweep, 2*len(l.buckets))
}

// refused counts a refused creation and logs the first one a minute.
func (l *createLimiter) refused(b *Broker, ch remoting.Channel, topic string) {
	n := l.refusals.count.Add(1)
	if l.refusals.log.allow(time.Now(), topicLimitLogPeriod) {
		b.log.Warn().Str("addr", ch.RemoteAddr()).Str("topic", topic).Float64("rate", l.rate).Float64("burst", l.burst).
			Int64("refused_total", n).Msg("connection creating topics faster than AutoCreateTopicRate; refusing them SYSTEM_BUSY")
	}
}
