package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/mqgo/mq/acl"
	aclcheck "github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Defaults of the node's own settings, named after the RocketMQ settings they mirror. Every
// other setting's default belongs to the part that uses it (route, remoting, broker, storage,
// replication), which applies it to a zero field.
const (
	// DefaultListen is where a node serves when Options.Listen is empty (RocketMQ's name server
	// port, on loopback so an embedded node is not exposed by accident).
	DefaultListen = "127.0.0.1:9876"
	// DefaultStoreDir is the store directory when Options.StoreDir is empty.
	DefaultStoreDir = "mqdata"
	// DefaultServerWorkerThreads is the size of the name service's request pool
	// (serverWorkerThreads, the size of RocketMQ's name server pool).
	DefaultServerWorkerThreads = 8
	// DefaultServerQueueCapacity is how many requests may wait for a name service worker before
	// the node answers SYSTEM_BUSY.
	DefaultServerQueueCapacity = 10000
	// DefaultStartTimeout bounds Start's wait for each listener and for the broker.
	DefaultStartTimeout = 10 * time.Second
	// DefaultACLWatchInterval is how often ACLFile is checked for changes (RocketMQ's
	// FileWatchService, 500 ms).
	DefaultACLWatchInterval = aclcheck.DefaultWatchInterval
)

// Options is mq.Options field for field, same names and types in the same order, so that package
// mq converts with node.Options(o); the fields are documented there, once.
type Options struct {
	Listen            string
	NameServerListen  string
	BrokerListen      string
	DisableNameServer bool
	DisableBroker     bool

	NameServers                     []string
	StoreDir                        string
	FlushDiskType                   storage.FlushDiskType
	ClusterName                     string
	BrokerName                      string
	BrokerID                        int64
	BrokerIP                        string
	DisableAutoCreateTopic          bool
	SegmentBytes                    int64
	FileReservedTime                time.Duration
	DelayLevels                     []time.Duration
	RegisterNameServerPeriod        time.Duration
	RegisterNameServerPeriodMin     time.Duration
	DisableForceRegister            bool
	DisableNotifyConsumerIdsChanged bool
	RejectTransactionMessage        bool
	TransactionTimeout              time.Duration
	TransactionCheckMax             int
	TransactionCheckInterval        time.Duration
	TimerPrecision                  time.Duration
	TimerMaxDelay                   time.Duration
	ReregisterGrace                 time.Duration
	FlushConsumerOffsetInterval     time.Duration
	ClientChannelExpiredTime        time.Duration
	RebalanceLockMaxLiveTime        time.Duration

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

	BrokerRole                    storage.BrokerRole
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
	ClusterSecret                 string
	HATLS                         bool
	SlaveReadEnable               bool
	AccessMessageInMemoryMaxRatio int
	AccessMessageInMemoryMaxBytes int64
	SlaveSyncPeriod               time.Duration
	MaxLongPollingSuspend         time.Duration
	MaxHeldPullsPerConnection     int
	MaxHeldPulls                  int
	MaxQueueNums                  int32
	MaxTopics                     int
	AutoCreateTopicBurst          int
	AutoCreateTopicRate           int

	ACL              *acl.Config
	ACLFile          optional.ACLFile
	ACLWatchInterval time.Duration
	Credentials      remoting.Credentials
	TLSMode          remoting.TLSMode
	TLSConfig        *tls.Config
	TLSClientEnable  bool
	TLSClientConfig  *tls.Config
	HTTPAllowedHosts []string
	Metrics          optional.Metrics

	ControllerID                     string
	ControllerPeers                  map[string]string
	ControllerRaftListen             string
	ControllerDir                    string
	ControllerElectUncleanMaster     bool
	ControllerScanInterval           time.Duration
	ControllerBrokerHeartbeatTimeout time.Duration
	ControllerRaftTimeout            time.Duration
	Controller                       optional.Controller

	ControllerAddrs             []string
	AllAckInSyncStateSet        bool
	MinInSyncReplicas           int
	ControllerHeartbeatInterval time.Duration
	SyncBrokerMetadataPeriod    time.Duration
	CheckSyncStateSetPeriod     time.Duration
	HAMaxTimeSlaveNotCatchup    time.Duration
	ElectionPriority            int32

	Logger *zerolog.Logger
}

// withDefaults fills the settings the node itself uses; the parts default the rest.
func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.StoreDir == "" {
		o.StoreDir = DefaultStoreDir
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
	if len(o.ControllerAddrs) > 0 {
		// Controller mode: the controllers decide the role; the broker id is the broker's own.
		o.BrokerRole = storage.DefaultRole(0)
		if o.MinInSyncReplicas <= 0 {
			o.MinInSyncReplicas = DefaultMinInSyncReplicas
		}
		if o.ControllerHeartbeatInterval <= 0 {
			o.ControllerHeartbeatInterval = DefaultControllerHeartbeatInterval
		}
		if o.SyncBrokerMetadataPeriod <= 0 {
			o.SyncBrokerMetadataPeriod = DefaultSyncBrokerMetadataPeriod
		}
		if o.CheckSyncStateSetPeriod <= 0 {
			o.CheckSyncStateSetPeriod = DefaultCheckSyncStateSetPeriod
		}
		if o.HAMaxTimeSlaveNotCatchup <= 0 {
			o.HAMaxTimeSlaveNotCatchup = DefaultHAMaxTimeSlaveNotCatchup
		}
		if o.ElectionPriority == 0 {
			o.ElectionPriority = math.MaxInt32 // brokerElectionPriority: the lowest
		}
	}
	if o.BrokerRole == "" {
		o.BrokerRole = storage.DefaultRole(o.BrokerID)
	}
	// A slave named without an id is the group's first slave, so that -role slave alone works.
	if o.BrokerRole == storage.Slave && o.BrokerID == 0 {
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
	if err := o.FlushDiskType.Check(); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	if o.BrokerIP != "" {
		if _, err := netip.ParseAddr(o.BrokerIP); err != nil {
			errs = append(errs, fmt.Errorf("mq: BrokerIP %q: %w", o.BrokerIP, err))
		}
	}
	if o.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("mq: BrokerID %d is negative", o.BrokerID))
	} else if len(o.ControllerAddrs) > 0 {
		// The controllers decide the role; BrokerID is the broker's own id in its group.
		if o.MinInSyncReplicas < 1 {
			errs = append(errs, fmt.Errorf("mq: MinInSyncReplicas %d must be at least 1", o.MinInSyncReplicas))
		}
	} else if err := o.BrokerRole.Check(o.BrokerID); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	for name, addr := range map[string]string{"HAListen": o.HAListen, "MasterHA": o.MasterHA} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("mq: %s %q: %w", name, addr, err))
		}
	}
	if err := clusterauth.CheckSecret(o.ClusterSecret); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	if o.ACLFile.Impl() != nil {
		if o.ACL != nil {
			errs = append(errs, errors.New("mq: ACL and ACLFile exclude each other"))
		}
		if _, err := o.aclFile(); err != nil {
			errs = append(errs, err)
		}
	}
	if mode, err := remoting.ParseTLSMode(string(o.TLSMode)); err != nil {
		errs = append(errs, fmt.Errorf("mq: TLSMode: %w", err))
	} else if mode != remoting.TLSDisabled &&
		(o.TLSConfig == nil || len(o.TLSConfig.Certificates) == 0 && o.TLSConfig.GetCertificate == nil) {
		errs = append(errs, fmt.Errorf("mq: TLSMode %s needs a TLSConfig with a certificate", mode))
	}
	if o.HATLS && o.BrokerRole != storage.Slave && !o.DisableBroker &&
		(o.TLSConfig == nil || len(o.TLSConfig.Certificates) == 0 && o.TLSConfig.GetCertificate == nil) {
		errs = append(errs, errors.New("mq: HATLS on a master needs a TLSConfig with a certificate"))
	}
	for i, h := range o.HTTPAllowedHosts {
		if err := checkHTTPHost(h); err != nil {
			errs = append(errs, fmt.Errorf("mq: HTTPAllowedHosts[%d] %q: %w", i, h, err))
		}
	}
	if o.ControllerID != "" && o.Controller.Impl() == nil {
		errs = append(errs, errors.New("mq: ControllerID needs Options.Controller: set it to controller.Raft() "+
			"from package github.com/mqgo/mq/controller"))
	} else if o.Controller.Impl() != nil {
		if _, err := o.controllerFactory(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Metrics.Impl() != nil {
		if _, err := o.metricsFactory(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.AccessMessageInMemoryMaxRatio < 0 || o.AccessMessageInMemoryMaxRatio > 100 {
		errs = append(errs, fmt.Errorf("mq: AccessMessageInMemoryMaxRatio %d not in [0, 100]",
			o.AccessMessageInMemoryMaxRatio))
	}
	return errors.Join(errs...)
}
