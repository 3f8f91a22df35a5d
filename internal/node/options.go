package node

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Defaults of Options, named after the RocketMQ settings they mirror.
const (
	// DefaultListen is where a node serves when Options.Listen is empty (RocketMQ's name server
	// port, on loopback so an embedded node is not exposed by accident).
	DefaultListen = "127.0.0.1:9876"
	// DefaultStoreDir is the store directory when Options.StoreDir is empty.
	DefaultStoreDir = "mqdata"
	// DefaultClusterName, DefaultBrokerName and the master broker id 0 are RocketMQ's.
	DefaultClusterName = "DefaultCluster"
	DefaultBrokerName  = "broker-a"
	// DefaultScanNotActiveBrokerInterval is how often the name service drops silent brokers.
	DefaultScanNotActiveBrokerInterval = 10 * time.Second
	// DefaultBrokerChannelExpiredTime is how long a broker may stay silent before its routes go.
	DefaultBrokerChannelExpiredTime = 120 * time.Second
	// DefaultChannelMaxIdleTime closes connections that sent nothing for this long
	// (serverChannelMaxIdleTimeSeconds).
	DefaultChannelMaxIdleTime = 120 * time.Second
	// DefaultServerWorkerThreads is the size of each request pool (serverWorkerThreads).
	DefaultServerWorkerThreads = 8
	// DefaultServerQueueCapacity is how many requests may wait for a worker before the node
	// answers SYSTEM_BUSY.
	DefaultServerQueueCapacity = 10000
	// DefaultStartTimeout bounds StartNode's wait for its listeners.
	DefaultStartTimeout = 10 * time.Second
)

// FlushDiskType and BrokerRole are plain strings so that mq.Options, whose fields have the
// same types, converts to Options without a copy.
type (
	FlushDiskType = string
	BrokerRole    = string
)

// Flush modes (RocketMQ flushDiskType).
const (
	AsyncFlush FlushDiskType = "ASYNC_FLUSH"
	SyncFlush  FlushDiskType = "SYNC_FLUSH"
)

// Broker roles (RocketMQ brokerRole).
const (
	AsyncMaster BrokerRole = "ASYNC_MASTER"
	SyncMaster  BrokerRole = "SYNC_MASTER"
	Slave       BrokerRole = "SLAVE"
)

// Options is mq.Options field for field, same names and types in the same order, so that package
// mq converts with node.Options(o); the fields are documented there, once.
type Options struct {
	Listen            string
	NameServerListen  string
	BrokerListen      string
	DisableNameServer bool
	DisableBroker     bool

	NameServers                 []string
	StoreDir                    string
	FlushDiskType               FlushDiskType
	ClusterName                 string
	BrokerName                  string
	BrokerID                    int64
	BrokerIP                    string
	DisableAutoCreateTopic      bool
	SegmentBytes                int64
	FileReservedTime            time.Duration
	DelayLevels                 []time.Duration
	RegisterNameServerPeriod    time.Duration
	FlushConsumerOffsetInterval time.Duration
	ClientChannelExpiredTime    time.Duration
	RebalanceLockMaxLiveTime    time.Duration

	ScanNotActiveBrokerInterval time.Duration
	BrokerChannelExpiredTime    time.Duration
	ChannelMaxIdleTime          time.Duration
	MaxFrameBytes               int
	MaxMessageBytes             int
	MaxHeaderBytes              int
	MaxExtFields                int
	MaxPendingWriteBytes        int
	MaxConnections              int
	ServerWorkerThreads         int
	ServerQueueCapacity         int
	EventLoops                  int
	StartTimeout                time.Duration

	BrokerRole                    BrokerRole
	HAListen                      string
	MasterHA                      string
	HATransferBatchBytes          int
	HAHousekeepingInterval        time.Duration
	HASendHeartbeatInterval       time.Duration
	HASlaveFallBehindMax          int64
	HASyncFlushTimeout            time.Duration
	HATransferWaitInterval        time.Duration
	HAReconnectInterval           time.Duration
	HASecret                      string
	SlaveReadEnable               bool
	AccessMessageInMemoryMaxRatio int
	AccessMessageInMemoryMaxBytes int64
	SlaveSyncPeriod               time.Duration
	MaxLongPollingSuspend         time.Duration
	MaxHeldPullsPerConnection     int
	MaxHeldPulls                  int
	MaxQueueNums                  int32

	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.StoreDir == "" {
		o.StoreDir = DefaultStoreDir
	}
	if o.FlushDiskType == "" {
		o.FlushDiskType = AsyncFlush
	}
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.BrokerName == "" {
		o.BrokerName = DefaultBrokerName
	}
	if o.ScanNotActiveBrokerInterval <= 0 {
		o.ScanNotActiveBrokerInterval = DefaultScanNotActiveBrokerInterval
	}
	if o.BrokerChannelExpiredTime <= 0 {
		o.BrokerChannelExpiredTime = DefaultBrokerChannelExpiredTime
	}
	if o.ChannelMaxIdleTime <= 0 {
		o.ChannelMaxIdleTime = DefaultChannelMaxIdleTime
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = remoting.DefaultMaxFrameBytes
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = remoting.DefaultMaxHeaderBytes
	}
	if o.MaxExtFields <= 0 {
		o.MaxExtFields = remoting.DefaultMaxExtFields
	}
	if o.MaxPendingWriteBytes <= 0 {
		o.MaxPendingWriteBytes = remoting.DefaultMaxPendingWriteBytes
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = remoting.DefaultMaxConnections
	}
	if o.ServerWorkerThreads <= 0 {
		o.ServerWorkerThreads = DefaultServerWorkerThreads
	}
	if o.ServerQueueCapacity <= 0 {
		o.ServerQueueCapacity = DefaultServerQueueCapacity
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.BrokerRole == "" {
		o.BrokerRole = AsyncMaster
		if o.BrokerID > 0 {
			o.BrokerRole = Slave
		}
	}
	if o.BrokerRole == Slave && o.BrokerID == 0 {
		o.BrokerID = 1
	}
	return o
}

// validate reports every problem at once.
func (o Options) validate() error {
	var errs []error
	for name, addr := range map[string]string{"Listen": o.Listen, "NameServerListen": o.NameServerListen,
		"BrokerListen": o.BrokerListen} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("mq: %s %q: %w", name, addr, err))
		}
	}
	if (o.NameServerListen == "") != (o.BrokerListen == "") && !o.DisableNameServer && !o.DisableBroker {
		errs = append(errs, errors.New("mq: NameServerListen and BrokerListen go together"))
	}
	if o.DisableNameServer && o.DisableBroker {
		errs = append(errs, errors.New("mq: a node needs the name service, the broker, or both"))
	}
	if o.FlushDiskType != AsyncFlush && o.FlushDiskType != SyncFlush {
		errs = append(errs, fmt.Errorf("mq: FlushDiskType %q is neither %s nor %s", o.FlushDiskType,
			AsyncFlush, SyncFlush))
	}
	if o.BrokerIP != "" {
		if _, err := netip.ParseAddr(o.BrokerIP); err != nil {
			errs = append(errs, fmt.Errorf("mq: BrokerIP %q: %w", o.BrokerIP, err))
		}
	}
	if o.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("mq: BrokerID %d is negative", o.BrokerID))
	}
	switch o.BrokerRole {
	case AsyncMaster, SyncMaster:
		if o.BrokerID != 0 {
			errs = append(errs, fmt.Errorf("mq: a %s has BrokerID 0, not %d", o.BrokerRole, o.BrokerID))
		}
	case Slave:
	default:
		errs = append(errs, fmt.Errorf("mq: BrokerRole %q is not %s, %s or %s", o.BrokerRole,
			AsyncMaster, SyncMaster, Slave))
	}
	for name, addr := range map[string]string{"HAListen": o.HAListen, "MasterHA": o.MasterHA} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("mq: %s %q: %w", name, addr, err))
		}
	}
	if o.AccessMessageInMemoryMaxRatio < 0 || o.AccessMessageInMemoryMaxRatio > 100 {
		errs = append(errs, fmt.Errorf("mq: AccessMessageInMemoryMaxRatio %d not in [0, 100]",
			o.AccessMessageInMemoryMaxRatio))
	}
	return errors.Join(errs...)
}
