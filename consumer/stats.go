package consumer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
)

// Consumption rates for the status table of GET_CONSUMER_RUNNING_INFO (307), per topic, as
// RocketMQ's ConsumerStatsManager reports them: pull and consume TPS and mean response times
// over the last minute, and the messages that failed in the last hour.
//
// The counters are atomics bumped on the pull and consume paths. Samples of them are taken at
// most every statsSamplePeriod, by whichever path bumps a counter first after the period (so
// no goroutine runs for them), and kept for an hour; a rate is the counters now against the
// newest sample at least a window old (or the oldest sample, if none is that old).
const (
	statsSamplePeriod = 10 * time.Second // RocketMQ's StatsItem samples minutes every 10 s
	statsMinute       = time.Minute
	statsHour         = time.Hour
	statsSamples      = int(statsHour/statsSamplePeriod) + 1
)

type topicCounters struct {
	pulls, pullMsgs, pullRTms atomic.Int64
	consumeCalls, consumeRTms atomic.Int64
	consumeOK, consumeFailed  atomic.Int64
	lastSample                atomic.Int64 // unix ns of the newest sample
	mu                        sync.Mutex
	ring                      []statsSample
	next                      int
}

type statsSample struct {
	at                        time.Time
	pulls, pullMsgs, pullRTms int64
	consumeCalls, consumeRTms int64
	consumeOK, consumeFailed  int64
}

// consumeStats holds the counters of every topic a consumer pulls.
type consumeStats struct {
	topics sync.Map // topic -> *topicCounters
}

func (s *consumeStats) of(topic string, now time.Time) *topicCounters {
	if c, ok := s.topics.Load(topic); ok {
		return c.(*topicCounters)
	}
	// A topic starts with a sample of zeros, so its first minute has a rate.
	fresh := &topicCounters{ring: []statsSample{{at: now}}}
	fresh.lastSample.Store(now.UnixNano())
	c, _ := s.topics.LoadOrStore(topic, fresh)
	return c.(*topicCounters)
}

// pullAnswered records one pull a broker answered in rt.
func (s *consumeStats) pullAnswered(topic string, rt time.Duration, now time.Time) {
	c := s.of(topic, now)
	c.maybeSample(now)
	c.pulls.Add(1)
	c.pullRTms.Add(rt.Milliseconds())
}

// pullFound records the messages a pull brought the consumer (after filtering).
func (s *consumeStats) pullFound(topic string, msgs int) {
	s.of(topic, time.Now()).pullMsgs.Add(int64(msgs))
}

// consumed records one listener call on msgs messages that took rt.
func (s *consumeStats) consumed(topic string, msgs int, ok bool, rt time.Duration, now time.Time) {
	c := s.of(topic, now)
	c.maybeSample(now)
	c.consumeCalls.Add(1)
	c.consumeRTms.Add(rt.Milliseconds())
	if ok {
		c.consumeOK.Add(int64(msgs))
	} else {
		c.consumeFailed.Add(int64(msgs))
	}
}

func (c *topicCounters) snapshot(now time.Time) statsSample {
	return statsSample{at: now, pulls: c.pulls.Load(), pullMsgs: c.pullMsgs.Load(), pullRTms: c.pullRTms.Load(),
		consumeCalls: c.consumeCalls.Load(), consumeRTms: c.consumeRTms.Load(),
		consumeOK: c.consumeOK.Load(), consumeFailed: c.consumeFailed.Load()}
}

// maybeSample takes a sample, of what was counted before now, when the newest is
// statsSamplePeriod old; the check is one atomic load, so the hot paths pay for a sample once
// per period.
func (c *topicCounters) maybeSample(now time.Time) {
	last := c.lastSample.Load()
	if now.UnixNano()-last < int64(statsSamplePeriod) || !c.lastSample.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	c.add(c.snapshot(now))
}

func (c *topicCounters) add(s statsSample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ring) < statsSamples {
		c.ring = append(c.ring, s)
		return
	}
	c.ring[c.next] = s
	c.next = (c.next + 1) % statsSamples
}

// since returns the newest sample at least window before now, else the oldest one. It reports
// false when nothing was counted in the window: every count after the newest sample came
// within statsSamplePeriod of it (a later one would have taken a sample), so a newest sample
// older than window plus that period means a quiet window.
func (c *topicCounters) since(now time.Time, window time.Duration) (statsSample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ring) == 0 {
		return statsSample{}, false
	}
	newest := c.ring[(c.next-1+len(c.ring))%len(c.ring)]
	if now.Sub(newest.at) >= window+statsSamplePeriod {
		return statsSample{}, false
	}
	oldest := c.ring[c.next%len(c.ring)]
	best, found := oldest, false
	for _, s := range c.ring {
		if now.Sub(s.at) >= window && (!found || s.at.After(best.at)) {
			best, found = s, true
		}
	}
	return best, true
}

// status is the topic's ConsumeStatus now.
func (c *topicCounters) status(now time.Time) protocol.ConsumeStatus {
	cur := c.snapshot(now)
	var st protocol.ConsumeStatus
	if m, ok := c.since(now, statsMinute); ok {
		if secs := now.Sub(m.at).Seconds(); secs > 0 {
			st.PullTPS = float64(cur.pullMsgs-m.pullMsgs) / secs
			st.ConsumeOKTPS = float64(cur.consumeOK-m.consumeOK) / secs
			st.ConsumeFailedTPS = float64(cur.consumeFailed-m.consumeFailed) / secs
		}
		st.PullRT = mean(cur.pullRTms-m.pullRTms, cur.pulls-m.pulls)
		st.ConsumeRT = mean(cur.consumeRTms-m.consumeRTms, cur.consumeCalls-m.consumeCalls)
	}
	if h, ok := c.since(now, statsHour); ok {
		st.ConsumeFailedMsgs = cur.consumeFailed - h.consumeFailed
	}
	return st
}

func mean(sum, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// table is the status table: every topic's ConsumeStatus now.
func (s *consumeStats) table(now time.Time) map[string]protocol.ConsumeStatus {
	out := map[string]protocol.ConsumeStatus{}
	s.topics.Range(func(k, v any) bool {
		out[k.(string)] = v.(*topicCounters).status(now)
		return true
	})
	return out
}
