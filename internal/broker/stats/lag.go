package stats

import (
	"sort"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"
)

// What a scrape reads of the consumer groups: per group, topic and read queue the committed
// offset against the ConsumeQueue's end (as GET_CONSUME_STATS reads them), and on a master the
// store time of the oldest unconsumed message, one store read per lagging queue. Nothing is
// walked message by message.
//
// Topics are bounded by Limits.MaxTopics, queues by Limits.MaxQueueNums and consumer groups by
// Limits.MaxSubscriptionGroups, but their product is not, so a scrape visits at most these
// many of each; what they leave out is counted in Metrics.LeftOut, so
// the cut shows instead of passing for a smaller cluster. Pairs are visited in (group, topic)
// order, so the same ones are reported from scrape to scrape.
const (
	// MaxScrapeGroupTopics bounds the (consumer group, topic) pairs a scrape reports.
	MaxScrapeGroupTopics = 10_000
	// MaxScrapeQueues bounds the (consumer group, queue) offsets a scrape visits, and so the
	// per-queue lag series.
	MaxScrapeQueues = 100_000
	// MaxScrapeStoreReads bounds the store reads of a scrape's consumer latencies.
	MaxScrapeStoreReads = 10_000
)

// TopicKind tells a group's own topics from the others, as rocketmq-exporter files them.
type TopicKind uint8

// Kinds of topics a group has offsets in.
const (
	NormalTopic TopicKind = iota
	RetryTopic            // %RETRY%<group>
	DLQTopic              // %DLQ%<group>
)

func kindOf(topic string) TopicKind {
	switch {
	case names.IsRetryTopic(topic):
		return RetryTopic
	case strings.HasPrefix(topic, names.DLQPrefix):
		return DLQTopic
	}
	return NormalTopic
}

// GroupTopic is a consumer group's standing in one topic on this broker (a master's), summed
// over the topic's read queues.
type GroupTopic struct {
	Group, Topic string
	Kind         TopicKind
	// BrokerOffset sums the queues' max offsets, ConsumerOffset the group's committed offsets:
	// a queue without one counts from 0, as GET_CONSUME_STATS counts it, except in the
	// dead-letter topic, where it counts from the queue's min offset (nobody consumes a DLQ as
	// a rule, so what is there is what waits).
	BrokerOffset, ConsumerOffset int64
	// Diff sums each queue's max(0, max offset - consumer offset): RocketMQ's
	// ConsumeStats.computeTotalDiff on this broker.
	Diff int64
	// LatencyMs is the age at the scrape of the oldest message the group has not consumed (the
	// one at its offset, or at the queue's min offset when retention deleted that one), the
	// exporter's group_get_latency_by_storetime; 0 when it is caught up. LatencyKnown is false
	// for a dead-letter topic, and when MaxScrapeStoreReads left a lagging queue unread.
	LatencyMs    int64
	LatencyKnown bool
}

// TopicOffset is a topic's messages on this broker: its queues' max offsets summed (the
// exporter's producer_offset, topic_retry_offset and topic_dlq_offset).
type TopicOffset struct {
	Topic     string
	Kind      TopicKind
	MaxOffset int64
}

// LeftOut counts what a scrape's caps left out.
type LeftOut struct {
	GroupTopics int // (group, topic) pairs past MaxScrapeGroupTopics
	Queues      int // queues past MaxScrapeQueues
	StoreReads  int // lagging queues whose oldest message was not read (MaxScrapeStoreReads)
}

type groupTopicKey struct{ group, topic string }

// scrapeCaps are the caps a Service applies (tests lower them).
type scrapeCaps struct{ groupTopics, queues, storeReads int }

var defaultCaps = scrapeCaps{MaxScrapeGroupTopics, MaxScrapeQueues, MaxScrapeStoreReads}

// groupFigures fills m.Lag, and on a master m.GroupTopics and m.TopicOffsets, for the groups
// that exist: a deleted group's offsets stay in the offset table (and its retry and dead-letter
// topics in the topic table), but its series go with it.
func (s *Service) groupFigures(m *Metrics, groups map[string]broker.SubscriptionGroupConfig, now time.Time) {
	b := s.core
	topics, store := b.Topics(), b.Store()
	offsets := b.Offsets().All()
	pairs := make(map[groupTopicKey]map[int32]int64)
	for key, queues := range offsets {
		topic, group, ok := broker.SplitOffsetKey(key)
		if !ok {
			continue
		}
		if _, ok := groups[group]; ok {
			pairs[groupTopicKey{group, topic}] = queues
		}
	}
	if m.Master {
		// A group's retry and dead-letter topics have a backlog before it commits anything there.
		for group := range groups {
			for _, t := range [2]string{names.RetryTopic(group), names.DLQTopic(group)} {
				k := groupTopicKey{group, t}
				if _, ok := pairs[k]; !ok {
					if _, ok := topics.Get(t); ok {
						pairs[k] = nil
					}
				}
			}
		}
	}
	keys := make([]groupTopicKey, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].topic < keys[j].topic
	})
	caps := s.caps
	if len(keys) > caps.groupTopics {
		m.LeftOut.GroupTopics = len(keys) - caps.groupTopics
		keys = keys[:caps.groupTopics]
	}
	nowMs := now.UnixMilli()
	queues, reads := 0, 0
	for _, k := range keys {
		tc, ok := topics.Get(k.topic)
		if !ok {
			continue // the topic was deleted; its offsets go with it
		}
		committed := pairs[k]
		g := GroupTopic{Group: k.group, Topic: k.topic, Kind: kindOf(k.topic), LatencyKnown: true}
		oldest, lagging := int64(-1), false
		n := topics.QueueLoopBound(tc.ReadQueueNums)
		for q := int32(0); q < n; q++ {
			if queues == caps.queues {
				m.LeftOut.Queues += int(n - q)
				g.LatencyKnown = false
				break
			}
			queues++
			maxOff, minOff := store.MaxOffsetInQueue(k.topic, q), store.MinOffsetInQueue(k.topic, q)
			cons := int64(0)
			if g.Kind == DLQTopic {
				cons = minOff
			}
			if c, ok := committed[q]; ok {
				cons = max(cons, c)
			}
			m.Lag = append(m.Lag, QueueLag{Group: k.group, Topic: k.topic, QueueID: q, BrokerOffset: maxOff, ConsumerOffset: cons})
			g.BrokerOffset += maxOff
			g.ConsumerOffset += cons
			if maxOff <= cons {
				continue
			}
			g.Diff += maxOff - cons
			if !m.Master || g.Kind == DLQTopic {
				continue
			}
			at := max(cons, minOff) // what retention deleted is gone: the oldest left is at min
			if at >= maxOff {
				continue
			}
			if reads == caps.storeReads {
				m.LeftOut.StoreReads++
				g.LatencyKnown = false
				continue
			}
			reads++
			lagging = true
			if ts, err := store.GetMessageStoreTimestamp(k.topic, q, at); err == nil && (oldest < 0 || ts < oldest) {
				oldest = ts
			}
		}
		if g.Kind == DLQTopic || lagging && oldest < 0 {
			g.LatencyKnown = false // nothing lagging could be read: no age to tell
		}
		if oldest >= 0 {
			g.LatencyMs = max(0, nowMs-oldest)
		}
		if m.Master {
			m.GroupTopics = append(m.GroupTopics, g)
		}
	}
	if m.Master {
		m.TopicOffsets = topicOffsets(b, groups)
	}
}

// topicOffsets sums each topic's queue ends from the store's list of ConsumeQueues, for every
// topic the broker holds (0 before its first message); a group's retry and dead-letter topics
// only while the group exists.
func topicOffsets(b *broker.Broker, groups map[string]broker.SubscriptionGroupConfig) []TopicOffset {
	sums := map[string]int64{}
	for _, q := range b.Store().Queues() {
		sums[q.Topic] += q.MaxOffset
	}
	var out []TopicOffset
	for _, t := range b.Topics().Names() {
		if g := GroupOf(t); g != "" {
			if _, ok := groups[g]; !ok {
				continue
			}
		}
		out = append(out, TopicOffset{Topic: t, Kind: kindOf(t), MaxOffset: sums[t]})
	}
	return out
}

// GroupOf is the consumer group a retry or dead-letter topic belongs to, "" for another topic.
func GroupOf(topic string) string {
	switch kindOf(topic) {
	case RetryTopic:
		return strings.TrimPrefix(topic, names.RetryPrefix)
	case DLQTopic:
		return strings.TrimPrefix(topic, names.DLQPrefix)
	}
	return ""
}
