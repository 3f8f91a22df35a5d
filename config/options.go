package config

import (
	"crypto/tls"
	"time"

	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Options configures a node (mq.Options is this type). The zero value of every field means its
// default, so mq.StartNode(mq.Options{}) runs a name service and a broker on DefaultListen;
// EnsureDefaults writes the defaults in. The settings are grouped as RocketMQ groups them:
// the node's own (listeners and roles) here, then one struct per group, each with its
// defaults and validation.
//
// The tags are read by BindFlags: flag is the command-line name, rocketmq the RocketMQ
// setting it mirrors, usage the help text, env an environment variable read when the flag is
// not given, sep the separator of a list.
type Options struct {
	// Listen is the "host:port" the node serves the name service and the broker on; port 0
	// picks a free port (see Node.Addr). Default DefaultListen.
	Listen string `flag:"listen" usage:"HOST:PORT serving the name service and the broker"`
	// NameServerListen and BrokerListen, when set, serve the two roles on separate ports
	// instead of sharing Listen.
	NameServerListen string `flag:"namesrv-listen" usage:"serve the name service on this HOST:PORT instead (with -broker-listen)"`
	BrokerListen     string `flag:"broker-listen" usage:"serve the broker on this HOST:PORT instead (with -namesrv-listen)"`
	// DisableNameServer and DisableBroker leave a role out of this node.
	DisableNameServer bool `flag:"no-namesrv" usage:"do not run the name service"`
	DisableBroker     bool `flag:"no-broker" usage:"do not run the broker"`
	// NameServers are the name services a broker registers with. Default: this node's own.
	NameServers []string `flag:"namesrv" rocketmq:"namesrvAddr" sep:";" usage:"name servers the broker registers with, ADDR[;ADDR] (default: its own)"`
	// StartTimeout bounds StartNode's wait for each listener and for the broker to be ready
	// (a master's HA listener bound, the first registration answered). Default
	// DefaultStartTimeout.
	StartTimeout time.Duration `flag:"start-timeout" usage:"how long the start waits for each listener and for the broker"`

	Broker       Broker
	Store        Store
	Limits       Limits
	Periods      Periods
	Timers       Timers
	Transactions Transactions
	Pop          Pop
	// Types are RocketMQ 5's message types and consumption modes (config/types.go).
	Types      Types
	HA         HA
	Security   Security
	Controller Controller
	// ControllerMode puts the broker in RocketMQ 5's controller mode.
	ControllerMode ControllerMode
	HTTP           HTTP
	GRPC           GRPC

	// Logger receives the node's structured logs; nil discards them.
	Logger *zerolog.Logger `flag:"-"`
}

// Broker identifies the broker and sets its behaviour (RocketMQ's BrokerConfig).
type Broker struct {
	// ClusterName, Name and ID identify the broker (id 0 is the master). Defaults
	// DefaultClusterName and DefaultBrokerName.
	ClusterName string `flag:"cluster" rocketmq:"brokerClusterName" usage:"cluster name"`
	Name        string `flag:"broker-name" rocketmq:"brokerName" usage:"broker name"`
	ID          int64  `flag:"broker-id" rocketmq:"brokerId" usage:"broker id (0 = master; a slave defaults to 1); with -controller, the broker's own id in its group (0: the controller assigns one, kept in <store>/brokerIdentity)"`
	// Role is AsyncMaster (default for broker id 0), SyncMaster, or Slave (default, and
	// required, for a broker id above 0; a Slave with broker id 0 gets id 1). In controller
	// mode the controllers decide it.
	Role storage.BrokerRole `flag:"role" rocketmq:"brokerRole" usage:"broker role: async-master|sync-master|slave (default async-master, slave when -broker-id > 0)"`
	// IP is the address clients are told to dial and the store host of every message. Default:
	// the listener's host, or, when that is a wildcard, the first non-loopback IPv4 address of
	// this machine.
	IP string `flag:"broker-ip" rocketmq:"brokerIP1" usage:"IP clients are told to dial (default: the listener's host)"`
	// DisableAutoCreateTopic refuses sends to unknown topics instead of creating them from
	// TBW102 (autoCreateTopicEnable, on by default for an embedded node).
	DisableAutoCreateTopic bool `flag:"no-auto-create-topic" rocketmq:"autoCreateTopicEnable=false" usage:"refuse sends to unknown topics instead of creating them"`
	// DisableForceRegister makes periodic registrations ask each name server first
	// (QUERY_DATA_VERSION) and send the whole topic table only when one lacks the broker's
	// current topics or lost the broker, e.g. by restarting (RocketMQ forceRegister = false;
	// its default, true, registers every period). It saves the name servers decoding a large
	// table every period; a slave whose topics stay unchanged then learns a moved master only
	// when its topics change, as with RocketMQ.
	DisableForceRegister bool `flag:"no-force-register" rocketmq:"forceRegister=false" usage:"periodic registrations send the topic table only to name servers that lack it"`
	// DisableNotifyConsumerIdsChanged stops every NOTIFY_CONSUMER_IDS_CHANGED the broker would
	// send when a group's members change (RocketMQ notifyConsumerIdsChangedEnable, default
	// true); consumers then see changes at their next periodic rebalance.
	DisableNotifyConsumerIdsChanged bool `flag:"no-notify-consumer-ids-changed" rocketmq:"notifyConsumerIdsChangedEnable=false" usage:"do not tell consumers when their group's members change"`
	// ReregisterGrace is how long a broker that recovered from a crash answers consumers'
	// member-list requests SYSTEM_BUSY, so the members connected before the crash register
	// again before anyone allocates queues from offsets the crash took back (ours; RocketMQ
	// answers at once). Default 1 s; negative for none. A clean start has no grace.
	ReregisterGrace time.Duration `flag:"reregister-grace" usage:"after a crash, how long member lists are refused so consumers register again (ours; negative for none)"`
}

// Store is the message store: files, flush and retention (RocketMQ's MessageStoreConfig).
type Store struct {
	// Dir holds the broker's CommitLog, ConsumeQueues and metadata, and the name service's KV
	// config. Default DefaultStoreDir, relative to the working directory.
	Dir string `flag:"store" rocketmq:"storePathRootDir" usage:"store DIR"`
	// FlushDiskType is AsyncFlush (default) or SyncFlush.
	FlushDiskType storage.FlushDiskType `flag:"flush" rocketmq:"flushDiskType" usage:"flush mode: async|sync"`
	// ReadUnCommitted lets a SyncFlush store show consumers what it appended before the fsync
	// covering it returned (RocketMQ 5's readUnCommitted, default false: consumers see only
	// what a power cut cannot take back).
	ReadUnCommitted bool `flag:"read-uncommitted" rocketmq:"readUnCommitted" usage:"with sync flush, show consumers messages before their fsync returns"`
	// SegmentBytes is the CommitLog segment size. Default 1 GiB; tests use far less.
	SegmentBytes int64 `flag:"segment-bytes" rocketmq:"mappedFileSizeCommitLog" usage:"CommitLog segment size in bytes"`
	// ConsumeQueueFileBytes is the size of a ConsumeQueue file, rounded up to whole 20-byte
	// units as RocketMQ rounds it. Default 6,000,000 (300,000 units).
	ConsumeQueueFileBytes int64 `flag:"consume-queue-file-bytes" rocketmq:"mappedFileSizeConsumeQueue" usage:"ConsumeQueue file size in bytes (a multiple of 20)"`
	// MaxHashSlotNum and MaxIndexNum size a key index file (5,000,000 slots and 20,000,000
	// entries: 420 MB, allocated as it fills).
	MaxHashSlotNum int `flag:"max-hash-slot-num" rocketmq:"maxHashSlotNum" usage:"hash slots of a key index file"`
	MaxIndexNum    int `flag:"max-index-num" rocketmq:"maxIndexNum" usage:"entries of a key index file"`
	// Disk protection, in percent of the store's file system (RocketMQ 4.9's
	// CleanCommitLogService): above DiskMaxUsedSpaceRatio (75) expired CommitLog segments are
	// deleted whatever the hour; above DiskSpaceCleanForciblyRatio (85) the oldest go expired
	// or not, unless DisableCleanFileForcibly; above DiskSpaceWarningLevelRatio (90) sends are
	// refused (SERVICE_NOT_AVAILABLE, "the broker's disk is full") until a round measures the
	// disk below again. Rounds run every CleanResourceInterval (10 s).
	DiskMaxUsedSpaceRatio       int           `flag:"disk-max-used-space-ratio" rocketmq:"diskMaxUsedSpaceRatio" usage:"disk use, in percent, above which expired CommitLog segments are deleted at once"`
	DiskSpaceCleanForciblyRatio int           `flag:"disk-space-clean-forcibly-ratio" rocketmq:"diskSpaceCleanForciblyRatio" usage:"disk use, in percent, above which the oldest CommitLog segments are deleted, expired or not"`
	DiskSpaceWarningLevelRatio  int           `flag:"disk-space-warning-level-ratio" rocketmq:"diskSpaceWarningLevelRatio" usage:"disk use, in percent, above which sends are refused"`
	DisableCleanFileForcibly    bool          `flag:"no-clean-file-forcibly" rocketmq:"cleanFileForciblyEnable=false" usage:"never delete unexpired CommitLog segments, however full the disk"`
	CleanResourceInterval       time.Duration `flag:"clean-resource-interval" rocketmq:"cleanResourceInterval" usage:"how often the disk is measured and expired files deleted"`
	// FileReservedTime is how long CommitLog segments are kept. Default 72 h.
	FileReservedTime time.Duration `flag:"file-reserved-time" rocketmq:"fileReservedTime" usage:"how long CommitLog segments are kept"`
	// AccessMessageInMemoryMaxRatio is the share of physical memory, in percent, a reader may
	// lag behind the CommitLog's end before it counts as far behind (40).
	AccessMessageInMemoryMaxRatio int `flag:"access-message-in-memory-max-ratio" rocketmq:"accessMessageInMemoryMaxRatio" usage:"percent of memory a reader may lag before it counts as far behind"`
	// AccessMessageInMemoryMaxBytes, when above 0, replaces the ratio with a byte count, so
	// tests can make a reader "far behind" with a few messages.
	AccessMessageInMemoryMaxBytes int64 `flag:"access-message-in-memory-max-bytes" usage:"bytes a reader may lag before it counts as far behind, instead of the ratio (ours)"`
}

// Limits bound what clients may make the node hold (NettyServerConfig's sizes and ours; the
// Defaults table of docs/rocketmq-differences.md says which RocketMQ lacks).
type Limits struct {
	// MaxFrameBytes is the largest frame accepted, its length word included. Default 16 MiB.
	MaxFrameBytes int `flag:"max-frame-bytes" usage:"largest frame accepted, its length word included"`
	// MaxMessageBytes is the largest message body a send may carry (4 MiB); a larger one is
	// refused with MESSAGE_ILLEGAL.
	MaxMessageBytes int `flag:"max-message-bytes" rocketmq:"maxMessageSize" usage:"largest message body a send may carry"`
	// MaxHeaderBytes and MaxExtFields bound each request's header; a header over either closes
	// its connection. Defaults remoting.DefaultMaxHeaderBytes (64 KiB) and
	// remoting.DefaultMaxExtFields (256); RocketMQ has no such limits.
	MaxHeaderBytes int `flag:"max-header-bytes" usage:"largest request header; a larger one closes its connection (ours)"`
	MaxExtFields   int `flag:"max-ext-fields" usage:"most extFields in a request header (ours)"`
	// MaxPendingWriteBytes is how many bytes of responses one connection may leave unread
	// before the node stops reading its requests until it catches up. Default
	// remoting.DefaultMaxPendingWriteBytes (4 MiB).
	MaxPendingWriteBytes int `flag:"max-pending-write-bytes" usage:"response bytes one connection may leave unread before its requests wait (ours)"`
	// MaxConnections is how many connections each listener keeps open at once; more are
	// closed as they arrive. Default remoting.DefaultMaxConnections (10,000); RocketMQ has no
	// such limit.
	MaxConnections int `flag:"max-connections" usage:"most connections each listener keeps open (ours)"`
	// ServerWorkerThreads and ServerQueueCapacity size the name service's request pool (the
	// broker's pools have sizes of their own, docs/rocketmq-differences.md).
	ServerWorkerThreads int `flag:"server-worker-threads" rocketmq:"serverWorkerThreads" usage:"size of the name service's request pool"`
	ServerQueueCapacity int `flag:"server-queue-capacity" usage:"requests that may wait for a name service worker before SYSTEM_BUSY (ours)"`
	// EventLoops is the number of gnet event loops. Default remoting.DefaultEventLoops:
	// RocketMQ's serverSelectorThreads (3), at most GOMAXPROCS-1, at least 1.
	EventLoops int `flag:"event-loops" rocketmq:"serverSelectorThreads" usage:"event loops serving the listeners (default: 3, at most one fewer than the CPUs, at least 1)"`
	// MaxLongPollingSuspend caps the time a consumer's pull may be held waiting for messages;
	// a pull asking longer (clients ask 15-30 s) is held this long. Default 60 s.
	MaxLongPollingSuspend time.Duration `flag:"max-long-polling-suspend" usage:"longest a pull is held waiting for messages (ours)"`
	// MaxHeldPullsPerConnection and MaxHeldPulls cap the pulls held waiting for messages, for
	// one connection and in all; a pull over a cap is answered SYSTEM_BUSY at once and the
	// client retries it a few seconds later. Defaults 4096 and 65,536.
	MaxHeldPullsPerConnection int `flag:"max-held-pulls-per-connection" usage:"most pulls one connection may have held (ours)"`
	MaxHeldPulls              int `flag:"max-held-pulls" usage:"most pulls held in all (ours)"`
	// MaxQueueNums caps a topic's read and write queue counts and a group's retryQueueNums;
	// admin requests asking more are refused, and this node's name service clamps the counts
	// brokers register to it. Default 1024.
	MaxQueueNums int32 `flag:"max-queue-nums" usage:"most read or write queues a topic may have (ours)"`
	// MaxTopics caps the topics the broker holds (RocketMQ has no cap): a send that would
	// create one more is answered TOPIC_NOT_EXIST with a remark naming the limit, and admin
	// requests, send-backs and heartbeats that would are refused too; the broker's own system
	// topics are never refused. Default 5,000.
	MaxTopics int `flag:"max-topics" usage:"most topics the broker holds; sends that would create more are refused (ours)"`
	// MaxSubscriptionGroups caps the consumer groups the broker holds (RocketMQ has no cap):
	// a heartbeat, pull, pop or send-back naming a new group past it does not create one and
	// is answered SUBSCRIPTION_GROUP_NOT_EXIST with a remark naming the limit, and so is an
	// admin UPDATE_AND_CREATE_SUBSCRIPTIONGROUP; RocketMQ's predefined groups (TOOLS_CONSUMER,
	// CID_RMQ_SYS_TRANS, ...) are never refused. Default 10,000.
	MaxSubscriptionGroups int `flag:"max-subscription-groups" usage:"most consumer groups the broker holds; requests that would create more are refused (ours)"`
	// AutoCreateTopicBurst and AutoCreateTopicRate bound the topics one connection's sends
	// may create (autoCreateTopicEnable on): bursts of AutoCreateTopicBurst, then
	// AutoCreateTopicRate a second. A send past them is answered SYSTEM_BUSY with a remark
	// naming them and the connection stays open. Defaults 1,000 and 100.
	AutoCreateTopicBurst int `flag:"auto-create-topic-burst" usage:"topics one connection's sends may create at once (ours)"`
	AutoCreateTopicRate  int `flag:"auto-create-topic-rate" usage:"topics a second one connection's sends may create after the burst (ours)"`
}

// Periods are how often the broker and the name service do their housekeeping, and how long
// they wait for silent peers.
type Periods struct {
	// RegisterNameServerPeriod is how often the broker registers with the name servers.
	// Default 30 s; as in RocketMQ it is clamped to [RegisterNameServerPeriodMin, 60 s], so a
	// name server never expires a live broker.
	RegisterNameServerPeriod time.Duration `flag:"register-name-server-period" rocketmq:"registerNameServerPeriod" usage:"how often the broker registers with the name servers"`
	// RegisterNameServerPeriodMin is the delay from start to the first periodic registration
	// and the floor of RegisterNameServerPeriod: RocketMQ hard-codes both as 10 s (the
	// default); tests lower it to register in milliseconds. The registration at start and
	// those after a topic change never wait.
	RegisterNameServerPeriodMin time.Duration `flag:"register-name-server-period-min" usage:"first periodic registration, and the floor of the period"`
	// FlushConsumerOffsetInterval is how often consumer offsets are persisted. Default 5 s.
	FlushConsumerOffsetInterval time.Duration `flag:"flush-consumer-offset-interval" rocketmq:"flushConsumerOffsetInterval" usage:"how often consumer offsets are persisted"`
	// ClientChannelExpiredTime drops producers and consumers that sent no heartbeat for this
	// long. Default 120 s.
	ClientChannelExpiredTime time.Duration `flag:"client-channel-expired-time" rocketmq:"channelExpiredTimeout" usage:"drop clients silent this long"`
	// RebalanceLockMaxLiveTime expires orderly consumers' queue locks not renewed for this
	// long. Default 60 s.
	RebalanceLockMaxLiveTime time.Duration `flag:"rebalance-lock-max-live-time" rocketmq:"rocketmq.broker.rebalance.lockMaxLiveTime" usage:"expire orderly consumers' queue locks not renewed this long"`
	// ScanNotActiveBrokerInterval and BrokerChannelExpiredTime drive the name service's expiry
	// of silent brokers. Defaults 10 s and 120 s; tests use milliseconds.
	ScanNotActiveBrokerInterval time.Duration `flag:"scan-not-active-broker-interval" rocketmq:"scanNotActiveBrokerInterval" usage:"how often the name service drops silent brokers"`
	BrokerChannelExpiredTime    time.Duration `flag:"broker-channel-expired-time" usage:"how long a broker may stay silent before its routes go"`
	// ChannelMaxIdleTime closes connections idle this long. Default 120 s.
	ChannelMaxIdleTime time.Duration `flag:"channel-max-idle-time" rocketmq:"serverChannelMaxIdleTimeSeconds" usage:"close connections idle this long"`
}

// Timers are scheduled delivery: RocketMQ 4's delay levels and RocketMQ 5's timer messages.
type Timers struct {
	// DelayLevels are the delays of levels 1..n. Default RocketMQ's 18, 1s 5s 10s 30s 1m 2m 3m
	// 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
	DelayLevels []time.Duration `flag:"delay-levels" rocketmq:"messageDelayLevel" sep:" " usage:"delays of levels 1..n, space-separated"`
	// Precision bounds how late a timer message (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
	// TIMER_DELAY_MS; the official client's WithDelayTimestamp) is delivered: never early, at
	// most this much after its time (RocketMQ timerPrecisionMs, default 1 s and rounding down,
	// so up to 1 s early; ours default 100 ms).
	Precision time.Duration `flag:"timer-precision" rocketmq:"timerPrecisionMs" usage:"how late a timer message may be delivered, at most"`
	// MaxDelay is the furthest ahead a timer message may be due; further is refused with
	// MESSAGE_ILLEGAL (default 3 days).
	MaxDelay time.Duration `flag:"timer-max-delay" rocketmq:"timerMaxDelaySec" usage:"how far ahead a timer message may be"`
}

// Transactions are transactional messages' half messages and checks.
type Transactions struct {
	// Reject answers NO_PERMISSION to transactional half messages instead of storing them
	// (default false).
	Reject bool `flag:"reject-transaction-message" rocketmq:"rejectTransactionMessage" usage:"refuse transactional half messages"`
	// Timeout is how long a half message waits for its producer's decision before the broker
	// asks the producer group (CHECK_TRANSACTION_STATE; default 6 s). A message's
	// CHECK_IMMUNITY_TIME_IN_SECONDS property replaces it.
	Timeout time.Duration `flag:"transaction-timeout" rocketmq:"transactionTimeOut" usage:"how long a half message waits for its producer before the broker checks"`
	// CheckMax is how many checks an undecided half message gets before it moves to
	// TRANS_CHECK_MAX_TIME_TOPIC (default 15).
	CheckMax int `flag:"transaction-check-max" rocketmq:"transactionCheckMax" usage:"checks an undecided half message gets"`
	// CheckInterval is how often the broker looks for half messages to check (default 60 s).
	CheckInterval time.Duration `flag:"transaction-check-interval" rocketmq:"transactionCheckInterval" usage:"how often the broker looks for half messages to check"`
}

// HA is master/slave replication (RocketMQ's HAService settings of MessageStoreConfig).
type HA struct {
	// Listen is a master's replication listener "host:port". Default: the broker listener's
	// host and port + 1, or port 0 (a free port) when the broker listens on port 0. The bound
	// address is advertised to slaves through the name service.
	Listen string `flag:"ha-listen" rocketmq:"haListenPort" usage:"master: replication listener HOST:PORT (default: the broker port + 1)"`
	// MasterAddr is a slave's master replication address "host:port". Default: learned from
	// the name service's REGISTER_BROKER answers.
	MasterAddr string `flag:"master-ha" rocketmq:"haMasterAddress" usage:"slave: the master's replication address HOST:PORT (default: learned from the name service)"`
	// TransferBatchBytes (32 KiB), HousekeepingInterval (20 s), SendHeartbeatInterval (5 s),
	// SlaveFallBehindMax (256 MiB), SyncFlushTimeout (how long a SyncMaster send waits for a
	// slave, 5 s), TransferWaitInterval (100 ms) and ReconnectInterval (5 s) tune
	// replication; tests use milliseconds.
	TransferBatchBytes    int           `flag:"ha-transfer-batch-size" rocketmq:"haTransferBatchSize" usage:"bytes a master sends a slave at once"`
	HousekeepingInterval  time.Duration `flag:"ha-housekeeping-interval" rocketmq:"haHousekeepingInterval" usage:"drop a replication connection silent this long"`
	SendHeartbeatInterval time.Duration `flag:"ha-send-heartbeat-interval" rocketmq:"haSendHeartbeatInterval" usage:"how often an idle slave reports its offset"`
	SlaveFallBehindMax    int64         `flag:"ha-slave-fall-behind-max" rocketmq:"haSlaveFallbehindMax" usage:"bytes a slave may lag before SyncMaster sends stop waiting for it"`
	SyncFlushTimeout      time.Duration `flag:"ha-sync-flush-timeout" rocketmq:"syncFlushTimeout" usage:"how long a SyncMaster send waits for a slave"`
	TransferWaitInterval  time.Duration `flag:"ha-transfer-wait-interval" usage:"how long a master's sender waits for new data"`
	ReconnectInterval     time.Duration `flag:"ha-reconnect-interval" usage:"how long a slave waits before dialing its master again"`
	// Secret, when set (at least 16 bytes), is a secret shared by a master and its slaves:
	// each side proves it knows it before any CommitLog byte crosses the HA connection, so a
	// peer without it gets nothing and cannot acknowledge SyncMaster sends. Give every node
	// of the group the same one. Empty speaks RocketMQ's protocol, which any peer that can
	// reach the HA port may follow: then keep that port off untrusted networks.
	Secret string `flag:"ha-secret" env:"MQ_HA_SECRET" usage:"master and slave: shared replication SECRET (16+ bytes; ours)"`
	// TLS makes replication TLS (ours; RocketMQ's HA connection is plaintext): a master's HA
	// listener presents Security.TLSConfig's certificate, a slave dials its master trusting
	// Security.TLSClientConfig's roots (default: the system's). Give it to every node of the
	// group.
	TLS bool `flag:"ha-tls" usage:"replication over TLS: a master's HA port presents -tls-cert, a slave dials its master trusting -tls-ca (ours)"`
	// SlaveReadEnable lets the master send consumers that fall far behind to the slave, and
	// lets a slave keep serving the consumers it was sent.
	SlaveReadEnable bool `flag:"slave-read" rocketmq:"slaveReadEnable" usage:"master: send consumers that fall far behind to the slave"`
	// SlaveSyncPeriod is how often a slave copies topics, consumer offsets, delay offsets and
	// subscription groups from its master (RocketMQ: a fixed 10 s).
	SlaveSyncPeriod time.Duration `flag:"slave-sync-period" usage:"slave: how often it copies topics, consumer offsets and groups from its master"`
}

// Security is who may talk to the node and how: the cluster secret, ACL and TLS.
type Security struct {
	// ClusterSecret, when set (at least 16 bytes), is shared by every process of one
	// deployment: name servers, controllers and brokers. Each proves it on the requests only
	// peers make (broker registration and unregistration, every controller code, the
	// controllers' Raft traffic), so a stranger who reaches those ports cannot point routes at
	// itself, take over a broker group or cut a store. The name service's other writes (topic
	// deletion, write permission, KV config) need it too, or with ACL on an admin account;
	// operators' tools take it (admin.Options.ClusterSecret, mqadmin -cluster-secret).
	// Replication takes it when HA.Secret is empty. Empty speaks RocketMQ's protocol, which
	// trusts whoever reaches those ports: then keep the name-service, controller and HA ports
	// off untrusted networks.
	ClusterSecret string `flag:"cluster-secret" env:"MQ_CLUSTER_SECRET" usage:"every process of the deployment: shared SECRET (16+ bytes) its processes prove on registration, controller and (without -ha-secret) replication traffic (ours)"`
	// ACL turns on RocketMQ's plain ACL (aclEnable) with these accounts: every broker request
	// must then be signed by an account allowed to make it (or come from a white-listed
	// address), and the name service's writes need an admin account. Requests that fail are
	// answered NO_PERMISSION with a remark naming what was missing. nil with ACLFile unset
	// leaves ACL off (RocketMQ's default). Node.UpdateACL replaces it while running.
	ACL *acl.Config `flag:"-"`
	// ACLFile reads the ACL from RocketMQ's plain_acl.yml instead, and reloads it when the
	// file changes (checked every ACLWatchInterval, default DefaultACLWatchInterval, 500 ms,
	// as RocketMQ's FileWatchService); a changed file that does not parse or validate is
	// logged and the accounts in effect stay. Set it to aclfile.Watch(path) from package
	// github.com/mqgo/mq/aclfile, which holds the YAML parser an application that writes its
	// accounts in Go then does not link.
	ACLFile          optional.ACLFile `flag:"-"`
	ACLWatchInterval time.Duration    `flag:"acl-watch-interval" usage:"how often the -acl file is checked for changes"`
	// Credentials is the account the broker signs its own requests to other nodes with: its
	// registrations with name servers and a slave's copies from its master, when those run
	// ACL (registrations need an admin account there). Requests to nodes of this process need
	// none.
	Credentials remoting.Credentials `flag:"-"`
	// TLSMode is how the listeners treat TLS: TLSDisabled (the default), TLSPermissive (TLS
	// and plaintext on the same port, told apart by the first byte) or TLSEnforcing (TLS
	// only). TLSConfig holds the server certificate, required unless disabled (and by HA.TLS
	// on a master).
	TLSMode   remoting.TLSMode `flag:"tls-mode" rocketmq:"tls.server.mode" usage:"TLS on the listeners: disabled|permissive|enforcing"`
	TLSConfig *tls.Config      `flag:"-"`
	// TLSClientEnable makes the broker's own connections to other nodes (name servers, its
	// master's broker port) TLS (RocketMQ's tls.enable); TLSClientConfig is how it, and a
	// slave with HA.TLS, dial TLS: the roots it trusts (RocketMQ's tls.client.*). Default:
	// the system's roots.
	TLSClientEnable bool        `flag:"tls-client" rocketmq:"tls.enable" usage:"the broker dials name servers and its master with TLS"`
	TLSClientConfig *tls.Config `flag:"-"`
}

// Controller runs RocketMQ 5's controller in this node (enableControllerInNamesrv): a Raft
// member that serves the controller requests of brokers in controller mode on the name
// service's listener. It is on when ID is set, and then needs Impl.
type Controller struct {
	// ID is this member's Raft id (controllerDLegerSelfId, e.g. "n0"), Peers every member's
	// Raft address by id (controllerDLegerPeers, this node's own entry included), RaftListen
	// where this one listens for Raft (its entry in Peers).
	ID         string            `flag:"controller-id" rocketmq:"controllerDLegerSelfId" usage:"run a controller in this name-service node: its ID, e.g. n0 (with -controller-listen and -controller-peers)"`
	Peers      map[string]string `flag:"controller-peers" rocketmq:"controllerDLegerPeers" sep:";" usage:"every controller's Raft address, ID=HOST:PORT;... this one's included"`
	RaftListen string            `flag:"controller-listen" usage:"the controller's Raft HOST:PORT"`
	// Dir keeps the Raft log and snapshots. Default <Store.Dir>/controller.
	Dir string `flag:"controller-dir" rocketmq:"controllerStorePath" usage:"the controller's Raft log and snapshots (default: <store>/controller)"`
	// ElectUncleanMaster lets it elect a master from outside the SyncStateSet (default false:
	// no acknowledged message is lost, a group may stay without master).
	ElectUncleanMaster bool `flag:"controller-elect-unclean-master" rocketmq:"enableElectUncleanMaster" usage:"let the controller elect a master from outside the SyncStateSet (loses what only the set had)"`
	// ScanInterval (5 s) and BrokerHeartbeatTimeout (10 s) decide how soon a dead master is
	// replaced; zero takes the controller's defaults.
	ScanInterval           time.Duration `flag:"controller-scan-interval" rocketmq:"scanNotActiveBrokerInterval" usage:"controller: how often it looks for brokers whose heartbeats stopped (default 5s)"`
	BrokerHeartbeatTimeout time.Duration `flag:"controller-heartbeat-timeout" rocketmq:"controllerHeartBeatTimeoutMills" usage:"controller: a broker silent this long is dead, and replaced if it was master (default 10s)"`
	// RaftTimeout sets Raft's heartbeat and election timeouts (hashicorp/raft's 1 s) for
	// tests.
	RaftTimeout time.Duration `flag:"controller-raft-timeout" usage:"Raft's heartbeat and election timeouts (default 1s)"`
	// Impl is the implementation, and must be set with ID: controller.Raft() from package
	// github.com/mqgo/mq/controller (hashicorp/raft), which an application that runs no
	// controller then does not link.
	Impl optional.Controller `flag:"-"`
}

// ControllerMode lets RocketMQ 5's controllers decide the broker's role (enableControllerMode):
// it is on when Addrs is set, and then Broker.Role is ignored and Broker.ID is the broker's
// own id (0: the controller assigns one).
type ControllerMode struct {
	// Addrs are the controllers' name-service addresses.
	Addrs []string `flag:"controller" rocketmq:"controllerAddr" sep:";" usage:"controller mode: the controllers' HOST:PORT;... (their name-service ports) decide this broker's role"`
	// AllAckInSyncStateSet acknowledges a send only once every member of the SyncStateSet
	// has it; MinInSyncReplicas (default 1) refuses sends while the set is smaller.
	AllAckInSyncStateSet bool `flag:"all-ack-in-sync-state-set" rocketmq:"allAckInSyncStateSet" usage:"controller mode: acknowledge a send once every member of the SyncStateSet has it"`
	MinInSyncReplicas    int  `flag:"min-in-sync-replicas" rocketmq:"minInSyncReplicas" usage:"controller mode: refuse sends while the SyncStateSet has fewer members"`
	// HeartbeatInterval, SyncBrokerMetadataPeriod, CheckSyncStateSetPeriod and
	// HAMaxTimeSlaveNotCatchup are RocketMQ's periods.
	HeartbeatInterval        time.Duration `flag:"broker-heartbeat-interval" rocketmq:"brokerHeartbeatInterval" usage:"controller mode: how often the broker heartbeats to the controllers"`
	SyncBrokerMetadataPeriod time.Duration `flag:"sync-broker-metadata-period" rocketmq:"syncBrokerMetadataPeriod" usage:"controller mode: how often the broker asks the controllers for its group's master and SyncStateSet"`
	CheckSyncStateSetPeriod  time.Duration `flag:"check-sync-state-set-period" rocketmq:"checkSyncStateSetPeriod" usage:"controller mode, master: how often it grows or shrinks the SyncStateSet"`
	HAMaxTimeSlaveNotCatchup time.Duration `flag:"ha-max-time-slave-not-catchup" rocketmq:"haMaxTimeSlaveNotCatchup" usage:"controller mode, master: a slave behind this long leaves the SyncStateSet"`
	// ElectionPriority (lower wins, default the lowest) breaks ties between equally
	// up-to-date replicas.
	ElectionPriority int32 `flag:"election-priority" rocketmq:"brokerElectionPriority" usage:"controller mode: lower wins ties between equally up-to-date replicas (default the lowest)"`
}

// GRPC serves RocketMQ 5's gRPC MessagingService (apache.rocketmq.v2), the API of the 5.x SDKs
// (apache/rocketmq-clients), beside remoting, as RocketMQ 5's proxy does in local mode: inside
// the broker's process, turning each RPC into the broker's own requests. It is on when Listen
// is set, and then needs Service. The listener serves TLS as the remoting listeners do
// (Security.TLSMode and TLSConfig: plaintext, both told apart by the first byte, or TLS only).
type GRPC struct {
	// Listen is the "host:port" of the gRPC listener (RocketMQ's proxy grpcServerPort, 8081 in
	// its examples); port 0 picks a free port (Node.GRPCAddr). Empty (the default) serves none.
	Listen string `flag:"grpc-listen" rocketmq:"grpcServerPort" usage:"serve RocketMQ 5's gRPC API (the 5.x SDKs) on this HOST:PORT, e.g. :8081 (default: off)"`
	// Service is the implementation: proxy.Service() from package github.com/mqgo/mq/proxy,
	// which links google.golang.org/grpc; an application that serves no gRPC does not.
	Service optional.GRPC `flag:"-"`
}

// HTTP is Node.Handler's dashboard and metrics, and the node's own HTTP listener.
type HTTP struct {
	// Listen, when set, is the "host:port" where the node serves Handler itself: bound at the
	// start of StartNode, so /readyz answers 503 while the store recovers, and closed last by
	// Close, so it answers 503 while the node closes. Empty (the default): no listener; mount
	// Handler in the application's own server.
	Listen string `flag:"http" usage:"serve /metrics (Prometheus), /healthz, /readyz and the dashboard on this HOST:PORT from the start of the node to its end (no authentication: keep it on a trusted network)"`
	// AllowedHosts are the names, besides the address a request reached (and localhost for a
	// loopback listener), under which Handler's dashboard API answers: "name" with any port,
	// "name:port" with that one only. A browser sends the name it dialed in Host; a request
	// naming another is refused 403, which keeps DNS rebinding (another site's name pointed
	// at the node) out of the API. Give the names browsers use for the node, such as a
	// reverse proxy's or a NAT address.
	AllowedHosts []string `flag:"http-allowed-hosts" sep:"," usage:"more names the dashboard answers under, NAME[:PORT],... (besides -http's host and address, and localhost on loopback)"`
	// Metrics turns on /metrics in Handler (Prometheus exposition format, the node's own
	// registry) and the request latency its dispatchers observe: set it to
	// metrics.Prometheus() from github.com/mqgo/mq/metrics. Nil (the default) links no
	// Prometheus client and Handler's /metrics answers 404 saying how to turn it on.
	Metrics optional.Metrics `flag:"-"`
}
