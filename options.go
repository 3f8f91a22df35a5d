package mq

import (
	"crypto/tls"
	"time"

	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Options configures a Node. The zero value of every field means its default, so
// mq.StartNode(mq.Options{}) runs a name service and a broker on DefaultListen.
type Options struct {
	// Listen is the "host:port" the node serves the name service and the broker on; port 0
	// picks a free port (see Node.Addr). Default DefaultListen.
	Listen string
	// NameServerListen and BrokerListen, when set, serve the two roles on separate ports
	// instead of sharing Listen.
	NameServerListen string
	BrokerListen     string
	// DisableNameServer and DisableBroker leave a role out of this node.
	DisableNameServer bool
	DisableBroker     bool

	// NameServers are the name services a broker registers with. Default: this node's own.
	NameServers []string
	// StoreDir holds the broker's CommitLog, ConsumeQueues and metadata, and the name
	// service's KV config. Default DefaultStoreDir, relative to the working directory.
	StoreDir string
	// FlushDiskType is AsyncFlush (default) or SyncFlush.
	FlushDiskType FlushDiskType
	// ClusterName, BrokerName and BrokerID identify the broker (id 0 is the master).
	ClusterName string
	BrokerName  string
	BrokerID    int64
	// BrokerIP is the address clients are told to dial and the store host of every message
	// (RocketMQ brokerIP1). Default: the listener's host, or, when that is a wildcard, the
	// first non-loopback IPv4 address of this machine.
	BrokerIP string
	// DisableAutoCreateTopic refuses sends to unknown topics instead of creating them from
	// TBW102 (autoCreateTopicEnable, on by default for an embedded node).
	DisableAutoCreateTopic bool
	// SegmentBytes is the CommitLog segment size (mappedFileSizeCommitLog). Default 1 GiB;
	// tests use far less.
	SegmentBytes int64
	// FileReservedTime is how long CommitLog segments are kept. Default 72 h.
	FileReservedTime time.Duration
	// DelayLevels are the delays of levels 1..n (messageDelayLevel). Default RocketMQ's 18,
	// 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
	DelayLevels []time.Duration
	// RegisterNameServerPeriod is how often the broker registers with the name servers
	// (registerNameServerPeriod). Default 30 s; as in RocketMQ it is clamped to
	// [RegisterNameServerPeriodMin, 60 s], so a name server never expires a live broker.
	RegisterNameServerPeriod time.Duration
	// RegisterNameServerPeriodMin is the delay from start to the first periodic registration
	// and the floor of RegisterNameServerPeriod: RocketMQ hard-codes both as 10 s (the
	// default); tests lower it to register in milliseconds. The registration at start and
	// those after a topic change never wait.
	RegisterNameServerPeriodMin time.Duration
	// DisableForceRegister makes periodic registrations ask each name server first
	// (QUERY_DATA_VERSION) and send the whole topic table only when one lacks the broker's
	// current topics or lost the broker, e.g. by restarting (RocketMQ forceRegister = false;
	// its default, true, registers every period). It saves the name servers decoding a large
	// table every period; a slave whose topics stay unchanged then learns a moved master only
	// when its topics change, as with RocketMQ.
	DisableForceRegister bool
	// DisableNotifyConsumerIdsChanged stops every NOTIFY_CONSUMER_IDS_CHANGED the broker would
	// send when a group's members change (RocketMQ notifyConsumerIdsChangedEnable, default
	// true); consumers then see changes at their next periodic rebalance.
	DisableNotifyConsumerIdsChanged bool
	// RejectTransactionMessage answers NO_PERMISSION to transactional half messages instead of
	// storing them (RocketMQ rejectTransactionMessage, default false).
	RejectTransactionMessage bool
	// TransactionTimeout is how long a half message waits for its producer's decision before
	// the broker asks the producer group (CHECK_TRANSACTION_STATE; RocketMQ transactionTimeOut,
	// default 6 s). A message's CHECK_IMMUNITY_TIME_IN_SECONDS property replaces it.
	TransactionTimeout time.Duration
	// TransactionCheckMax is how many checks an undecided half message gets before it moves to
	// TRANS_CHECK_MAX_TIME_TOPIC (RocketMQ transactionCheckMax, default 15).
	TransactionCheckMax int
	// TransactionCheckInterval is how often the broker looks for half messages to check
	// (RocketMQ transactionCheckInterval, default 60 s).
	TransactionCheckInterval time.Duration
	// TimerPrecision bounds how late a timer message (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
	// TIMER_DELAY_MS; the official client's WithDelayTimestamp) is delivered: never early, at
	// most this much after its time (RocketMQ timerPrecisionMs, default 1 s and rounding down,
	// so up to 1 s early; ours default 100 ms).
	TimerPrecision time.Duration
	// TimerMaxDelay is the furthest ahead a timer message may be due; further is refused with
	// MESSAGE_ILLEGAL (RocketMQ timerMaxDelaySec, default 3 days).
	TimerMaxDelay time.Duration
	// ReregisterGrace is how long a broker that recovered from a crash answers consumers'
	// member-list requests SYSTEM_BUSY, so the members connected before the crash register
	// again before anyone allocates queues from offsets the crash took back (ours; RocketMQ
	// answers at once). Default 1 s; negative for none. A clean start has no grace.
	ReregisterGrace time.Duration
	// FlushConsumerOffsetInterval is how often consumer offsets are persisted. Default 5 s.
	FlushConsumerOffsetInterval time.Duration
	// ClientChannelExpiredTime drops producers and consumers that sent no heartbeat for this
	// long. Default 120 s.
	ClientChannelExpiredTime time.Duration
	// RebalanceLockMaxLiveTime expires orderly consumers' queue locks not renewed for this
	// long. Default 60 s.
	RebalanceLockMaxLiveTime time.Duration

	// ScanNotActiveBrokerInterval and BrokerChannelExpiredTime drive the name service's expiry
	// of silent brokers. Defaults 10 s and 120 s; tests use milliseconds.
	ScanNotActiveBrokerInterval time.Duration
	BrokerChannelExpiredTime    time.Duration
	// ChannelMaxIdleTime closes connections idle this long. Default 120 s.
	ChannelMaxIdleTime time.Duration
	// MaxFrameBytes is the largest frame accepted, its length word included. Default 16 MiB.
	MaxFrameBytes int
	// MaxMessageBytes is the largest message body a send may carry (RocketMQ maxMessageSize,
	// 4 MiB); a larger one is refused with MESSAGE_ILLEGAL.
	MaxMessageBytes int
	// MaxHeaderBytes and MaxExtFields bound each request's header; a header over either closes
	// its connection. Defaults remoting.DefaultMaxHeaderBytes (64 KiB) and
	// remoting.DefaultMaxExtFields (256); RocketMQ has no such limits.
	MaxHeaderBytes int
	MaxExtFields   int
	// MaxPendingWriteBytes is how many bytes of responses one connection may leave unread before
	// the node stops reading its requests until it catches up. Default
	// remoting.DefaultMaxPendingWriteBytes (4 MiB).
	MaxPendingWriteBytes int
	// MaxConnections is how many connections each listener keeps open at once; more are closed
	// as they arrive. Default remoting.DefaultMaxConnections (10,000); RocketMQ has no such limit.
	MaxConnections int
	// ServerWorkerThreads and ServerQueueCapacity size the name service's request pool (the
	// broker's pools have sizes of their own, docs/rocketmq-differences.md).
	ServerWorkerThreads int
	ServerQueueCapacity int
	// EventLoops is the number of gnet event loops. Default: one per CPU.
	EventLoops int
	// StartTimeout bounds StartNode's wait for each listener and for the broker to be ready
	// (a master's HA listener bound, the first registration answered). Default 10 s.
	StartTimeout time.Duration

	// BrokerRole is AsyncMaster (default for broker id 0), SyncMaster, or Slave (default, and
	// required, for a broker id above 0; a Slave with broker id 0 gets id 1).
	BrokerRole BrokerRole
	// HAListen is a master's replication listener "host:port" (haListenPort). Default: the
	// broker listener's host and port + 1, or port 0 (a free port) when the broker listens on
	// port 0. The bound address is advertised to slaves through the name service.
	HAListen string
	// MasterHA is a slave's master replication address "host:port" (haMasterAddress). Default:
	// learned from the name service's REGISTER_BROKER answers.
	MasterHA string
	// HATransferBatchBytes (haTransferBatchSize, 32 KiB), HAHousekeepingInterval
	// (haHousekeepingInterval, 20 s), HASendHeartbeatInterval (haSendHeartbeatInterval, 5 s),
	// HASlaveFallBehindMax (haSlaveFallbehindMax, 256 MiB), HASyncFlushTimeout (how long a
	// SyncMaster send waits for a slave, syncFlushTimeout, 5 s), HATransferWaitInterval (100 ms)
	// and HAReconnectInterval (5 s) tune replication; tests use milliseconds.
	HATransferBatchBytes    int
	HAHousekeepingInterval  time.Duration
	HASendHeartbeatInterval time.Duration
	HASlaveFallBehindMax    int64
	HASyncFlushTimeout      time.Duration
	HATransferWaitInterval  time.Duration
	HAReconnectInterval     time.Duration
	// HASecret, when set (at least 16 bytes), is a secret shared by a master and its slaves:
	// each side proves it knows it before any CommitLog byte crosses the HA connection, so a
	// peer without it gets nothing and cannot acknowledge SyncMaster sends. Give every node
	// of the group the same one. Empty speaks RocketMQ's protocol, which any peer that can
	// reach the HA port may follow: then keep that port off untrusted networks.
	HASecret string
	// ClusterSecret, when set (at least 16 bytes), is shared by every process of one
	// deployment: name servers, controllers and brokers. Each proves it on the requests only
	// peers make (broker registration and unregistration, every controller code, the
	// controllers' Raft traffic), so a stranger who reaches those ports cannot point routes at
	// itself, take over a broker group or cut a store. The name service's other writes (topic
	// deletion, write permission, KV config) need it too, or with ACL on an admin account;
	// operators' tools take it (admin.Options.ClusterSecret, mqadmin -cluster-secret).
	// Replication takes it when HASecret is empty. Empty speaks RocketMQ's protocol, which
	// trusts whoever reaches those ports: then keep the name-service, controller and HA ports
	// off untrusted networks.
	ClusterSecret string
	// HATLS makes replication TLS (ours; RocketMQ's HA connection is plaintext): a master's
	// HA listener presents TLSConfig's certificate, a slave dials its master trusting
	// TLSClientConfig's roots (default: the system's). Give it to every node of the group.
	HATLS bool
	// SlaveReadEnable lets the master send consumers that fall far behind to the slave
	// (slaveReadEnable), and lets a slave keep serving the consumers it was sent.
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxRatio is the share of physical memory, in percent, a reader may
	// lag behind the CommitLog's end before it counts as far behind (40).
	AccessMessageInMemoryMaxRatio int
	// AccessMessageInMemoryMaxBytes, when above 0, replaces the ratio with a byte count, so
	// tests can make a reader "far behind" with a few messages.
	AccessMessageInMemoryMaxBytes int64
	// SlaveSyncPeriod is how often a slave copies topics, consumer offsets, delay offsets and
	// subscription groups from its master (RocketMQ: 10 s).
	SlaveSyncPeriod time.Duration
	// MaxLongPollingSuspend caps the time a consumer's pull may be held waiting for messages;
	// a pull asking longer (clients ask 15-30 s) is held this long. Default 60 s.
	MaxLongPollingSuspend time.Duration
	// MaxHeldPullsPerConnection and MaxHeldPulls cap the pulls held waiting for messages, for
	// one connection and in all; a pull over a cap is answered SYSTEM_BUSY at once and the
	// client retries it a few seconds later. Defaults 4096 and 65,536.
	MaxHeldPullsPerConnection int
	MaxHeldPulls              int
	// MaxQueueNums caps a topic's read and write queue counts and a group's retryQueueNums;
	// admin requests asking more are refused, and this node's name service clamps the counts
	// brokers register to it. Default 1024.
	MaxQueueNums int32
	// MaxTopics caps the topics the broker holds (RocketMQ has no cap): a send that would
	// create one more is answered TOPIC_NOT_EXIST with a remark naming the limit, and admin
	// requests, send-backs and heartbeats that would are refused too; the broker's own system
	// topics are never refused. Default 5,000.
	MaxTopics int
	// AutoCreateTopicBurst and AutoCreateTopicRate bound the topics one connection's sends
	// may create (autoCreateTopicEnable on): bursts of AutoCreateTopicBurst, then
	// AutoCreateTopicRate a second. A send past them is answered SYSTEM_BUSY with a remark
	// naming them and the connection stays open. Defaults 1,000 and 100.
	AutoCreateTopicBurst int
	AutoCreateTopicRate  int

	// ACL turns on RocketMQ's plain ACL (aclEnable) with these accounts: every broker request
	// must then be signed by an account allowed to make it (or come from a white-listed
	// address), and the name service's writes need an admin account. Requests that fail are
	// answered NO_PERMISSION with a remark naming what was missing. nil with ACLFile empty
	// leaves ACL off (RocketMQ's default). Node.UpdateACL replaces it while running.
	ACL *ACLConfig
	// ACLFile reads the ACL from RocketMQ's plain_acl.yml instead, and reloads it when the file
	// changes (checked every ACLWatchInterval, default DefaultACLWatchInterval, 500 ms, as
	// RocketMQ's FileWatchService); a changed file that does not parse or validate is logged
	// and the accounts in effect stay. Set it to aclfile.Watch(path) from package
	// github.com/mqgo/mq/aclfile, which holds the YAML parser an application that writes its
	// accounts in Go then does not link.
	ACLFile          optional.ACLFile
	ACLWatchInterval time.Duration
	// Credentials is the account the broker signs its own requests to other nodes with: its
	// registrations with name servers and a slave's copies from its master, when those run
	// ACL (registrations need an admin account there). Requests to nodes of this process need
	// none.
	Credentials Credentials
	// TLSMode is how the listeners treat TLS (RocketMQ's tls.server.mode): TLSDisabled (the
	// default), TLSPermissive (TLS and plaintext on the same port, told apart by the first
	// byte) or TLSEnforcing (TLS only). TLSConfig holds the server certificate, required
	// unless disabled (and by HATLS on a master).
	TLSMode   TLSMode
	TLSConfig *tls.Config
	// TLSClientEnable makes the broker's own connections to other nodes (name servers, its
	// master's broker port) TLS (RocketMQ's tls.enable); TLSClientConfig is how it, and a
	// slave with HATLS, dial TLS: the roots it trusts (RocketMQ's tls.client.*). Default: the
	// system's roots.
	TLSClientEnable bool
	TLSClientConfig *tls.Config
	// HTTPAllowedHosts are the names, besides the address a request reached (and localhost
	// for a loopback listener), under which Handler's dashboard API answers: "name" with any
	// port, "name:port" with that one only. A browser sends the name it dialed in Host; a
	// request naming another is refused 403, which keeps DNS rebinding (another site's name
	// pointed at the node) out of the API. Give the names browsers use for the node, such as
	// a reverse proxy's or a NAT address (mqnode -http-allowed-hosts).
	HTTPAllowedHosts []string
	// Metrics turns on /metrics in Handler (Prometheus exposition format, the node's own
	// registry) and the request latency its dispatchers observe: set it to metrics.Prometheus()
	// from github.com/mqgo/mq/metrics. Nil (the default) links no Prometheus client and
	// Handler's /metrics answers 404 saying how to turn it on.
	Metrics optional.Metrics

	// ControllerID turns on RocketMQ 5's controller in this node (enableControllerInNamesrv):
	// a Raft member with this id (controllerDLegerSelfId, e.g. "n0") among ControllerPeers (id
	// -> Raft address, controllerDLegerPeers, this node's own entry included), listening for
	// Raft on ControllerRaftListen, keeping its log and snapshots in ControllerDir (default
	// <StoreDir>/controller). It serves the controller requests of brokers in controller mode
	// on the name service's listener. ControllerElectUncleanMaster lets it elect a master from
	// outside the SyncStateSet (enableElectUncleanMaster, default false: no acknowledged
	// message is lost, a group may stay without master). ControllerScanInterval
	// (scanNotActiveBrokerInterval, 5 s) and ControllerBrokerHeartbeatTimeout
	// (controllerHeartBeatTimeoutMills, 10 s) decide how soon a dead master is replaced;
	// ControllerRaftTimeout sets Raft's heartbeat and election timeouts (1 s) for tests.
	// Controller is the implementation, and must be set with ControllerID: controller.Raft()
	// from github.com/mqgo/mq/controller (hashicorp/raft), which an application that runs no
	// controller then does not link.
	ControllerID                     string
	ControllerPeers                  map[string]string
	ControllerRaftListen             string
	ControllerDir                    string
	ControllerElectUncleanMaster     bool
	ControllerScanInterval           time.Duration
	ControllerBrokerHeartbeatTimeout time.Duration
	ControllerRaftTimeout            time.Duration
	Controller                       optional.Controller

	// ControllerAddrs puts the broker in controller mode (enableControllerMode, controllerAddr):
	// the controllers at these addresses decide whether it is its group's master, and elect a
	// new master when one dies. BrokerRole is then ignored and BrokerID is the broker's own id
	// (0: the controller assigns one). AllAckInSyncStateSet acknowledges a send only once every
	// member of the SyncStateSet has it; MinInSyncReplicas (default 1) refuses sends while the
	// set is smaller. ControllerHeartbeatInterval (brokerHeartbeatInterval, 1 s),
	// SyncBrokerMetadataPeriod (syncBrokerMetadataPeriod, 5 s), CheckSyncStateSetPeriod
	// (checkSyncStateSetPeriod, 5 s) and HAMaxTimeSlaveNotCatchup (haMaxTimeSlaveNotCatchup,
	// 15 s) are RocketMQ's periods; ElectionPriority (brokerElectionPriority, lower wins, default
	// the lowest) breaks ties between equally up-to-date replicas.
	ControllerAddrs             []string
	AllAckInSyncStateSet        bool
	MinInSyncReplicas           int
	ControllerHeartbeatInterval time.Duration
	SyncBrokerMetadataPeriod    time.Duration
	CheckSyncStateSetPeriod     time.Duration
	HAMaxTimeSlaveNotCatchup    time.Duration
	ElectionPriority            int32

	// Logger receives the node's structured logs; nil discards them.
	Logger *zerolog.Logger
}

// FlushDiskType says when an appended message counts as stored (RocketMQ flushDiskType):
// AsyncFlush ("ASYNC_FLUSH", the default) or SyncFlush ("SYNC_FLUSH"). It is the store's type.
type FlushDiskType = storage.FlushDiskType

// Flush modes.
const (
	// AsyncFlush acknowledges a send once the message is in the page cache.
	AsyncFlush = storage.AsyncFlush
	// SyncFlush acknowledges a send once the message is fsynced (group commit).
	SyncFlush = storage.SyncFlush
)

// BrokerRole is a broker's part in its master/slave group (RocketMQ brokerRole): AsyncMaster
// ("ASYNC_MASTER"), SyncMaster ("SYNC_MASTER") or Slave ("SLAVE"). It is the store's type.
type BrokerRole = storage.BrokerRole

// Broker roles.
const (
	// AsyncMaster, the default for broker id 0, acknowledges sends without waiting for a slave.
	AsyncMaster = storage.AsyncMaster
	// SyncMaster acknowledges sends once a slave has them.
	SyncMaster = storage.SyncMaster
	// Slave, the default for a broker id above 0, follows its master; it refuses sends and
	// serves reads.
	Slave = storage.Slave
)

// ACLConfig is RocketMQ's plain_acl.yml: the white-listed addresses and the accounts. See
// package github.com/mqgo/mq/aclfile for reading one from RocketMQ's YAML.
type ACLConfig = acl.Config

// ACLAccount is one account of an ACLConfig: its keys, the address it may skip signing from,
// whether it is an admin, and its permissions ("DENY", "PUB", "SUB", "PUB|SUB") by default and
// per topic and group ("name=PUB|SUB").
type ACLAccount = acl.Account

// Credentials are an ACL account's AccessKey and SecretKey (the official clients'
// primitive.Credentials).
type Credentials = remoting.Credentials

// TLSMode is how a node's listeners treat TLS (RocketMQ's tls.server.mode).
type TLSMode = remoting.TLSMode

// TLS modes.
const (
	TLSDisabled   = remoting.TLSDisabled
	TLSPermissive = remoting.TLSPermissive
	TLSEnforcing  = remoting.TLSEnforcing
)

// Defaults of Options, named after the RocketMQ settings they mirror. Each is the constant of
// the part that applies it; each comment gives the value.
const (
	// DefaultListen, "127.0.0.1:9876", is where a node serves when Options.Listen is empty:
	// RocketMQ's name server port, on loopback so an embedded node is not exposed by accident.
	DefaultListen = node.DefaultListen
	// DefaultStoreDir, "mqdata", is the store directory when Options.StoreDir is empty.
	DefaultStoreDir = node.DefaultStoreDir
	// DefaultClusterName ("DefaultCluster") and DefaultBrokerName ("broker-a") are RocketMQ's.
	DefaultClusterName = broker.DefaultClusterName
	DefaultBrokerName  = broker.DefaultBrokerName
	// DefaultScanNotActiveBrokerInterval (10 s) is how often the name service drops silent
	// brokers.
	DefaultScanNotActiveBrokerInterval = route.DefaultScanNotActiveBrokerInterval
	// DefaultBrokerChannelExpiredTime (120 s) is how long a broker may stay silent before its
	// routes go.
	DefaultBrokerChannelExpiredTime = route.DefaultBrokerChannelExpiredTime
	// DefaultChannelMaxIdleTime (120 s, serverChannelMaxIdleTimeSeconds) closes connections that
	// sent nothing for this long.
	DefaultChannelMaxIdleTime = remoting.DefaultChannelMaxIdleTime
	// DefaultServerWorkerThreads (8, serverWorkerThreads) is the size of the name service's
	// request pool.
	DefaultServerWorkerThreads = node.DefaultServerWorkerThreads
	// DefaultServerQueueCapacity (10,000) is how many requests may wait for a name service
	// worker before the node answers SYSTEM_BUSY (RocketMQ's queue is unbounded).
	DefaultServerQueueCapacity = node.DefaultServerQueueCapacity
	// DefaultStartTimeout (10 s) bounds StartNode's wait for each listener and for the broker
	// (its HA listener and first registration).
	DefaultStartTimeout = node.DefaultStartTimeout
	// DefaultACLWatchInterval (500 ms, RocketMQ's FileWatchService) is how often ACLFile is
	// checked for changes.
	DefaultACLWatchInterval = node.DefaultACLWatchInterval
)

// wiring converts o to the options of internal/node, which applies the defaults, validates and
// starts the parts. node.Options has the same fields with the same types (documented here
// only): a field added to one and not the other stops this conversion from compiling.
func (o Options) wiring() node.Options { return node.Options(o) }
