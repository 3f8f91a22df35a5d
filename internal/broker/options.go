package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Defaults of the broker's own settings, which the node does not declare, named after RocketMQ
// 4.x BrokerConfig settings. The defaults of the settings config declares are config's.
const (
	DefaultShortPollingTime       = time.Second      // shortPollingTimeMills
	DefaultTopicQueueNums         = 8                // defaultTopicQueueNums
	DefaultScanConnectionInterval = 10 * time.Second // ClientHousekeepingService period
)

// Options configures a Broker. Zero values mean the defaults: config's for the settings the
// node declares, which the broker takes as the node's groups, the constants above for the
// broker's own.
type Options struct {
	// Broker identifies the broker and sets its behaviour: cluster and broker names (defaults
	// config.DefaultClusterName and config.DefaultBrokerName), id, role ("" means
	// storage.DefaultRole(ID)), auto-created topics, forced registration, consumer-change
	// notices and the reregister grace after a crash (reregister.go says why; negative for
	// none). Broker.IP is the node's: BrokerAddr already carries it.
	Broker config.Broker
	// Limits bound what clients may make the broker hold; the broker reads the message size,
	// the held pulls and their suspend cap, the queue and topic caps and the topic-creation
	// bucket (limits.go, topic_create.go). The listener's limits in it are the node's.
	Limits config.Limits
	// Periods are the broker's housekeeping: registration with the name servers (clamped as
	// RocketMQ clamps it to [RegisterNameServerPeriodMin, 60 s]; the registration at start
	// never waits), offset flushes, silent clients' expiry and orderly consumers' locks. The
	// name service's periods in it are the node's.
	Periods config.Periods
	// Timers are the delay levels and timer messages' precision and furthest delay.
	Timers config.Timers
	// Transactions are half messages' refusal, check timeout, check count and check period.
	// A message's CHECK_IMMUNITY_TIME_IN_SECONDS property replaces Timeout for that message.
	Transactions config.Transactions
	// Pop are POP consumption's revive period and caps (internal/broker/pop applies its defaults).
	Pop config.Pop
	// Types are the message-type check on sends, MIXED topics and the assignment modes.
	Types config.Types

	// BrokerAddr is the "ip:port" clients are told to dial and the store host written into
	// every record (RocketMQ brokerIP1 + listenPort; AdvertisedAddr forms it). Required.
	BrokerAddr string
	// HA configures replication, which Run starts (the master's HA listener or the slave's
	// link to its master), slave reads and a slave's metadata sync, as the node declares it,
	// with two fields the node resolves first: Listen is where a master's HA listener binds
	// ("" means replication.DefaultListenAddr; the node sets the broker's host and port + 1),
	// and Secret falls back to the node's cluster secret. HA.TLS is the node's: HAConn carries
	// the TLS configs it stands for.
	HA config.HA
	// HAConn is how replication connects, as the node resolves it at start.
	HAConn HAConn
	// NameServers receive REGISTER_BROKER every Periods.RegisterNameServerPeriod.
	NameServers []string
	// Transport carries requests to name servers (the node's in-process transport with a TCP
	// fallback). Required when NameServers is not empty; owned by the caller.
	Transport remoting.Transport

	// Store configures the message store; Store.Dir is required.
	Store storage.Options

	// DisableAutoCreateSubscriptionGroup refuses consumer groups that were not created first.
	DisableAutoCreateSubscriptionGroup bool
	// DefaultTopicQueueNums is the queue count of TBW102 and of auto-created topics.
	DefaultTopicQueueNums int32
	// LongPollingDisable answers empty pulls after ShortPollingTime instead of holding them
	// until a message arrives (longPollingEnable = !LongPollingDisable).
	LongPollingDisable bool
	ShortPollingTime   time.Duration
	// AccessMessageInMemoryMaxBytes, when above 0, replaces the store's
	// AccessMessageInMemoryMaxRatio test: a pull whose last message lies more than this many
	// bytes behind the CommitLog's end counts as "far behind" (tests set a few bytes).
	AccessMessageInMemoryMaxBytes int64

	// ScanConnectionInterval is how often silent clients are looked for
	// (DefaultScanConnectionInterval); tests set milliseconds.
	ScanConnectionInterval time.Duration

	// Pool sizes: 0 means RocketMQ's defaults scaled to this machine.
	SendThreads, PullThreads, QueryThreads, AdminThreads, ClientThreads int

	// Controller mode (RocketMQ 5's enableControllerMode): the node's replicas manager decides
	// the role (BrokerRole, BrokerID 0 for the master) and restarts the broker when it
	// changes. ReplicaID is the broker's own id in its group, which its slave names to the
	// master's HA listener; MasterEpoch, on a master, is appended to the store's epoch file
	// at open (where this epoch's writes start); MinInSyncReplicas refuses sends while the
	// SyncStateSet is smaller; AllAckInSyncStateSet makes a SYNC_MASTER wait for every member.
	ControllerMode       bool
	ReplicaID            int64
	MasterEpoch          int32
	MinInSyncReplicas    int
	AllAckInSyncStateSet bool
	// ControllerMaster, on a slave in controller mode, is the broker address of the master the
	// controllers named, whose history the replicas manager compared with this store's: the
	// only one whose HA address it takes from REGISTER_BROKER answers.
	ControllerMaster string
	// MasterEpochs, on a slave in controller mode, is that master's epoch history, which the
	// service adopts when it is built, before the slave streams a byte: a slave that streamed
	// first, or went on after the epoch file failed to take the history, counted the master's
	// new epoch as the one its own history ended with (internal/sim, seed 315).
	MasterEpochs []storage.EpochEntry
	// SyncStateSet, on a master in controller mode, is the set the controllers named (broker
	// ids, its own included): with AllAckInSyncStateSet it bounds what consumers see from the
	// first send on, before the replicas manager confirms it.
	SyncStateSet []int64

	// ReadCheck, when set (the node runs ACL), decides after a request has read stored
	// messages whether its peer may see them (read_check.go); nil reads without a check.
	ReadCheck ReadCheck
	// WriteCheck, when set (the node runs ACL), decides after END_TRANSACTION has read its half
	// message whether the request may decide a message of that message's real topic (PUB), as
	// ReadCheck does for reads.
	WriteCheck ReadCheck

	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	// The node's groups carry their own defaults, config's, which take a negative value as
	// unset wherever the broker reads it.
	o.Broker.EnsureDefaults()
	o.Limits.EnsureDefaults()
	o.Periods.EnsureDefaults()
	o.Timers.EnsureDefaults()
	o.Transactions.EnsureDefaults()
	o.Types.EnsureDefaults()
	o.HA.EnsureDefaults()
	if o.DefaultTopicQueueNums <= 0 {
		o.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	if o.Store.MaxMessageBytes <= 0 {
		o.Store.MaxMessageBytes = o.Limits.MaxMessageBytes
	}
	if o.ShortPollingTime <= 0 {
		o.ShortPollingTime = DefaultShortPollingTime
	}
	if o.ScanConnectionInterval <= 0 {
		o.ScanConnectionInterval = DefaultScanConnectionInterval
	}
	if o.SendThreads <= 0 {
		o.SendThreads = 16 // group commit needs several senders waiting on one fsync
	}
	if o.PullThreads <= 0 {
		o.PullThreads = 16
	}
	if o.QueryThreads <= 0 {
		o.QueryThreads = 8
	}
	if o.AdminThreads <= 0 {
		o.AdminThreads = 16
	}
	if o.ClientThreads <= 0 {
		o.ClientThreads = 8
	}
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Store.Dir == "" {
		errs = append(errs, errors.New("broker: Store.Dir is required"))
	}
	if _, err := netip.ParseAddrPort(o.BrokerAddr); err != nil {
		errs = append(errs, fmt.Errorf("broker: BrokerAddr %q must be ip:port: %w", o.BrokerAddr, err))
	}
	if len(o.NameServers) > 0 && o.Transport == nil {
		errs = append(errs, errors.New("broker: a Transport is required to reach name servers"))
	}
	if o.AccessMessageInMemoryMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("broker: AccessMessageInMemoryMaxBytes %d is negative", o.AccessMessageInMemoryMaxBytes))
	}
	// The broker's role is always decided by now: in controller mode the node sets it before
	// it builds the broker.
	errs = append(errs, o.Broker.Validate(false), o.limitsValidate())
	return errors.Join(errs...)
}
