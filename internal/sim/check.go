package sim

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/storage"
)

// pos is a message's place in the one group's history: a queue and an offset in it.
type pos struct {
	queue  int
	offset int64
}

// seen is who says which message is at a pos.
type seen struct {
	key   string
	acked bool // a producer's SEND_OK said so (else a consumer saw it there)
}

// observations are what the workload saw, and the invariants it breaks as soon as it breaks
// them.
type observations struct {
	cfg Config
	log *eventLog

	mu        sync.Mutex
	nSent     int
	nFailed   int            // sends that failed: stored or not, nobody knows
	nNotOK    int            // stored, but a durability step timed out (not acknowledged)
	acked     map[string]pos // SEND_OK: acknowledged, must be delivered
	delivered map[string]int // successful consumptions by key
	retried   map[string]int // consumptions that asked for the message again later, by key
	nConsumed int
	history   map[pos]seen
	// divergences are history conflicts a power cut allows: a consumer read a message the
	// master had not synced, which the cut then erased.
	divergences int
	// suspects are history conflicts between an acknowledged message and one a consumer saw
	// unacknowledged, judged at the end (judgeSuspects): allowed only where a slave still holds
	// the unacknowledged one there.
	suspects []suspect
	// shadowed are acknowledged keys whose offset a consumer took from a slave holding another
	// message there (judgeSuspects): the group's offset moved past them, so no consumer is
	// given them, as with RocketMQ 4's fixed roles.
	shadowed   map[string]bool
	violations []string
	kinds      map[string]bool // the invariants broken, by name
}

func newObservations(cfg Config, log *eventLog) *observations {
	return &observations{cfg: cfg, log: log, acked: make(map[string]pos), delivered: make(map[string]int), retried: make(map[string]int),
		history: make(map[pos]seen), kinds: make(map[string]bool), shadowed: make(map[string]bool)}
}

// violate records a broken invariant, kind naming it. o.mu must be held.
func (o *observations) violate(kind, format string, args ...any) {
	msg := kind + ": " + fmt.Sprintf(format, args...)
	o.violations = append(o.violations, msg)
	o.kinds[kind] = true
	o.log.addf("VIOLATION %s", msg)
}

// Invariants, as violations name them.
const (
	invLost     = "lost"     // an acknowledged message gone
	invStuck    = "stuck"    // an acknowledged message stored but never delivered
	invHistory  = "history"  // two messages at one offset of a queue
	invAhead    = "ahead"    // a committed offset past the data
	invBack     = "back"     // a committed offset lower than before with no fault between
	invReplica  = "replica"  // a replica's log not a prefix of the master's
	invLiveness = "liveness" // the healed cluster takes no sends, or a node cannot start
	invHarness  = "harness"  // the simulation itself failed
	invSetUp    = "setup"    // the cluster did not come up before any fault
)

func (o *observations) sent(n int) {
	o.mu.Lock()
	o.nSent += n
	o.mu.Unlock()
}

func (o *observations) sendResult(keys []string, res *producer.SendResult, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
		o.nFailed += len(keys)
	case res.Status != producer.SendOK:
		o.nNotOK += len(keys)
	default:
		for j, k := range keys {
			p := pos{res.Queue.QueueID, res.QueueOffset + int64(j)}
			o.acked[k] = p
			o.place(p, seen{key: k, acked: true})
		}
	}
}

func (o *observations) consumed(m *consumer.Message, key string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nConsumed++
	if ok {
		o.delivered[key]++
	} else {
		o.retried[key]++
	}
	if m.Queue.Topic == topic {
		o.place(pos{m.Queue.QueueID, m.QueueOffset}, seen{key: key})
	}
}

// place records that s is at p, and reports a second message there: two histories of one
// queue. o.mu must be held.
func (o *observations) place(p pos, s seen) {
	prev, ok := o.history[p]
	if !ok {
		o.history[p] = s
		return
	}
	if prev.key == s.key {
		if s.acked {
			o.history[p] = s
		}
		return
	}
	if !prev.acked && !s.acked && o.cfg.PowerLoss {
		o.divergences++
		o.log.addf("divergence at queue %d offset %d after a power cut: %s then %s (allowed: neither was acknowledged)",
			p.queue, p.offset, prev.key, s.key)
		o.history[p] = s
		return
	}
	if prev.acked != s.acked && o.slaveMayDiverge() {
		sus := suspect{p: p, unacked: prev.key, acked: s.key}
		if prev.acked {
			sus.unacked, sus.acked = s.key, prev.key
		} else {
			o.history[p] = s
		}
		if !slices.Contains(o.suspects, sus) {
			o.suspects = append(o.suspects, sus)
			o.log.addf("history conflict at queue %d offset %d: %s (not acknowledged) and %s (acknowledged), judged at the end",
				p.queue, p.offset, sus.unacked, sus.acked)
		}
		return
	}
	o.violate(invHistory, "two histories: queue %d offset %d held %s (acknowledged %v) and %s (acknowledged %v)",
		p.queue, p.offset, prev.key, prev.acked, s.key, s.acked)
}

// suspect is a history conflict at p between the acknowledged message acked and unacked, which
// only a consumer saw.
type suspect struct {
	p              pos
	unacked, acked string
}

// slaveMayDiverge reports whether a slave may keep records its master lost: with fixed roles
// (classic mode) and power cuts. The master replicates what it wrote, synced or not; a power
// cut erases the master's unsynced tail but not the slave's copy, and RocketMQ 4's HA never
// truncates a slave, so the slave's log parts from the master's (checkReplicas logs it). A
// consumer that reads from the slave (its master down, or suggested) may then see, at an
// offset, a message nobody acknowledged and that the master now holds another message at.
func (o *observations) slaveMayDiverge() bool {
	return o.cfg.Mode == Classic && o.cfg.PowerLoss
}

// judgeSuspects judges the suspects once the run is over: a conflict is allowed when a slave
// holds the unacknowledged message at its offset (slaveHolds), else it is two histories.
func (o *observations) judgeSuspects(slaveHolds func(p pos, key string) bool) {
	o.mu.Lock()
	sus := o.suspects
	o.suspects = nil
	o.mu.Unlock()
	for _, s := range sus {
		held := slaveHolds(s.p, s.unacked)
		o.mu.Lock()
		if held {
			o.divergences++
			o.shadowed[s.acked] = true
			o.log.addf("divergence at queue %d offset %d after a power cut: a slave kept %s (not acknowledged), which the master lost before it stored %s (allowed with fixed roles)",
				s.p.queue, s.p.offset, s.unacked, s.acked)
		} else {
			o.violate(invHistory, "two histories: queue %d offset %d held %s (acknowledged false) and %s (acknowledged true)",
				s.p.queue, s.p.offset, s.unacked, s.acked)
		}
		o.mu.Unlock()
	}
}

func (o *observations) isShadowed(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.shadowed[key]
}

// offsetWatch follows the group's committed offsets on the master between checks.
type offsetWatch struct {
	last map[int]offsetSample
}

type offsetSample struct {
	offset int64
	maxOff int64
	epoch  int // the schedule's disruption count when it was taken
	master string
	// broker is the master's running broker (its address, as text): a role change restarts
	// the broker under the same node name, which a failure report must tell.
	broker string
}

// offsetRow is one queue's committed offset and end on the master.
type offsetRow struct {
	queue          int
	offset, maxOff int64
	// written is the queue's end in the master's CommitLog, past maxOff by what waits for an
	// fsync or the confirm offset to be dispatched: a consumer may have read that from a
	// slave, so an offset up to it is not ahead of the data.
	written int64
	// broker identifies the master's running broker, state describes the group's stores when
	// the row was read: both only for the violations' messages, to tell a failover's or a role
	// change's effect from a broker's own.
	broker, state string
}

// checkOffsets checks the group's committed offsets on the master against the data (judge).
func (c *cluster) checkOffsets(o *observations, w *offsetWatch, epoch int, final bool) {
	m := c.master()
	if m == nil {
		return
	}
	var rows []offsetRow
	state := c.storeState(m)
	inspect(m, func(b *broker.Broker) {
		id := fmt.Sprintf("%p", b)
		for q := range c.cfg.Queues {
			st := b.Store()
			rows = append(rows, offsetRow{queue: q, offset: b.Offsets().Query(group, topic, int32(q)),
				maxOff: st.MaxOffsetInQueue(topic, int32(q)), written: st.WrittenOffsetInQueue(topic, int32(q)),
				broker: id, state: state})
		}
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		o.judgeOffset(w, r, epoch, m.name, final)
	}
}

// judgeOffset checks one committed offset: never ahead of the queue's end, and never lower
// than at the last check on the same master unless a fault or a consumer change (epoch) came
// between. o.mu must be held.
func (o *observations) judgeOffset(w *offsetWatch, r offsetRow, epoch int, master string, final bool) {
	if r.offset < 0 {
		return
	}
	// After a power cut the broker may hold offsets persisted past data the cut erased, until
	// the group commits again: only the end of the run must have no such offset.
	prev, ok := w.last[r.queue]
	if r.offset > max(r.maxOff, r.written) && (!o.cfg.PowerLoss || final) {
		o.violate(invAhead, "offset ahead of the data: group %s queue %d committed %d on %s, the queue ends at %d, written to %d (%s)",
			group, r.queue, r.offset, master, r.maxOff, r.written, o.context(prev, ok, r, master, final))
	}
	if ok && prev.epoch == epoch && prev.master == master && r.offset < prev.offset {
		o.violate(invBack, "offset went back without a fault: group %s queue %d committed %d on %s, %d at the last check (%s)",
			group, r.queue, r.offset, master, prev.offset, o.context(prev, ok, r, master, final))
	}
	w.last[r.queue] = offsetSample{offset: r.offset, maxOff: r.maxOff, epoch: epoch, master: master, broker: r.broker}
}

// context describes an offset violation's circumstances for whoever studies the seed: when
// it was seen, what the last check saw, whether the master's broker restarted since (a role
// change), and the group's stores. These violations are rare and Go's scheduler does not
// replay them, so the message is often all there is to go on.
func (o *observations) context(prev offsetSample, ok bool, r offsetRow, master string, final bool) string {
	d := "mid-run"
	if final {
		d = "at the end"
	}
	switch {
	case !ok:
		d += ", no earlier check"
	case prev.master != master:
		d += fmt.Sprintf(", the last check's master was %s (committed %d, queue end %d)", prev.master, prev.offset, prev.maxOff)
	default:
		d += fmt.Sprintf(", the last check saw committed %d, queue end %d", prev.offset, prev.maxOff)
		if prev.broker != r.broker {
			d += fmt.Sprintf(", %s's broker restarted since", master)
		}
	}
	if r.state != "" {
		d += "; " + r.state
	}
	return d
}

// storeState describes, for a violation's message, each running broker's CommitLog end and,
// for the master m, what it dispatched and its confirm offset.
func (c *cluster) storeState(m *simNode) string {
	var parts []string
	for _, n := range c.brokers {
		inspect(n, func(b *broker.Broker) {
			st := b.Store()
			p := fmt.Sprintf("%s log end %d", n.name, st.MaxPhyOffset())
			if n == m {
				p += fmt.Sprintf(" dispatched %d", st.DispatchedPhyOffset())
				if co := st.ConfirmOffset(); co != math.MaxInt64 {
					p += fmt.Sprintf(" confirm %d", co)
				}
			}
			parts = append(parts, p)
		})
	}
	return strings.Join(parts, ", ")
}

// undelivered are the acknowledged keys no consumer took successfully, sorted.
func (o *observations) undelivered() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k := range o.acked {
		if o.delivered[k] == 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// finalChecks runs once the cluster is healed and settled: every acknowledged message
// delivered (or, to tell a lost message from a stuck consumer, found in the master's store;
// or shadowed: its offset taken from a slave that diverged, judgeSuspects),
// the group's offsets within the data, and every replica's CommitLog the master's or a prefix
// of it.
func (c *cluster) finalChecks(o *observations) {
	o.judgeSuspects(c.slaveHolds)
	if missing := o.undelivered(); len(missing) > 0 {
		stored := c.storedKeys()
		var lost, stuck []string
		for _, k := range missing {
			if stored[k] && o.isShadowed(k) {
				o.log.addf("%s acknowledged and stored, not delivered: the group took its offset from a slave that kept another message there (allowed with fixed roles)", k)
				continue
			}
			if stored[k] {
				stuck = append(stuck, k)
			} else {
				lost = append(lost, k)
			}
		}
		where := c.whereStored(missing[:min(len(missing), 10)])
		o.mu.Lock()
		if len(lost) > 0 {
			o.violate(invLost, "%d acknowledged messages lost (not in the master's store, never consumed): %s", len(lost), o.describe(lost, where))
		}
		if len(stuck) > 0 {
			o.violate(invStuck, "%d acknowledged messages stored but never consumed: %s", len(stuck), o.describe(stuck, where))
		}
		o.mu.Unlock()
	}
	c.checkOffsets(o, &offsetWatch{last: map[int]offsetSample{}}, -1, true)
	c.checkReplicas(o)
}

// slaveHolds reports whether a broker other than the master holds the message with key at p.
func (c *cluster) slaveHolds(p pos, key string) bool {
	m := c.master()
	held := false
	for _, n := range c.brokers {
		if n == m || held {
			continue
		}
		inspect(n, func(b *broker.Broker) {
			r := b.Store().GetMessage(group, topic, int32(p.queue), p.offset, 1, 1<<20, nil)
			defer r.Release()
			if len(r.Messages) > 0 {
				k, _, _ := bytes.Cut(bodyOf(r.Messages[0]), []byte("|"))
				held = string(k) == key
			}
		})
	}
	return held
}

// describe lists up to ten keys with where they were acknowledged and, for those a listener
// asked for again, how often. o.mu must be held.
func (o *observations) describe(keys []string, where map[string][]string) string {
	var parts []string
	for _, k := range keys[:min(len(keys), 10)] {
		p := o.acked[k]
		d := fmt.Sprintf("%s (queue %d offset %d", k, p.queue, p.offset)
		if n := o.retried[k]; n > 0 {
			d += fmt.Sprintf(", asked for again %d times", n)
		}
		if w := where[k]; len(w) > 0 {
			d += ", in the master's " + strings.Join(w, " and ")
		}
		parts = append(parts, d+")")
	}
	if len(keys) > 10 {
		parts = append(parts, "...")
	}
	return strings.Join(parts, ", ")
}

// whereStored tells, for each key, the topics the master's store holds a message with it in
// (by its index): the topic itself, or on its way back to a consumer (the group's retry topic,
// a delay level's schedule topic), or given up on (the dead-letter topic).
func (c *cluster) whereStored(keys []string) map[string][]string {
	out := map[string][]string{}
	m := c.master()
	if m == nil {
		return out
	}
	topics := []string{topic, "%RETRY%" + group, "SCHEDULE_TOPIC_XXXX", "%DLQ%" + group}
	inspect(m, func(b *broker.Broker) {
		for _, k := range keys {
			for _, tp := range topics {
				r, err := b.Store().QueryMessage(tp, k, 8, 0, math.MaxInt64)
				if err == nil && len(r.Messages) > 0 {
					out[k] = append(out[k], fmt.Sprintf("%s (%d)", tp, len(r.Messages)))
				}
			}
		}
	})
	return out
}

// storedKeys are the keys of the messages of the topic in the master's store.
func (c *cluster) storedKeys() map[string]bool {
	out := map[string]bool{}
	m := c.master()
	if m == nil {
		return out
	}
	inspect(m, func(b *broker.Broker) {
		s := b.Store()
		for q := range c.cfg.Queues {
			for off := s.MinOffsetInQueue(topic, int32(q)); off < s.MaxOffsetInQueue(topic, int32(q)); {
				r := s.GetMessage(group, topic, int32(q), off, 32, 1<<20, nil)
				if len(r.Messages) == 0 {
					r.Release()
					break
				}
				for _, raw := range r.Messages {
					key, _, _ := bytes.Cut(bodyOf(raw), []byte("|"))
					out[string(key)] = true
				}
				off = r.NextBeginOffset
				r.Release()
			}
		}
	})
	return out
}

// checkReplicas compares every running broker's CommitLog with the master's: the same bytes
// where both have them (a slave may lag, never differ). A power cut in classic mode may leave
// a slave with records the master lost, which RocketMQ 4's fixed roles cannot undo: there it
// is logged, not a violation.
func (c *cluster) checkReplicas(o *observations) {
	m := c.master()
	if m == nil {
		o.mu.Lock()
		o.violate(invLiveness, "no master after the settle phase")
		o.mu.Unlock()
		return
	}
	for _, n := range c.brokers {
		if n == m {
			continue
		}
		var diff string
		inspect(m, func(mb *broker.Broker) {
			inspect(n, func(nb *broker.Broker) { diff = logDiff(mb.Store(), nb.Store()) })
		})
		if diff == "" {
			continue
		}
		o.mu.Lock()
		if c.cfg.Mode == Classic && c.cfg.PowerLoss {
			o.log.addf("replica %s differs from master %s after a power cut (allowed with fixed roles): %s", n.name, m.name, diff)
		} else {
			o.violate(invReplica, "replica %s differs from master %s: %s", n.name, m.name, diff)
		}
		o.mu.Unlock()
	}
}

// logDiff compares the CommitLog bytes two stores both have, or says where they part.
func logDiff(a, b *storage.Store) string {
	from := max(a.MinPhyOffset(), b.MinPhyOffset())
	to := min(a.MaxPhyOffset(), b.MaxPhyOffset())
	for off := from; off < to; {
		va, err := a.ReadCommitLog(off, int(min(to-off, 64<<10)))
		if err != nil || va == nil {
			return fmt.Sprintf("master cannot read its log at %d: %v", off, err)
		}
		vb, err := b.ReadCommitLog(off, len(va.Data))
		if err != nil || vb == nil {
			va.Release()
			return fmt.Sprintf("replica cannot read its log at %d: %v", off, err)
		}
		n := min(len(va.Data), len(vb.Data))
		if i := firstDiff(va.Data[:n], vb.Data[:n]); i >= 0 {
			va.Release()
			vb.Release()
			return fmt.Sprintf("their logs part at offset %d", off+int64(i))
		}
		va.Release()
		vb.Release()
		if n == 0 {
			break
		}
		off += int64(n)
	}
	return ""
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// bodyOf is a raw record's body ("" if it does not decode).
func bodyOf(raw []byte) []byte {
	var r message.Record
	if _, err := message.DecodeRecord(raw, &r, false); err != nil {
		return nil
	}
	return r.Body
}
