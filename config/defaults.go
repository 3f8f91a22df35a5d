package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"time"

	aclcheck "github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Defaults of the node's own settings and of controller mode, named after the RocketMQ
// settings they mirror. The broker's and replication's are in broker_defaults.go; every other
// default is the constant of the part that owns it (route, remoting, storage), which
// EnsureDefaults writes in.
const (
	// DefaultListen is where a node serves when Options.Listen is empty (RocketMQ's name server
	// port, on loopback so an embedded node is not exposed by accident).
	DefaultListen = "127.0.0.1:9876"
	// DefaultStoreDir is the store directory when Store.Dir is empty.
	DefaultStoreDir = "mqdata"
	// DefaultServerWorkerThreads is the size of the name service's request pool
	// (serverWorkerThreads, the size of RocketMQ's name server pool).
	DefaultServerWorkerThreads = 8
	// DefaultServerQueueCapacity is how many requests may wait for a name service worker before
	// the node answers SYSTEM_BUSY.
	DefaultServerQueueCapacity = 10000
	// DefaultStartTimeout bounds the start's wait for each listener and for the broker.
	DefaultStartTimeout = 10 * time.Second
	// DefaultACLWatchInterval is how often Security.ACLFile is checked for changes (RocketMQ's
	// FileWatchService, 500 ms).
	DefaultACLWatchInterval = aclcheck.DefaultWatchInterval

	// Controller mode, RocketMQ 5's BrokerConfig and MessageStoreConfig values.
	DefaultControllerHeartbeatInterval = time.Second      // brokerHeartbeatInterval
	DefaultSyncBrokerMetadataPeriod    = 5 * time.Second  // syncBrokerMetadataPeriod
	DefaultCheckSyncStateSetPeriod     = 5 * time.Second  // checkSyncStateSetPeriod
	DefaultHAMaxTimeSlaveNotCatchup    = 15 * time.Second // haMaxTimeSlaveNotCatchup
	DefaultMinInSyncReplicas           = 1                // minInSyncReplicas
)

// setDefault writes def into a zero *v: negative values stay, since some settings give them
// a meaning and the parts that read them decide.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// setPositive writes def into v unless v is above zero. The settings the broker reads take it:
// the broker has always read a negative period, count or cap as unset, so config does too,
// and a group defaulted here or by the broker ends the same.
func setPositive[T ~int | ~int32 | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// EnsureDefaults writes every group's defaults into the zero fields of o. Settings whose
// default depends on where the node listens (HA.Listen, Broker.IP, NameServers) stay empty
// until the node binds; the controller's periods are the controller's own.
func (o *Options) EnsureDefaults() {
	setDefault(&o.Listen, DefaultListen)
	setDefault(&o.StartTimeout, DefaultStartTimeout)
	o.ControllerMode.EnsureDefaults()
	if len(o.ControllerMode.Addrs) > 0 {
		// The controllers decide the role; the broker id is the broker's own.
		o.Broker.Role = storage.DefaultRole(0)
	}
	o.Broker.EnsureDefaults()
	o.Store.EnsureDefaults()
	o.Limits.EnsureDefaults()
	o.Periods.EnsureDefaults()
	o.Timers.EnsureDefaults()
	o.Transactions.EnsureDefaults()
	o.Pop.EnsureDefaults()
	o.Types.EnsureDefaults()
	o.HA.EnsureDefaults()
	o.Security.EnsureDefaults()
}

// Validate reports every problem of o at once; call it after EnsureDefaults.
func (o *Options) Validate() error {
	var errs []error
	for _, a := range []struct{ name, addr string }{{"Listen", o.Listen},
		{"NameServerListen", o.NameServerListen}, {"BrokerListen", o.BrokerListen}} {
		errs = append(errs, checkHostPort(a.name, a.addr))
	}
	if (o.NameServerListen == "") != (o.BrokerListen == "") && !o.DisableNameServer && !o.DisableBroker {
		errs = append(errs, errors.New("mq: NameServerListen and BrokerListen go together"))
	}
	if o.DisableNameServer && o.DisableBroker {
		errs = append(errs, errors.New("mq: a node needs the name service, the broker, or both"))
	}
	errs = append(errs, o.Broker.Validate(len(o.ControllerMode.Addrs) > 0), o.Store.Validate(), o.Types.Validate(), o.HA.Validate(),
		o.Security.Validate(), o.Controller.Validate(), o.ControllerMode.Validate())
	if o.HA.TLS && o.Broker.Role != storage.Slave && !o.DisableBroker && !hasCertificate(o.Security) {
		errs = append(errs, errors.New("mq: HA.TLS on a master needs a Security.TLSConfig with a certificate"))
	}
	return errors.Join(errs...)
}

func checkHostPort(name, addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("mq: %s %q: %w", name, addr, err)
	}
	return nil
}

// EnsureDefaults writes the broker's defaults: RocketMQ's cluster and broker names, and the
// role its id implies (a slave named without an id is the group's first slave).
func (b *Broker) EnsureDefaults() {
	setDefault(&b.ClusterName, DefaultClusterName)
	setDefault(&b.Name, DefaultBrokerName)
	setDefault(&b.Role, storage.DefaultRole(b.ID))
	if b.Role == storage.Slave && b.ID == 0 {
		b.ID = 1
	}
	setDefault(&b.ReregisterGrace, DefaultReregisterGrace)
}

// Validate checks the broker's identity; in controller mode the controllers decide the role.
// Call it after EnsureDefaults: an empty name is no topic.
func (b *Broker) Validate(controllerMode bool) error {
	var errs []error
	if b.IP != "" {
		if _, err := netip.ParseAddr(b.IP); err != nil {
			errs = append(errs, fmt.Errorf("mq: Broker.IP %q: %w", b.IP, err))
		}
	}
	if b.ID < 0 {
		errs = append(errs, fmt.Errorf("mq: Broker.ID %d is negative", b.ID))
	} else if !controllerMode {
		if err := b.Role.Check(b.ID); err != nil {
			errs = append(errs, fmt.Errorf("mq: %w", err))
		}
	}
	// Like RocketMQ, the broker serves topics named after its cluster and itself (and
	// <cluster>_REPLY_TOPIC), and name servers refuse a registration whose topic table holds
	// an invalid name, so a broker named otherwise would never be routable.
	for _, c := range []struct{ field, topic string }{
		{"Broker.ClusterName", b.ClusterName}, {"Broker.Name", b.Name}, {"Broker.ClusterName", b.ClusterName + names.ReplyTopicSuffix},
	} {
		if err := names.CheckTopic(c.topic); err != nil {
			errs = append(errs, fmt.Errorf("mq: %s must make a valid topic name: %w", c.field, err))
			break
		}
	}
	return errors.Join(errs...)
}

// EnsureDefaults writes the store's defaults (storage's constants).
func (s *Store) EnsureDefaults() {
	setDefault(&s.Dir, DefaultStoreDir)
	setDefault(&s.FlushDiskType, storage.AsyncFlush)
	setDefault(&s.SegmentBytes, storage.DefaultSegmentBytes)
	setDefault(&s.FileReservedTime, storage.DefaultFileReservedTime)
	setDefault(&s.ConsumeQueueFileBytes, int64(storage.DefaultConsumeQueueUnits*storage.CQUnitBytes))
	setDefault(&s.MaxHashSlotNum, storage.DefaultMaxHashSlotNum)
	setDefault(&s.MaxIndexNum, storage.DefaultMaxIndexNum)
	setDefault(&s.DiskMaxUsedSpaceRatio, storage.DefaultDiskMaxUsedSpaceRatio)
	setDefault(&s.DiskSpaceCleanForciblyRatio, storage.DefaultDiskSpaceCleanForciblyRatio)
	setDefault(&s.DiskSpaceWarningLevelRatio, storage.DefaultDiskSpaceWarningLevelRatio)
	setDefault(&s.CleanResourceInterval, storage.DefaultCleanResourceInterval)
}

// ConsumeQueueUnits is ConsumeQueueFileBytes in 20-byte units, rounded up as RocketMQ's
// getMappedFileSizeConsumeQueue rounds it (0: the default).
func (s *Store) ConsumeQueueUnits() int {
	return int((s.ConsumeQueueFileBytes + storage.CQUnitBytes - 1) / storage.CQUnitBytes)
}

// Validate checks the flush mode and the memory ratio.
func (s *Store) Validate() error {
	var errs []error
	if err := s.FlushDiskType.Check(); err != nil {
		errs = append(errs, fmt.Errorf("mq: %w", err))
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"DiskMaxUsedSpaceRatio", s.DiskMaxUsedSpaceRatio}, {"DiskSpaceCleanForciblyRatio", s.DiskSpaceCleanForciblyRatio},
		{"DiskSpaceWarningLevelRatio", s.DiskSpaceWarningLevelRatio}} {
		if r.v < 0 || r.v > 100 {
			errs = append(errs, fmt.Errorf("mq: Store.%s %d not in [0, 100] (percent of the disk)", r.name, r.v))
		}
	}
	if s.ConsumeQueueFileBytes < 0 || s.ConsumeQueueFileBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("mq: Store.ConsumeQueueFileBytes %d not in [20, %d]", s.ConsumeQueueFileBytes, math.MaxInt32))
	}
	if s.MaxHashSlotNum < 0 || s.MaxIndexNum < 0 {
		errs = append(errs, fmt.Errorf("mq: Store.MaxHashSlotNum %d and MaxIndexNum %d must not be negative", s.MaxHashSlotNum, s.MaxIndexNum))
	}
	if s.AccessMessageInMemoryMaxRatio < 0 || s.AccessMessageInMemoryMaxRatio > 100 {
		errs = append(errs, fmt.Errorf("mq: Store.AccessMessageInMemoryMaxRatio %d not in [0, 100]",
			s.AccessMessageInMemoryMaxRatio))
	}
	return errors.Join(errs...)
}

// EnsureDefaults writes the limits' defaults (remoting's, the broker's, storage's, the name
// service's); the broker's take a negative value as unset too.
func (l *Limits) EnsureDefaults() {
	setDefault(&l.MaxFrameBytes, remoting.DefaultMaxFrameBytes)
	setPositive(&l.MaxMessageBytes, storage.DefaultMaxMessageBytes)
	setDefault(&l.MaxHeaderBytes, remoting.DefaultMaxHeaderBytes)
	setDefault(&l.MaxExtFields, remoting.DefaultMaxExtFields)
	setDefault(&l.MaxPendingWriteBytes, remoting.DefaultMaxPendingWriteBytes)
	setDefault(&l.MaxConnections, remoting.DefaultMaxConnections)
	setDefault(&l.ServerWorkerThreads, DefaultServerWorkerThreads)
	setDefault(&l.ServerQueueCapacity, DefaultServerQueueCapacity)
	setPositive(&l.MaxLongPollingSuspend, DefaultMaxLongPollingSuspend)
	setPositive(&l.MaxHeldPullsPerConnection, DefaultMaxHeldPullsPerConnection)
	setPositive(&l.MaxHeldPulls, DefaultMaxHeldPulls)
	setPositive(&l.MaxQueueNums, route.DefaultMaxQueueNums)
	setPositive(&l.MaxTopics, DefaultMaxTopics)
	setPositive(&l.MaxSubscriptionGroups, DefaultMaxSubscriptionGroups)
	setPositive(&l.AutoCreateTopicBurst, DefaultAutoCreateTopicBurst)
	setPositive(&l.AutoCreateTopicRate, DefaultAutoCreateTopicRate)
	// A connection can never hold more than the whole hold; setting only MaxHeldPulls lower
	// lowers both.
	l.MaxHeldPullsPerConnection = min(l.MaxHeldPullsPerConnection, l.MaxHeldPulls)
	// ServerWorkerThreads and ServerQueueCapacity take the default when not positive: a pool
	// of no workers would never answer.
	if l.ServerWorkerThreads < 0 {
		l.ServerWorkerThreads = DefaultServerWorkerThreads
	}
	if l.ServerQueueCapacity < 0 {
		l.ServerQueueCapacity = DefaultServerQueueCapacity
	}
}

// EnsureDefaults writes the periods' defaults; the broker's take a negative value as unset too.
func (p *Periods) EnsureDefaults() {
	setPositive(&p.RegisterNameServerPeriod, DefaultRegisterNameServerPeriod)
	setPositive(&p.RegisterNameServerPeriodMin, DefaultRegisterNameServerPeriodMin)
	setPositive(&p.FlushConsumerOffsetInterval, DefaultFlushConsumerOffsetInterval)
	setPositive(&p.ClientChannelExpiredTime, DefaultChannelExpiredTimeout)
	setPositive(&p.RebalanceLockMaxLiveTime, DefaultRebalanceLockMaxLiveTime)
	setDefault(&p.ScanNotActiveBrokerInterval, route.DefaultScanNotActiveBrokerInterval)
	setDefault(&p.BrokerChannelExpiredTime, route.DefaultBrokerChannelExpiredTime)
	setDefault(&p.ChannelMaxIdleTime, remoting.DefaultChannelMaxIdleTime)
}

// EnsureDefaults writes RocketMQ's 18 delay levels and the timer defaults, a negative
// precision or furthest delay included.
func (t *Timers) EnsureDefaults() {
	if len(t.DelayLevels) == 0 {
		t.DelayLevels = append([]time.Duration(nil), storage.DefaultDelayLevels...)
	}
	setPositive(&t.Precision, DefaultTimerPrecision)
	setPositive(&t.MaxDelay, DefaultTimerMaxDelay)
}

// EnsureDefaults writes the transaction check's defaults, in place of negative values too.
func (t *Transactions) EnsureDefaults() {
	setPositive(&t.Timeout, DefaultTransactionTimeout)
	setPositive(&t.CheckMax, DefaultTransactionCheckMax)
	setPositive(&t.CheckInterval, DefaultTransactionCheckInterval)
}

// EnsureDefaults writes replication's defaults (internal/replication's constants) and the
// slave sync period, negative included. A negative replication setting stays, for
// internal/replication to refuse by name.
func (h *HA) EnsureDefaults() {
	setDefault(&h.TransferBatchBytes, DefaultHATransferBatchBytes)
	setDefault(&h.HousekeepingInterval, DefaultHAHousekeepingInterval)
	setDefault(&h.SendHeartbeatInterval, DefaultHASendHeartbeatInterval)
	setDefault(&h.SlaveFallBehindMax, DefaultHASlaveFallBehindMax)
	setDefault(&h.SyncFlushTimeout, storage.DefaultSyncFlushTimeout)
	setDefault(&h.TransferWaitInterval, DefaultHATransferWaitInterval)
	setDefault(&h.ReconnectInterval, DefaultHAReconnectInterval)
	setPositive(&h.SlaveSyncPeriod, DefaultSlaveSyncPeriod)
}

// Validate checks the replication addresses.
func (h *HA) Validate() error {
	return errors.Join(checkHostPort("HA.Listen", h.Listen), checkHostPort("HA.MasterAddr", h.MasterAddr))
}

// EnsureDefaults writes the ACL file's watch period and the TLS mode.
func (s *Security) EnsureDefaults() {
	setDefault(&s.ACLWatchInterval, DefaultACLWatchInterval)
	setDefault(&s.TLSMode, remoting.TLSDisabled)
}

// Validate checks the secret's length, that ACL is given once, and that a TLS mode has a
// certificate.
func (s *Security) Validate() error {
	var errs []error
	if err := clusterauth.CheckSecret(s.ClusterSecret); err != nil {
		errs = append(errs, fmt.Errorf("mq: Security.%w", err))
	}
	if s.ACL != nil && s.ACLFile.Impl() != nil {
		errs = append(errs, errors.New("mq: Security.ACL and Security.ACLFile exclude each other"))
	}
	if mode, err := remoting.ParseTLSMode(string(s.TLSMode)); err != nil {
		errs = append(errs, fmt.Errorf("mq: Security.TLSMode: %w", err))
	} else if mode != remoting.TLSDisabled && !hasCertificate(*s) {
		errs = append(errs, fmt.Errorf("mq: Security.TLSMode %s needs a TLSConfig with a certificate", mode))
	}
	return errors.Join(errs...)
}

func hasCertificate(s Security) bool {
	return s.TLSConfig != nil && (len(s.TLSConfig.Certificates) > 0 || s.TLSConfig.GetCertificate != nil)
}

// Validate checks that a controller's id, Raft address and peers go together and agree.
func (c *Controller) Validate() error {
	if c.ID == "" && c.RaftListen == "" && len(c.Peers) == 0 {
		return nil
	}
	var errs []error
	if c.ID == "" || c.RaftListen == "" || len(c.Peers) == 0 {
		errs = append(errs, errors.New("mq: Controller.ID, Controller.RaftListen and Controller.Peers go together"))
	} else if c.Peers[c.ID] != c.RaftListen {
		errs = append(errs, fmt.Errorf("mq: Controller.Peers must name this controller, %s=%s", c.ID, c.RaftListen))
	}
	if c.ID != "" && c.Impl.Impl() == nil {
		errs = append(errs, errors.New("mq: Controller.ID needs Controller.Impl: set it to controller.Raft() "+
			"from package github.com/mqgo/mq/controller"))
	}
	return errors.Join(errs...)
}

// EnsureDefaults writes controller mode's defaults when it is on.
func (c *ControllerMode) EnsureDefaults() {
	if len(c.Addrs) == 0 {
		return
	}
	setDefault(&c.MinInSyncReplicas, DefaultMinInSyncReplicas)
	setDefault(&c.HeartbeatInterval, DefaultControllerHeartbeatInterval)
	setDefault(&c.SyncBrokerMetadataPeriod, DefaultSyncBrokerMetadataPeriod)
	setDefault(&c.CheckSyncStateSetPeriod, DefaultCheckSyncStateSetPeriod)
	setDefault(&c.HAMaxTimeSlaveNotCatchup, DefaultHAMaxTimeSlaveNotCatchup)
	setDefault(&c.ElectionPriority, math.MaxInt32) // brokerElectionPriority: the lowest
}

// Validate checks controller mode's settings, and that they are not given without it.
func (c *ControllerMode) Validate() error {
	if len(c.Addrs) == 0 {
		if c.AllAckInSyncStateSet || c.MinInSyncReplicas != 0 {
			return errors.New("mq: ControllerMode.AllAckInSyncStateSet and MinInSyncReplicas need ControllerMode.Addrs")
		}
		return nil
	}
	var errs []error
	for i, a := range c.Addrs {
		if strings.TrimSpace(a) == "" {
			errs = append(errs, fmt.Errorf("mq: ControllerMode.Addrs[%d] is empty", i))
		}
	}
	if c.MinInSyncReplicas < 1 {
		errs = append(errs, fmt.Errorf("mq: ControllerMode.MinInSyncReplicas %d must be at least 1", c.MinInSyncReplicas))
	}
	return errors.Join(errs...)
}
