package stats

import (
	"context"
	"sync"
	"time"
)

// RocketMQ StoreStatsService samples the put and get totals once a second and keeps ten
// minutes of samples, from which GET_BROKER_RUNTIME_INFO reports putTps and getTransferedTps
// over 10 s, 60 s and 600 s.
const (
	tpsSamplePeriod = time.Second // FREQUENCY_OF_SAMPLING
	tpsSamples      = 60*10 + 1   // MAX_RECORDS_OF_SAMPLING, plus the sample a window starts from
)

// tpsWindows are the windows, in samples, of the three figures of putTps and getTransferedTps.
var tpsWindows = [3]int{10, 60, 600}

type tpsSample struct {
	at       time.Time
	put, get int64
}

// tpsSampler is a ring of the last tpsSamples samples.
type tpsSampler struct {
	mu   sync.Mutex
	ring [tpsSamples]tpsSample
	n    int // samples taken, up to tpsSamples
	next int // where the next sample goes
}

func (t *tpsSampler) add(s tpsSample) {
	t.mu.Lock()
	t.ring[t.next] = s
	t.next = (t.next + 1) % tpsSamples
	t.n = min(t.n+1, tpsSamples)
	t.mu.Unlock()
}

// rates returns the put and get rates over each of tpsWindows. A window longer than the
// samples taken so far is measured over all of them (RocketMQ reports nothing until it has a
// whole window), and there is no rate before two samples.
func (t *tpsSampler) rates() (put, get [3]float64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n < 2 {
		return put, get, false
	}
	last := t.ring[(t.next-1+tpsSamples)%tpsSamples]
	for i, w := range tpsWindows {
		back := min(w, t.n-1)
		first := t.ring[(t.next-1-back+2*tpsSamples)%tpsSamples]
		secs := last.at.Sub(first.at).Seconds()
		if secs <= 0 {
			continue
		}
		put[i] = float64(last.put-first.put) / secs
		get[i] = float64(last.get-first.get) / secs
	}
	return put, get, true
}

// Rates are the put and get rates in messages per second over the last 10 s, 60 s and 600 s,
// as putTps and getTransferedTps report them; ok is false until two samples were taken.
func (s *Service) Rates() (put, get [3]float64, ok bool) { return s.tps.rates() }

// ConsumeTPS is what group pulled of topic per second over the last minute.
func (s *Service) ConsumeTPS(topic, group string) float64 { return s.groupRates.tps(topic, group) }

// Run samples the totals every tpsSamplePeriod, and what each group pulled of each topic every
// groupSamplePeriod, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	sample := func(now time.Time, tick int) {
		s.tps.add(tpsSample{at: now, put: s.putNums.Load(), get: s.getNums.Load()})
		if tick%int(groupSamplePeriod/tpsSamplePeriod) == 0 {
			s.groupRates.add(now, &s.groupGet)
			s.sampleWindows(now)
		}
	}
	sample(time.Now(), 0)
	t := time.NewTicker(tpsSamplePeriod)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			sample(now, tick)
		}
	}
}

// A group's consume TPS in GET_CONSUME_STATS is, as RocketMQ's GROUP_GET_NUMS minute figure,
// the messages it pulled in the last minute, from samples every 10 s.
const (
	groupSamplePeriod = 10 * time.Second
	groupSamples      = int(time.Minute/groupSamplePeriod) + 1
)

type groupSample struct {
	at   time.Time
	gets map[topicGroup]int64
}

// groupRates is a ring of the last groupSamples samples of every group's pulls.
type groupRates struct {
	mu   sync.Mutex
	ring [groupSamples]groupSample
	n    int
	next int
}

func (g *groupRates) add(now time.Time, counters *sync.Map) {
	gets := map[topicGroup]int64{}
	counters.Range(func(k, v any) bool {
		gets[k.(topicGroup)] = v.(*traffic).msgs.Load()
		return true
	})
	g.mu.Lock()
	g.ring[g.next] = groupSample{at: now, gets: gets}
	g.next = (g.next + 1) % groupSamples
	g.n = min(g.n+1, groupSamples)
	g.mu.Unlock()
}

// tps is what group pulled of topic per second between the oldest sample and the newest.
func (g *groupRates) tps(topic, group string) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n < 2 {
		return 0
	}
	last := g.ring[(g.next-1+groupSamples)%groupSamples]
	first := g.ring[(g.next-g.n+groupSamples)%groupSamples]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0
	}
	k := topicGroup{topic, group}
	return float64(last.gets[k]-first.gets[k]) / secs
}
