package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/addon"
)

// Defaults, named after RocketMQ 5's settings with their values.
const (
	// DefaultScanNotActiveBrokerInterval is ControllerConfig.scanNotActiveBrokerInterval (and
	// scanInactiveMasterInterval): how often the leader looks for brokers whose heartbeats stopped.
	DefaultScanNotActiveBrokerInterval = 5 * time.Second
	// DefaultBrokerHeartbeatTimeout is BrokerConfig.controllerHeartBeatTimeoutMills and the
	// heartbeat manager's DEFAULT_BROKER_CHANNEL_EXPIRED_TIME: a broker whose heartbeat says
	// nothing is judged dead this long after its last one.
	DefaultBrokerHeartbeatTimeout = 10 * time.Second
	// DefaultElectMasterMaxRetryCount is ControllerConfig.electMasterMaxRetryCount.
	DefaultElectMasterMaxRetryCount = 3
	// DefaultApplyTimeout bounds one proposal through Raft: RocketMQ's ControllerManager waits
	// 3 s for an election's answer.
	DefaultApplyTimeout = 3 * time.Second

	// hashicorp/raft's own defaults (raft.DefaultConfig).
	DefaultRaftHeartbeatTimeout   = time.Second
	DefaultRaftElectionTimeout    = time.Second
	DefaultRaftLeaderLeaseTimeout = 500 * time.Millisecond
	DefaultRaftCommitTimeout      = 50 * time.Millisecond
)

// Bounds on what brokers can make the controller keep. RocketMQ has none; these are far above
// any real deployment.
const (
	maxReplicasPerGroup = 64    // brokers of one broker name (protocol.MaxSyncStateSetSize)
	maxBrokerGroups     = 16384 // broker names
	maxBrokerID         = 1 << 20
	maxHeartbeatTimeout = time.Hour
	maxIdentityBytes    = 255 // cluster and broker names (names.MaxGroupBytes)
	maxAddrBytes        = 261 // a 255-byte host name, ':' and a five-digit port
	maxCheckCodeBytes   = 512
)

// Options configure a Controller. They are declared in internal/addon, which the node imports
// without pulling Raft, so that only an application that imports github.com/mqgo/mq/controller
// links this package.
type Options = addon.ControllerOptions

func withDefaults(o Options) Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ScanNotActiveBrokerInterval, DefaultScanNotActiveBrokerInterval)
	def(&o.BrokerHeartbeatTimeout, DefaultBrokerHeartbeatTimeout)
	def(&o.ApplyTimeout, DefaultApplyTimeout)
	def(&o.HeartbeatTimeout, DefaultRaftHeartbeatTimeout)
	def(&o.ElectionTimeout, DefaultRaftElectionTimeout)
	def(&o.LeaderLeaseTimeout, DefaultRaftLeaderLeaseTimeout)
	def(&o.CommitTimeout, DefaultRaftCommitTimeout)
	if o.ElectMasterMaxRetryCount <= 0 {
		o.ElectMasterMaxRetryCount = DefaultElectMasterMaxRetryCount
	}
	return o
}

func validate(o Options) error {
	if o.ID == "" {
		return errors.New("controller: ID is empty")
	}
	if len(o.Peers) == 0 {
		return errors.New("controller: no Peers")
	}
	if addr, ok := o.Peers[o.ID]; !ok {
		return fmt.Errorf("controller: Peers has no entry for ID %q", o.ID)
	} else if addr == "" {
		return fmt.Errorf("controller: Peers[%q] is empty", o.ID)
	}
	if o.RaftListen == "" {
		return errors.New("controller: RaftListen is empty")
	}
	return nil
}
