package mqtest

import (
	"fmt"
	"slices"
	"time"

	"github.com/mqgo/mq"
)

// Replication periods of the cluster's brokers: milliseconds, except the slave-ack timeout of
// a SYNC_MASTER, which is generous so that a slow (race detector, 2-core CI) machine does not
// turn a send into FLUSH_SLAVE_TIMEOUT.
const (
	HAHeartbeatInterval = 100 * time.Millisecond
	HAReconnectInterval = 50 * time.Millisecond
	HATransferWait      = 10 * time.Millisecond
	HAHousekeeping      = 3 * time.Second
	HASyncFlushTimeout  = 15 * time.Second
	SlaveSyncPeriod     = 50 * time.Millisecond
)

// haSupported reports whether the node can run cfg's roles.
func haSupported(Config) error { return nil }

// roleOptions sets the HA options of broker n: masters take cfg.Role and keep their HA port
// across Restart; slaves learn their master's HA address from the name servers, as RocketMQ
// slaves do.
func (c *Cluster) roleOptions(n *Node, o *mq.Options) {
	o.HA.SendHeartbeatInterval = HAHeartbeatInterval
	o.HA.ReconnectInterval = HAReconnectInterval
	o.HA.TransferWaitInterval = HATransferWait
	o.HA.HousekeepingInterval = HAHousekeeping
	o.HA.SyncFlushTimeout = HASyncFlushTimeout
	o.HA.SlaveSyncPeriod = SlaveSyncPeriod
	if c.cfg.ControllerMode {
		c.replicatedOptions(n, o)
		return
	}
	if n.ID > 0 {
		o.Broker.Role = mq.Slave
		return
	}
	o.Broker.Role = c.cfg.Role
	o.HA.Listen = "127.0.0.1:0"
	if n.haAddr != "" && o.Listen != "127.0.0.1:0" {
		o.HA.Listen = n.haAddr // a restart on the same port keeps the HA port too
	}
}

// slavesConnected names a running master with fewer connected slaves than running slaves,
// or returns "".
func (c *Cluster) slavesConnected() string {
	for g := range c.groups {
		m := c.Master(g)
		if m == nil {
			if c.cfg.ControllerMode && slices.ContainsFunc(c.groups[g], (*Node).Running) {
				return fmt.Sprintf("group %d has running brokers but no master", g)
			}
			continue
		}
		mn := m.wiring()
		if mn == nil || mn.Broker() == nil || mn.Broker().Role() == mq.Slave {
			continue
		}
		running := 0
		for _, s := range c.slavesOf(g) {
			if s.Running() {
				running++
			}
		}
		if got := mn.HA().ConnectedSlaves(); got < running {
			return fmt.Sprintf("group %d master has %d of %d slaves connected", g, got, running)
		}
	}
	return ""
}

// WaitSlavesSynced waits until every running slave of a running master has completed a
// metadata sync (topics, consumer offsets, delay offsets, subscription groups) that began after
// the call, so it serves what its master had then. CreateTopic calls it. Call from the test's
// goroutine.
func (c *Cluster) WaitSlavesSynced() {
	c.t.Helper()
	if err := c.waitSlavesSynced(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) waitSlavesSynced() error {
	type mark struct {
		n    *Node
		from int64
	}
	var marks []mark
	for g := range c.groups {
		if m := c.Master(g); m == nil || !m.Running() {
			continue
		}
		for _, s := range c.slavesOf(g) {
			if mn := s.wiring(); mn != nil && mn.HA() != nil {
				marks = append(marks, mark{s, mn.HA().MetadataSyncs()})
			}
		}
	}
	for _, m := range marks {
		// +2: the sync running at the call may have fetched before it; the next one did not.
		ok := poll(DefaultWaitTimeout, func() bool {
			mn := m.n.wiring()
			return mn == nil || mn.HA().MetadataSyncs() >= m.from+2
		})
		if !ok {
			return fmt.Errorf("mqtest: %s did not sync its master's metadata within %v", m.n, DefaultWaitTimeout)
		}
	}
	return nil
}
