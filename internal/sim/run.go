package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Options tune a run beyond what its seed decides.
type Options struct {
	// Chaos is how long faults are injected, in simulated time; default DefaultChaos.
	Chaos time.Duration
	// LogTo, when set, receives every log line of the nodes and clients at LogLevel (default
	// info), for a seed under study; Result.NodeLogs keeps the last warnings either way.
	LogTo    io.Writer
	LogLevel zerolog.Level
}

// DefaultChaos is how long a seed injects faults: simulated minutes, the length the issue asks
// for, at a wall-clock cost of seconds.
const DefaultChaos = 2 * time.Minute

// Result is what one seed's run did and found.
type Result struct {
	Seed   uint64
	Config Config
	// Events is the run's log: the schedule as it was applied, the workload's totals and the
	// checks' findings; Digest is its hash, the same for every run of the seed.
	Events []string
	Digest string
	// Violations are the invariants the run broke, with what broke them; none means it passed.
	// Kinds names the invariants (lost, stuck, history, ahead, back, replica, liveness,
	// harness, setup), sorted.
	Violations []string
	Kinds      []string
	// Simulated is how much simulated time the run took, Wall how much real time.
	Simulated, Wall time.Duration
	// NodeLogs are the last lines the nodes and clients logged.
	NodeLogs []string
}

// Run runs seed's simulation in a testing/synctest bubble of its own and returns what it found.
// It fails t only for a broken harness (a node that cannot start at all, a bubble left with
// goroutines); broken invariants are the Result's Violations.
func Run(t *testing.T, seed uint64, opts Options) Result {
	if opts.Chaos <= 0 {
		opts.Chaos = DefaultChaos
	}
	var res Result
	wall := time.Now()
	var beat atomic.Int64
	stopWatch := watchdog(seed, &beat, int64((opts.Chaos + maxSettle).Seconds()))
	defer stopWatch()
	defer func() {
		// synctest.Test panics when goroutines are left in the bubble after the run closed
		// everything: name the seed before the panic goes on.
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "sim: seed %d: %v\nreplay: make sim SEED=%d\n", seed, r, seed)
			panic(r)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		var hb sync.WaitGroup
		hb.Go(func() { heartbeat(&beat, done) })
		res = run(t, seed, opts)
		close(done)
		hb.Wait()
	})
	res.Wall = time.Since(wall)
	return res
}

// stallAfter is how long the wall clock may run while the simulated clock stands still before
// the run is declared stuck. Simulated time moves whenever every goroutine of the bubble
// waits durably (on a channel, a timer, a condition); it stands still while one keeps running,
// so a goroutine looping without waiting (a busy retry loop, which outside the simulation
// would burn a core) stops it for good, and so does one waiting for a mutex whose holder waits
// for the clock.
const stallAfter = time.Minute

// heartbeat records the simulated time every simulated second, for the watchdog.
func heartbeat(beat *atomic.Int64, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		beat.Add(1)
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// maxSettle bounds the simulated time a run may take past its chaos: setting up, settling
// (restarts, the settle's wait, its checks) and closing take a few minutes; a run past it waits
// for something that never comes (a Close that never returns).
const maxSettle = 30 * time.Minute

// watchdog ends the process, naming the seed and showing every goroutine, once the run's
// heartbeat stops for stallAfter of wall time, or passes limit simulated seconds: either way
// the bubble would never finish.
func watchdog(seed uint64, beat *atomic.Int64, limit int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		last, since := beat.Load(), time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			b := beat.Load()
			if b > limit {
				fmt.Fprintf(os.Stderr, "sim: seed %d ran %d simulated seconds, past its %d: something waits forever "+
					"(a Close that does not return, a restart that never ends); replay: make sim SEED=%d\n", seed, b, limit, seed)
				pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
				os.Exit(2)
			}
			if b != last {
				last, since = b, time.Now()
				continue
			}
			if time.Since(since) < stallAfter {
				continue
			}
			fmt.Fprintf(os.Stderr, "sim: seed %d stalled: simulated time has not moved for %v of wall time: a goroutine "+
				"keeps running at one simulated instant (a loop that never waits), or waits for a mutex held by one that "+
				"waits for the clock (a mutex wait does not let a synctest bubble's clock move); replay: make sim SEED=%d\n", seed, stallAfter, seed)
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			os.Exit(2)
		}
	}()
	return func() { close(done) }
}

// runner is one run: the cluster, the workload, what they saw.
type runner struct {
	t     *testing.T
	cfg   Config
	log   *eventLog
	c     *cluster
	w     *workload
	obs   *observations
	epoch int // how many faults began or ended: offsets may go back across one
	// consumerSettled is when the last action that touched a consumer stops counting: until
	// then every check counts as after a fault (see consumerSettle).
	consumerSettled time.Duration
	watch           offsetWatch
	// wantConsumer says which consumers the schedule has running.
	wantConsumer []bool
}

func run(t *testing.T, seed uint64, opts Options) Result {
	start := time.Now()
	r := rand.New(rand.NewPCG(seed, 0x51e5eed))
	cfg := newConfig(r, opts.Chaos)
	root := simDir(t)
	log := newEventLog(root)
	log.seedf("seed %d: %s", seed, cfg)
	logs := newRing(300)
	var w io.Writer = zerolog.LevelWriterAdapter{Writer: logs}
	level := zerolog.WarnLevel
	if opts.LogTo != nil {
		level = opts.LogLevel
		w = zerolog.MultiLevelWriter(&minLevel{logs, zerolog.WarnLevel}, opts.LogTo)
	}
	zlog := zerolog.New(w).Level(level).With().Timestamp().Logger()
	c, err := newCluster(cfg, seed, root, log, zlog)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	obs := newObservations(cfg, log)
	x := &runner{t: t, cfg: cfg, log: log, c: c, obs: obs, w: newWorkload(c, obs, zlog, seed),
		watch: offsetWatch{last: map[int]offsetSample{}}, wantConsumer: make([]bool, cfg.Consumers)}
	acts := schedule(r, c)

	if err := x.setUp(); err != nil {
		obs.mu.Lock()
		obs.violate(invSetUp, "%v", err)
		obs.mu.Unlock()
	} else {
		x.chaos(acts)
		x.settle()
	}
	x.tearDown()

	for _, n := range c.nodes() {
		n.mu.Lock()
		starts := n.starts
		n.mu.Unlock()
		if n.disk != nil {
			n.disk.mu.Lock()
			injected := n.disk.injected
			n.disk.mu.Unlock()
			log.addf("%s: %d starts, %d disk faults injected", n.name, starts, injected)
		} else {
			log.addf("%s: %d starts", n.name, starts)
		}
	}
	res := Result{Seed: seed, Config: cfg, Simulated: time.Since(start), NodeLogs: logs.tail()}
	obs.mu.Lock()
	res.Violations = append([]string(nil), obs.violations...)
	res.Kinds = slices.Sorted(maps.Keys(obs.kinds))
	log.addf("sent %d, acknowledged %d, failed %d, stored without acknowledgement %d, consumed %d (%d distinct acknowledged), divergences after power cuts %d",
		obs.nSent, len(obs.acked), obs.nFailed, obs.nNotOK, obs.nConsumed, deliveredAcked(obs), obs.divergences)
	obs.mu.Unlock()
	if len(res.Kinds) == 0 {
		log.seedf("verdict: pass")
	} else {
		log.seedf("verdict: FAIL %s", strings.Join(res.Kinds, " "))
	}
	var hashed []string
	res.Events, hashed = log.snapshot()
	res.Digest = digest(hashed)
	return res
}

// simDir is the run's directory: in /dev/shm where the machine has one, since the simulated
// disk decides what is durable and a real fsync (a directory's, bbolt's commits) would only
// cost wall time; else the test's temporary directory.
func simDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "mqsim-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// minLevel passes on only the lines at min or above.
type minLevel struct {
	w   io.Writer
	min zerolog.Level
}

func (m *minLevel) Write(p []byte) (int, error) { return m.w.Write(p) }

func (m *minLevel) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l < m.min {
		return len(p), nil
	}
	return m.w.Write(p)
}

func deliveredAcked(o *observations) int {
	n := 0
	for k := range o.acked {
		if o.delivered[k] > 0 {
			n++
		}
	}
	return n
}

// setUp starts every node, creates the topic and starts the workload.
func (x *runner) setUp() error {
	c := x.c
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes()))
	// Name servers first (controllers elect among themselves meanwhile), then the brokers
	// together: in controller mode each waits for the controllers to give it a role.
	for i, n := range c.nameServers {
		wg.Go(func() { errs[i] = c.startQuiet(n, true) })
	}
	wg.Wait()
	for i, n := range c.brokers {
		wg.Go(func() { errs[len(c.nameServers)+i] = c.startQuiet(n, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := x.createTopic(); err != nil {
		return err
	}
	for i := range x.cfg.Consumers {
		x.wantConsumer[i] = true
		if err := x.w.startConsumer(i); err != nil {
			return err
		}
	}
	if err := x.w.startProducers(); err != nil {
		return err
	}
	x.log.addf("set up")
	return nil
}

// createTopic creates the topic on the master and waits until every broker has it (slaves copy
// their master's topics) and the name servers route it.
func (x *runner) createTopic() error {
	c := x.c
	var m *simNode
	if !waitFor(time.Minute, 100*time.Millisecond, func() bool { m = c.master(); return m != nil }) {
		return errors.New("no master within a minute")
	}
	tr := node.LocalTransport()
	defer tr.Close()
	h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: names.TopicAutoCreate,
		ReadQueueNums: int32(x.cfg.Queues), WriteQueueNums: int32(x.cfg.Queues), Perm: route.PermReadWrite,
		TopicFilterType: "SINGLE_TAG"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, m.addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return fmt.Errorf("create topic on %s: %w", m.name, err)
	}
	ok := waitFor(time.Minute, 100*time.Millisecond, func() bool {
		for _, n := range c.brokers {
			has := false
			inspect(n, func(b *broker.Broker) { _, has = b.Topics().Get(topic) })
			if !has {
				return false
			}
		}
		for _, ns := range c.nameServers {
			nn := ns.current()
			if nn == nil || nn.NameServer() == nil {
				return false
			}
			if _, ok := nn.NameServer().TopicRoute(topic); !ok {
				return false
			}
		}
		return true
	})
	if !ok {
		return errors.New("the topic did not reach every broker and name server within a minute")
	}
	return nil
}

// checkEvery is how often the invariants on live state are checked during the chaos.
const checkEvery = 3 * time.Second

// consumerSettle is how long after an action that touched a consumer the group's committed
// offsets may still go back. A consumer that returns from a pause or a partition, or one whose
// fellow member left or returned, commits the offsets of the queues it held at its persist
// ticks until its next rebalance tells it they are another member's, as RocketMQ's
// persistConsumerOffset does: a commit behind the new holder's is at-least-once delivery at
// work, not a fault. Its rebalance can lag its interval by several (a route or a member list
// that times out; seeds 224 and 683 saw 8 s): ten rebalance intervals.
const consumerSettle = 10 * rebalanceInterval

// chaos applies the schedule, checking the live invariants every checkEvery.
func (x *runner) chaos(acts []action) {
	x.log.begin()
	begin := time.Now()
	next := checkEvery
	for _, a := range acts {
		for next <= a.at {
			time.Sleep(time.Until(begin.Add(next)))
			if next < x.consumerSettled {
				x.epoch++
			}
			x.check()
			next += checkEvery
		}
		time.Sleep(time.Until(begin.Add(a.at)))
		x.epoch++
		if a.consumer {
			x.consumerSettled = a.at + consumerSettle
		}
		x.log.actionf(a.at, "%s", a.what)
		a.apply(x)
	}
	for next <= x.cfg.Chaos {
		time.Sleep(time.Until(begin.Add(next)))
		if next < x.consumerSettled {
			x.epoch++
		}
		x.check()
		next += checkEvery
	}
	time.Sleep(time.Until(begin.Add(x.cfg.Chaos)))
}

func (x *runner) check() {
	synctest.Wait()
	x.c.checkOffsets(x.obs, &x.watch, x.epoch, false)
	x.retryConsumers()
}

// kill is a schedule's kill; a harness failure is a violation too, since the run can no
// longer say anything about the cluster.
func (x *runner) kill(n *simNode, power bool) {
	if err := x.c.kill(n, power); err != nil {
		x.obs.mu.Lock()
		x.obs.violate(invHarness, "%v", err)
		x.obs.mu.Unlock()
	}
}

// startConsumer starts consumer i, now or, if it cannot start now (its name servers out of
// reach fail Start), at a later check.
func (x *runner) startConsumer(i int) {
	x.wantConsumer[i] = true
	if err := x.w.startConsumer(i); err != nil {
		x.log.addf("consumer c%d did not start: %v", i, err)
	}
}

// stopConsumer stops consumer i until the schedule starts it again.
func (x *runner) stopConsumer(i int) {
	x.wantConsumer[i] = false
	x.w.stopConsumer(i)
}

// retryConsumers starts the consumers that should run and could not start before.
func (x *runner) retryConsumers() {
	for i, want := range x.wantConsumer {
		if want && !x.w.running(i) {
			if err := x.w.startConsumer(i); err == nil {
				x.log.addf("consumer c%d started", i)
			}
		}
	}
}

// restartAfterFaults starts n if it is down, trying a few times before it records that n
// does not start.
func (x *runner) restartAfterFaults(n *simNode) {
	for attempt := 0; n.getState() == down; attempt++ {
		if attempt == 5 {
			n.mu.Lock()
			err := n.lastErr
			n.mu.Unlock()
			x.obs.mu.Lock()
			x.obs.violate(invLiveness, "%s does not start after the faults: %v", n.name, err)
			x.obs.mu.Unlock()
			return
		}
		if x.c.start(n) != nil {
			time.Sleep(5 * time.Second)
		}
	}
}

// settle ends the faults, brings every node and consumer back, lets the producers send a while
// longer (a healed cluster must take sends again), stops them, and waits for the consumers to
// deliver every acknowledged message; then the final checks run.
func (x *runner) settle() {
	c := x.c
	x.epoch++
	x.log.actionf(x.cfg.Chaos, "heal: faults end, every node restarts")
	c.healAll()
	for _, n := range c.brokers {
		n.disk.set(diskFaults{})
	}
	c.starts.Wait()
	// Name servers first, then the brokers together, as an operator's supervisor restarts
	// each process on its own: one at a time, a broker outside the SyncStateSet waited in
	// vain for the only member, whose turn came after its attempts (seed 428).
	for _, group := range [][]*simNode{c.nameServers, c.brokers} {
		var wg sync.WaitGroup
		for _, n := range group {
			wg.Go(func() { x.restartAfterFaults(n) })
		}
		wg.Wait()
	}
	for i := range x.cfg.Consumers {
		x.wantConsumer[i] = true
	}
	waitFor(time.Minute, time.Second, func() bool {
		x.retryConsumers()
		for i := range x.cfg.Consumers {
			if !x.w.running(i) {
				return false
			}
		}
		return true
	})
	x.obs.mu.Lock()
	before := len(x.obs.acked)
	x.obs.mu.Unlock()
	time.Sleep(30 * time.Second)
	x.w.stopProducers()
	x.obs.mu.Lock()
	after := len(x.obs.acked)
	x.obs.mu.Unlock()
	if after == before {
		x.obs.mu.Lock()
		x.obs.violate(invLiveness, "no send was acknowledged in the 30 s after the cluster healed")
		x.obs.mu.Unlock()
	}
	x.log.addf("producers stopped")
	delivered := waitFor(x.cfg.Settle, time.Second, func() bool { return len(x.obs.undelivered()) == 0 })
	if delivered {
		// One more round of offset commits before the offsets are checked.
		time.Sleep(3 * persistInterval)
	}
	synctest.Wait()
	x.log.addf("settled (every acknowledged message delivered: %v)", delivered)
	c.finalChecks(x.obs)
}

// tearDown stops the workload and every node; the bubble then has nothing left running, or
// synctest.Test fails the run.
func (x *runner) tearDown() {
	x.w.stopProducers()
	x.w.stopConsumers()
	x.c.starts.Wait()
	for _, n := range x.c.brokers {
		if err := x.c.stop(n); err != nil {
			x.log.addf("close %s: %v", n.name, err)
		}
	}
	for _, n := range x.c.nameServers {
		if err := x.c.stop(n); err != nil {
			x.log.addf("close %s: %v", n.name, err)
		}
	}
}
