package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/replication"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// DefaultSlaveSyncPeriod is how often a slave copies its master's metadata.
const DefaultSlaveSyncPeriod = 10 * time.Second

// slaveSyncTimeout bounds each metadata request a slave sends its master.
const slaveSyncTimeout = 3 * time.Second

// HAOptions configures replication; zero values mean internal/replication's defaults
// (RocketMQ's haTransferBatchSize, haHousekeepingInterval, haSendHeartbeatInterval,
// haSlaveFallbehindMax, syncFlushTimeout).
type HAOptions struct {
	// ListenAddr is the master's HA listener (haListenPort), default
	// replication.DefaultListenAddr. The node sets the broker's host and port + 1.
	ListenAddr string
	// AdvertisedIP is the host a master advertises its HA listener under (RocketMQ brokerIP2,
	// which defaults to brokerIP1); empty means the listener's own host (AdvertisedAddr).
	AdvertisedIP string
	// MasterAddr is the slave's fixed master HA address (haMasterAddress); when empty the
	// slave learns it from the name servers' REGISTER_BROKER answers.
	MasterAddr            string
	TransferBatchBytes    int
	HousekeepingInterval  time.Duration
	SendHeartbeatInterval time.Duration
	SlaveFallBehindMax    int64
	SyncFlushTimeout      time.Duration
	TransferWaitInterval  time.Duration
	ReconnectInterval     time.Duration
	// Secret, when set (at least replication.MinSecretBytes), is the shared secret master and
	// slave prove to each other before any CommitLog byte crosses the HA connection; both
	// sides need the same one. Empty speaks RocketMQ's unauthenticated protocol.
	Secret string
	// HandshakeTimeout bounds that handshake, replication.DefaultHandshakeTimeout (3 s).
	HandshakeTimeout time.Duration
	// MasterTLS makes a master's HA listener speak TLS; SlaveTLS makes a slave dial its master
	// with TLS. RocketMQ's HA connection is plaintext.
	MasterTLS *tls.Config
	SlaveTLS  *tls.Config
}

// haDefaults fills the role from the broker id and the slave sync period.
func (o Options) haDefaults() Options {
	if o.BrokerRole == "" {
		o.BrokerRole = storage.DefaultRole(o.BrokerID)
	}
	if o.SlaveSyncPeriod <= 0 {
		o.SlaveSyncPeriod = DefaultSlaveSyncPeriod
	}
	return o
}

func (o Options) haValidate() error {
	if err := o.BrokerRole.Check(o.BrokerID); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if o.AccessMessageInMemoryMaxBytes < 0 {
		return fmt.Errorf("broker: AccessMessageInMemoryMaxBytes %d is negative", o.AccessMessageInMemoryMaxBytes)
	}
	return nil
}

// haState is the replication side of a broker (owned by ha.go and slave_sync.go).
type haState struct {
	master *replication.Master // masters only
	slave  *replication.Slave  // slaves only
	// haServerAddr is the advertised HA address sent in REGISTER_BROKER.
	haServerAddr atomic.Pointer[string]
	// masterAddr is the master's broker address, learned from REGISTER_BROKER answers
	// (slaves only); metadata sync asks it.
	masterAddr atomic.Pointer[string]
	// synced counts completed metadata syncs (tests wait on it).
	synced atomic.Int64
	// timeoutLog is the broker's logger, rate-limited: a connected slave that stops
	// acknowledging would otherwise log once per send.
	timeoutLog zerolog.Logger
}

// initHA builds the replication master or slave over the opened store. It starts nothing:
// Run starts it (startHA).
func (b *Broker) initHA() error {
	b.ha = &haState{timeoutLog: b.log.Sample(&zerolog.BurstSampler{Burst: 1, Period: 10 * time.Second})}
	ho := b.opts.HA
	var err error
	if b.opts.BrokerRole == storage.Slave {
		b.ha.slave, err = replication.NewSlave(b.store, replication.SlaveOptions{
			MasterAddr:            ho.MasterAddr,
			HousekeepingInterval:  ho.HousekeepingInterval,
			SendHeartbeatInterval: ho.SendHeartbeatInterval,
			ReconnectInterval:     ho.ReconnectInterval,
			Secret:                []byte(ho.Secret),
			HandshakeTimeout:      ho.HandshakeTimeout,
			TLSConfig:             ho.SlaveTLS,
			BrokerID:              b.controllerReplicaID(),
			Logger:                b.opts.Logger,
		})
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		b.addRunner(b.runSlaveSync)
		return nil
	}
	listen := ho.ListenAddr
	if listen == "" {
		listen = replication.DefaultListenAddr
	}
	b.ha.master, err = replication.NewMaster(b.store, replication.MasterOptions{
		ListenAddr:            listen,
		TransferBatchBytes:    ho.TransferBatchBytes,
		HousekeepingInterval:  ho.HousekeepingInterval,
		SendHeartbeatInterval: ho.SendHeartbeatInterval,
		SlaveFallBehindMax:    ho.SlaveFallBehindMax,
		SyncFlushTimeout:      ho.SyncFlushTimeout,
		TransferWaitInterval:  ho.TransferWaitInterval,
		Secret:                []byte(ho.Secret),
		HandshakeTimeout:      ho.HandshakeTimeout,
		TLSConfig:             ho.MasterTLS,
		RequireIdentity:       b.opts.ControllerMode,
		OnAck:                 b.confirmAck(),
		Logger:                b.opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// startHA starts the replication slave, or the master, under g. A master's listener must be
// bound before Run registers, since REGISTER_BROKER carries its address: startHA waits for it,
// or for ctx to end (then Run learns from g.Wait whether the listener failed).
func (b *Broker) startHA(ctx context.Context, g *errgroup.Group) error {
	if s := b.ha.slave; s != nil {
		g.Go(func() error { return s.Run(ctx) })
		return nil
	}
	m := b.ha.master
	g.Go(func() error {
		if err := m.Run(ctx); err != nil {
			return fmt.Errorf("broker: HA listener: %w", err)
		}
		return nil
	})
	select {
	case <-m.Ready():
	case <-ctx.Done():
		return nil
	}
	addr, err := AdvertisedAddr(m.Addr(), b.opts.HA.AdvertisedIP)
	if err != nil {
		return fmt.Errorf("broker: HA listener: %w", err)
	}
	b.ha.haServerAddr.Store(&addr)
	return nil
}

// Role is the broker's role.
func (b *Broker) Role() storage.BrokerRole { return b.opts.BrokerRole }

// HAAddr is the address a master advertises its HA listener under, sent in REGISTER_BROKER so
// slaves learn it; "" on a slave and until Run has bound the listener.
func (b *Broker) HAAddr() string {
	if p := b.ha.haServerAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// MasterHAAddr is the master HA address a slave follows (HA.MasterAddr, else learned from the
// name servers), or "" on a master and before a slave learned it.
func (b *Broker) MasterHAAddr() string {
	if b.ha.slave == nil {
		return ""
	}
	return b.ha.slave.MasterAddr()
}

// ConnectedSlaves is the number of slaves connected to a master's HA listener (0 on a slave).
func (b *Broker) ConnectedSlaves() int {
	if b.ha.master == nil {
		return 0
	}
	return len(b.ha.master.Slaves())
}

// MasterAddr is the master broker address a slave learned from the name servers, or "".
func (b *Broker) MasterAddr() string {
	if p := b.ha.masterAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// onRegistered applies a name server's REGISTER_BROKER answer: a slave learns its master's
// broker address (for metadata sync) and, unless HA.MasterAddr fixes it, its HA address
// (RocketMQ updateMasterHAServerAddrPeriodically).
func (b *Broker) onRegistered(res *route.RegisterBrokerResult) {
	if b.ha == nil || b.ha.slave == nil || res == nil {
		return
	}
	if res.MasterAddr != "" && res.MasterAddr != b.MasterAddr() {
		addr := res.MasterAddr
		b.ha.masterAddr.Store(&addr)
		b.log.Info().Str("master", addr).Msg("master broker address learned")
	}
	if res.HAServerAddr != "" && b.opts.HA.MasterAddr == "" {
		b.ha.slave.SetMasterAddr(res.HAServerAddr)
	}
}

// onDispatch is the store's dispatch hook: wake held pulls, and tell the HA writers the log
// grew so they stream at once.
func (b *Broker) onDispatch(e storage.DispatchEvent) {
	b.pull.onMessageArriving(e)
	if b.ha != nil && b.ha.master != nil {
		b.ha.master.Notify()
	}
	b.hooks.dispatched(e)
}

// waitForSlave runs a SYNC_MASTER's group transfer after a stored put: it waits (at most the
// replication SyncFlushTimeout) until a slave has the bytes, and turns the outcome into the
// put status RocketMQ answers (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE). Other roles return
// at once.
func (b *Broker) waitForSlave(ctx context.Context, r *storage.PutResult) {
	if b.opts.BrokerRole != storage.SyncMaster || b.ha.master == nil || !putStored(r.Status) {
		return
	}
	// ctx is the dispatcher's: it ends when the node closes, which must not wait out
	// SyncFlushTimeout for every send still waiting on a slave.
	err := b.ha.master.WaitForAck(ctx, r.PhyOffset+int64(r.WroteBytes))
	switch {
	case err == nil:
	case errors.Is(err, replication.ErrNoSlave):
		r.Status = storage.SlaveNotAvailable
	case ctx.Err() != nil: // closing: stored, but not known to be on a slave
		r.Status = storage.FlushSlaveTimeout
	default: // ErrSlaveTimeout
		r.Status = storage.FlushSlaveTimeout
		b.ha.timeoutLog.Warn().Err(err).Int64("phy_offset", r.PhyOffset).Msg("slave did not acknowledge in time")
	}
}

// suggestBroker is the suggestWhichBrokerId of a pull answer (RocketMQ PullMessageProcessor):
// with slave reading enabled, the group's whichBrokerWhenConsumeSlowly when the reader is far
// behind, else the group's broker id; without it, the master.
func (b *Broker) suggestBroker(r *storage.GetResult, cfg SubscriptionGroupConfig) int64 {
	if !b.opts.SlaveReadEnable {
		return masterID
	}
	if b.farBehind(r) {
		return cfg.WhichBrokerWhenConsumeSlowly
	}
	return cfg.BrokerID
}

// recordPhyOffset is where a stored record keeps its own CommitLog offset (§9.1: TOTALSIZE,
// MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, then PHYSICALOFFSET).
const recordPhyOffset = 4 + 4 + 4 + 4 + 4 + 8

// farBehind reports whether a pull read data likely out of memory: the store's
// accessMessageInMemoryMaxRatio test, or AccessMessageInMemoryMaxBytes when set.
func (b *Broker) farBehind(r *storage.GetResult) bool {
	limit := b.opts.AccessMessageInMemoryMaxBytes
	if limit <= 0 {
		return r.SuggestPullingFromSlave
	}
	if len(r.Messages) == 0 {
		return false
	}
	last := r.Messages[len(r.Messages)-1]
	if len(last) < recordPhyOffset+8 {
		return false
	}
	phy := int64(binary.BigEndian.Uint64(last[recordPhyOffset:]))
	return b.store.MaxPhyOffset()-phy > limit
}

// runSlaveSync copies the master's metadata every SlaveSyncPeriod (RocketMQ SlaveSynchronize
// syncAll), once the master's address is known.
func (b *Broker) runSlaveSync(ctx context.Context) error {
	t := time.NewTicker(b.opts.SlaveSyncPeriod)
	defer t.Stop()
	for {
		if addr := b.MasterAddr(); addr != "" {
			if err := b.syncFromMaster(ctx, addr); err != nil && ctx.Err() == nil {
				b.log.Warn().Err(err).Str("master", addr).Msg("slave metadata sync failed")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// syncFromMaster fetches and installs the four tables; each failure is reported, the others
// still run.
func (b *Broker) syncFromMaster(ctx context.Context, addr string) error {
	err := errors.Join(
		b.syncOne(ctx, addr, remoting.GetAllTopicConfig, b.installTopicConfigs),
		b.syncOne(ctx, addr, remoting.GetAllConsumerOffset, b.installConsumerOffsets),
		b.syncOne(ctx, addr, remoting.GetAllDelayOffset, b.installDelayOffsets),
		b.syncOne(ctx, addr, remoting.GetAllSubscriptionGroupConfig, b.installSubscriptionGroups),
	)
	if err == nil {
		b.ha.synced.Add(1)
	}
	return err
}

func (b *Broker) syncOne(ctx context.Context, addr string, code int16, install func([]byte) error) error {
	if b.opts.Transport == nil {
		return errors.New("broker: no transport to reach the master")
	}
	rctx, cancel := context.WithTimeout(ctx, slaveSyncTimeout)
	defer cancel()
	resp, err := b.opts.Transport.InvokeSync(rctx, addr, remoting.NewRequest(code, nil, nil))
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return fmt.Errorf("request %d: %w", code, err)
	}
	if err := install(resp.Body); err != nil {
		return fmt.Errorf("request %d: %w", code, err)
	}
	return nil
}

// MetadataSyncs counts the slave's completed metadata syncs from its master.
func (b *Broker) MetadataSyncs() int64 { return b.ha.synced.Load() }
