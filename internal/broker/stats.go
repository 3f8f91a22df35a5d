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

// countPut records n messages stored. Safe for concurrent use; it does not allocate.
func (b *Broker) countPut(n int) { b.retry.stats.countPut(n) }

// countGet records n messages returned to consumers. Safe for concurrent use.
func (b *Broker) countGet(n int) { b.retry.stats.getNums.Add(int64(n)) }

func (s *brokerStats) countPut(n int) { s.putNums.Add(int64(n)) }

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
