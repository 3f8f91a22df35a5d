package peers

import (
	"slices"
	"time"
)

// Result is one case on one peer: a JSON line, and a cell of the table.
type Result struct {
	Peer       string  `json:"peer"`
	Case       string  `json:"case"`
	Msgs       int     `json:"msgs,omitempty"`
	MsgsPerSec float64 `json:"msgs_per_sec,omitempty"`
	P50Micros  float64 `json:"p50_us,omitempty"`
	P99Micros  float64 `json:"p99_us,omitempty"`
	P999Micros float64 `json:"p999_us,omitempty"`
	Durability string  `json:"durability,omitempty"`
	// IdleRSSGrowth is how much the process's resident memory grew while a started node
	// idled (node start only; nil where it could not be read).
	IdleRSSGrowth *int64 `json:"idle_rss_growth_bytes,omitempty"`
	// Split says the broker ran in a child process, the clients in this one.
	Split bool `json:"split"`
	// Skipped says the peer has no equivalent of the case (its cell is "—").
	Skipped bool   `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// setLatency fills the percentiles from samples, which it sorts.
func (r *Result) setLatency(samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	r.P50Micros = micros(percentile(samples, 0.50))
	r.P99Micros = micros(percentile(samples, 0.99))
	r.P999Micros = micros(percentile(samples, 0.999))
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// rate is messages per second, or 0 for a span too short to measure.
func rate(msgs int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(msgs) / d.Seconds()
}
