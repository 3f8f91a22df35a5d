package peers

import (
	"fmt"
	"io"
	"strings"
)

// WriteTable writes the results as a Markdown table, a row per case and a column per peer, with
// the ratio of mq to NATS last: for throughput rows mq's msgs/s over NATS's (above 1: mq is
// faster), for latency rows mq's time over NATS's (below 1: mq is faster).
func WriteTable(w io.Writer, cases []Case, peers []Peer, results []Result) error {
	byKey := make(map[[2]string]Result, len(results))
	for _, r := range results {
		byKey[[2]string{r.Peer, r.Case}] = r
	}
	var b strings.Builder
	b.WriteString("| case |")
	for _, p := range peers {
		fmt.Fprintf(&b, " %s |", p.Title())
	}
	b.WriteString(" mq / NATS |\n|---|")
	b.WriteString(strings.Repeat("---|", len(peers)+1))
	b.WriteString("\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "| %s |", c.Title)
		for _, p := range peers {
			r, ok := byKey[[2]string{p.ID(), c.ID}]
			fmt.Fprintf(&b, " %s |", cell(c, r, ok))
		}
		mqr, okm := byKey[[2]string{"mq", c.ID}]
		nr, okn := byKey[[2]string{"nats", c.ID}]
		fmt.Fprintf(&b, " %s |\n", ratio(c, mqr, nr, okm && okn))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(c Case, r Result, ok bool) string {
	switch {
	case !ok:
		return "not run"
	case r.Skipped:
		return "—"
	case r.Error != "":
		return "error (see its JSON line)"
	}
	var parts []string
	if !c.Latency {
		parts = append(parts, formatRate(r.MsgsPerSec))
	}
	if r.P50Micros > 0 {
		parts = append(parts, "p50 "+formatMicros(r.P50Micros), "p99 "+formatMicros(r.P99Micros))
	}
	if r.IdleRSSGrowth != nil {
		parts = append(parts, "idle RSS "+formatBytes(*r.IdleRSSGrowth))
	}
	return strings.Join(parts, ", ")
}

func ratio(c Case, mq, nats Result, ok bool) string {
	if !ok || mq.Skipped || nats.Skipped || mq.Error != "" || nats.Error != "" {
		return "—"
	}
	if !c.Latency {
		if nats.MsgsPerSec == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", mq.MsgsPerSec/nats.MsgsPerSec)
	}
	if nats.P50Micros == 0 || nats.P99Micros == 0 {
		return "—"
	}
	return fmt.Sprintf("time: p50 %.2f, p99 %.2f", mq.P50Micros/nats.P50Micros, mq.P99Micros/nats.P99Micros)
}

func formatRate(perSec float64) string {
	switch {
	case perSec >= 1e6:
		return fmt.Sprintf("%.2fM/s", perSec/1e6)
	case perSec >= 1e3:
		return fmt.Sprintf("%.1fk/s", perSec/1e3)
	default:
		return fmt.Sprintf("%.0f/s", perSec)
	}
}

func formatMicros(us float64) string {
	switch {
	case us >= 100e3:
		return fmt.Sprintf("%.0f ms", us/1e3)
	case us >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}
