package broker

import (
	"errors"
	"fmt"
	"net"
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

// Options configures a Broker. Zero values mean the defaults above.
type Options struct {
	ClusterName string
	BrokerName  string
	BrokerID    int64
	// BrokerAddr is the "ip:port" clients are told to dial and the store host written into
	// every record (RocketMQ brokerIP1 + listenPort; AdvertisedAddr forms it). Required.
	BrokerAddr string
	// BrokerRole is the broker's part in its group; "" means storage.DefaultRole(BrokerID).
	BrokerRole storage.BrokerRole
	// HA configures replication, which Run starts: the master's HA listener or the slave's
	// link to its master.
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
	// DisableNotifyConsumerIdsChanged stops every NOTIFY_CONSUMER_IDS_CHANGED, for all groups
	// (notifyConsumerIdsChangedEnable = !DisableNotifyConsumerIdsChanged; RocketMQ's default is
	// true, so the zero value notifies). A group's own NotifyConsumerIdsChangedEnable can stop
	// it for that group alone.
	DisableNotifyConsumerIdsChanged bool
	// ReregisterGrace is how long after recovering from a crash the broker answers
	// GET_CONSUMER_LIST_BY_GROUP with SYSTEM_BUSY so that the members connected before it
	// register again before anyone allocates queues (reregister.go says why). Ours; default
	// config.DefaultReregisterGrace, negative for none (RocketMQ's behaviour).
	ReregisterGrace time.Duration
	// RejectTransactionMessage answers NO_PERMISSION to transactional half messages (TRAN_MSG
	// true) instead of storing them (rejectTransactionMessage, default false).
	RejectTransactionMessage bool
	// TransactionTimeout is how old an undecided half message must be before the check
	// service asks its producer about it (transactionTimeOut, config.DefaultTransactionTimeout). A
	// message's CHECK_IMMUNITY_TIME_IN_SECONDS property replaces it for that message.
	TransactionTimeout time.Duration
	// TransactionCheckMax is how many times a half message is checked before it is moved to
	// TRANS_CHECK_MAX_TIME_TOPIC (transactionCheckMax, config.DefaultTransactionCheckMax).
	TransactionCheckMax int
	// TransactionCheckInterval is the period of the check service (transactionCheckInterval,
	// config.DefaultTransactionCheckInterval).
	TransactionCheckInterval time.Duration
	// TimerPrecision bounds how late the timer service stores a timer message in its topic:
	// never before its time, at most this much after (timerPrecisionMs, config.DefaultTimerPrecision;
	// RocketMQ's 1 s rounds down and delivers early).
	TimerPrecision time.Duration
	// TimerMaxDelay is the furthest ahead a timer message may be due; a send asking more is
	// refused with MESSAGE_ILLEGAL (timerMaxDelaySec, config.DefaultTimerMaxDelay).
	TimerMaxDelay time.Duration
	// DefaultTopicQueueNums is the queue count of TBW102 and of auto-created topics.
	DefaultTopicQueueNums int32
	// MaxMessageBytes is the largest body accepted, storage.DefaultMaxMessageBytes.
	MaxMessageBytes int
	// LongPollingDisable answers empty pulls after ShortPollingTime instead of holding them
	// until a message arrives (longPollingEnable = !LongPollingDisable).
	LongPollingDisable bool
	ShortPollingTime   time.Duration
	// MaxLongPollingSuspend caps the suspend time a pull asks for; a longer (or negative) one
	// is clamped, so every parked pull is answered by its own deadline. Ours (limits.go),
	// default config.DefaultMaxLongPollingSuspend.
	MaxLongPollingSuspend time.Duration
	// MaxHeldPullsPerConnection and MaxHeldPulls cap the pulls parked for one connection and
	// in all; over a cap a pull is answered SYSTEM_BUSY at once (pull.go says why). Ours,
	// defaults config.DefaultMaxHeldPullsPerConnection and config.DefaultMaxHeldPulls.
	MaxHeldPullsPerConnection int
	MaxHeldPulls              int
	// MaxQueueNums caps a topic's read and write queue counts and a group's retryQueueNums:
	// admin requests asking more are refused, topics loaded with more are clamped. Default
	// DefaultMaxQueueNums.
	MaxQueueNums int32
	// MaxTopics caps the topics the broker holds: a send, admin request, send-back or
	// heartbeat that would create one more is refused (a send with TOPIC_NOT_EXIST naming the
	// limit); the topics of the broker's own services are counted but never refused. Ours
	// (topic_create.go), default config.DefaultMaxTopics.
	MaxTopics int
	// AutoCreateTopicBurst and AutoCreateTopicRate bound the topics one connection's sends
	// create: a token bucket of AutoCreateTopicBurst refilled at AutoCreateTopicRate a second;
	// a send that would create a topic with the bucket empty is answered SYSTEM_BUSY. Ours,
	// defaults config.DefaultAutoCreateTopicBurst and config.DefaultAutoCreateTopicRate.
	AutoCreateTopicBurst int
	AutoCreateTopicRate  int
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

	// RegisterNameServerPeriod is how often the broker registers with the name servers
	// (registerNameServerPeriod, 30 s), clamped as RocketMQ clamps it to
	// [RegisterNameServerPeriodMin, 60 s].
	RegisterNameServerPeriod time.Duration
	// RegisterNameServerPeriodMin is both the delay from start to the first periodic
	// registration and the floor of RegisterNameServerPeriod: RocketMQ hard-codes both as 10 s
	// (config.DefaultRegisterNameServerPeriodMin), so they are one setting here, which tests lower to
	// milliseconds. The registration at start never waits.
	RegisterNameServerPeriodMin time.Duration
	// DisableForceRegister makes the periodic rounds ask every name server QUERY_DATA_VERSION
	// first and send REGISTER_BROKER (to all of them) only when one lacks the broker's current
	// DataVersion or lost the broker (forceRegister = !DisableForceRegister; RocketMQ's default
	// forceRegister true registers every round). An unchanged query refreshes the broker's
	// liveness as a registration does. The registration at start and those after a topic change
	// are always sent. A slave whose topics stay unchanged then no longer learns a moved master
	// from the periodic rounds, as with RocketMQ.
	DisableForceRegister bool

	// Periods; tests set them in milliseconds.
	FlushConsumerOffsetInterval time.Duration
	ChannelExpiredTimeout       time.Duration
	ScanConnectionInterval      time.Duration
	RebalanceLockMaxLiveTime    time.Duration

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
	if o.ClusterName == "" {
		o.ClusterName = config.DefaultClusterName
	}
	if o.BrokerName == "" {
		o.BrokerName = config.DefaultBrokerName
	}
	if o.DefaultTopicQueueNums <= 0 {
		o.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = storage.DefaultMaxMessageBytes
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
		o.RegisterNameServerPeriod = config.DefaultRegisterNameServerPeriod
	}
	if o.RegisterNameServerPeriodMin <= 0 {
		o.RegisterNameServerPeriodMin = config.DefaultRegisterNameServerPeriodMin
	}
	if o.FlushConsumerOffsetInterval <= 0 {
		o.FlushConsumerOffsetInterval = config.DefaultFlushConsumerOffsetInterval
	}
	if o.ChannelExpiredTimeout <= 0 {
		o.ChannelExpiredTimeout = config.DefaultChannelExpiredTimeout
	}
	if o.ScanConnectionInterval <= 0 {
		o.ScanConnectionInterval = DefaultScanConnectionInterval
	}
	if o.RebalanceLockMaxLiveTime <= 0 {
		o.RebalanceLockMaxLiveTime = config.DefaultRebalanceLockMaxLiveTime
	}
	if o.ReregisterGrace == 0 {
		o.ReregisterGrace = config.DefaultReregisterGrace
	}
	if o.TransactionTimeout <= 0 {
		o.TransactionTimeout = config.DefaultTransactionTimeout
	}
	if o.TransactionCheckMax <= 0 {
		o.TransactionCheckMax = config.DefaultTransactionCheckMax
	}
	if o.TransactionCheckInterval <= 0 {
		o.TransactionCheckInterval = config.DefaultTransactionCheckInterval
	}
	if o.TimerPrecision <= 0 {
		o.TimerPrecision = config.DefaultTimerPrecision
	}
	if o.TimerMaxDelay <= 0 {
		o.TimerMaxDelay = config.DefaultTimerMaxDelay
	}
	if o.BrokerRole == "" {
		o.BrokerRole = storage.DefaultRole(o.BrokerID)
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

// AdvertisedAddr is the "ip:port" a listener bound to listen is known by, for the broker's own
// address and a master's HA address alike: ip (RocketMQ brokerIP1), else the listener's host,
// else, for a wildcard listener, this machine's first non-loopback IPv4 address.
func AdvertisedAddr(listen, ip string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listener address %q: %w", listen, err)
	}
	if ip == "" {
		ip = host
		if a, err := netip.ParseAddr(host); err != nil || a.IsUnspecified() {
			ip = firstIPv4()
		}
	}
	return net.JoinHostPort(ip, port), nil
}

// firstIPv4 is this machine's first non-loopback IPv4 address, or 127.0.0.1 without one.
func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
