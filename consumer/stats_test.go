package consumer

import (
	"math"
	"testing"
	"time"
)

// TestConsumeStatsWindows drives the counters on a made-up clock: rates cover the last minute
// (from the newest sample at least a minute old), failures the last hour.
func TestConsumeStatsWindows(t *testing.T) {
	var s consumeStats
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// One pull of 10 messages and one successful call on them every 10 s for two minutes,
	// and one failed message a minute.
	for i := 0; i <= 12; i++ {
		now := at(time.Duration(i) * 10 * time.Second)
		s.pullAnswered("T", 20*time.Millisecond, now)
		s.pullFound("T", 10)
		s.consumed("T", 10, true, 4*time.Millisecond, now)
		if i%6 == 0 {
			s.consumed("T", 1, false, 4*time.Millisecond, now)
		}
	}
	st := s.table(at(120 * time.Second))["T"]
	// The newest sample a minute old is the one at 60 s, of what came before 60 s: rounds 6
	// to 12 came since, 70 messages in 60 s.
	if math.Abs(st.PullTPS-70.0/60) > 1e-9 || math.Abs(st.ConsumeOKTPS-70.0/60) > 1e-9 {
		t.Fatalf("pull TPS %v, consume OK TPS %v, want 70/60 each", st.PullTPS, st.ConsumeOKTPS)
	}
	if st.PullRT != 20 || st.ConsumeRT != 4 {
		t.Fatalf("pull RT %v ms, consume RT %v ms, want 20 and 4", st.PullRT, st.ConsumeRT)
	}
	// Failures at 0, 60 and 120 s; none is an hour old, so the hour is the whole run.
	if st.ConsumeFailedMsgs != 3 {
		t.Fatalf("failed messages in the hour %d, want 3", st.ConsumeFailedMsgs)
	}
	if math.Abs(st.ConsumeFailedTPS-2.0/60) > 1e-9 {
		t.Fatalf("failed TPS %v, want 2/60 (the failures at 60 and 120 s)", st.ConsumeFailedTPS)
	}
	// Two hours of quiet: the last minute is measured from the newest sample, which is old.
	if st := s.table(at(2 * time.Hour))["T"]; st.PullTPS != 0 || st.ConsumeOKTPS != 0 {
		t.Fatalf("after two idle hours %+v, want no traffic in the last minute", st)
	}
}
