package stats

import (
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/storage"
)

// Metrics is what a broker reports for /metrics, read at one scrape. Counters count since the
// broker started.
type Metrics struct {
	Cluster, BrokerName string
	BrokerID            int64

	Puts []TopicTraffic // per topic stored to
	Gets []GroupTraffic // per topic and consumer group served
	Lag  []QueueLag     // per consumer group, topic and queue with a committed offset

	Topics, Groups int            // topic configs and subscription groups
	Consumers      map[string]int // consumer group -> connected members
	Producers      int            // producer registrations

	Store          storage.Stats
	Disk           storage.DiskSpace
	DiskKnown      bool
	ParkedPulls    int
	HoldRefusals   int64
	Slaves         []SlaveLag // a master's connected slaves
	PutTPS, GetTPS float64    // the 10 s rates of runtime info's putTps and getTransferedTps
}

// TopicTraffic counts the messages and bytes stored to a topic.
type TopicTraffic struct {
	Topic       string
	Msgs, Bytes int64
}

// GroupTraffic counts the messages and bytes of a topic a consumer group pulled.
type GroupTraffic struct {
	Topic, Group string
	Msgs, Bytes  int64
}

// QueueLag is how far a group's committed offset trails a queue's end.
type QueueLag struct {
	Group, Topic                 string
	QueueID                      int32
	BrokerOffset, ConsumerOffset int64
}

// SlaveLag is how many CommitLog bytes a slave has not acknowledged.
type SlaveLag struct {
	Addr  string
	Bytes int64
}

// Metrics reads the broker's figures. It takes the core managers' locks briefly, one at a
// time; it costs as much as a GET_CONSUME_STATS for every group, so it is for scrapes, not hot
// paths.
func (s *Service) Metrics() Metrics {
	b := s.core
	opts, store := b.Options(), b.Store()
	m := Metrics{Cluster: opts.Broker.ClusterName, BrokerName: opts.Broker.Name, BrokerID: opts.Broker.ID,
		Store: store.Stats(), Topics: b.Topics().Count(), Groups: len(b.Groups().All().SubscriptionGroupTable)}
	m.ParkedPulls, m.HoldRefusals = b.Clients().PullHolds()
	m.Disk, _ = store.DiskSpace()
	m.DiskKnown = m.Disk.Total > 0
	put, get, _ := s.tps.rates()
	m.PutTPS, m.GetTPS = put[0], get[0]
	s.topicPut.Range(func(k, v any) bool {
		t := v.(*traffic)
		m.Puts = append(m.Puts, TopicTraffic{Topic: k.(string), Msgs: t.msgs.Load(), Bytes: t.bytes.Load()})
		return true
	})
	s.groupGet.Range(func(k, v any) bool {
		key, t := k.(topicGroup), v.(*traffic)
		m.Gets = append(m.Gets, GroupTraffic{Topic: key.topic, Group: key.group, Msgs: t.msgs.Load(), Bytes: t.bytes.Load()})
		return true
	})
	for key, queues := range b.Offsets().All() {
		topic, group, ok := broker.SplitOffsetKey(key)
		if !ok {
			continue
		}
		for q, off := range queues {
			maxOff := store.MaxOffsetInQueue(topic, q)
			m.Lag = append(m.Lag, QueueLag{Group: group, Topic: topic, QueueID: q,
				BrokerOffset: maxOff, ConsumerOffset: off})
		}
	}
	m.Consumers, m.Producers = b.Clients().Counts()
	end := m.Store.MaxPhyOffset
	for _, sl := range b.Seams().SlaveAcks() {
		m.Slaves = append(m.Slaves, SlaveLag{Addr: sl.Addr, Bytes: max(0, end-sl.AckOffset)})
	}
	return m
}
