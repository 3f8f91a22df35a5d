package stats

import (
	"strings"
	"sync"
	"time"
)

// The minute, hour and day figures of VIEW_BROKER_STATS_DATA (RocketMQ StatsItem's
// csListMinute, csListHour and csListDay): snapshots of the per-topic put and per-topic-and-group
// get counters, every 10 s for the minute, every 10 min for the hour and every hour for the day,
// each ring long enough to reach one window back.

// Stats names VIEW_BROKER_STATS_DATA serves (BrokerStatsManager's).
const (
	TopicPutNums = "TOPIC_PUT_NUMS"
	TopicPutSize = "TOPIC_PUT_SIZE"
	GroupGetNums = "GROUP_GET_NUMS"
	GroupGetSize = "GROUP_GET_SIZE"
)

// WindowStat is one window's figures: the sum counted in it and its rate per second. RocketMQ's
// avgpt (the mean per counting call) is not kept: the counters count messages and bytes, not
// calls, so it stays 0.
type WindowStat struct {
	Sum   int64
	TPS   float64
	AvgPT float64
}

type windowSnap struct {
	at  time.Time
	put map[string][2]int64     // topic -> msgs, bytes
	get map[topicGroup][2]int64 // topic and group -> msgs, bytes
}

// window is a ring of snapshots taken every period.
type window struct {
	period time.Duration
	mu     sync.Mutex
	ring   []windowSnap
	n      int
	next   int
}

func newWindow(period time.Duration, samples int) *window {
	return &window{period: period, ring: make([]windowSnap, samples)}
}

// due reports whether the window wants a snapshot at now.
func (w *window) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return true
	}
	last := w.ring[(w.next-1+len(w.ring))%len(w.ring)]
	return now.Sub(last.at) >= w.period
}

func (w *window) add(s windowSnap) {
	w.mu.Lock()
	w.ring[w.next] = s
	w.next = (w.next + 1) % len(w.ring)
	w.n = min(w.n+1, len(w.ring))
	w.mu.Unlock()
}

// oldest is the first snapshot still in the ring.
func (w *window) oldest() (windowSnap, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return windowSnap{}, false
	}
	return w.ring[(w.next-w.n+len(w.ring))%len(w.ring)], true
}

// windows are the minute, hour and day rings.
type windows [3]*window

func newWindows() windows {
	return windows{newWindow(10*time.Second, 7), newWindow(10*time.Minute, 7), newWindow(time.Hour, 25)}
}

// sample snapshots the counters into every window that is due.
func (s *Service) sampleWindows(now time.Time) {
	var snap *windowSnap
	for _, w := range s.windows {
		if !w.due(now) {
			continue
		}
		if snap == nil {
			snap = &windowSnap{at: now, put: map[string][2]int64{}, get: map[topicGroup][2]int64{}}
			s.topicPut.Range(func(k, v any) bool {
				t := v.(*traffic)
				snap.put[k.(string)] = [2]int64{t.msgs.Load(), t.bytes.Load()}
				return true
			})
			s.groupGet.Range(func(k, v any) bool {
				t := v.(*traffic)
				snap.get[k.(topicGroup)] = [2]int64{t.msgs.Load(), t.bytes.Load()}
				return true
			})
		}
		w.add(*snap)
	}
}

// StatsData returns one statistic's minute, hour and day figures (VIEW_BROKER_STATS_DATA):
// name is one of TopicPutNums, TopicPutSize (key a topic), GroupGetNums, GroupGetSize (key
// "topic@group"). ok is false for an unknown name or a key nothing was counted for.
func (s *Service) StatsData(name, key string, now time.Time) (minute, hour, day WindowStat, ok bool) {
	var cur *traffic
	var pick func(windowSnap) int64
	idx := 0
	if name == TopicPutSize || name == GroupGetSize {
		idx = 1
	}
	switch name {
	case TopicPutNums, TopicPutSize:
		v, found := s.topicPut.Load(key)
		if !found {
			return minute, hour, day, false
		}
		cur = v.(*traffic)
		pick = func(w windowSnap) int64 { return w.put[key][idx] }
	case GroupGetNums, GroupGetSize:
		topic, group, cut := strings.Cut(key, "@")
		if !cut {
			return minute, hour, day, false
		}
		k := topicGroup{topic, group}
		v, found := s.groupGet.Load(k)
		if !found {
			return minute, hour, day, false
		}
		cur = v.(*traffic)
		pick = func(w windowSnap) int64 { return w.get[k][idx] }
	default:
		return minute, hour, day, false
	}
	now64 := [2]int64{cur.msgs.Load(), cur.bytes.Load()}[idx]
	out := [3]WindowStat{}
	for i, w := range s.windows {
		first, have := w.oldest()
		if !have {
			continue
		}
		out[i].Sum = now64 - pick(first)
		if secs := now.Sub(first.at).Seconds(); secs > 0 {
			out[i].TPS = float64(out[i].Sum) / secs
		}
	}
	return out[0], out[1], out[2], true
}
