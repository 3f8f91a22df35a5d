package tables

import (
	"strings"
	"testing"
	"time"
)

// TestCreateLimiter: a connection creates a burst, then at the rate; connections are apart;
// buckets that refilled are swept, so the table stays about as large as the connections
// creating topics lately.
func TestCreateLimiter(t *testing.T) {
	l := NewCreateLimiter(3, 2)
	t0 := time.Unix(1700000000, 0)
	for i := range 3 {
		if !l.Allow(1, t0) {
			t.Fatalf("creation %d of the burst refused", i+1)
		}
	}
	if l.Allow(1, t0) {
		t.Error("a fourth creation in the same instant allowed")
	}
	if !l.Allow(2, t0) {
		t.Error("another connection refused")
	}
	if !l.Allow(1, t0.Add(500*time.Millisecond)) || l.Allow(1, t0.Add(500*time.Millisecond)) {
		t.Error("half a second at 2 a second should give exactly one creation")
	}
	if !strings.Contains(l.Remark(), "AutoCreateTopicRate 2") || !strings.Contains(l.Remark(), "AutoCreateTopicBurst 3") {
		t.Errorf("remark %q does not name the limits", l.Remark())
	}
	for id := range uint64(5000) {
		l.Allow(100+id, t0)
	}
	later := t0.Add(time.Minute) // every bucket has refilled
	for id := range uint64(5000) {
		l.Allow(100000+id, later)
	}
	l.mu.Lock()
	n := len(l.buckets)
	l.mu.Unlock()
	if n > 5000+createLimiterMinSweep {
		t.Errorf("%d buckets kept for 5,000 connections creating now", n)
	}
}

// TestRefusalsLogOncePerPeriod: every refusal is counted; one a RefusalLogPeriod may be logged.
func TestRefusalsLogOncePerPeriod(t *testing.T) {
	var r Refusals
	t0 := time.Unix(1700000000, 0)
	if n, logIt := r.Note(t0); n != 1 || !logIt {
		t.Errorf("first refusal: total %d, log %v; want 1, true", n, logIt)
	}
	if n, logIt := r.Note(t0.Add(RefusalLogPeriod - time.Nanosecond)); n != 2 || logIt {
		t.Errorf("second refusal within the period: total %d, log %v; want 2, false", n, logIt)
	}
	if n, logIt := r.Note(t0.Add(RefusalLogPeriod)); n != 3 || !logIt {
		t.Errorf("refusal a period later: total %d, log %v; want 3, true", n, logIt)
	}
}
