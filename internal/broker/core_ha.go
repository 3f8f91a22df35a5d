package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// What the core needs of replication and controller mode, which live in internal/broker/ha,
// and what that package needs of the core: the HA settings, the Replicator seam, and the
// checked installs of a master's metadata on a slave.

// DefaultSlaveSyncPeriod is how often a slave copies its master's metadata.
const DefaultSlaveSyncPeriod = 10 * time.Second

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

// Role is the broker's role.
func (b *Broker) Role() storage.BrokerRole { return b.opts.BrokerRole }

// A Replicator is the broker's replication, as the core sees it (internal/broker/ha builds
// it, RocketMQ's HAService with the ReplicasManager's per-broker state). Without one the
// broker replicates nothing: no HA address goes out, a SYNC_MASTER answers as soon as the put
// is stored, and no send waits for in-sync replicas.
type Replicator interface {
	// Start starts the replication master or slave on run (the broker's errgroup) before the
	// broker's first REGISTER_BROKER, which carries the master's HA address: a master returns
	// once its listener is bound or ctx ended.
	Start(ctx context.Context, run func(func() error)) error
	// Addr is the HA address REGISTER_BROKER advertises: a master's bound listener, else "".
	Addr() string
	// WaitForSlave runs a SYNC_MASTER's group transfer after a put stored up to end, the
	// CommitLog offset past its last byte, and returns the put status RocketMQ answers: status
	// itself once a slave has the bytes, else FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE. (Values,
	// not the *PutResult: a pointer through an interface call would move every send's result to
	// the heap.)
	WaitForSlave(ctx context.Context, end int64, status storage.PutStatus) storage.PutStatus
	// Registered applies a name server's REGISTER_BROKER answer (a slave learns its master).
	Registered(res *route.RegisterBrokerResult)
	// RefuseSend is the remark of the SYSTEM_ERROR refusing a send of a master in controller
	// mode whose SyncStateSet is smaller than MinInSyncReplicas, else "".
	RefuseSend() string
	// Slaves lists a master's connected slaves with their acknowledgements (nil on a slave).
	Slaves() []SlaveAck
}

// SlaveAck is a connected slave's latest acknowledgement.
type SlaveAck struct {
	Addr      string
	BrokerID  int64 // the id it named (controller mode), else 0
	AckOffset int64
}

// SetReplicator installs the broker's replication. Call it after New, before Run.
func (b *Broker) SetReplicator(r Replicator) { b.repl = r }

// Replicator is what SetReplicator installed, or nil.
func (b *Broker) Replicator() Replicator { return b.repl }

// startReplication starts the Replicator, if any (see Replicator.Start).
func (b *Broker) startReplication(ctx context.Context, run func(func() error)) error {
	if b.repl == nil {
		return nil
	}
	return b.repl.Start(ctx, run)
}

// HAAddr is the address a master advertises its HA listener under, sent in REGISTER_BROKER so
// slaves learn it; "" on a slave, without replication, and until Run has bound the listener.
func (b *Broker) HAAddr() string {
	if b.repl == nil {
		return ""
	}
	return b.repl.Addr()
}

// waitForSlave makes a SYNC_MASTER's stored put wait for a slave (Replicator.WaitForSlave).
// Other roles, and puts not stored, return at once.
func (b *Broker) waitForSlave(ctx context.Context, r *storage.PutResult) {
	if b.opts.BrokerRole != storage.SyncMaster || b.repl == nil || !putStored(r.Status) {
		return
	}
	r.Status = b.repl.WaitForSlave(ctx, r.PhyOffset+int64(r.WroteBytes), r.Status)
}

// checkInSync refuses a send while controller mode's SyncStateSet is too small.
func (b *Broker) checkInSync() *remoting.Command {
	if !b.opts.ControllerMode || b.repl == nil {
		return nil
	}
	if remark := b.repl.RefuseSend(); remark != "" {
		return sendResponse(remoting.SystemError, remark)
	}
	return nil
}

// onRegistered hands a name server's REGISTER_BROKER answer to the Replicator.
func (b *Broker) onRegistered(res *route.RegisterBrokerResult) {
	if b.repl != nil && res != nil {
		b.repl.Registered(res)
	}
}

// slaveAcks lists the Replicator's connected slaves (the metrics' lag).
func (b *Broker) slaveAcks() []SlaveAck {
	if b.repl == nil {
		return nil
	}
	return b.repl.Slaves()
}

// A slave installs its master's metadata as RocketMQ's SlaveSynchronize does: topics and
// subscription groups replace the local tables when the master's data version differs;
// consumer offsets replace the local table. The metadata writer persists what was installed
// (persist.go); internal/broker/ha fetches and decodes what it installs.
//
// What a master sends is checked as a request would be: entries whose topic or group is not a
// valid name (internal/names) are left out, queue counts are clamped into [0, MaxQueueNums] and
// offsets of queue ids outside [0, MaxQueueNums) are dropped, each install logging one warning
// when it left anything out. A master is a peer, not an authority: a RocketMQ master whose
// broker name is its host name serves a topic of that name, and nothing a master sends may
// become a path outside the store or a loop bound.

// InstallMasterTopics replaces the topic table with a master's, unless it holds that version.
func (b *Broker) InstallMasterTopics(w route.TopicConfigSerializeWrapper) error {
	m := b.topics
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
	}
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	drops := dropInvalidTopics(w.TopicConfigTable)
	clamped := 0
	for name, tc := range w.TopicConfigTable {
		r, wq := b.clampQueueNums(tc.ReadQueueNums), b.clampQueueNums(tc.WriteQueueNums)
		if r != tc.ReadQueueNums || wq != tc.WriteQueueNums {
			tc.ReadQueueNums, tc.WriteQueueNums = r, wq
			w.TopicConfigTable[name] = tc
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.MaxQueueNums),
			"slave sync: master's topics with invalid names left out, queue counts clamped")
	}
	if n := len(w.TopicConfigTable); n > b.opts.MaxTopics+maxUncappedTopics {
		return fmt.Errorf("broker: the master sent %d topics, more than MaxTopics %d: kept the topics held", n, b.opts.MaxTopics)
	}
	m.replace(w.TopicConfigTable, w.DataVersion)
	return nil
}

// InstallMasterOffsets replaces the consumer offset table with a master's.
func (b *Broker) InstallMasterOffsets(w *protocol.ConsumerOffsetSerializeWrapper) error {
	var drops nameDrops
	badQueues := 0
	table := make(map[string]map[int32]int64, len(w.OffsetTable))
	for k, q := range w.OffsetTable {
		// Neither a topic nor a group may hold '@', so a valid key has exactly one.
		topic, group, _ := strings.Cut(k, topicGroupSeparator)
		if !names.ValidTopic(topic) || !names.ValidGroup(group) {
			drops.add(k)
			continue
		}
		c := make(map[int32]int64, min(len(q), int(b.opts.MaxQueueNums)))
		for id, off := range q {
			if id < 0 || id >= b.opts.MaxQueueNums {
				badQueues++
				continue
			}
			c[id] = off
		}
		if len(c) > 0 {
			table[k] = c
		}
	}
	if drops.count > 0 || badQueues > 0 {
		drops.log(b.log.Warn().Str("source", "master").Int("bad_queue_ids", badQueues).Int32("max_queue_nums", b.opts.MaxQueueNums),
			"slave sync: master's consumer offsets with invalid names or queue ids left out")
	}
	m := b.offsets
	m.mu.Lock()
	m.table = table
	m.mu.Unlock()
	b.meta.markDirty(metaOffsets)
	return nil
}

// InstallMasterGroups replaces the subscription group table with a master's, unless it holds
// that version.
func (b *Broker) InstallMasterGroups(w SubscriptionGroupWrapper) error {
	m := b.groups
	m.mu.RLock()
	same := m.version == w.DataVersion
	m.mu.RUnlock()
	if same {
		return nil
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	drops := dropInvalidGroups(w.SubscriptionGroupTable)
	clamped := 0
	for name, c := range w.SubscriptionGroupTable {
		if n := b.clampQueueNums(c.RetryQueueNums); n != c.RetryQueueNums {
			c.RetryQueueNums = n
			w.SubscriptionGroupTable[name] = c
			clamped++
		}
	}
	if drops.count > 0 || clamped > 0 {
		drops.log(b.log.Warn().Str("source", "master").Int("clamped", clamped).Int32("max_queue_nums", b.opts.MaxQueueNums),
			"slave sync: master's subscription groups with invalid names left out, retryQueueNums clamped")
	}
	m.mu.Lock()
	m.table = make(map[string]SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		m.table[name] = c
	}
	m.version = w.DataVersion
	m.mu.Unlock()
	b.meta.changed(metaGroups)
	return nil
}
