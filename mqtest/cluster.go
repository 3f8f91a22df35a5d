package mqtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/faults"
	"github.com/mqgo/mq/internal/node"
	"github.com/rs/zerolog"
)

// Broker roles of Config.Role (RocketMQ's brokerRole of the masters).
const (
	AsyncMaster = mq.AsyncMaster // the default: a send is acknowledged before slaves have it
	SyncMaster  = mq.SyncMaster  // a send is acknowledged once a slave has it
)

// Short periods the cluster's nodes run with. Registration and expiry are short so that a
// killed or restarted broker shows in routes quickly; the expiry stays well above the
// registration period so that a slow (race-detector, 2-core CI) registration never expires a
// live broker. RegisterPeriod is also the nodes' Periods.RegisterNameServerPeriodMin, the floor
// RocketMQ holds at 10 s.
const (
	RegisterPeriod       = 100 * time.Millisecond
	ScanInterval         = 100 * time.Millisecond
	BrokerExpiry         = 3 * time.Second
	OffsetFlushInterval  = 100 * time.Millisecond
	DelayLevel           = 20 * time.Millisecond // every one of the 18 delay levels
	SegmentBytes         = 8 << 20
	DefaultWaitTimeout   = 30 * time.Second // Eventually's and StartCluster's deadline
	clientRoutePeriod    = 100 * time.Millisecond
	clientHeartbeat      = 200 * time.Millisecond
	defaultConsumerDelay = 50 * time.Millisecond
)

// Config describes a cluster. Zero values mean: one name server, one broker group, no slaves,
// async masters.
type Config struct {
	// NameServers is the number of name server nodes (default 1).
	NameServers int
	// BrokerGroups is the number of broker names (broker-a, broker-b, ...), each with a master
	// (default 1).
	BrokerGroups int
	// SlavesPerGroup is the number of slaves (broker ids 1..n) of each group.
	SlavesPerGroup int
	// Role is AsyncMaster (default) or SyncMaster.
	Role mq.BrokerRole
	// ClusterName defaults to mq.DefaultClusterName.
	ClusterName string
	// Options, when set, edits the options of every node before it starts (after mqtest set
	// its own). It may be called again for a node that restarts. Tell nodes apart by
	// DisableBroker (name servers), Broker.Name and Broker.ID; for example HA.SlaveReadEnable
	// and Store.AccessMessageInMemoryMaxBytes make masters send lagging readers to their slaves.
	Options func(*mq.Options)
	// Controllers is the number of name servers that also run a controller (RocketMQ 5's
	// enableControllerInNamesrv), all members of one Raft group on free loopback ports; the
	// cluster has at least this many name servers, the first ones. 0: none.
	Controllers int
	// ControllerMode runs every broker in controller mode against the controllers: a group's
	// 1+SlavesPerGroup brokers are peers, the controllers elect its master and replace it when
	// it dies, and Role is ignored. AllAck and MinInSyncReplicas are the brokers'
	// mq.Options.ControllerMode.AllAckInSyncStateSet (a send is acknowledged once every member
	// of the SyncStateSet has it) and MinInSyncReplicas (sends are refused while the set is
	// smaller; default 1).
	ControllerMode    bool
	AllAck            bool
	MinInSyncReplicas int
	// InProcess makes the helpers' clients (NewProducer, NewPushConsumer, NewPullConsumer)
	// reach the nodes in-process, without sockets; by default they use TCP like any client.
	InProcess bool
	// Logger receives the nodes' and the helpers' clients' logs. Default: the test's log
	// (shown only on failure) at warn level.
	Logger *zerolog.Logger
}

// Node is one node of the cluster: a name server, a master or a slave. It survives Kill and
// Restart; Current is the running mq.Node, or nil while the node is down.
type Node struct {
	// Group is the broker group (-1 for a name server), ID the broker id (0 for a master). In
	// controller mode ID is the broker's own id in its group (1, 2, ...), whatever its role.
	Group int
	ID    int64
	// BrokerName is the group's broker name ("" for a name server).
	BrokerName string

	mu     sync.Mutex
	n      *mq.Node
	opts   mq.Options
	addr   string // last listen address, reused by Restart
	haAddr string // a master's last HA listen address, reused by Restart; any controller-mode broker's own

	ctlID    string // controller id of a name server that runs one, else ""
	raftAddr string // its Raft address, the same across restarts

	faultID     string // name in the cluster's fault injector (faults.go)
	faultDir    string // store directory attached to it
	faultDetach func()
}

// Current returns the running node, or nil while it is killed.
func (n *Node) Current() *mq.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.n
}

// Addr is the node's listen address: the name server's, or the broker's. It stays the last
// address while the node is down.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// wiring is the running node's internals (broker, route table), or nil while it is down: the
// cluster's waits read them, and mq.Node does not offer them.
func (n *Node) wiring() *node.Node { return node.Of(n.Current()) }

// Running reports whether the node is up.
func (n *Node) Running() bool { return n.Current() != nil }

func (n *Node) isNameServer() bool { return n.Group < 0 }

func (n *Node) String() string {
	if n.isNameServer() {
		return "namesrv@" + n.Addr()
	}
	return fmt.Sprintf("%s/%d@%s", n.BrokerName, n.ID, n.Addr())
}

// Cluster is a running in-process cluster. Its methods are safe for concurrent use, except
// that the ones taking a testing.TB must run on the test's goroutine.
type Cluster struct {
	t   testing.TB
	cfg Config
	log zerolog.Logger

	nameServers []*Node
	groups      [][]*Node // groups[g][0] is the master, then the slaves; peers in controller mode
	faults      *faults.Faults
	ctlPeers    map[string]string // controller id -> Raft address
}

// StartCluster starts cfg's nodes, waits until every broker is registered with every name
// server and every slave is connected to its master, and registers t.Cleanup to close them.
// It fails the test on error.
func StartCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	c, err := startCluster(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startCluster(t testing.TB, cfg Config) (*Cluster, error) {
	if cfg.NameServers <= 0 {
		cfg.NameServers = 1
	}
	cfg.NameServers = max(cfg.NameServers, cfg.Controllers)
	if cfg.BrokerGroups <= 0 {
		cfg.BrokerGroups = 1
	}
	if cfg.Role == "" {
		cfg.Role = AsyncMaster
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = mq.DefaultClusterName
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	c := &Cluster{t: t, cfg: cfg, faults: faults.New()}
	if cfg.Logger != nil {
		c.log = *cfg.Logger
	} else {
		c.log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	}
	// TempDir removes its directories in a cleanup registered at its first call; cleanups run
	// last-in first-out, so make that call before registering closeAll, or the directories
	// would go while the nodes still write to them.
	_ = t.TempDir()
	t.Cleanup(c.closeAll)
	for range cfg.NameServers {
		c.nameServers = append(c.nameServers, &Node{Group: -1})
	}
	if err := c.prepareControllers(c.nameServers); err != nil {
		return nil, err
	}
	for _, n := range c.nameServers {
		if err := c.startNode(n, "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	for g := range cfg.BrokerGroups {
		var group []*Node
		for id := range int64(cfg.SlavesPerGroup) + 1 {
			n := &Node{Group: g, ID: id, BrokerName: brokerName(g)}
			if cfg.ControllerMode {
				n.ID = id + 1 // peers with their own ids, the first one the controllers' first
			}
			group = append(group, n)
		}
		c.groups = append(c.groups, group)
		for _, n := range group {
			if err := c.startNode(n, "127.0.0.1:0"); err != nil {
				return nil, err
			}
		}
	}
	if err := c.waitRegistered(DefaultWaitTimeout); err != nil {
		return nil, err
	}
	return c, nil
}

func validate(cfg Config) error {
	var errs []error
	if cfg.Role != AsyncMaster && cfg.Role != SyncMaster {
		errs = append(errs, fmt.Errorf("mqtest: Role %q is neither %s nor %s", cfg.Role, AsyncMaster, SyncMaster))
	}
	if cfg.SlavesPerGroup < 0 {
		errs = append(errs, fmt.Errorf("mqtest: SlavesPerGroup %d is negative", cfg.SlavesPerGroup))
	}
	if cfg.Controllers < 0 {
		errs = append(errs, fmt.Errorf("mqtest: Controllers %d is negative", cfg.Controllers))
	}
	if cfg.ControllerMode && cfg.Controllers <= 0 {
		errs = append(errs, errors.New("mqtest: ControllerMode needs Controllers"))
	}
	if cfg.MinInSyncReplicas < 0 || cfg.MinInSyncReplicas > cfg.SlavesPerGroup+1 {
		errs = append(errs, fmt.Errorf("mqtest: MinInSyncReplicas %d is not between 0 and the group's %d brokers", cfg.MinInSyncReplicas, cfg.SlavesPerGroup+1))
	}
	if err := haSupported(cfg); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func brokerName(g int) string {
	if g < 26 {
		return fmt.Sprintf("broker-%c", 'a'+g)
	}
	return fmt.Sprintf("broker-%d", g)
}

// options builds n's node options for listen.
func (c *Cluster) options(n *Node, listen string) mq.Options {
	levels := make([]time.Duration, 18)
	for i := range levels {
		levels[i] = DelayLevel
	}
	o := mq.Options{
		Listen: listen,
		Logger: &c.log,
		Broker: config.Broker{ClusterName: c.cfg.ClusterName},
		Store:  config.Store{Dir: n.opts.Store.Dir, SegmentBytes: SegmentBytes},
		Limits: config.Limits{EventLoops: 1, ServerWorkerThreads: 4},
		Periods: config.Periods{
			RegisterNameServerPeriod:    RegisterPeriod,
			RegisterNameServerPeriodMin: RegisterPeriod,
			FlushConsumerOffsetInterval: OffsetFlushInterval,
			ScanNotActiveBrokerInterval: ScanInterval,
			BrokerChannelExpiredTime:    BrokerExpiry,
			ClientChannelExpiredTime:    10 * time.Second,
			RebalanceLockMaxLiveTime:    3 * time.Second,
		},
		Timers: config.Timers{DelayLevels: levels},
	}
	if o.Store.Dir == "" {
		o.Store.Dir = c.t.TempDir()
	}
	if n.isNameServer() {
		o.DisableBroker = true
		c.controllerOptions(n, &o)
	} else {
		o.DisableNameServer = true
		o.Broker.Name = n.BrokerName
		o.Broker.ID = n.ID
		o.NameServers = c.NameServerAddrs()
		c.roleOptions(n, &o)
	}
	if c.cfg.Options != nil {
		c.cfg.Options(&o)
	}
	return o
}

// startNode starts n listening on listen.
func (c *Cluster) startNode(n *Node, listen string) error {
	o := c.options(n, listen)
	c.bindFaults(n, o.Store.Dir)
	mn, err := mq.StartNode(o)
	if err != nil {
		return fmt.Errorf("mqtest: start %s: %w", n, err)
	}
	n.mu.Lock()
	n.n, n.opts = mn, o
	if n.isNameServer() {
		n.addr = mn.NameServerAddr()
	} else {
		n.addr = mn.BrokerAddr()
		if ha := mn.HAAddr(); ha != "" {
			n.haAddr = ha // a controller-mode slave has none now, but keeps its own for mastership
		}
	}
	n.mu.Unlock()
	c.bindAddrs(n)
	return nil
}

// NameServerAddrs returns the name servers' addresses, for clients' WithNameServers.
func (c *Cluster) NameServerAddrs() []string {
	out := make([]string, 0, len(c.nameServers))
	for _, n := range c.nameServers {
		out = append(out, n.Addr())
	}
	return out
}

// NameServerNodes returns the name server nodes.
func (c *Cluster) NameServerNodes() []*Node { return append([]*Node(nil), c.nameServers...) }

// Group returns group g's nodes: the master first, then its slaves by broker id; in
// controller mode, its peers in the order they first started, whatever their roles now.
func (c *Cluster) Group(g int) []*Node { return append([]*Node(nil), c.groups[g]...) }

// Master returns group g's master node. In controller mode it is the current master: the
// broker the leading controller names once it serves as master, else the one broker serving
// as master; nil while there is none (an election or a role change under way).
func (c *Cluster) Master(g int) *Node {
	if c.cfg.ControllerMode {
		return c.currentMaster(g)
	}
	return c.groups[g][0]
}

// Masters returns every group's master node (in controller mode, those that have one).
func (c *Cluster) Masters() []*Node {
	out := make([]*Node, 0, len(c.groups))
	for g := range c.groups {
		if m := c.Master(g); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Slaves returns every slave node, group by group: in controller mode, every broker that is
// not its group's current master.
func (c *Cluster) Slaves() []*Node {
	var out []*Node
	for g := range c.groups {
		out = append(out, c.slavesOf(g)...)
	}
	return out
}

// slavesOf is group g's nodes but its master.
func (c *Cluster) slavesOf(g int) []*Node {
	m := c.Master(g)
	var out []*Node
	for _, n := range c.groups[g] {
		if n != m {
			out = append(out, n)
		}
	}
	return out
}

// Brokers returns every broker node, group by group, master first.
func (c *Cluster) Brokers() []*Node {
	var out []*Node
	for _, g := range c.groups {
		out = append(out, g...)
	}
	return out
}

// Kill closes n (its store stays for Restart). Killing a node that is down does nothing.
func (c *Cluster) Kill(n *Node) error {
	n.mu.Lock()
	mn := n.n
	n.n = nil
	n.mu.Unlock()
	if mn == nil {
		return nil
	}
	return mn.Close()
}

// KillMaster closes group g's master node; in controller mode, the current one.
func (c *Cluster) KillMaster(g int) error {
	m := c.Master(g)
	if m == nil {
		return fmt.Errorf("mqtest: group %d has no master now", g)
	}
	return c.Kill(m)
}

// Restart reopens a killed node on its store and, if it is still free, its port; a broker
// whose port was taken meanwhile gets a new one (a name server needs its port: brokers and
// clients know it by address; a controller keeps its Raft port and log too); a master keeps its
// HA port the same way, and slaves learn a new one from the name servers. In controller mode a
// broker rejoins its group with its id, in the role the controllers give it: a restarted old
// master follows the new one. It returns once every running broker is registered with every
// running name server and every running slave is connected to its running master. Restarting
// a running node kills it first.
func (c *Cluster) Restart(n *Node) error {
	if err := c.Kill(n); err != nil {
		return err
	}
	err := c.startNode(n, n.Addr())
	if err != nil && !n.isNameServer() {
		// Most likely the port was taken meanwhile; any other cause fails again below.
		err = c.startNode(n, "127.0.0.1:0")
	}
	if err != nil {
		return err
	}
	return c.waitRegistered(DefaultWaitTimeout)
}

// waitRegistered waits until every running broker is registered, at its current address, with
// every running name server, and every running slave is connected to its running master.
func (c *Cluster) waitRegistered(timeout time.Duration) error {
	var missing string
	ok := poll(timeout, func() bool {
		missing = c.unregistered()
		if missing == "" {
			missing = c.slavesConnected()
		}
		return missing == ""
	})
	if !ok {
		return fmt.Errorf("mqtest: not registered after %v: %s", timeout, missing)
	}
	return nil
}

// unregistered names a running broker some running name server does not know at its address,
// or returns "".
func (c *Cluster) unregistered() string {
	for _, ns := range c.nameServers {
		nsn := ns.wiring()
		if nsn == nil {
			continue
		}
		info := nsn.NameServer().ClusterInfo()
		for _, b := range c.Brokers() {
			if !b.Running() {
				continue
			}
			bd, ok := info.BrokerAddrTable[b.BrokerName]
			if !ok || bd.BrokerAddrs[b.registeredID()] != b.Addr() {
				return fmt.Sprintf("%s on %s", b, ns)
			}
		}
	}
	return ""
}

// closeAll closes every node: slaves, masters, then name servers, so nothing reconnects to
// a node already gone.
func (c *Cluster) closeAll() {
	// Brokers() last catches a controller-mode master that changed between the two calls.
	for _, n := range append(append(c.Slaves(), c.Masters()...), c.Brokers()...) {
		if err := c.Kill(n); err != nil {
			c.t.Errorf("mqtest: close %s: %v", n, err)
		}
	}
	for _, n := range c.nameServers {
		if err := c.Kill(n); err != nil {
			c.t.Errorf("mqtest: close %s: %v", n, err)
		}
	}
	for _, n := range append(c.NameServerNodes(), c.Brokers()...) {
		n.mu.Lock()
		if n.faultDetach != nil {
			n.faultDetach()
		}
		n.mu.Unlock()
	}
}

// Eventually polls cond (every few milliseconds) until it holds, and fails the test with what
// if it does not within DefaultWaitTimeout. Call it from the test's goroutine.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !poll(DefaultWaitTimeout, cond) {
		t.Fatalf("mqtest: timed out after %v waiting for %s", DefaultWaitTimeout, what)
	}
}

// poll runs cond until it holds or timeout passes.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // polling interval, not synchronization: cond decides
		wait = min(2*wait, 20*time.Millisecond)
	}
	return true
}
