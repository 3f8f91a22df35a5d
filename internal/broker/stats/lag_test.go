package stats

import (
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/storage"
)

func addGroup(t testing.TB, tb *brokertest.Broker, group string) {
	t.Helper()
	if err := tb.Groups().Update(broker.NewSubscriptionGroupConfig(group)); err != nil {
		t.Fatal(err)
	}
}

func storeTime(t *testing.T, tb *brokertest.Broker, topic string, q int32, off int64) int64 {
	t.Helper()
	ts, err := tb.Store().GetMessageStoreTimestamp(topic, q, off)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func findPair(m Metrics, group, topic string) (GroupTopic, bool) {
	for _, g := range m.GroupTopics {
		if g.Group == group && g.Topic == topic {
			return g, true
		}
	}
	return GroupTopic{}, false
}

// TestGroupLagAndLatency: a group's backlog in a topic is summed over its read queues (a queue
// it never committed counts from 0), and its latency is the age of the oldest message at its
// offsets, which grows with the clock while the group stands still and is 0 once it caught up.
func TestGroupLagAndLatency(t *testing.T) {
	tb, s := startWithStats(t)
	const topic, group = "LagTopic", "lag-group"
	createTopic(t, tb, topic, 2)
	addGroup(t, tb, group)
	host := tb.Messages().StoreHost()
	wiretest.PutMsgs(t, tb.Store(), host, topic, 0, 5, "", "q0")
	wiretest.PutMsgs(t, tb.Store(), host, topic, 1, 3, "", "q1")
	tb.Offsets().Commit(group, topic, 0, 2)

	now := time.Now().Add(time.Hour)
	m := s.metricsAt(now)
	g, ok := findPair(m, group, topic)
	if !ok {
		t.Fatalf("no figures for %s in %s: %+v", group, topic, m.GroupTopics)
	}
	oldest := min(storeTime(t, tb, topic, 0, 2), storeTime(t, tb, topic, 1, 0))
	want := GroupTopic{Group: group, Topic: topic, Kind: NormalTopic, BrokerOffset: 8, ConsumerOffset: 2, Diff: 6,
		LatencyMs: now.UnixMilli() - oldest, LatencyKnown: true}
	if g != want {
		t.Fatalf("figures %+v, want %+v", g, want)
	}
	lags := map[int32]QueueLag{}
	for _, l := range m.Lag {
		if l.Group == group && l.Topic == topic {
			lags[l.QueueID] = l
		}
	}
	if len(lags) != 2 || lags[0].BrokerOffset != 5 || lags[0].ConsumerOffset != 2 || lags[1].BrokerOffset != 3 || lags[1].ConsumerOffset != 0 {
		t.Fatalf("per-queue lag %+v", lags)
	}

	// Standing still, the group's latency grows with the clock.
	later := s.metricsAt(now.Add(time.Minute))
	if g2, _ := findPair(later, group, topic); g2.LatencyMs != want.LatencyMs+time.Minute.Milliseconds() {
		t.Fatalf("latency a minute later %d, want %d", g2.LatencyMs, want.LatencyMs+time.Minute.Milliseconds())
	}

	tb.Offsets().Commit(group, topic, 0, 5)
	tb.Offsets().Commit(group, topic, 1, 3)
	if g, _ := findPair(s.metricsAt(now), group, topic); g.Diff != 0 || g.LatencyMs != 0 || !g.LatencyKnown || g.ConsumerOffset != 8 {
		t.Fatalf("caught up: %+v", g)
	}
}

// TestRetryAndDeadLetterBacklog: a group's retry and dead-letter topics are reported before it
// commits anything there, the dead-letter backlog from the queue's min offset and without a
// latency, and everything of a deleted group goes: its pairs, its retry and dead-letter topics'
// offsets and put counters, its get counters.
func TestRetryAndDeadLetterBacklog(t *testing.T) {
	tb, s := startWithStats(t)
	const group, topic = "bl-group", "BacklogTopic"
	addGroup(t, tb, group)
	retry, dlq := names.RetryTopic(group), names.DLQTopic(group)
	tb.Topics().AddSystem(retry, 1)
	tb.Topics().AddSystem(dlq, 1)
	createTopic(t, tb, topic, 1)
	host := tb.Messages().StoreHost()
	wiretest.PutMsgs(t, tb.Store(), host, retry, 0, 2, "", "r")
	wiretest.PutMsgs(t, tb.Store(), host, dlq, 0, 3, "", "d")
	wiretest.PutMsgs(t, tb.Store(), host, topic, 0, 4, "", "t")
	tb.Offsets().Commit(group, topic, 0, 4)
	s.CountPut(retry, 2, 100)
	s.CountPut(dlq, 3, 100)
	s.CountGet(topic, group, 4, 100)

	m := s.metricsAt(time.Now())
	r, ok := findPair(m, group, retry)
	if !ok || r.Kind != RetryTopic || r.Diff != 2 || !r.LatencyKnown || r.LatencyMs < 0 {
		t.Fatalf("retry figures %+v (reported: %v)", r, ok)
	}
	d, ok := findPair(m, group, dlq)
	if !ok || d.Kind != DLQTopic || d.Diff != 3 || d.LatencyKnown {
		t.Fatalf("dead-letter figures %+v (reported: %v)", d, ok)
	}
	offsets := map[string]TopicOffset{}
	for _, o := range m.TopicOffsets {
		offsets[o.Topic] = o
	}
	if offsets[retry] != (TopicOffset{retry, RetryTopic, 2}) || offsets[dlq] != (TopicOffset{dlq, DLQTopic, 3}) ||
		offsets[topic] != (TopicOffset{topic, NormalTopic, 4}) {
		t.Fatalf("topic offsets %+v", offsets)
	}
	if GroupOf(retry) != group || GroupOf(dlq) != group || GroupOf(topic) != "" {
		t.Fatalf("GroupOf")
	}

	tb.Groups().Delete(group)
	m = s.metricsAt(time.Now())
	for _, g := range m.GroupTopics {
		if g.Group == group {
			t.Errorf("deleted group still reported: %+v", g)
		}
	}
	for _, l := range m.Lag {
		if l.Group == group {
			t.Errorf("deleted group's lag still reported: %+v", l)
		}
	}
	for _, o := range m.TopicOffsets {
		if o.Topic == retry || o.Topic == dlq {
			t.Errorf("deleted group's %s still reported", o.Topic)
		}
	}
	for _, p := range m.Puts {
		if p.Topic == retry || p.Topic == dlq {
			t.Errorf("deleted group's put counter of %s still reported", p.Topic)
		}
	}
	if len(m.Gets) != 0 {
		t.Errorf("deleted group's gets still reported: %+v", m.Gets)
	}
	if _, ok := offsets[topic]; !ok {
		t.Fatal("the topic itself is not the group's")
	}
}

// TestScrapeCaps: past each cap the scrape stops visiting and counts what it left out, and a
// pair whose lagging queues were not all read has no latency rather than a wrong one.
func TestScrapeCaps(t *testing.T) {
	tb, s := startWithStats(t)
	const topic = "CapTopic"
	createTopic(t, tb, topic, 2)
	host := tb.Messages().StoreHost()
	wiretest.PutMsgs(t, tb.Store(), host, topic, 0, 2, "", "a")
	wiretest.PutMsgs(t, tb.Store(), host, topic, 1, 2, "", "b")
	for _, g := range []string{"cap-a", "cap-b", "cap-c"} {
		addGroup(t, tb, g)
		tb.Offsets().Commit(g, topic, 0, 0)
	}
	// Pairs in order: cap-a, cap-b (cap-c is cut). Queues: cap-a's two, cap-b's first (its
	// second is cut). Reads: cap-a's queue 0 only.
	s.caps = scrapeCaps{groupTopics: 2, queues: 3, storeReads: 1}
	m := s.metricsAt(time.Now())
	if m.LeftOut != (LeftOut{GroupTopics: 1, Queues: 1, StoreReads: 2}) {
		t.Fatalf("left out %+v, want 1 pair, 1 queue, 2 reads", m.LeftOut)
	}
	if len(m.GroupTopics) != 2 || len(m.Lag) != 3 {
		t.Fatalf("%d pairs, %d queues reported", len(m.GroupTopics), len(m.Lag))
	}
	for _, g := range m.GroupTopics {
		if g.LatencyKnown {
			t.Errorf("%s: latency %d reported from part of its queues", g.Group, g.LatencyMs)
		}
	}
	s.caps = defaultCaps
	m = s.metricsAt(time.Now())
	if m.LeftOut != (LeftOut{}) || len(m.GroupTopics) != 3 {
		t.Fatalf("default caps: left out %+v, %d pairs", m.LeftOut, len(m.GroupTopics))
	}
}

// TestSlaveReportsNoMasterFigures: a slave reports its per-queue lag but not the figures
// rocketmq-exporter reads from masters, and says it is a slave.
func TestSlaveReportsNoMasterFigures(t *testing.T) {
	var s *Service
	tb := brokertest.Start(t, brokertest.Config{
		Mutate: func(o *broker.Options) { o.Broker.ID, o.Broker.Role = 1, storage.Slave },
		Attach: func(b *broker.Broker) error { s = New(b); b.Attach(s); return nil }})
	addGroup(t, tb, "sg")
	tb.Offsets().Commit("sg", names.TopicSelfTest, 0, 0)
	m := s.Metrics()
	if m.Master || m.BrokerID != 1 || m.GroupTopics != nil || m.TopicOffsets != nil || len(m.Lag) == 0 || m.Slaves != nil {
		t.Fatalf("slave figures: master %v id %d groups %v topics %v lag %v slaves %v", m.Master, m.BrokerID,
			m.GroupTopics, m.TopicOffsets, m.Lag, m.Slaves)
	}
}

// TestSlaveLagsByIdentity: slaves are named by id and host, never by port; connections of one
// identity are one slave, the one furthest behind.
func TestSlaveLagsByIdentity(t *testing.T) {
	got := slaveLags([]broker.SlaveAck{
		{Addr: "10.0.0.2:51000", AckOffset: 900},
		{Addr: "10.0.0.2:51001", AckOffset: 400}, // a second anonymous slave on that host
		{Addr: "10.0.0.3:40000", BrokerID: 2, AckOffset: 1000},
		{Addr: "10.0.0.3:40001", BrokerID: 1, AckOffset: 1200}, // ahead of end: no negative lag
		{Addr: "[::1]:7000", AckOffset: 1000},
	}, 1000)
	want := []SlaveLag{{0, "10.0.0.2", 600}, {0, "::1", 0}, {1, "10.0.0.3", 0}, {2, "10.0.0.3", 0}}
	if len(got) != len(want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%+v, want %+v", got, want)
		}
	}
}

// TestCountersFromZero: a master reports each topic's put counters and each reported pair's get
// counters from the start, at 0, so that the first message is an increase; counted ones keep
// their counts.
func TestCountersFromZero(t *testing.T) {
	tb, s := startWithStats(t)
	const quiet, busy, group = "QuietTopic", "BusyTopic", "zero-group"
	createTopic(t, tb, quiet, 1)
	createTopic(t, tb, busy, 1)
	addGroup(t, tb, group)
	tb.Offsets().Commit(group, quiet, 0, 0)
	s.CountPut(busy, 2, 64)
	m := s.Metrics()
	puts := map[string]TopicTraffic{}
	for _, p := range m.Puts {
		if _, dup := puts[p.Topic]; dup {
			t.Fatalf("%s reported twice", p.Topic)
		}
		puts[p.Topic] = p
	}
	if p, ok := puts[quiet]; !ok || p.Msgs != 0 || p.Bytes != 0 {
		t.Errorf("quiet topic's puts %+v (reported: %v), want 0", p, ok)
	}
	if p := puts[busy]; p.Msgs != 2 || p.Bytes != 64 {
		t.Errorf("busy topic's puts %+v", p)
	}
	if _, ok := puts[names.TopicSelfTest]; !ok {
		t.Errorf("the broker's own topics are not reported: %v", puts)
	}
	if len(m.Gets) != 1 || m.Gets[0] != (GroupTraffic{Topic: quiet, Group: group}) {
		t.Errorf("gets %+v, want %s of %s at 0", m.Gets, group, quiet)
	}
}

// BenchmarkMetricsScrape is what one scrape of a master's figures costs with 200 groups, each
// lagging in a topic of 4 queues (800 store reads for their latencies).
func BenchmarkMetricsScrape(b *testing.B) {
	tb, s := startWithStats(b)
	const topic = "BenchScrape"
	createTopic(b, tb, topic, 4)
	for q := range int32(4) {
		wiretest.PutMsgs(b, tb.Store(), tb.Messages().StoreHost(), topic, q, 20, "", "b")
	}
	for i := range 200 {
		g := "bench-group-" + strconv.Itoa(i)
		if err := tb.Groups().Update(broker.NewSubscriptionGroupConfig(g)); err != nil {
			b.Fatal(err)
		}
		for q := range int32(4) {
			tb.Offsets().Commit(g, topic, q, int64(i%20))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if m := s.Metrics(); len(m.GroupTopics) != 200 {
			b.Fatalf("%d pairs", len(m.GroupTopics))
		}
	}
}

// createTopic creates a topic through the core's view: the topic admin is the admin service's,
// which imports this package.
func createTopic(t testing.TB, tb *brokertest.Broker, topic string, queues int32) {
	t.Helper()
	if err := tb.Topics().Update(broker.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6}, nil); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}
