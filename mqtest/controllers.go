package mqtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/internal/freeport"
	"github.com/mqgo/mq/optional"
)

// Controllers and controller mode (RocketMQ 5's automatic failover): Config.Controllers name
// servers also run a controller, all members of one Raft group, and with Config.ControllerMode
// every broker group's brokers are peers whose roles the controllers decide. Their periods are
// milliseconds, so that a dead master is replaced within about a second even under -race.
const (
	// ControllerScanInterval is how often the controller leader looks for dead masters
	// (scanNotActiveBrokerInterval, 5 s in RocketMQ).
	ControllerScanInterval = 50 * time.Millisecond
	// ControllerHeartbeatTimeout is how long a broker may stay silent before the controllers
	// find it dead (controllerHeartBeatTimeoutMills, 10 s). It stays well above the brokers'
	// heartbeat period so that a slow heartbeat never fails a live master over.
	ControllerHeartbeatTimeout = time.Second
	// ControllerRaftTimeout is Raft's heartbeat and election timeout between the controllers.
	ControllerRaftTimeout = 200 * time.Millisecond
	// BrokerHeartbeatInterval is how often a broker heartbeats to every controller
	// (brokerHeartbeatInterval, 1 s).
	BrokerHeartbeatInterval = 50 * time.Millisecond
	// SyncBrokerMetadataPeriod is how often a broker asks for its group's master and
	// SyncStateSet, the fallback for a lost notification (syncBrokerMetadataPeriod, 5 s).
	SyncBrokerMetadataPeriod = 200 * time.Millisecond
	// CheckSyncStateSetPeriod is how often a master grows or shrinks its SyncStateSet
	// (checkSyncStateSetPeriod, 5 s).
	CheckSyncStateSetPeriod = 100 * time.Millisecond
	// HAMaxTimeSlaveNotCatchup is how long a slave may lag before it leaves the SyncStateSet
	// (haMaxTimeSlaveNotCatchup, 15 s).
	HAMaxTimeSlaveNotCatchup = time.Second
	// ControllerModeSyncFlushTimeout bounds how long a master of controller mode waits for its
	// SyncStateSet before answering FLUSH_SLAVE_TIMEOUT: short, so that a master partitioned
	// from its slaves says so within seconds, not HASyncFlushTimeout's fifteen.
	ControllerModeSyncFlushTimeout = 3 * time.Second
)

// isController reports whether n is a name server that runs a controller.
func (n *Node) isController() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ctlID != ""
}

// prepareControllers names the first cfg.Controllers name servers as controllers and gives
// each a Raft address: every member must know every address before the first starts, and Raft
// binds the one it is given, so the ports are probed free and released, below the ephemeral
// range where no outgoing connection or ":0" bind can take them meanwhile.
func (c *Cluster) prepareControllers(nameServers []*Node) error {
	if c.cfg.Controllers == 0 {
		return nil
	}
	addrs, err := freeAddrs(c.cfg.Controllers)
	if err != nil {
		return err
	}
	peers := make(map[string]string, len(addrs))
	for i, a := range addrs {
		id := fmt.Sprintf("c%d", i)
		peers[id] = a
		nameServers[i].ctlID, nameServers[i].raftAddr = id, a
	}
	c.ctlPeers = peers
	return nil
}

// freeAddrs returns n loopback addresses that were free a moment ago, outside the ephemeral
// port range (see internal/freeport).
func freeAddrs(n int) ([]string, error) {
	a, err := freeport.Addrs(n)
	if err != nil {
		return nil, fmt.Errorf("mqtest: probing a free port: %w", err)
	}
	return a, nil
}

// controllerOptions sets the controller options of name server n, if it runs one.
func (c *Cluster) controllerOptions(n *Node, o *mq.Options) {
	n.mu.Lock()
	id, raft := n.ctlID, n.raftAddr
	n.mu.Unlock()
	if id == "" {
		return
	}
	o.Controller.ID, o.Controller.RaftListen, o.Controller.Impl = id, raft, optional.NewController(controller.Factory{})
	o.Controller.Peers = make(map[string]string, len(c.ctlPeers))
	for k, v := range c.ctlPeers {
		o.Controller.Peers[k] = v
	}
	o.Controller.ScanInterval = ControllerScanInterval
	o.Controller.BrokerHeartbeatTimeout = ControllerHeartbeatTimeout
	o.Controller.RaftTimeout = ControllerRaftTimeout
}

// replicatedOptions sets the options of broker n in controller mode: the controllers, the
// periods, and an HA port of its own for the node's whole life, since any peer may become
// master and its slaves (and the fault injector) know it by that address.
func (c *Cluster) replicatedOptions(n *Node, o *mq.Options) {
	o.ControllerMode.Addrs = c.ControllerAddrs()
	o.ControllerMode.AllAckInSyncStateSet = c.cfg.AllAck
	o.ControllerMode.MinInSyncReplicas = c.cfg.MinInSyncReplicas
	o.ControllerMode.HeartbeatInterval = BrokerHeartbeatInterval
	o.ControllerMode.SyncBrokerMetadataPeriod = SyncBrokerMetadataPeriod
	o.ControllerMode.CheckSyncStateSetPeriod = CheckSyncStateSetPeriod
	o.ControllerMode.HAMaxTimeSlaveNotCatchup = HAMaxTimeSlaveNotCatchup
	o.HA.SyncFlushTimeout = ControllerModeSyncFlushTimeout
	o.Broker.Role = ""
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.haAddr == "" || o.Listen == "127.0.0.1:0" && n.addr != "" {
		// First start, or a restart whose port was taken: the HA port may be taken too.
		if a, err := freeAddrs(1); err == nil {
			n.haAddr = a[0]
		}
	}
	o.HA.Listen = n.haAddr
}

// ControllerNodes returns the name servers that run a controller.
func (c *Cluster) ControllerNodes() []*Node {
	var out []*Node
	for _, n := range c.nameServers {
		if n.isController() {
			out = append(out, n)
		}
	}
	return out
}

// ControllerAddrs returns the controllers' addresses (their name servers'), for brokers'
// ControllerMode.Addrs.
func (c *Cluster) ControllerAddrs() []string {
	var out []string
	for _, n := range c.ControllerNodes() {
		out = append(out, n.Addr())
	}
	return out
}

// ControllerLeader returns the running controller that leads the Raft group, or nil while none
// does (an election under way, or too few controllers running).
func (c *Cluster) ControllerLeader() *Node {
	for _, n := range c.ControllerNodes() {
		if w := n.wiring(); w != nil && controller.Of(w.Controller()) != nil && controller.Of(w.Controller()).IsLeader() {
			return n
		}
	}
	return nil
}

// GroupState is a broker group as the controllers record it.
type GroupState struct {
	MasterID          int64 // -1: none
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64 // broker ids, ascending
	SyncStateSetEpoch int32
}

// ControllerGroup returns group g as the leading controller records it; false while no
// controller leads or the group is not registered yet.
func (c *Cluster) ControllerGroup(g int) (GroupState, bool) {
	l := c.ControllerLeader()
	if l == nil {
		return GroupState{}, false
	}
	w := l.wiring()
	if w == nil {
		return GroupState{}, false
	}
	for _, grp := range controller.Of(w.Controller()).Groups() {
		if grp.BrokerName == brokerName(g) {
			return GroupState{MasterID: grp.MasterID, MasterAddr: grp.MasterAddr(), MasterEpoch: grp.MasterEpoch,
				SyncStateSet: slices.Clone(grp.SyncStateSet), SyncStateSetEpoch: grp.SyncStateSetEpoch}, true
		}
	}
	return GroupState{}, false
}

// servesAsMaster reports whether n's broker runs, as master.
func (n *Node) servesAsMaster() bool {
	w := n.wiring()
	return w != nil && w.Broker() != nil && w.Broker().IsMaster()
}

// currentMaster is group g's master in controller mode: the broker the leading controller
// names, once it serves as master; else the one broker that serves as master; else nil.
func (c *Cluster) currentMaster(g int) *Node {
	if st, ok := c.ControllerGroup(g); ok && st.MasterAddr != "" {
		for _, n := range c.groups[g] {
			if n.Addr() == st.MasterAddr && n.servesAsMaster() {
				return n
			}
		}
	}
	var found *Node
	for _, n := range c.groups[g] {
		if n.servesAsMaster() {
			if found != nil {
				return nil // two think they lead; the controllers have not settled which
			}
			found = n
		}
	}
	return found
}

// registeredID is the broker id n registers with the name servers: its own, or in controller
// mode 0 while it is master and its replica id otherwise.
func (n *Node) registeredID() int64 {
	w := n.wiring()
	if w == nil || w.Broker() == nil || w.ReplicaID() == 0 {
		return n.ID
	}
	if w.Broker().IsMaster() {
		return 0
	}
	return w.ReplicaID()
}

// CommitLogPrefix returns nil when prefix's CommitLog holds exactly the first bytes of of's:
// both running brokers, one history, as a slave that followed a master has. Otherwise it
// says where they part.
func CommitLogPrefix(prefix, of *Node) error {
	pw, ow := prefix.wiring(), of.wiring()
	if pw == nil || ow == nil || pw.Broker() == nil || ow.Broker() == nil {
		return errors.New("mqtest: CommitLogPrefix needs two running brokers")
	}
	p, o := pw.Broker().Store(), ow.Broker().Store()
	end := p.MaxPhyOffset()
	if full := o.MaxPhyOffset(); end > full {
		return fmt.Errorf("mqtest: %s's CommitLog ends at %d, beyond %s's %d", prefix, end, of, full)
	}
	for off := int64(0); off < end; {
		a, err := p.ReadCommitLog(off, 1<<20)
		if err != nil {
			return fmt.Errorf("mqtest: %s: read CommitLog at %d: %w", prefix, off, err)
		}
		b, err := o.ReadCommitLog(off, len(a.Data))
		if err != nil {
			a.Release()
			return fmt.Errorf("mqtest: %s: read CommitLog at %d: %w", of, off, err)
		}
		n := len(a.Data)
		same := n > 0 && len(b.Data) == n && bytes.Equal(a.Data, b.Data)
		a.Release()
		b.Release()
		if !same {
			return fmt.Errorf("mqtest: CommitLogs of %s and %s differ in the %d bytes at %d", prefix, of, n, off)
		}
		off += int64(n)
	}
	return nil
}
