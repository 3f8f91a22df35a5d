package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mqgo/mq/config"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Controller mode, the broker's side (RocketMQ 5's ReplicasManager): the replicas manager
// registers the node's broker with the controllers, asks them who the group's master is, has
// the node run its broker in the role they decide, heartbeats, and, as master, grows and
// shrinks the SyncStateSet. A role change restarts the broker (Restarter.RestartBroker); a
// broker that becomes a slave first cuts its store where its history and the new master's part
// (epochs), so no replica diverges.

// Defaults of controller mode, RocketMQ 5's BrokerConfig and MessageStoreConfig values.
const (
	DefaultControllerHeartbeatInterval = config.DefaultControllerHeartbeatInterval
	DefaultSyncBrokerMetadataPeriod    = config.DefaultSyncBrokerMetadataPeriod
	DefaultCheckSyncStateSetPeriod     = config.DefaultCheckSyncStateSetPeriod
	DefaultHAMaxTimeSlaveNotCatchup    = config.DefaultHAMaxTimeSlaveNotCatchup
	DefaultMinInSyncReplicas           = config.DefaultMinInSyncReplicas
	// controllerRequestTimeout bounds each request to a controller (RocketMQ's 3 s).
	controllerRequestTimeout = 3 * time.Second
)

// ReplicasOptions are the node's settings of controller mode, defaults applied.
type ReplicasOptions struct {
	ClusterName, BrokerName string
	// BrokerID is the id the broker asks for; 0 takes the one its store kept, else the next
	// free one.
	BrokerID int64
	// StoreDir keeps the broker's identity (brokerIdentity) beside its store.
	StoreDir             string
	ControllerAddrs      []string
	MinInSyncReplicas    int
	AllAckInSyncStateSet bool
	ElectionPriority     int32

	ControllerHeartbeatInterval time.Duration
	SyncBrokerMetadataPeriod    time.Duration
	CheckSyncStateSetPeriod     time.Duration
	HAMaxTimeSlaveNotCatchup    time.Duration
	Logger                      *zerolog.Logger
}

// Restarter is the node as the replicas manager drives it: the broker it runs, and the
// restart of that broker in a new role on the same listener and store.
type Restarter interface {
	Broker() *broker.Broker
	RestartBroker(edit func(*broker.Options)) error
}

// errNoController means no controller answered as or named a leader.
var errNoController = errors.New("no controller leader")

// replicaState is what the controllers last said about the group.
type replicaState struct {
	masterID   int64 // -1: none
	masterAddr string
	epoch      int32
	set        protocol.SyncStateSet
}

// Replicas runs controller mode for one node.
type Replicas struct {
	n          Restarter
	log        zerolog.Logger
	tr         remoting.Transport
	addrs      []string // controllers' remoting addresses
	brokerAddr string
	o          ReplicasOptions
	// checkCode proves to the controller that a broker applying its id again is the same one
	// (RocketMQ's registerCheckCode, "<address>;<start time>").
	checkCode string
	// identityKept: the id and check code are in the store's brokerIdentity file.
	identityKept bool

	// notified is signalled by NOTIFY_BROKER_ROLE_CHANGED (capacity 1).
	notified chan struct{}
	// storeOpts are the store's options as PrepareStart saw them: a role change after a
	// failed one, with no broker running, reads the store's history through them.
	storeOpts storage.Options

	mu       sync.Mutex
	leader   string
	id       int64 // this broker's id in its group
	state    replicaState
	isMaster bool
	// caughtUp is when each slave last had what the master had one heartbeat before;
	// lastEnd is the master's log end at the previous tracking tick.
	caughtUp map[int64]time.Time
	lastEnd  int64
}

// NewReplicas builds the replicas manager of the broker at brokerAddr, reaching the
// controllers over tr and driving n. It starts nothing: the node calls Join and PrepareStart
// before it runs its broker, Started once it serves, then Run.
func NewReplicas(o ReplicasOptions, tr remoting.Transport, brokerAddr string, n Restarter) *Replicas {
	// The broker applies these defaults itself; the controllers need them from the start.
	if o.ClusterName == "" {
		o.ClusterName = config.DefaultClusterName
	}
	if o.BrokerName == "" {
		o.BrokerName = config.DefaultBrokerName
	}
	l := zerolog.Nop()
	if o.Logger != nil {
		l = *o.Logger
	}
	return &Replicas{n: n, log: l.With().Str("component", "replicas").Logger(), tr: tr,
		addrs: o.ControllerAddrs, brokerAddr: brokerAddr, o: o, notified: make(chan struct{}, 1),
		id: o.BrokerID, caughtUp: map[int64]time.Time{}, state: replicaState{masterID: -1},
		checkCode: brokerAddr + ";" + strconv.FormatInt(time.Now().UnixMilli(), 10)}
}

// invoke sends a request to addr and returns the answer.
func (r *Replicas) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, controllerRequestTimeout)
	defer cancel()
	return r.tr.InvokeSync(ctx, addr, req)
}

// findLeader asks the controllers who leads (CONTROLLER_GET_METADATA_INFO).
func (r *Replicas) findLeader(ctx context.Context) (string, error) {
	var last error = errNoController
	for _, addr := range r.addrs {
		resp, err := r.invoke(ctx, addr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		if err == nil {
			err = remoting.ErrorFromResponse(resp)
		}
		if err != nil {
			last = fmt.Errorf("controller %s: %w", addr, err)
			continue
		}
		var h protocol.GetMetaDataResponseHeader
		if err := h.Decode(resp.ExtFields); err != nil {
			last = err
			continue
		}
		if h.IsLeader {
			return addr, nil
		}
		if h.ControllerLeaderAddress != "" {
			return h.ControllerLeaderAddress, nil
		}
	}
	return "", last
}

// toLeader sends build's request to the leader, finding it again once if the one known stopped
// leading.
func (r *Replicas) toLeader(ctx context.Context, build func() *remoting.Command) (*remoting.Command, error) {
	for attempt := 0; attempt < 2; attempt++ {
		r.mu.Lock()
		leader := r.leader
		r.mu.Unlock()
		if leader == "" || attempt > 0 {
			var err error
			if leader, err = r.findLeader(ctx); err != nil {
				return nil, err
			}
			r.mu.Lock()
			r.leader = leader
			r.mu.Unlock()
		}
		resp, err := r.invoke(ctx, leader, build())
		if err != nil || resp.Code == remoting.ControllerNotLeader {
			continue
		}
		return resp, nil
	}
	return nil, errNoController
}

// Join makes this broker a member of its group: its id (applied, or the next free one), its
// registration, and a master (itself, if the group has none and it wins the election). It
// retries until ctx ends: controllers may still be electing their leader. A NO_PERMISSION
// answer (another cluster secret, a refused account) ends it at once, since no retry cures it.
func (r *Replicas) Join(ctx context.Context) error {
	if err := r.loadIdentity(); err != nil {
		return fmt.Errorf("mq: controller mode: %w", err)
	}
	var last error
	for {
		err := r.joinOnce(ctx)
		if err == nil {
			return nil
		}
		if re := (*remoting.ResponseError)(nil); errors.As(err, &re) && re.Code == remoting.NoPermission {
			return fmt.Errorf("mq: controller mode: %w", err)
		}
		r.log.Debug().Err(err).Msg("joining the group through the controllers")
		// An attempt that the deadline cut short fails with a timed-out request, which hides
		// why the attempts before it failed (internal/sim, seed 453: every start of a broker
		// "timed out" at a controller that answered each attempt with no master to elect).
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mq: controller mode: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *Replicas) joinOnce(ctx context.Context) error {
	o := r.o
	if r.id <= 0 {
		resp, err := r.toLeader(ctx, func() *remoting.Command {
			return remoting.NewRequest(remoting.ControllerGetNextBrokerID, remoting.EncodeHeader(
				&protocol.GetNextBrokerIdRequestHeader{ClusterName: o.ClusterName, BrokerName: o.BrokerName}), nil)
		})
		if err != nil {
			return err
		}
		if err := remoting.ErrorFromResponse(resp); err != nil {
			return err
		}
		var h protocol.GetNextBrokerIdResponseHeader
		if err := h.Decode(resp.ExtFields); err != nil {
			return err
		}
		r.id = h.NextBrokerID
	}
	// Kept before applying, so a broker that dies meanwhile applies again with the same code.
	if !r.identityKept {
		if err := r.saveIdentity(); err != nil {
			return err
		}
	}
	resp, err := r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerApplyBrokerID, remoting.EncodeHeader(&protocol.ApplyBrokerIdRequestHeader{
			ClusterName: o.ClusterName, BrokerName: o.BrokerName, AppliedBrokerID: r.id, RegisterCheckCode: r.checkCode}), nil)
	})
	if err != nil {
		return err
	}
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return fmt.Errorf("broker id %d: %w", r.id, err)
	}
	resp, err = r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerRegisterBroker, remoting.EncodeHeader(&protocol.RegisterBrokerToControllerRequestHeader{
			ClusterName: o.ClusterName, BrokerName: o.BrokerName, BrokerID: r.id, BrokerAddress: r.brokerAddr,
			InvokeTime: time.Now().UnixMilli()}), nil)
	})
	if err != nil {
		return err
	}
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return err
	}
	var rh protocol.RegisterBrokerToControllerResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return err
	}
	st := replicaState{masterID: rh.MasterBrokerID, masterAddr: rh.MasterAddress, epoch: rh.MasterEpoch}
	if st.set, err = protocol.DecodeSyncStateSet(resp.Body); err != nil {
		st.set = protocol.SyncStateSet{}
	}
	if st.masterID < 0 || st.masterAddr == "" {
		// Only live brokers are candidates, and the heartbeats of run start after the join:
		// without this one, a group whose brokers all stopped could never elect again.
		r.offerSelf(ctx)
		if st, err = r.elect(ctx); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.state = st
	r.mu.Unlock()
	return nil
}

// brokerIdentityFile names the file in the store directory that keeps a broker's place in its
// group across restarts (RocketMQ's brokerIdentity): without it, a restarted broker's new check
// code makes the controllers refuse its own id as belonging to another broker.
const brokerIdentityFile = "brokerIdentity"

// brokerIdentity is the content of brokerIdentityFile.
type brokerIdentity struct {
	ClusterName       string `json:"clusterName"`
	BrokerName        string `json:"brokerName"`
	BrokerID          int64  `json:"brokerId"`
	RegisterCheckCode string `json:"registerCheckCode"`
}

// loadIdentity takes the id and check code a previous run on this store applied with; a store
// of another group, or of another id than Options.BrokerID asks, is refused.
func (r *Replicas) loadIdentity() error {
	path := filepath.Join(r.o.StoreDir, brokerIdentityFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var id brokerIdentity
	if err := json.Unmarshal(data, &id); err != nil || id.BrokerID <= 0 || id.RegisterCheckCode == "" {
		return fmt.Errorf("%s: not a broker identity (%v)", path, err)
	}
	if id.ClusterName != r.o.ClusterName || id.BrokerName != r.o.BrokerName {
		return fmt.Errorf("%s: the store belongs to %s/%s, not %s/%s", path, id.ClusterName, id.BrokerName, r.o.ClusterName, r.o.BrokerName)
	}
	if r.o.BrokerID > 0 && r.o.BrokerID != id.BrokerID {
		return fmt.Errorf("%s: the store belongs to broker id %d, not %d", path, id.BrokerID, r.o.BrokerID)
	}
	r.id, r.checkCode, r.identityKept = id.BrokerID, id.RegisterCheckCode, true
	return nil
}

// saveIdentity writes this broker's id and check code to its store, atomically.
func (r *Replicas) saveIdentity() error {
	data, err := json.Marshal(brokerIdentity{ClusterName: r.o.ClusterName, BrokerName: r.o.BrokerName,
		BrokerID: r.id, RegisterCheckCode: r.checkCode})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.o.StoreDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(r.o.StoreDir, brokerIdentityFile)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync() // a crash must not leave an empty identity that refuses the next start
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	r.identityKept = true
	return nil
}

// elect asks the controller for a master, offering this broker (CONTROLLER_ELECT_MASTER): the
// controller decides by its policy, so the answer may name another broker.
func (r *Replicas) elect(ctx context.Context) (replicaState, error) {
	o := r.o
	resp, err := r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerElectMaster, remoting.EncodeHeader(&protocol.ElectMasterRequestHeader{
			ClusterName: o.ClusterName, BrokerName: o.BrokerName, BrokerID: r.id, InvokeTime: time.Now().UnixMilli()}), nil)
	})
	if err != nil {
		return replicaState{}, err
	}
	if resp.Code != remoting.Success && resp.Code != remoting.ControllerMasterStillExist {
		return replicaState{}, remoting.ErrorFromResponse(resp)
	}
	var h protocol.ElectMasterResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return replicaState{}, err
	}
	if h.MasterBrokerID <= 0 || h.MasterAddress == "" {
		return replicaState{}, fmt.Errorf("the election named no master: %s", resp.Remark)
	}
	return replicaState{masterID: h.MasterBrokerID, masterAddr: h.MasterAddress, epoch: h.MasterEpoch,
		set: protocol.SyncStateSet{SyncStateSet: []int64{h.MasterBrokerID}, SyncStateSetEpoch: h.SyncStateSetEpoch}}, nil
}

// roleOptions sets the broker options of the role st gives this broker.
func (r *Replicas) roleOptions(bo *broker.Options, st replicaState) {
	bo.ControllerMode, bo.ReplicaID = true, r.id
	bo.MinInSyncReplicas, bo.AllAckInSyncStateSet = r.o.MinInSyncReplicas, r.o.AllAckInSyncStateSet
	if st.masterID == r.id {
		bo.Broker.ID, bo.MasterEpoch = 0, st.epoch
		bo.SyncStateSet = slices.Clone(st.set.SyncStateSet)
		bo.Broker.Role = storage.AsyncMaster
		if r.o.AllAckInSyncStateSet {
			bo.Broker.Role = storage.SyncMaster
		}
		return
	}
	bo.Broker.ID, bo.Broker.Role, bo.MasterEpoch = r.id, storage.Slave, 0
	bo.ControllerMaster = st.masterAddr
}

// followPoint compares this store's history with the master's (GET_BROKER_EPOCH_CACHE) and
// returns where the store must be cut to follow it, and the master's epochs to adopt. cut is
// false when the store already agrees.
//
// The master's history must end with masterEpoch, the epoch the controllers named it master
// of: a master still restarting into its role answers the history before it, and a slave that
// adopted that would count what the master writes in its new epoch as the epoch before, and
// later compare histories wrongly (a deposed master's writes of that older epoch would look
// like a prefix of them).
func (r *Replicas) followPoint(ctx context.Context, masterAddr string, masterEpoch int32, local []storage.EpochEntry, localMax int64) (point int64, cut bool, remote []storage.EpochEntry, err error) {
	resp, err := r.invoke(ctx, masterAddr, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return 0, false, nil, fmt.Errorf("epochs of master %s: %w", masterAddr, err)
	}
	cache, err := DecodeEpochCache(resp.Body)
	if err != nil {
		return 0, false, nil, fmt.Errorf("epochs of master %s: %w", masterAddr, err)
	}
	for _, e := range cache.Entries {
		remote = append(remote, storage.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	if len(remote) == 0 || remote[len(remote)-1].Epoch != masterEpoch {
		return 0, false, nil, fmt.Errorf("master %s has not taken epoch %d yet (its history: %v): following it later", masterAddr, masterEpoch, remote)
	}
	if len(local) == 0 {
		// A replica that never had an epoch holds a prefix of the first master's log, or
		// nothing: it follows from its end, as RocketMQ lets it. More than the master has
		// cannot be a prefix: cut to the master's end.
		if localMax > cache.MaxOffset {
			return cache.MaxOffset, true, remote, nil
		}
		return localMax, false, remote, nil
	}
	p, ok := storage.ConsistentPoint(local, remote, localMax, cache.MaxOffset)
	if !ok {
		return 0, false, nil, fmt.Errorf("no epoch in common with master %s: refusing to follow", masterAddr)
	}
	return p, p < localMax, remote, nil
}

// storeHistory reads the epochs and the end of the store at dir without a broker: the node
// needs them before it starts its broker as a slave, so that it never streams onto a log that
// parted from the master's.
func storeHistory(so storage.Options) ([]storage.EpochEntry, int64, error) {
	so.Slave = true
	so.Logger = nil
	st, err := storage.Open(so)
	if err != nil {
		return nil, 0, err
	}
	h, end := st.Epochs(), st.MaxPhyOffset()
	return h, end, st.Close()
}

// PrepareStart sets bo to the first role Join found: as a slave, the store is cut first where
// it parts from the master's history, and the broker adopts that history before it follows.
func (r *Replicas) PrepareStart(ctx context.Context, bo *broker.Options) error {
	r.mu.Lock()
	st := r.state
	r.mu.Unlock()
	r.roleOptions(bo, st)
	r.storeOpts = bo.Store
	if st.masterID == r.id {
		return nil
	}
	local, end, err := storeHistory(bo.Store)
	if err != nil {
		return err
	}
	point, cut, remote, err := r.followPoint(ctx, st.masterAddr, st.epoch, local, end)
	if err != nil {
		return err
	}
	if cut {
		r.log.Warn().Int64("from", end).Int64("to", point).Str("master", st.masterAddr).Msg("cutting the store where it parts from the master's")
		bo.Store.Truncate, bo.Store.TruncateTo = true, point
	}
	bo.MasterEpochs = remote
	return nil
}

// Started runs once the broker PrepareStart set up serves: a master learns its SyncStateSet.
func (r *Replicas) Started() {
	r.mu.Lock()
	st := r.state
	r.mu.Unlock()
	r.started(st)
}

// ID is the broker's own id in its group (assigned by the controllers or kept on its store).
func (r *Replicas) ID() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// started runs once the broker of a role serves: a master learns its SyncStateSet. (A slave
// adopted its master's epochs when its broker was built: broker.Options.MasterEpochs.)
func (r *Replicas) started(st replicaState) {
	b := r.n.Broker()
	r.mu.Lock()
	r.isMaster = st.masterID == r.id
	r.caughtUp = map[int64]time.Time{}
	r.lastEnd = b.Store().MaxPhyOffset()
	r.mu.Unlock()
	if st.masterID == r.id {
		r.setSyncStateSet(st.set.SyncStateSet)
		r.log.Info().Int32("epoch", st.epoch).Ints64("sync_state_set", st.set.SyncStateSet).Msg("serving as master")
		return
	}
	r.log.Info().Int32("epoch", st.epoch).Str("master", st.masterAddr).Msg("serving as slave")
}

// OnNotify handles NOTIFY_BROKER_ROLE_CHANGED as a hint: any peer this broker connected to could
// send one, and acting on it can cut the store, so the run loop asks the controller leader
// (GET_REPLICA_INFO) and applies its answer instead of the notification's.
func (r *Replicas) OnNotify(_ context.Context, _ remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
	select {
	case r.notified <- struct{}{}:
	default: // one pending is enough
	}
	return nil, nil
}

// Run heartbeats, follows the controllers' decisions and, as master, keeps the SyncStateSet,
// until ctx ends.
func (r *Replicas) Run(ctx context.Context) error {
	hb := time.NewTicker(r.o.ControllerHeartbeatInterval)
	defer hb.Stop()
	sync := time.NewTicker(r.o.SyncBrokerMetadataPeriod)
	defer sync.Stop()
	check := time.NewTicker(r.o.CheckSyncStateSetPeriod)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hb.C:
			r.heartbeat(ctx)
			r.trackCatchUp()
		case <-sync.C:
			r.syncReplicaInfo(ctx)
		case <-r.notified:
			r.syncReplicaInfo(ctx)
		case <-check.C:
			r.checkSyncStateSet(ctx)
		}
	}
}

// heartbeat sends BROKER_HEARTBEAT to every controller, one-way, as RocketMQ brokers do.
func (r *Replicas) heartbeat(ctx context.Context) {
	b := r.n.Broker()
	if b == nil {
		return
	}
	r.mu.Lock()
	epoch := r.state.epoch
	r.mu.Unlock()
	r.sendHeartbeat(ctx, epoch, b.Store().MaxPhyOffset())
}

// offerSelf makes this broker a candidate of the election it is about to ask for: the
// controllers elect only brokers they hear from, and a node without a running broker (before
// its first start, or after a role change whose restart failed) sends no heartbeats. Without
// it, a group whose SyncStateSet held only such a node stayed without a master for good
// (internal/sim, seed 453: the elected master's restart failed on a faulty disk, its
// heartbeats stopped, and each of its requests to be elected again was refused as dead).
//
// The heartbeat goes to the leader and waits for its answer, so the leader has recorded it
// before the election request arrives: a one-way one may reach the leader's workers after it.
// A node without a broker offers epoch 0 and log end 0, so that it wins only when no running
// member of the SyncStateSet is alive; its heartbeats stay off otherwise, since a node whose
// broker does not start must not keep a master's place that another member could take.
func (r *Replicas) offerSelf(ctx context.Context) {
	var epoch int32
	var end int64
	if b := r.n.Broker(); b != nil {
		r.mu.Lock()
		epoch = r.state.epoch
		r.mu.Unlock()
		end = b.Store().MaxPhyOffset()
	}
	resp, err := r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.BrokerHeartbeat, remoting.EncodeHeader(r.heartbeatHeader(epoch, end)), nil)
	})
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		r.log.Debug().Err(err).Msg("heartbeat before the election not answered")
	}
}

func (r *Replicas) heartbeatHeader(epoch int32, end int64) *protocol.BrokerHeartbeatRequestHeader {
	return &protocol.BrokerHeartbeatRequestHeader{ClusterName: r.o.ClusterName, BrokerAddr: r.brokerAddr,
		BrokerName: r.o.BrokerName, BrokerID: r.id, Epoch: epoch, MaxOffset: end, ConfirmOffset: end,
		HeartbeatTimeoutMills: -1, ElectionPriority: r.o.ElectionPriority}
}

// sendHeartbeat sends one BROKER_HEARTBEAT with this epoch and log end to every controller.
func (r *Replicas) sendHeartbeat(ctx context.Context, epoch int32, end int64) {
	h := r.heartbeatHeader(epoch, end)
	for _, addr := range r.addrs {
		if err := r.tr.InvokeOneway(ctx, addr, remoting.NewRequest(remoting.BrokerHeartbeat, remoting.EncodeHeader(h), nil)); err != nil {
			r.log.Debug().Err(err).Str("controller", addr).Msg("heartbeat not sent")
		}
	}
}

// syncReplicaInfo asks the leader who the master is (CONTROLLER_GET_REPLICA_INFO), and
// applies it: the fallback for a missed notification.
func (r *Replicas) syncReplicaInfo(ctx context.Context) {
	resp, err := r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerGetReplicaInfo, remoting.EncodeHeader(
			&protocol.GetReplicaInfoRequestHeader{BrokerName: r.o.BrokerName}), nil)
	})
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		r.log.Debug().Err(err).Msg("replica info not fetched")
		return
	}
	var h protocol.GetReplicaInfoResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return
	}
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	if err != nil {
		return
	}
	r.reconcile(ctx, replicaState{masterID: h.MasterBrokerID, masterAddr: h.MasterAddress, epoch: h.MasterEpoch, set: set})
}

// reconcile applies the controllers' view: a newer epoch may make this broker master or the
// slave of another; the same epoch may bring a new SyncStateSet; a group without master is
// offered this broker.
func (r *Replicas) reconcile(ctx context.Context, st replicaState) {
	r.mu.Lock()
	cur, isMaster := r.state, r.isMaster
	r.mu.Unlock()
	if st.masterID <= 0 || st.masterAddr == "" {
		r.offerSelf(ctx)
		el, err := r.elect(ctx)
		if err != nil {
			r.log.Debug().Err(err).Msg("no master elected yet")
			return
		}
		st = el
	}
	if st.epoch < cur.epoch || (st.epoch == cur.epoch && st.set.SyncStateSetEpoch < cur.set.SyncStateSetEpoch) {
		return // stale
	}
	switch {
	case st.epoch == cur.epoch && (st.masterID == r.id) == isMaster:
		r.mu.Lock()
		r.state = st
		r.mu.Unlock()
		if isMaster {
			r.setSyncStateSet(st.set.SyncStateSet)
		}
	default:
		if err := r.changeRole(ctx, st); err != nil {
			r.log.Error().Err(err).Int64("master", st.masterID).Int32("epoch", st.epoch).Msg("role change failed")
		}
	}
}

// changeRole restarts the broker in the role st gives it. Only once the broker serves in it
// does st become the state the manager goes by: a restart that failed (the new broker's store
// did not open) leaves the old state, so the next look at the controllers' view tries again.
func (r *Replicas) changeRole(ctx context.Context, st replicaState) error {
	var adopt []storage.EpochEntry
	var cut bool
	var point int64
	if st.masterID != r.id {
		local, end, err := r.localHistory()
		if err != nil {
			return err
		}
		if point, cut, adopt, err = r.followPoint(ctx, st.masterAddr, st.epoch, local, end); err != nil {
			return err
		}
	}
	r.log.Info().Int64("master", st.masterID).Str("master_addr", st.masterAddr).Int32("epoch", st.epoch).
		Bool("cut", cut).Int64("cut_at", point).Msg("role change")
	err := r.n.RestartBroker(func(bo *broker.Options) {
		r.roleOptions(bo, st)
		if st.masterID != r.id {
			// Cut at the point even when the end read above did not reach past it: until its
			// broker stopped, this one went on storing sends (as the old epoch's master) or
			// replicated bytes, which the new master lacks. Opening a log that ends at the
			// point cuts nothing.
			bo.Store.Truncate, bo.Store.TruncateTo = true, point
			bo.MasterEpochs = adopt
		}
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.state = st
	r.mu.Unlock()
	r.started(st)
	return nil
}

// localHistory is the store's epochs and log end: the running broker's, or, when a role
// change failed and left the node without one, read from the store on disk.
func (r *Replicas) localHistory() ([]storage.EpochEntry, int64, error) {
	if b := r.n.Broker(); b != nil {
		return b.Store().Epochs(), b.Store().MaxPhyOffset(), nil
	}
	so := r.storeOpts
	so.Truncate, so.TruncateTo = false, 0
	return storeHistory(so)
}

// trackCatchUp notes, on a master, which slaves hold what the master held one heartbeat ago.
func (r *Replicas) trackCatchUp() {
	b := r.n.Broker()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.isMaster || b == nil || b.Seams().Replicator() == nil {
		return
	}
	now := time.Now()
	for _, s := range b.Seams().Replicator().Slaves() {
		if s.BrokerID > 0 && s.AckOffset >= r.lastEnd {
			r.caughtUp[s.BrokerID] = now
		}
	}
	r.lastEnd = b.Store().MaxPhyOffset()
}

// checkSyncStateSet proposes, on a master, the SyncStateSet of the slaves that caught up within
// HAMaxTimeSlaveNotCatchup (CONTROLLER_ALTER_SYNC_STATE_SET), and applies what the controller
// accepted.
func (r *Replicas) checkSyncStateSet(ctx context.Context) {
	r.mu.Lock()
	if !r.isMaster {
		r.mu.Unlock()
		return
	}
	st := r.state
	now := time.Now()
	next := []int64{r.id}
	for id, at := range r.caughtUp {
		if id != r.id && now.Sub(at) <= r.o.HAMaxTimeSlaveNotCatchup {
			next = append(next, id)
		}
	}
	r.mu.Unlock()
	slices.Sort(next)
	if slices.Equal(next, st.set.SyncStateSet) {
		return
	}
	resp, err := r.toLeader(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerAlterSyncStateSet, remoting.EncodeHeader(&protocol.AlterSyncStateSetRequestHeader{
			BrokerName: r.o.BrokerName, MasterBrokerID: r.id, MasterEpoch: st.epoch, InvokeTime: now.UnixMilli()}),
			(&protocol.SyncStateSet{SyncStateSet: next, SyncStateSetEpoch: st.set.SyncStateSetEpoch}).Encode())
	})
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		r.log.Warn().Err(err).Ints64("proposed", next).Msg("SyncStateSet not changed")
		return
	}
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.state.set = set
	r.mu.Unlock()
	r.setSyncStateSet(set.SyncStateSet)
	r.log.Info().Ints64("sync_state_set", set.SyncStateSet).Int32("epoch", set.SyncStateSetEpoch).Msg("SyncStateSet changed")
}

// setSyncStateSet hands the SyncStateSet to the running broker's replication.
func (r *Replicas) setSyncStateSet(ids []int64) {
	if s := Of(r.n.Broker()); s != nil {
		s.SetSyncStateSet(ids)
	}
}
