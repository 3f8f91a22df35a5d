package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
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

// Options configure a Controller.
type Options struct {
	// ID is this controller's Raft id (RocketMQ's controllerDLegerSelfId), e.g. "n0".
	ID string
	// Peers are every controller's Raft address by id, this one's included (RocketMQ's
	// controllerDLegerPeers). They bootstrap a new cluster; a controller restarted on its Dir
	// uses the configuration in its log.
	Peers map[string]string
	// RaftListen is the TCP address Raft listens on; it must be this controller's entry in
	// Peers. The remoting port that brokers use is separate (Advertise).
	RaftListen string
	// Advertise is the remoting address brokers reach this controller on. The leader records
	// it in the replicated state, so every controller can name the leader's address.
	Advertise string
	// Dir holds the Raft log and stable store (bbolt) and the snapshots. Empty keeps them in
	// memory (tests): a restart then starts empty.
	Dir string

	// ScanNotActiveBrokerInterval: default DefaultScanNotActiveBrokerInterval.
	ScanNotActiveBrokerInterval time.Duration
	// BrokerHeartbeatTimeout applies to heartbeats that carry no heartbeatTimeoutMills, and to
	// every broker when a controller becomes leader. Default DefaultBrokerHeartbeatTimeout.
	BrokerHeartbeatTimeout time.Duration
	// ElectUncleanMaster (RocketMQ's enableElectUncleanMaster, default false) lets a broker
	// outside the SyncStateSet become master when no member of the set is alive, at the cost of
	// the messages only the set had.
	ElectUncleanMaster bool
	// ElectMasterMaxRetryCount: default DefaultElectMasterMaxRetryCount.
	ElectMasterMaxRetryCount int
	// ApplyTimeout: default DefaultApplyTimeout.
	ApplyTimeout time.Duration

	// Raft's timeouts (raft.Config); defaults are hashicorp/raft's.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration

	// Secret is the deployment's cluster secret (mq.Options.ClusterSecret): when set, only
	// peers that prove it reach Raft, and only requests that prove it reach the controller.
	Secret string

	// Logger receives the controller's and Raft's logs (component "controller"); nil is silent.
	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
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

func (o Options) validate() error {
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
