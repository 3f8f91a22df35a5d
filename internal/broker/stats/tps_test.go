package stats

import (
	"sync"
	"testing"
	"time"
)

// TestTPSSamplerWindows feeds a second-by-second ring: each window's rate is measured over the
// samples it has, up to its length.
func TestTPSSamplerWindows(t *testing.T) {
	var s tpsSampler
	if _, _, ok := s.rates(); ok {
		t.Fatal("rates from no sample")
	}
	t0 := time.Unix(1_700_000_000, 0)
	// 100 puts and 50 gets a second for 30 s, then 10 puts a second for 10 s.
	var put, get int64
	for i := 0; i <= 40; i++ {
		s.add(tpsSample{at: t0.Add(time.Duration(i) * time.Second), put: put, get: get})
		if i < 30 {
			put, get = put+100, get+50
		} else {
			put += 10
		}
	}
	p, g, ok := s.rates()
	if !ok {
		t.Fatal("no rates from 41 samples")
	}
	// 10 s: the slow part only. 60 s and 600 s: all 40 s there are: 3100 puts, 1500 gets.
	if p[0] != 10 || g[0] != 0 || p[1] != 3100.0/40 || p[2] != 3100.0/40 || g[1] != 1500.0/40 {
		t.Fatalf("put %v get %v", p, g)
	}
	// The ring keeps tpsSamples: after more than that, the 600 s window is 600 s long.
	for i := 41; i < 41+tpsSamples; i++ {
		put += 1
		s.add(tpsSample{at: t0.Add(time.Duration(i) * time.Second), put: put})
	}
	if p, _, _ := s.rates(); p[2] != 1 {
		t.Fatalf("600 s rate %v after a full ring at 1/s", p[2])
	}
}

func TestGroupRates(t *testing.T) {
	var g groupRates
	var counters sync.Map
	c := &traffic{}
	counters.Store(topicGroup{"T", "G"}, c)
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i <= 8; i++ { // 9 samples 10 s apart: the ring keeps the last 7 (a minute)
		g.add(t0.Add(time.Duration(i)*groupSamplePeriod), &counters)
		c.add(20*(i+1), 0) // 20, then 40, 60, ... more messages each period
	}
	// Kept: samples 2..8; between them 60+80+...+160 = 660 messages in 60 s.
	if got := g.tps("T", "G"); got != 660.0/60 {
		t.Fatalf("tps %v, want 11", got)
	}
	if got := g.tps("T", "other"); got != 0 {
		t.Fatalf("tps of an unknown group %v", got)
	}
}
