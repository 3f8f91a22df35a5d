package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// brokerStats counts messages put and got for GET_BROKER_RUNTIME_INFO (RocketMQ
// BrokerStatsManager's broker totals and BrokerStats' day marks). The send and pull processors
// report through Broker.countPut and Broker.countGet; send-back and delayed delivery count
// their own puts.
type brokerStats struct {
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

	mu struct {
		sync.Mutex
		day time.Time // local midnight of the day the marks below belong to
		// Totals at the start of yesterday and of today (msgPutTotalYesterdayMorning, ...).
		putYesterday, putToday int64
		getYesterday, getToday int64
	}
}

func (s *brokerStats) init() {
	s.start = time.Now()
	s.mu.day = midnight(s.start)
}

// traffic counts messages and their bytes.
type traffic struct{ msgs, bytes atomic.Int64 }

func (t *traffic) add(n, size int) {
	t.msgs.Add(int64(n))
	t.bytes.Add(int64(size))
}

// topicGroup keys the get counters.
type topicGroup struct{ topic, group string }

// countPut records n messages of size bytes stored in topic. Safe for concurrent use; it
// allocates only for a topic's first message.
func (b *Broker) countPut(topic string, n, size int) { b.retry.stats.countPut(topic, n, size) }

// countGet records n messages of size bytes of topic returned to group. Safe for concurrent use.
func (b *Broker) countGet(topic, group string, n, size int) {
	s := &b.retry.stats
	s.getNums.Add(int64(n))
	k := topicGroup{topic, group}
	t, ok := s.groupGet.Load(k)
	if !ok {
		t, _ = s.groupGet.LoadOrStore(k, new(traffic))
	}
	t.(*traffic).add(n, size)
}

func (s *brokerStats) countPut(topic string, n, size int) {
	s.putNums.Add(int64(n))
	t, ok := s.topicPut.Load(topic)
	if !ok {
		t, _ = s.topicPut.LoadOrStore(topic, new(traffic))
	}
	t.(*traffic).add(n, size)
}

// forgetTopic drops a deleted topic's counters.
func (s *brokerStats) forgetTopic(topic string) {
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

// dayMarks returns the put and get totals now, this morning and yesterday morning. The marks
// roll over lazily, when asked on a later day: a total reached before the roll-over but after
// midnight is counted in the earlier day, which is what the reports can afford.
func (s *brokerStats) dayMarks(now time.Time) (put, putToday, putYesterday, get, getToday, getYesterday int64) {
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
