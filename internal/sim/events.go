package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
)

// eventLog is a run's record, one line per event, with its simulated time since the faults
// began. Two kinds of line: the seed's own (its configuration, each action of its schedule at
// the time the schedule gave it, the verdict), which every run of the seed writes alike and
// which the digest covers; and notes, marked "~", on what the cluster did when (a node that
// came up, a restart that failed, the workload's totals), which show what happened but depend
// on how goroutines were scheduled, since Go's scheduler, select and Raft's election timeouts
// are random, and are left out of the digest.
type eventLog struct {
	root string // the run's directory, written as $DIR so that logs of two runs compare

	mu     sync.Mutex
	origin time.Time
	lines  []string
	hashed []string
}

func newEventLog(root string) *eventLog { return &eventLog{root: root, origin: time.Now()} }

// begin makes now the log's time zero: the start of the faults.
func (l *eventLog) begin() {
	l.mu.Lock()
	l.origin = time.Now()
	l.mu.Unlock()
}

func (l *eventLog) text(format string, args []any) string {
	msg := fmt.Sprintf(format, args...)
	if l.root != "" {
		msg = strings.ReplaceAll(msg, l.root, "$DIR")
	}
	return msg
}

// seedf records a line the seed decides: the digest covers it.
func (l *eventLog) seedf(format string, args ...any) {
	line := l.text(format, args)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.hashed = append(l.hashed, line)
	l.mu.Unlock()
}

// actionf records an action of the schedule at the time the schedule gave it.
func (l *eventLog) actionf(at time.Duration, format string, args ...any) {
	l.seedf("%9.3fs %s", at.Seconds(), l.text(format, args))
}

// addf records a note at the simulated time now.
func (l *eventLog) addf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%9.3fs ~ %s", time.Since(l.origin).Seconds(), l.text(format, args)))
}

func (l *eventLog) snapshot() (lines, hashed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...), append([]string(nil), l.hashed...)
}

// digest is a hash of lines.
func digest(lines []string) string {
	h := sha256.New()
	for _, s := range lines {
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ring keeps the last lines written to it: the nodes' logs, shown when a seed fails.
type ring struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, n)} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.lines[r.next] = strings.TrimRight(string(p), "\n")
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
	return len(p), nil
}

func (r *ring) tail() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	return append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
}
