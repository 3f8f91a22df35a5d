// Package stats is the broker's statistics (RocketMQ's BrokerStatsManager and
// StoreStatsService): messages and bytes put per topic and got per topic and group, the day
// marks and put/get rates of GET_BROKER_RUNTIME_INFO, each group's consume rate of
// GET_CONSUME_STATS, and the figures of /metrics (Metrics).
//
// The core counts through broker.Counter, which Service implements and New sets (Seams
// .SetCounter): the send path (and every service that stores, through Messages.CountPut) calls
// CountPut, the pull path
// CountGet, a topic's deletion ForgetTopic. Run samples the totals every second and the group
// counters every 10 s until the broker stops.
//
// Files: stats.go (the counters and day marks), tps.go (the samplers), windows.go (the minute,
// hour and day windows of VIEW_BROKER_STATS_DATA), metrics.go (the figures
// of a scrape, read from the core's views: Topics, Groups, Offsets, Clients, Seams.SlaveAcks). It keeps no files. Locks: the
// day marks', each sampler's ring's; all leaves. The counters are atomics in sync.Maps, so
// counting takes no lock and allocates only for a topic's (or topic and group's) first
// message.
package stats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
)

// Service counts messages put and got for the broker it was built over.
type Service struct {
	core *broker.Broker
	// start is when the counting began, the bootTimestamp of runtime info.
	start   time.Time
	putNums atomic.Int64
	getNums atomic.Int64

	// Per topic and per topic and group (RocketMQ BrokerStatsManager's TOPIC_PUT_NUMS,
	// TOPIC_PUT_SIZE, GROUP_GET_NUMS and GROUP_GET_SIZE), for /metrics. Keys are names the
	// broker validated and stores under, so they are as many as the topics and groups.
	topicPut sync.Map // topic -> *traffic
	groupGet sync.Map // topicGroup -> *traffic

	tps        tpsSampler
	groupRates groupRates
	windows    windows    // VIEW_BROKER_STATS_DATA's minute, hour and day (windows.go)
	caps       scrapeCaps // what one scrape of Metrics visits (lag.go)

	mu struct {
		sync.Mutex
		day time.Time // local midnight of the day the marks below belong to
		// Totals at the start of yesterday and of today (msgPutTotalYesterdayMorning, ...).
		putYesterday, putToday int64
		getYesterday, getToday int64
	}
}

// New builds the service over core and makes it the core's counter. Attach it to core before
// Run.
func New(core *broker.Broker) *Service {
	s := &Service{core: core, start: time.Now(), windows: newWindows(), caps: defaultCaps}
	s.mu.day = midnight(s.start)
	core.Seams().SetCounter(s)
	return s
}

// Handlers: the admin service serves the requests that read the figures.
func (s *Service) Handlers() []broker.Handler { return nil }

// Close has nothing to write.
func (s *Service) Close() error { return nil }

// Of is the stats service attached to b, nil without.
func Of(b *broker.Broker) *Service {
	s, _ := b.Seams().Counter().(*Service)
	return s
}

// Started is when the counting began.
func (s *Service) Started() time.Time { return s.start }

// traffic counts messages and their bytes.
type traffic struct{ msgs, bytes atomic.Int64 }

func (t *traffic) add(n, size int) {
	t.msgs.Add(int64(n))
	t.bytes.Add(int64(size))
}

// topicGroup keys the get counters.
type topicGroup struct{ topic, group string }

// CountGet records n messages of size bytes of topic returned to group. Safe for concurrent use.
func (s *Service) CountGet(topic, group string, n, size int) {
	s.getNums.Add(int64(n))
	k := topicGroup{topic, group}
	t, ok := s.groupGet.Load(k)
	if !ok {
		t, _ = s.groupGet.LoadOrStore(k, new(traffic))
	}
	t.(*traffic).add(n, size)
}

// CountPut records n messages of size bytes stored in topic. Safe for concurrent use; it
// allocates only for a topic's first message.
func (s *Service) CountPut(topic string, n, size int) {
	s.putNums.Add(int64(n))
	t, ok := s.topicPut.Load(topic)
	if !ok {
		t, _ = s.topicPut.LoadOrStore(topic, new(traffic))
	}
	t.(*traffic).add(n, size)
}

// ForgetTopic drops a deleted topic's counters.
func (s *Service) ForgetTopic(topic string) {
	s.topicPut.Delete(topic)
	s.groupGet.Range(func(k, _ any) bool {
		if k.(topicGroup).topic == topic {
			s.groupGet.Delete(k)
		}
		return true
	})
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// DayMarks returns the put and get totals now, this morning and yesterday morning. The marks
// roll over lazily, when asked on a later day: a total reached before the roll-over but after
// midnight is counted in the earlier day, which is what the reports can afford.
func (s *Service) DayMarks(now time.Time) (put, putToday, putYesterday, get, getToday, getYesterday int64) {
	put, get = s.putNums.Load(), s.getNums.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if today := midnight(now); today.After(s.mu.day) {
		if today.Sub(s.mu.day) > 36*time.Hour { // more than one day passed unseen
			s.mu.putYesterday, s.mu.getYesterday = put, get
		} else {
			s.mu.putYesterday, s.mu.getYesterday = s.mu.putToday, s.mu.getToday
		}
		s.mu.putToday, s.mu.getToday = put, get
		s.mu.day = today
	}
	return put, s.mu.putToday, s.mu.putYesterday, get, s.mu.getToday, s.mu.getYesterday
}
