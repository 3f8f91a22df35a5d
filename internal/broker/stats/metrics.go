package stats

import (
	"net"
	"sort"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/storage"
)

// Metrics is what a broker reports for /metrics, read at one scrape. Counters count since the
// broker started.
type Metrics struct {
	Cluster, BrokerName string
	BrokerID            int64
	// Master is the role: a master takes writes (broker id 0), a slave follows one.
	Master bool
	// Addr is the broker's advertised remoting address (the exporter's brokerIP).
	Addr string

	Puts []TopicTraffic // per topic stored to
	Gets []GroupTraffic // per topic and consumer group served, groups that exist only
	Lag  []QueueLag     // per consumer group, topic and read queue (lag.go)

	// GroupTopics and TopicOffsets are a master's (nil on a slave): what rocketmq-exporter
	// reads from masters (lag.go).
	GroupTopics  []GroupTopic
	TopicOffsets []TopicOffset
	// LeftOut counts what the scrape caps left out (lag.go).
	LeftOut LeftOut

	Topics, Groups int            // topic configs and subscription groups
	Consumers      map[string]int // consumer group -> connected members, groups that exist only
	Producers      int            // producer registrations

	Store     storage.Stats
	Disk      storage.DiskSpace
	DiskKnown bool
	// EarliestMsgTime is the store time (ms) of the CommitLog's first message, 0 when unknown.
	EarliestMsgTime int64
	ParkedPulls     int
	HoldRefusals    int64
	Slaves          []SlaveLag // a master's connected slaves, one per slave identity
	PutTPS, GetTPS  float64    // the 10 s rates of runtime info's putTps and getTransferedTps
	// PutRates and GetRates are runtime info's putTps and getTransferedTps over 10 s, 60 s and
	// 600 s.
	PutRates, GetRates [3]float64
	// The day marks of runtime info: totals now, this morning and yesterday morning.
	PutTotal, PutToday, PutYesterday int64
	GetTotal, GetToday, GetYesterday int64
}

// TopicTraffic counts the messages and bytes stored to a topic.
type TopicTraffic struct {
	Topic       string
	Msgs, Bytes int64
	// MinuteMsgs and MinuteBytes are the last minute's rates per second (TOPIC_PUT_NUMS and
	// TOPIC_PUT_SIZE of VIEW_BROKER_STATS_DATA).
	MinuteMsgs, MinuteBytes float64
}

// GroupTraffic counts the messages and bytes of a topic a consumer group pulled.
type GroupTraffic struct {
	Topic, Group string
	Msgs, Bytes  int64
	// MinuteMsgs and MinuteBytes are the last minute's rates per second (GROUP_GET_NUMS and
	// GROUP_GET_SIZE).
	MinuteMsgs, MinuteBytes float64
}

// QueueLag is how far a group's committed offset trails a queue's end.
type QueueLag struct {
	Group, Topic                 string
	QueueID                      int32
	BrokerOffset, ConsumerOffset int64
}

// SlaveLag is how many CommitLog bytes a slave has not acknowledged. A slave is known by the
// broker id it named (controller mode) and the host of its HA connection, never by the
// connection's port, which changes with every reconnect; several connections with the same
// identity (slaves without an id on one host) are one, the one furthest behind.
type SlaveLag struct {
	BrokerID int64  // 0: the slave named none (RocketMQ 4.x's HA protocol carries none)
	Host     string // the HA connection's remote host
	Bytes    int64
}

// Metrics reads the broker's figures. It takes the core managers' locks briefly, one at a
// time; it costs as much as a GET_CONSUME_STATS for every group, and on a master one store
// read per lagging queue (capped: lag.go), so it is for scrapes, not hot paths.
func (s *Service) Metrics() Metrics { return s.metricsAt(time.Now()) }

func (s *Service) metricsAt(now time.Time) Metrics {
	b := s.core
	opts, store := b.Options(), b.Store()
	groups := b.Groups().All().SubscriptionGroupTable
	m := Metrics{Cluster: opts.Broker.ClusterName, BrokerName: opts.Broker.Name, BrokerID: opts.Broker.ID,
		Master: b.IsMaster(), Addr: b.Addr(), Store: store.Stats(), Topics: b.Topics().Count(), Groups: len(groups)}
	m.ParkedPulls, m.HoldRefusals = b.Clients().PullHolds()
	m.Disk, _ = store.DiskSpace()
	m.DiskKnown = m.Disk.Total > 0
	if ts, err := store.EarliestMessageTime(); err == nil {
		m.EarliestMsgTime = ts
	}
	m.PutRates, m.GetRates, _ = s.tps.rates()
	m.PutTPS, m.GetTPS = m.PutRates[0], m.GetRates[0]
	m.PutTotal, m.PutToday, m.PutYesterday, m.GetTotal, m.GetToday, m.GetYesterday = s.DayMarks(now)
	s.topicPut.Range(func(k, v any) bool {
		t, topic := v.(*traffic), k.(string)
		if g := GroupOf(topic); g != "" {
			if _, ok := groups[g]; !ok {
				return true // a deleted group's retry and dead-letter topics go with it
			}
		}
		p := TopicTraffic{Topic: topic, Msgs: t.msgs.Load(), Bytes: t.bytes.Load()}
		p.MinuteMsgs, p.MinuteBytes = s.minuteRates(TopicPutNums, TopicPutSize, p.Topic, now)
		m.Puts = append(m.Puts, p)
		return true
	})
	s.groupGet.Range(func(k, v any) bool {
		key, t := k.(topicGroup), v.(*traffic)
		if _, ok := groups[key.group]; !ok {
			return true // a deleted group's counters stay for VIEW_BROKER_STATS_DATA, not in /metrics
		}
		g := GroupTraffic{Topic: key.topic, Group: key.group, Msgs: t.msgs.Load(), Bytes: t.bytes.Load()}
		g.MinuteMsgs, g.MinuteBytes = s.minuteRates(GroupGetNums, GroupGetSize, key.topic+"@"+key.group, now)
		m.Gets = append(m.Gets, g)
		return true
	})
	s.groupFigures(&m, groups, now)
	if m.Master {
		zeroTraffic(&m)
	}
	m.Consumers, m.Producers = b.Clients().Counts()
	for g := range m.Consumers {
		if _, ok := groups[g]; !ok {
			delete(m.Consumers, g)
		}
	}
	if m.Master {
		m.Slaves = slaveLags(b.Seams().SlaveAcks(), m.Store.MaxPhyOffset)
	}
	return m
}

// minuteRates are the minute figures' rates of a put or get statistic.
func (s *Service) minuteRates(nums, size, key string, now time.Time) (msgs, bytes float64) {
	if minute, _, _, ok := s.StatsData(nums, key, now); ok {
		msgs = minute.TPS
	}
	if minute, _, _, ok := s.StatsData(size, key, now); ok {
		bytes = minute.TPS
	}
	return msgs, bytes
}

// slaveLags names each connected slave by its identity and keeps, per identity, the connection
// furthest behind end.
func slaveLags(acks []broker.SlaveAck, end int64) []SlaveLag {
	type ident struct {
		id   int64
		host string
	}
	worst := map[ident]int64{}
	for _, a := range acks {
		host := a.Addr
		if h, _, err := net.SplitHostPort(a.Addr); err == nil {
			host = h
		}
		k := ident{a.BrokerID, host}
		lag := max(0, end-a.AckOffset)
		if cur, ok := worst[k]; !ok || lag > cur {
			worst[k] = lag
		}
	}
	out := make([]SlaveLag, 0, len(worst))
	for k, lag := range worst {
		out = append(out, SlaveLag{BrokerID: k.id, Host: k.host, Bytes: lag})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerID != out[j].BrokerID {
			return out[i].BrokerID < out[j].BrokerID
		}
		return out[i].Host < out[j].Host
	})
	return out
}

// zeroTraffic adds a master's counters that have counted nothing yet, at 0: each topic it holds
// and each (group, topic) pair it reports, so that a rate or an increase over them counts their
// first message (a series born at 1 has no increase).
func zeroTraffic(m *Metrics) {
	puts := make(map[string]bool, len(m.Puts))
	for _, p := range m.Puts {
		puts[p.Topic] = true
	}
	for _, t := range m.TopicOffsets {
		if !puts[t.Topic] {
			m.Puts = append(m.Puts, TopicTraffic{Topic: t.Topic})
		}
	}
	gets := make(map[groupTopicKey]bool, len(m.Gets))
	for _, g := range m.Gets {
		gets[groupTopicKey{g.Group, g.Topic}] = true
	}
	for _, g := range m.GroupTopics {
		if g.Kind != DLQTopic && !gets[groupTopicKey{g.Group, g.Topic}] {
			m.Gets = append(m.Gets, GroupTraffic{Topic: g.Topic, Group: g.Group})
		}
	}
}
