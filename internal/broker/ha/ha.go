package ha

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/replication"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// DelayOffsets is the schedule service's side of slave sync: a slave replaces its delay
// cursors with its master's (RocketMQ SlaveSynchronize.syncDelayOffset).
type DelayOffsets interface {
	SetDelayOffsets(w protocol.DelayOffsetSerializeWrapper) error
}

// RequestModes is the assignment service's side of slave sync: a slave replaces its message
// request modes with its master's GET_ALL_MESSAGE_REQUEST_MODE body (RocketMQ 5
// SlaveSynchronize.syncMessageRequestMode).
type RequestModes interface {
	InstallMaster(body []byte) error
}

// Deps are what the service needs beyond the core.
type Deps struct {
	// DelayOffsets takes the master's delay offsets on a slave; nil leaves them out of sync.
	DelayOffsets DelayOffsets
	// RequestModes takes the master's message request modes; nil leaves them out of sync.
	RequestModes RequestModes
}

// Service is one broker's replication: the HA master or slave over the broker's store, the
// SYNC_MASTER wait, a slave's metadata sync, and controller mode's per-broker state.
type Service struct {
	core   *broker.Broker
	opts   *broker.Options
	store  *storage.Store
	log    zerolog.Logger
	delays DelayOffsets
	modes  RequestModes

	master *replication.Master // masters only
	slave  *replication.Slave  // slaves only
	// haAddr is the advertised HA address sent in REGISTER_BROKER (masters, once bound).
	haAddr atomic.Pointer[string]
	// masterAddr is the master's broker address, learned from REGISTER_BROKER answers
	// (slaves only); metadata sync asks it.
	masterAddr atomic.Pointer[string]
	// synced counts completed metadata syncs (tests wait on it).
	synced atomic.Int64
	// timeoutLog is the service's logger, rate-limited: a connected slave that stops
	// acknowledging would otherwise log once per send.
	timeoutLog zerolog.Logger

	// inSync is how many members the replicas manager last told a master its SyncStateSet
	// has, the master included; it starts at 1 (the master alone).
	inSync atomic.Int32
	// pendingDelays are a controller-mode slave's delay cursors waiting for its log to reach
	// what they count (slave_sync.go).
	pendingDelays atomic.Pointer[pendingDelays]
}

var _ broker.Service = (*Service)(nil)
var _ broker.Replicator = (*Service)(nil)

// New builds the replication master or slave over core's opened store, appends a controller
// mode master's epoch, and installs the service as core's Replicator. It starts nothing: the
// core starts the replication (Start) before it registers, and Run runs the slave's metadata
// sync. Attach it to core.
func New(core *broker.Broker, deps Deps) (*Service, error) {
	opts := core.Options()
	log := core.Logger().With().Str("component", "ha").Str("broker", opts.Broker.Name).Logger()
	s := &Service{core: core, opts: opts, store: core.Store(), log: log, delays: deps.DelayOffsets, modes: deps.RequestModes,
		timeoutLog: log.Sample(&zerolog.BurstSampler{Burst: 1, Period: 10 * time.Second})}
	s.inSync.Store(1)
	var err error
	if opts.Broker.Role == storage.Slave {
		s.slave, err = replication.NewSlave(s.store, slaveOptions(opts, s.replicaID()))
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		if m := opts.ControllerMaster; opts.ControllerMode && m != "" {
			s.masterAddr.Store(&m)
		}
		if err := s.adoptEpochs(); err != nil {
			return nil, err
		}
	} else {
		mo := masterOptions(opts)
		mo.OnAck = s.confirmAck()
		s.master, err = replication.NewMaster(s.store, mo)
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		// The HA writers stream what the log grew by at once instead of at their next poll.
		m := s.master
		core.Hooks().OnDispatch(func(storage.DispatchEvent) { m.Notify() })
	}
	if err := s.appendEpoch(); err != nil {
		return nil, err
	}
	// The SyncStateSet bounds what consumers see from the first send: until the replicas
	// manager applies it once the broker serves, a send stored meanwhile would be dispatched
	// at once, and a consumer could read a message the next master lacks.
	if s.master != nil && opts.ControllerMode && len(opts.SyncStateSet) > 0 {
		s.SetSyncStateSet(opts.SyncStateSet)
	}
	core.Seams().SetReplicator(s)
	return s, nil
}

// masterOptions and slaveOptions are where the broker's HA group becomes replication's
// options: replication declares its own fields (it sees only a store) and the node's HA group
// is config's, so this is the one place they are mapped field by field.
func masterOptions(opts *broker.Options) replication.MasterOptions {
	h, c := opts.HA, opts.HAConn
	listen := h.Listen
	if listen == "" {
		listen = replication.DefaultListenAddr
	}
	return replication.MasterOptions{
		ListenAddr:            listen,
		TransferBatchBytes:    h.TransferBatchBytes,
		HousekeepingInterval:  h.HousekeepingInterval,
		SendHeartbeatInterval: h.SendHeartbeatInterval,
		SlaveFallBehindMax:    h.SlaveFallBehindMax,
		SyncFlushTimeout:      h.SyncFlushTimeout,
		TransferWaitInterval:  h.TransferWaitInterval,
		Secret:                []byte(h.Secret),
		HandshakeTimeout:      c.HandshakeTimeout,
		TLSConfig:             c.MasterTLS,
		RequireIdentity:       opts.ControllerMode,
		Logger:                opts.Logger,
	}
}

// slaveOptions are a slave's replication options; id is the broker id it names to its master
// (0: none).
func slaveOptions(opts *broker.Options, id int64) replication.SlaveOptions {
	h, c := opts.HA, opts.HAConn
	return replication.SlaveOptions{
		MasterAddr:            h.MasterAddr,
		HousekeepingInterval:  h.HousekeepingInterval,
		SendHeartbeatInterval: h.SendHeartbeatInterval,
		ReconnectInterval:     h.ReconnectInterval,
		Secret:                []byte(h.Secret),
		HandshakeTimeout:      c.HandshakeTimeout,
		TLSConfig:             c.SlaveTLS,
		BrokerID:              id,
		Logger:                opts.Logger,
	}
}

// Of is the Service installed as b's Replicator, or nil.
func Of(b *broker.Broker) *Service {
	if b == nil {
		return nil
	}
	s, _ := b.Seams().Replicator().(*Service)
	return s
}

// Handlers serves GET_BROKER_EPOCH_CACHE and GET_BROKER_HA_STATUS (status.go).
func (s *Service) Handlers() []broker.Handler {
	return []broker.Handler{{Code: remoting.GetBrokerEpochCache,
		Proc: remoting.ProcessorFunc(s.processEpochCache), Pool: s.core.Pools().Admin},
		{Code: remoting.GetBrokerHAStatus, Proc: remoting.ProcessorFunc(s.processHAStatus), Pool: s.core.Pools().Admin}}
}

// Run runs a slave's metadata sync until ctx ends; a master has nothing to run here (its
// listener runs from Start).
func (s *Service) Run(ctx context.Context) error {
	if s.slave == nil {
		return nil
	}
	return s.runSlaveSync(ctx)
}

// Close has nothing to write: the replication stops with the context Start was given.
func (s *Service) Close() error { return nil }

// Start starts the replication slave, or the master, on run. A master's listener must be
// bound before the broker registers, since REGISTER_BROKER carries its address: Start waits
// for it, or for ctx to end (then the broker learns from its errgroup whether the listener
// failed).
func (s *Service) Start(ctx context.Context, run func(func() error)) error {
	if sl := s.slave; sl != nil {
		run(func() error { return sl.Run(ctx) })
		return nil
	}
	m := s.master
	run(func() error {
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
	addr, err := config.AdvertisedAddr(m.Addr(), s.opts.HAConn.AdvertisedIP)
	if err != nil {
		return fmt.Errorf("broker: HA listener: %w", err)
	}
	s.haAddr.Store(&addr)
	return nil
}

// Addr is the address a master advertises its HA listener under; "" on a slave and until
// Start has bound the listener.
func (s *Service) Addr() string {
	if p := s.haAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// ListenAddr is the master's bound HA listener address (not the advertised one), or "".
func (s *Service) ListenAddr() string {
	if s.master == nil {
		return ""
	}
	return s.master.Addr()
}

// MasterHAAddr is the master HA address a slave follows (HA.MasterAddr, else learned from the
// name servers), or "" on a master and before a slave learned it.
func (s *Service) MasterHAAddr() string {
	if s == nil || s.slave == nil {
		return ""
	}
	return s.slave.MasterAddr()
}

// MasterConnected reports whether a slave follows its master over an open HA connection;
// false on a master, a nil Service and while the slave dials.
func (s *Service) MasterConnected() bool {
	return s != nil && s.slave != nil && s.slave.Connected()
}

// IsSlave reports whether the service follows a master.
func (s *Service) IsSlave() bool { return s != nil && s.slave != nil }

// ConnectedSlaves is the number of slaves connected to a master's HA listener (0 on a slave).
func (s *Service) ConnectedSlaves() int {
	if s.master == nil {
		return 0
	}
	return len(s.master.Slaves())
}

// MasterAddr is the master broker address a slave learned from the name servers, or "".
func (s *Service) MasterAddr() string {
	if s == nil {
		return ""
	}
	if p := s.masterAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Slaves lists a master's connected slaves (nil on a slave).
func (s *Service) Slaves() []broker.SlaveAck {
	if s.master == nil {
		return nil
	}
	var out []broker.SlaveAck
	for _, sl := range s.master.Slaves() {
		out = append(out, broker.SlaveAck{Addr: sl.Addr, BrokerID: sl.BrokerID, AckOffset: sl.AckOffset})
	}
	return out
}

// Registered applies a name server's REGISTER_BROKER answer: a slave learns its master's
// broker address (for metadata sync) and, unless HA.MasterAddr fixes it, its HA address
// (RocketMQ updateMasterHAServerAddrPeriodically). In controller mode only an answer naming the
// master the controllers named counts: a deposed master cut off from the controllers still
// registers as master, and a slave that followed it would stream its log onto a history that
// parted from its own (RocketMQ's AutoSwitchHA compares epochs on every connection; mq compares
// them once, with the master the controllers named, before the slave follows it).
func (s *Service) Registered(res *route.RegisterBrokerResult) {
	if s.slave == nil || res == nil {
		return
	}
	if s.opts.ControllerMode && res.MasterAddr != s.opts.ControllerMaster {
		s.log.Debug().Str("answer_master", res.MasterAddr).Str("controller_master", s.opts.ControllerMaster).
			Msg("registration answer names another master: ignored")
		return
	}
	if res.MasterAddr != "" && res.MasterAddr != s.MasterAddr() {
		addr := res.MasterAddr
		s.masterAddr.Store(&addr)
		s.log.Info().Str("master", addr).Msg("master broker address learned")
	}
	if res.HAServerAddr != "" && s.opts.HA.MasterAddr == "" {
		s.slave.SetMasterAddr(res.HAServerAddr)
	}
}

// WaitForSlave runs a SYNC_MASTER's group transfer after a put stored up to end: it waits
// (at most the replication SyncFlushTimeout) until a slave has the bytes, and returns the put
// status RocketMQ answers: status when a slave has them, else FLUSH_SLAVE_TIMEOUT or
// SLAVE_NOT_AVAILABLE.
func (s *Service) WaitForSlave(ctx context.Context, end int64, status storage.PutStatus) storage.PutStatus {
	if s.master == nil {
		return status
	}
	// ctx is the dispatcher's: it ends when the node closes, which must not wait out
	// SyncFlushTimeout for every send still waiting on a slave.
	err := s.master.WaitForAck(ctx, end)
	switch {
	case err == nil:
		return status
	case errors.Is(err, replication.ErrNoSlave):
		return storage.SlaveNotAvailable
	case ctx.Err() != nil: // closing: stored, but not known to be on a slave
		return storage.FlushSlaveTimeout
	default: // ErrSlaveTimeout
		s.timeoutLog.Warn().Err(err).Int64("end", end).Msg("slave did not acknowledge in time")
		return storage.FlushSlaveTimeout
	}
}
