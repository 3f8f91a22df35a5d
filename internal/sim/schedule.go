package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// action is one step of a seed's schedule: at is simulated time since the chaos began.
type action struct {
	at    time.Duration
	seq   int // order among actions at the same instant
	what  string
	apply func(r *runner)
	// consumer marks an action that can leave a consumer with a stale view of its group (it
	// stops, returns, pauses, resumes, or is cut from or healed to someone).
	consumer bool
}

// schedule draws the faults of a seed: every few simulated seconds a fault begins, and each
// ends (a restart, a heal, a resume, a healthy disk) some seconds later. It is drawn whole
// before the run starts, from the seed alone, so that what the cluster does cannot change it.
func schedule(r *rand.Rand, c *cluster) []action {
	var acts []action
	isConsumer := func(name string) bool { return slices.Contains(c.clients, name) && strings.HasPrefix(name, "c") }
	add := func(at time.Duration, what string, apply func(*runner), parties ...string) {
		acts = append(acts, action{at: at, seq: len(acts), what: what, apply: apply,
			consumer: slices.ContainsFunc(parties, isConsumer)})
	}
	secs := func(lo, hi int) time.Duration {
		return time.Duration(lo*1000+r.IntN((hi-lo)*1000+1)) * time.Millisecond
	}
	everyone := c.nodes()
	names := func() []string {
		var out []string
		for _, n := range everyone {
			out = append(out, n.name)
		}
		return append(out, c.clients...)
	}()
	for t := secs(2, 8); t < c.cfg.Chaos; t += secs(1, 12) {
		switch k := r.IntN(100); {
		case k < 25: // kill a broker
			n := c.brokers[r.IntN(len(c.brokers))]
			power := c.cfg.PowerLoss && r.IntN(2) == 0
			d := secs(1, 25)
			add(t, fmt.Sprintf("kill %s power=%v for %v", n.name, power, d), func(x *runner) { x.kill(n, power) })
			add(t+d, "restart "+n.name, func(x *runner) { x.c.startLater(n) })
		case k < 33: // kill a name server (and its controller)
			n := c.nameServers[r.IntN(len(c.nameServers))]
			d := secs(1, 20)
			add(t, fmt.Sprintf("kill %s for %v", n.name, d), func(x *runner) { x.kill(n, false) })
			add(t+d, "restart "+n.name, func(x *runner) { x.c.startLater(n) })
		case k < 48: // cut two parties apart
			a := names[r.IntN(len(names))]
			b := names[r.IntN(len(names))]
			if a == b {
				continue
			}
			d := secs(1, 30)
			add(t, fmt.Sprintf("cut %s-%s for %v", a, b, d), func(x *runner) { x.c.cut(a, b) }, a, b)
			add(t+d, fmt.Sprintf("heal %s-%s", a, b), func(x *runner) { x.c.heal(a, b) }, a, b)
		case k < 58: // isolate a node from everyone
			n := everyone[r.IntN(len(everyone))]
			d := secs(1, 20)
			others := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == n.name })
			// As cutting n from each of the others: an isolated broker is one the consumers
			// cannot register with (seed 417: isolated through its crash's re-register grace,
			// it answered one member's rebalance with a list that lacked the other).
			add(t, fmt.Sprintf("isolate %s for %v", n.name, d), func(x *runner) {
				for _, o := range others {
					x.c.cut(n.name, o)
				}
			}, others...)
			add(t+d, "rejoin "+n.name, func(x *runner) {
				for _, o := range others {
					x.c.heal(n.name, o)
				}
			}, others...)
		case k < 66: // pause a node or a client
			name := names[r.IntN(len(names))]
			d := secs(1, 12)
			add(t, fmt.Sprintf("pause %s for %v", name, d), func(x *runner) { x.c.pause(name) }, name)
			add(t+d, "resume "+name, func(x *runner) { x.c.resume(name) }, name)
		case k < 82: // a bad disk
			n := c.brokers[r.IntN(len(c.brokers))]
			f := badDisk(r)
			d := secs(2, 20)
			add(t, fmt.Sprintf("disk %s %v for %v", n.name, f, d), func(x *runner) { n.disk.set(f) })
			add(t+d, "disk healthy "+n.name, func(x *runner) { n.disk.set(diskFaults{}) })
		case k < 90: // the clock jumps
			n := c.brokers[r.IntN(len(c.brokers))]
			by := time.Duration(r.IntN(3600)-1800) * time.Second
			add(t, fmt.Sprintf("clock %s jumps %v", n.name, by), func(x *runner) { n.disk.jump(by) })
		default: // a consumer leaves and comes back
			i := r.IntN(c.cfg.Consumers)
			d := secs(0, 15)
			add(t, fmt.Sprintf("consumer c%d leaves for %v", i, d), func(x *runner) { x.stopConsumer(i) }, fmt.Sprintf("c%d", i))
			add(t+d, fmt.Sprintf("consumer c%d returns", i), func(x *runner) { x.startConsumer(i) }, fmt.Sprintf("c%d", i))
		}
	}
	slices.SortStableFunc(acts, func(a, b action) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.seq - b.seq
	})
	return acts
}

// badDisk draws how a disk misbehaves: slow, failing syncs, failing or short writes, or full.
func badDisk(r *rand.Rand) diskFaults {
	var f diskFaults
	switch r.IntN(5) {
	case 0:
		f.syncDelay = time.Duration(50+r.IntN(2000)) * time.Millisecond
	case 1:
		f.syncFail = 0.1 + 0.8*r.Float64()
	case 2:
		f.writeFail = 0.1 + 0.8*r.Float64()
	case 3:
		f.shortWrite = 0.1 + 0.8*r.Float64()
	default:
		f.allocFail = 0.2 + 0.8*r.Float64()
		f.writeFail = f.allocFail
	}
	return f
}
