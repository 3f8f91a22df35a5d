package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Defaults, named after RocketMQ 4.x BrokerConfig / MessageStoreConfig settings.
const (
	DefaultRegisterNameServerPeriod    = 30 * time.Second // registerNameServerPeriod
	DefaultFlushConsumerOffsetInterval = 5 * time.Second  // flushConsumerOffsetInterval
	DefaultChannelExpiredTimeout       = 120 * time.Second
	DefaultRebalanceLockMaxLiveTime    = 60 * time.Second // rebalance.lock.maxLiveTime
	DefaultShortPollingTime            = time.Second      // shortPollingTimeMills
	DefaultTopicQueueNums              = 8                // defaultTopicQueueNums
	DefaultMaxMessageBytes             = 4 << 20          // maxMessageSize
	DefaultSlaveReadEnable             = false
	DefaultTransactionCheckInterval    = 60 * time.Second
	DefaultScanConnectionInterval      = 10 * time.Second // ClientHousekeepingService period
)

// Options configures a Broker. Zero values mean the defaults above.
type Options struct {
	ClusterName string
	BrokerName  string
	BrokerID    int64
	// BrokerAddr is the "ip:port" clients are told to dial and the store host written into
	// every record (RocketMQ brokerIP1 + listenPort). Required.
	BrokerAddr string
	// BrokerRole is RoleAsyncMaster (default for broker id 0), RoleSyncMaster or RoleSlave
	// (default, and required, for a broker id above 0). See ha.go.
	BrokerRole Role
	// HAServerAddr is the master's advertised replication address, sent in REGISTER_BROKER so
	// slaves learn it. The node sets it (SetHAServerAddr) once the HA listener is bound.
	HAServerAddr string
	// HA configures replication: the master's HA listener or the slave's link to its master.
	HA HAOptions
	// NameServers receive REGISTER_BROKER every RegisterNameServerPeriod.
	NameServers []string
	// Transport carries requests to name servers (the node's in-process transport with a TCP
	// fallback). Required when NameServers is not empty; owned by the caller.
	Transport remoting.Transport

	// Store configures the message store; Store.Dir is required.
	Store storage.Options

	// AutoCreateTopicEnable lets a send to an unknown topic create it from TBW102
	// (autoCreateTopicEnable). Use DisableAutoCreateTopic to turn it off.
	DisableAutoCreateTopic bool
	// DisableAutoCreateSubscriptionGroup refuses consumer groups that were not created first.
	DisableAutoCreateSubscriptionGroup bool
	// DefaultTopicQueueNums is the queue count of TBW102 and of auto-created topics.
	DefaultTopicQueueNums int32
	// MaxMessageBytes is the largest body accepted.
	MaxMessageBytes int
	// LongPollingDisable answers empty pulls after ShortPollingTime instead of holding them
	// until a message arrives (longPollingEnable = !LongPollingDisable).
	LongPollingDisable bool
	ShortPollingTime   time.Duration
	// MaxLongPollingSuspend caps the suspend time a pull asks for; a longer (or negative) one
	// is clamped, so every parked pull is answered by its own deadline. Ours (limits.go),
	// default DefaultMaxLongPollingSuspend.
	MaxLongPollingSuspend time.Duration
	// MaxHeldPullsPerConnection and MaxHeldPulls cap the pulls parked for one connection and
	// in all; over a cap a pull is answered SYSTEM_BUSY at once (pull.go says why). Ours,
	// defaults DefaultMaxHeldPullsPerConnection and DefaultMaxHeldPulls.
	MaxHeldPullsPerConnection int
	MaxHeldPulls              int
	// MaxQueueNums caps a topic's read and write queue counts and a group's retryQueueNums:
	// admin requests asking more are refused, topics loaded with more are clamped. Default
	// DefaultMaxQueueNums.
	MaxQueueNums int32
	// SlaveReadEnable lets a master send lagging consumers to a slave (slaveReadEnable).
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxBytes, when above 0, replaces the store's
	// AccessMessageInMemoryMaxRatio test: a pull whose last message lies more than this many
	// bytes behind the CommitLog's end counts as "far behind" (tests set a few bytes).
	AccessMessageInMemoryMaxBytes int64
	// SlaveSyncPeriod is how often a slave copies topics, consumer offsets, delay offsets and
	// subscription groups from its master (RocketMQ SlaveSynchronize), 10 s.
	SlaveSyncPeriod time.Duration
	// DelayLevels are the 18 (or configured) delays of RocketMQ's messageDelayLevel.
	DelayLevels []time.Duration

	// Periods; tests set them in milliseconds.
	RegisterNameServerPeriod    time.Duration
	FlushConsumerOffsetInterval time.Duration
	ChannelExpiredTimeout       time.Duration
	ScanConnectionInterval      time.Duration
	RebalanceLockMaxLiveTime    time.Duration

	// Pool sizes: 0 means RocketMQ's defaults scaled to this machine.
	SendThreads, PullThreads, QueryThreads, AdminThreads, ClientThreads int

	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.ClusterName == "" {
		o.ClusterName = "DefaultCluster"
	}
	if o.BrokerName == "" {
		o.BrokerName = "broker-a"
	}
	if o.DefaultTopicQueueNums <= 0 {
		o.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Store.MaxMessageBytes <= 0 {
		o.Store.MaxMessageBytes = o.MaxMessageBytes
	}
	if o.ShortPollingTime <= 0 {
		o.ShortPollingTime = DefaultShortPollingTime
	}
	if len(o.DelayLevels) == 0 {
		o.DelayLevels = storage.DefaultDelayLevels
	}
	if o.RegisterNameServerPeriod <= 0 {
		o.RegisterNameServerPeriod = DefaultRegisterNameServerPeriod
	}
	if o.FlushConsumerOffsetInterval <= 0 {
		o.FlushConsumerOffsetInterval = DefaultFlushConsumerOffsetInterval
	}
	if o.ChannelExpiredTimeout <= 0 {
		o.ChannelExpiredTimeout = DefaultChannelExpiredTimeout
	}
	if o.ScanConnectionInterval <= 0 {
		o.ScanConnectionInterval = DefaultScanConnectionInterval
	}
	if o.RebalanceLockMaxLiveTime <= 0 {
		o.RebalanceLockMaxLiveTime = DefaultRebalanceLockMaxLiveTime
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
	return o.limitDefaults().haDefaults()
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
	if o.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("broker: BrokerID %d is negative", o.BrokerID))
	}
	errs = append(errs, o.haValidate())
	errs = append(errs, o.limitsValidate())
	errs = append(errs, o.namesValidate())
	return errors.Join(errs...)
}
