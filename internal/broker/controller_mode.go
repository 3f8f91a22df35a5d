package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/mqgo/mq/remoting"
)

// The broker's side of controller mode that lives as long as one broker: the epoch a master
// starts, the SyncStateSet it enforces, and GET_BROKER_EPOCH_CACHE. Roles are decided and
// changed by the node (internal/node/replicas.go), which restarts the broker for each change.

// inSyncState is what the replicas manager last told the master of its SyncStateSet.
type inSyncState struct {
	size atomic.Int32 // members, the master included; starts at 1 (the master alone)
}

// initControllerMode appends a master's epoch to the store's epoch file before it takes
// writes: the epoch's history starts at the log's end after recovery, a record boundary.
func (b *Broker) initControllerMode() error {
	b.inSync.size.Store(1)
	if !b.opts.ControllerMode || !b.IsMaster() || b.opts.MasterEpoch <= 0 {
		return nil
	}
	if err := b.store.AppendEpoch(b.opts.MasterEpoch, b.store.MaxPhyOffset()); err != nil {
		return fmt.Errorf("broker: epoch %d: %w", b.opts.MasterEpoch, err)
	}
	return nil
}

// controllerReplicaID is the id a slave names to its master's HA listener: its ReplicaID in
// controller mode, none otherwise (RocketMQ 4.x's protocol).
func (b *Broker) controllerReplicaID() int64 {
	if !b.opts.ControllerMode {
		return 0
	}
	return b.opts.ReplicaID
}

func init() {
	requestNames[remoting.GetBrokerEpochCache] = nil
}

// registerControllerMode installs GET_BROKER_EPOCH_CACHE.
func (b *Broker) registerControllerMode(d *remoting.Dispatcher) {
	b.handle(d, remoting.GetBrokerEpochCache, remoting.ProcessorFunc(b.processEpochCache), b.adminEx)
}

// confirmAck is the replication master's OnAck of a master in controller mode with all-ack:
// what every member of the SyncStateSet holds bounds what consumers see (the store's confirm
// offset), so no consumer reads a message that a new master elected from the set may lack.
// Without all-ack a send is acknowledged before any replica has it, and reads are not bounded.
func (b *Broker) confirmAck() func(int64) {
	if !b.opts.ControllerMode || !b.opts.AllAckInSyncStateSet {
		return nil
	}
	return func(acked int64) { b.store.SetConfirmOffset(acked) }
}

// SetSyncStateSet tells a master in controller mode its SyncStateSet (broker ids, its own
// ReplicaID included): sends are refused while it is smaller than MinInSyncReplicas, and with
// AllAckInSyncStateSet wait for every other member.
func (b *Broker) SetSyncStateSet(ids []int64) {
	b.inSync.size.Store(int32(min(len(ids), math.MaxInt32)))
	if b.ha.master == nil || !b.opts.AllAckInSyncStateSet {
		return
	}
	others := slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id == b.opts.ReplicaID })
	if others == nil {
		others = []int64{}
	}
	b.ha.master.SetSyncStateSet(others)
}

// checkInSync refuses a send while the SyncStateSet is smaller than MinInSyncReplicas
// (RocketMQ's IN_SYNC_REPLICAS_NOT_ENOUGH, answered SYSTEM_ERROR).
func (b *Broker) checkInSync() *remoting.Command {
	if !b.opts.ControllerMode || int(b.inSync.size.Load()) >= b.opts.MinInSyncReplicas {
		return nil
	}
	return sendResponse(remoting.SystemError, "in-sync replicas not enough")
}

// SlaveAck is a connected slave's latest acknowledgement.
type SlaveAck struct {
	BrokerID  int64 // the id it named (controller mode), else 0
	AckOffset int64
}

// SlaveAcks lists a master's connected slaves (nil on a slave).
func (b *Broker) SlaveAcks() []SlaveAck {
	if b.ha.master == nil {
		return nil
	}
	var out []SlaveAck
	for _, s := range b.ha.master.Slaves() {
		out = append(out, SlaveAck{BrokerID: s.BrokerID, AckOffset: s.AckOffset})
	}
	return out
}

// epochEntryJSON and epochCacheJSON are RocketMQ 5's EpochEntry and EpochEntryCache.
type epochEntryJSON struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

type epochCacheJSON struct {
	ClusterName string           `json:"clusterName"`
	BrokerName  string           `json:"brokerName"`
	BrokerID    int64            `json:"brokerId"`
	EpochList   []epochEntryJSON `json:"epochList"`
	MaxOffset   int64            `json:"maxOffset"`
}

// processEpochCache serves GET_BROKER_EPOCH_CACHE (1007): the broker's epoch history and log
// end, which a replica compares with its own to find where they agree before it follows.
func (b *Broker) processEpochCache(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	if !b.opts.ControllerMode {
		return remoting.NewResponse(remoting.SystemError, "this request only for controllerMode "), nil
	}
	entries := b.store.Epochs()
	out := epochCacheJSON{ClusterName: b.opts.ClusterName, BrokerName: b.opts.BrokerName, BrokerID: b.opts.ReplicaID,
		EpochList: make([]epochEntryJSON, 0, len(entries)), MaxOffset: b.store.MaxPhyOffset()}
	for i, e := range entries {
		end := int64(math.MaxInt64) // RocketMQ's open end of the last epoch
		if i+1 < len(entries) {
			end = entries[i+1].StartOffset
		}
		out.EpochList = append(out.EpochList, epochEntryJSON{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: end})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// EpochCache is a broker's answer to GET_BROKER_EPOCH_CACHE, for the replicas manager.
type EpochCache struct {
	Entries   []EpochEntry
	MaxOffset int64
}

// EpochEntry is one epoch of a history: its master wrote from StartOffset on.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// maxEpochEntries bounds the epochs a peer's answer may list.
const maxEpochEntries = 1 << 16

// DecodeEpochCache reads a peer's GET_BROKER_EPOCH_CACHE answer: epochs increasing, offsets
// within the peer's log and in order, a bounded list.
func DecodeEpochCache(body []byte) (EpochCache, error) {
	var in epochCacheJSON
	if err := json.Unmarshal(body, &in); err != nil {
		return EpochCache{}, fmt.Errorf("epoch cache: %w", err)
	}
	if len(in.EpochList) > maxEpochEntries {
		return EpochCache{}, fmt.Errorf("epoch cache: %d entries, at most %d", len(in.EpochList), maxEpochEntries)
	}
	if in.MaxOffset < 0 {
		return EpochCache{}, fmt.Errorf("epoch cache: max offset %d", in.MaxOffset)
	}
	out := EpochCache{MaxOffset: in.MaxOffset}
	for i, e := range in.EpochList {
		if e.StartOffset < 0 || e.StartOffset > in.MaxOffset {
			return EpochCache{}, fmt.Errorf("epoch cache: epoch %d starts at %d, outside the log [0, %d]", e.Epoch, e.StartOffset, in.MaxOffset)
		}
		if i > 0 && (e.Epoch <= in.EpochList[i-1].Epoch || e.StartOffset < in.EpochList[i-1].StartOffset) {
			return EpochCache{}, fmt.Errorf("epoch cache: entries out of order at epoch %d", e.Epoch)
		}
		out.Entries = append(out.Entries, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return out, nil
}
