package tables

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The bounds on topic auto-creation (issue 25) are the core's (topic_create.go says what they
// refuse and how); here are the per-connection bucket and the refusal counters they use.

// Refusals counts refusals of one kind and keeps their warning to one per RefusalLogPeriod, so
// a client hammering a limit cannot flood the log from the send or pull path (the topic
// creations refused here, sends refused by a full topic table, pulls a full hold refused).
type Refusals struct {
	count atomic.Int64
	next  atomic.Int64 // unix nanoseconds before which no warning is let through
}

// RefusalLogPeriod spaces the warnings about one kind of refusal.
const RefusalLogPeriod = time.Minute

// Note counts a refusal made at now and returns the refusals so far and whether this one may
// be logged; concurrent callers race for one pass.
func (r *Refusals) Note(now time.Time) (total int64, logIt bool) {
	total = r.count.Add(1)
	n := r.next.Load()
	if now.UnixNano() < n {
		return total, false
	}
	return total, r.next.CompareAndSwap(n, now.Add(RefusalLogPeriod).UnixNano())
}

// Total is how many refusals were noted.
func (r *Refusals) Total() int64 { return r.count.Load() }

// CreateLimiter is the per-connection token bucket of topic auto-creation. Buckets live in a
// map by connection id; one that has refilled is the same as none, so the map is swept of
// them whenever it has doubled since the last sweep, which bounds it by the connections that
// created a topic lately without a close hook.
type CreateLimiter struct {
	rate   float64 // tokens a second
	burst  float64
	remark string // the SYSTEM_BUSY remark

	mu        sync.Mutex
	buckets   map[uint64]*createBucket
	nextSweep int

	refusals Refusals
}

type createBucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// createLimiterMinSweep is the map size below which the limiter never sweeps.
const createLimiterMinSweep = 1024

// NewCreateLimiter returns the bucket of AutoCreateTopicBurst and AutoCreateTopicRate.
func NewCreateLimiter(burst, rate int) *CreateLimiter {
	return &CreateLimiter{rate: float64(rate), burst: float64(burst), buckets: map[uint64]*createBucket{},
		nextSweep: createLimiterMinSweep,
		remark: fmt.Sprintf("[AUTO_CREATE_TOPIC_LIMITED]this connection creates topics faster than the broker allows "+
			"(AutoCreateTopicRate %d a second, AutoCreateTopicBurst %d); send to existing topics, create topics "+
			"with the admin tools, or retry later", rate, burst)}
}

// Remark is the SYSTEM_BUSY remark of a send the limiter refused.
func (l *CreateLimiter) Remark() string { return l.remark }

// Allow takes a token from connection id's bucket and reports whether there was one.
func (l *CreateLimiter) Allow(id uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	bk := l.buckets[id]
	if bk == nil {
		if len(l.buckets) >= l.nextSweep {
			l.sweepLocked(now)
		}
		bk = &createBucket{tokens: l.burst, at: now}
		l.buckets[id] = bk
	} else if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(l.burst, bk.tokens+d.Seconds()*l.rate)
		bk.at = now
	}
	if bk.tokens < 1 {
		return false
	}
	bk.tokens--
	return true
}

// sweepLocked drops the buckets that have refilled. l.mu must be held.
func (l *CreateLimiter) sweepLocked(now time.Time) {
	for id, bk := range l.buckets {
		if bk.tokens+now.Sub(bk.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, id)
		}
	}
	l.nextSweep = max(createLimiterMinSweep, 2*len(l.buckets))
}

// Refused counts a creation refused to the connection at addr and logs the first one a
// minute on log.
func (l *CreateLimiter) Refused(log *zerolog.Logger, addr, topic string) {
	if n, logIt := l.refusals.Note(time.Now()); logIt {
		log.Warn().Str("addr", addr).Str("topic", topic).Float64("rate", l.rate).Float64("burst", l.burst).
			Int64("refused_total", n).Msg("connection creating topics faster than AutoCreateTopicRate; refusing them SYSTEM_BUSY")
	}
}
