package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing/synctest"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/internal/faults"
	"github.com/mqgo/mq/internal/memnet"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// nodeState is where a simulated node is in its life.
type nodeState int

const (
	down nodeState = iota
	starting
	up
	closing // killed: its disk image taken, its old incarnation closing
)

// simNode is one node of the simulated cluster: a name server (with a controller in
// controller mode) or a broker. It outlives kills and restarts; its directory is its disk.
type simNode struct {
	name   string // its name in the fault injector and the event log
	broker bool
	addr   string
	haAddr string // brokers
	raft   string // controllers
	dir    string
	opts   node.Options
	disk   *disk // brokers

	mu      sync.Mutex
	state   nodeState
	closed  chan struct{} // closed once a kill's close is over (state closing until then)
	n       *node.Node
	starts  int // completed starts, the first included
	lastErr error
}

func (n *simNode) current() *node.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.n
}

func (n *simNode) getState() nodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// cluster is the simulated nodes, the network between them and the fault injector.
type cluster struct {
	cfg    Config
	log    *eventLog
	zlog   zerolog.Logger
	net    *memnet.Network
	faults *faults.Faults
	root   string

	nameServers []*simNode
	brokers     []*simNode
	clients     []string // fault names of the workload's clients

	// Lock order: cluster.mu, then simNode.mu.
	mu     sync.Mutex
	cuts   map[[2]string]int // scheduled cuts by pair, counted
	pauses map[string]int
	detach map[*simNode]func() // undoes a running node's fault binding and disk hooks
	starts sync.WaitGroup      // restarts running in the background
}

func newCluster(cfg Config, seed uint64, root string, log *eventLog, zlog zerolog.Logger) (*cluster, error) {
	c := &cluster{cfg: cfg, log: log, zlog: zlog, net: memnet.New(), faults: faults.New(), root: root,
		cuts: make(map[[2]string]int), pauses: make(map[string]int), detach: make(map[*simNode]func())}
	peers := map[string]string{}
	var nsAddrs []string
	for i := range cfg.NameServers {
		n := &simNode{name: fmt.Sprintf("ns%d", i), addr: fmt.Sprintf("10.0.0.%d:9876", i+1),
			dir: filepath.Join(root, fmt.Sprintf("ns%d", i))}
		if cfg.Mode == Controlled {
			n.raft = fmt.Sprintf("10.0.0.%d:9000", i+1)
			peers[fmt.Sprintf("c%d", i)] = n.raft
		}
		nsAddrs = append(nsAddrs, n.addr)
		c.nameServers = append(c.nameServers, n)
	}
	for i, n := range c.nameServers {
		o := c.baseOptions(n)
		o.DisableBroker = true
		if cfg.Mode == Controlled {
			id := fmt.Sprintf("c%d", i)
			o.Controller = config.Controller{ID: id, Peers: peers, RaftListen: n.raft,
				Impl:         optional.NewController(controller.Factory{}),
				ScanInterval: ctlScanInterval, BrokerHeartbeatTimeout: ctlHeartbeatTimeout, RaftTimeout: ctlRaftTimeout}
		}
		n.opts = o
	}
	for i := range cfg.Brokers {
		n := &simNode{name: fmt.Sprintf("b%d", i), broker: true, addr: fmt.Sprintf("10.0.1.%d:10911", i+1),
			haAddr: fmt.Sprintf("10.0.1.%d:10912", i+1), dir: filepath.Join(root, fmt.Sprintf("b%d", i))}
		n.disk = newDisk(n.dir, seed^uint64(i+1)*0x9e3779b97f4a7c15)
		o := c.baseOptions(n)
		o.DisableNameServer = true
		o.NameServers = nsAddrs
		o.Broker.Name = "broker-a"
		o.Store.FlushDiskType = cfg.Flush
		o.Store.SegmentBytes = segmentBytes
		o.Store.ConsumeQueueFileBytes = consumeQueueFileBytes
		o.Store.MaxHashSlotNum, o.Store.MaxIndexNum = maxHashSlots, maxIndexEntries
		o.HA.SendHeartbeatInterval = haHeartbeat
		o.HA.HousekeepingInterval = haHousekeeping
		o.HA.SlaveSyncPeriod = slaveSyncPeriod
		o.HA.Listen = n.haAddr
		if cfg.Mode == Controlled {
			o.Broker.ID = int64(i + 1)
			o.ControllerMode.Addrs = nsAddrs
			o.ControllerMode.AllAckInSyncStateSet = true
			o.ControllerMode.HeartbeatInterval = brokerCtlHeartbeat
			o.ControllerMode.SyncBrokerMetadataPeriod = syncMetadataPeriod
			o.ControllerMode.CheckSyncStateSetPeriod = checkSyncStatePeriod
			o.ControllerMode.HAMaxTimeSlaveNotCatchup = slaveNotCatchup
		} else if i == 0 {
			o.Broker.Role = cfg.Role
		} else {
			o.Broker.ID = int64(i)
			o.Broker.Role = storage.Slave
			o.HA.Listen = ""
		}
		n.opts = o
		c.brokers = append(c.brokers, n)
	}
	for _, n := range c.nodes() {
		// A name server may write nothing, but its directory is its disk all the same.
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		for _, a := range []string{n.addr, n.haAddr, n.raft} {
			if a != "" {
				c.faults.Bind(a, n.name)
			}
		}
	}
	return c, nil
}

func (c *cluster) baseOptions(n *simNode) node.Options {
	// Each node's lines name it: -sim.log mixes the lines of every node, whose logs otherwise
	// look alike (seed 315 was read by the brokers' names).
	nl := c.zlog.With().Str("node", n.name).Logger()
	o := config.Options{
		Listen: n.addr,
		Logger: &nl,
		Store:  config.Store{Dir: n.dir},
		Periods: config.Periods{
			RegisterNameServerPeriod:    registerPeriod,
			RegisterNameServerPeriodMin: registerPeriod,
			FlushConsumerOffsetInterval: offsetFlushInterval,
			ScanNotActiveBrokerInterval: scanInterval,
			BrokerChannelExpiredTime:    brokerExpiry,
		},
	}
	return node.Options{Options: o}
}

func (c *cluster) nodes() []*simNode { return append(slices.Clone(c.nameServers), c.brokers...) }

func (c *cluster) nameServerAddrs() []string {
	var out []string
	for _, n := range c.nameServers {
		out = append(out, n.addr)
	}
	return out
}

func (c *cluster) sim() node.Sim { return node.Sim{Listen: c.net.Listen, Dial: c.net.Dial} }

// start starts n and waits for it: the cluster's first start, and the settle phase's.
func (c *cluster) start(n *simNode) error {
	return c.startQuiet(n, false)
}

// startQuiet is start, logging the start only if !quiet: nodes starting together finish in
// an order the event log must not depend on.
func (c *cluster) startQuiet(n *simNode, quiet bool) error {
	n.mu.Lock()
	if n.state != down {
		n.mu.Unlock()
		return nil
	}
	n.state = starting
	n.mu.Unlock()
	return c.doStart(n, quiet)
}

// startLater starts n in the background: a restart the schedule asked for, which may take a
// while (a broker in controller mode waits for the controllers) while the schedule goes on. A
// node still closing from its kill is started once it has closed.
func (c *cluster) startLater(n *simNode) {
	n.mu.Lock()
	closed := n.closed
	if n.state == up || n.state == starting {
		n.mu.Unlock()
		c.log.addf("restart %s skipped: not down", n.name)
		return
	}
	n.mu.Unlock()
	c.starts.Go(func() {
		if closed != nil {
			<-closed
		}
		for attempt := 0; attempt < restartAttempts; attempt++ {
			if attempt > 0 {
				time.Sleep(restartBackoff)
			}
			n.mu.Lock()
			if n.state != down {
				n.mu.Unlock()
				return
			}
			n.state = starting
			n.mu.Unlock()
			if c.doStart(n, false) == nil {
				return
			}
		}
	})
}

// A restart that fails (the controllers unreachable, say) is tried again a few times, as an
// operator's supervisor would.
const (
	restartAttempts = 3
	restartBackoff  = 5 * time.Second
)

func (c *cluster) doStart(n *simNode, quiet bool) error {
	var remove func()
	if n.disk != nil {
		remove = n.disk.install()
	}
	detach := node.AttachFaults(n.dir, c.faults, n.name)
	nn, err := node.StartSim(n.opts, c.sim())
	if err != nil {
		detach()
		if remove != nil {
			remove()
		}
		n.mu.Lock()
		n.state = down
		n.lastErr = err
		n.mu.Unlock()
		c.log.addf("start %s failed: %v", n.name, err)
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n.mu.Lock()
	n.n = nn
	n.state = up
	n.starts++
	n.mu.Unlock()
	if !quiet {
		c.log.addf("started %s", n.name)
	}
	c.detach[n] = func() {
		detach()
		if remove != nil {
			remove()
		}
	}
	return nil
}

func (c *cluster) clientNodes() []*simNode {
	var out []*simNode
	for _, name := range c.clients {
		out = append(out, &simNode{name: name})
	}
	return out
}

func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// kill stops n abruptly: at this instant of simulated time, with every other goroutine of the
// simulation parked, its disk is copied as a process crash (power false: the page cache
// survives) or a power cut (power true: only what was synced survives) leaves it, and the node
// is cut from everyone so that nothing it does after this instant reaches anyone. Then, in the
// background (closing takes simulated time, which the schedule must not wait for), it is
// closed and its directory replaced by the copy for its next start.
func (c *cluster) kill(n *simNode, power bool) error {
	n.mu.Lock()
	if n.state != up {
		n.mu.Unlock()
		c.log.addf("kill %s skipped: not up", n.name)
		return nil
	}
	nn := n.n
	n.n, n.state, n.closed = nil, closing, make(chan struct{})
	closed := n.closed
	n.mu.Unlock()
	synctest.Wait()
	for _, o := range append(c.nodes(), c.clientNodes()...) {
		if o.name != n.name {
			c.faults.Cut(n.name, o.name)
		}
	}
	var err error
	if n.disk != nil && !power {
		err = n.disk.writeBack()
	}
	img := n.dir + ".image"
	if err == nil {
		err = image(n.dir, img)
	}
	if err != nil {
		err = fmt.Errorf("sim: kill %s: its disk image: %w", n.name, err)
	}
	c.starts.Go(func() {
		defer close(closed)
		if err := nn.Close(); err != nil {
			c.zlog.Warn().Str("component", "sim").Str("node", n.name).Err(err).Msg("close of a killed node failed")
		}
		c.mu.Lock()
		if d := c.detach[n]; d != nil {
			d()
			delete(c.detach, n)
		}
		// The old incarnation is gone: its links may come back (but those a scheduled cut
		// holds) for the next one, which must reach name servers and controllers to start.
		for _, o := range append(c.nodes(), c.clientNodes()...) {
			if o.name != n.name && c.cuts[pair(n.name, o.name)] == 0 && o.getState() != closing {
				c.faults.Heal(n.name, o.name)
			}
		}
		c.mu.Unlock()
		swapErr := err
		if swapErr == nil {
			if swapErr = os.RemoveAll(n.dir); swapErr == nil {
				swapErr = os.Rename(img, n.dir)
			}
		}
		n.mu.Lock()
		n.state = down
		if swapErr != nil {
			n.lastErr = swapErr
		}
		n.mu.Unlock()
	})
	return err
}

// stop closes n as an operator would (the end of the run).
func (c *cluster) stop(n *simNode) error {
	n.mu.Lock()
	nn := n.n
	n.n, n.state = nil, down
	n.mu.Unlock()
	if nn == nil {
		return nil
	}
	err := nn.Close()
	c.mu.Lock()
	if d := c.detach[n]; d != nil {
		d()
		delete(c.detach, n)
	}
	c.mu.Unlock()
	return err
}

// cut and heal count scheduled cuts per pair, so that overlapping ones end when the last does.
func (c *cluster) cut(a, b string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := pair(a, b)
	c.cuts[p]++
	c.faults.Cut(a, b)
}

func (c *cluster) heal(a, b string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := pair(a, b)
	if c.cuts[p] > 0 {
		c.cuts[p]--
	}
	if c.cuts[p] == 0 && c.stateOf(a) != closing && c.stateOf(b) != closing {
		c.faults.Heal(a, b)
	}
}

// stateOf is the state of the node named name (up for a client).
func (c *cluster) stateOf(name string) nodeState {
	for _, n := range c.nodes() {
		if n.name == name {
			return n.getState()
		}
	}
	return up
}

func (c *cluster) pause(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pauses[name]++
	c.faults.Pause(name)
}

func (c *cluster) resume(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pauses[name] > 0 {
		c.pauses[name]--
	}
	if c.pauses[name] == 0 {
		c.faults.Resume(name)
	}
}

// healAll ends every scheduled cut and pause.
func (c *cluster) healAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.cuts)
	for name := range c.pauses {
		c.faults.Resume(name)
	}
	clear(c.pauses)
	for _, a := range append(c.nodes(), c.clientNodes()...) {
		for _, b := range append(c.nodes(), c.clientNodes()...) {
			if a.name < b.name && a.getState() != closing && b.getState() != closing {
				c.faults.Heal(a.name, b.name)
			}
		}
	}
}

// inspect runs f with n's broker if n is up and not swapping brokers.
func inspect(n *simNode, f func(b *broker.Broker)) bool {
	nn := n.current()
	if nn == nil {
		return false
	}
	return nn.InspectBroker(f)
}

// master is the broker serving as the group's master, or nil when none or more than one does.
func (c *cluster) master() *simNode {
	var found *simNode
	for _, n := range c.brokers {
		isMaster := false
		inspect(n, func(b *broker.Broker) { isMaster = b.IsMaster() })
		if isMaster {
			if found != nil {
				return nil
			}
			found = n
		}
	}
	return found
}

// waitFor polls cond every step of simulated time until it holds or timeout passes.
func waitFor(timeout, step time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(step)
	}
	return true
}
