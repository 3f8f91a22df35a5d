package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/mqgo/mq/remoting"
)

// The broker's side of controller mode that lives as long as one broker: the epoch a master
// starts, the SyncStateSet it enforces, and GET_BROKER_EPOCH_CACHE. Roles are decided and
// changed by the replicas manager (replicas.go), which restarts the broker for each change.

// appendEpoch appends a master's epoch to the store's epoch file before it takes writes: the
// epoch's history starts at the log's end after recovery, a record boundary.
//
// A master that stopped and started again before the controllers replaced it (a crash and a
// restart within their heartbeat timeout) is given the epoch its history already ends with:
// what it wrote since that entry is the epoch's, so the history stays as it is. RocketMQ's
// changeToMaster moves the epoch's start to the log's end instead, which credits the epoch's
// earlier records to the epoch before; storage refuses a second entry of one epoch.
func (s *Service) appendEpoch() error {
	if !s.opts.ControllerMode || !s.core.IsMaster() || s.opts.MasterEpoch <= 0 {
		return nil
	}
	if h := s.store.Epochs(); len(h) > 0 {
		if last := h[len(h)-1]; last.Epoch == s.opts.MasterEpoch && last.StartOffset <= s.store.MaxPhyOffset() {
			return nil
		}
	}
	if err := s.store.AppendEpoch(s.opts.MasterEpoch, s.store.MaxPhyOffset()); err != nil {
		return fmt.Errorf("broker: epoch %d: %w", s.opts.MasterEpoch, err)
	}
	return nil
}

// adoptEpochs makes a controller-mode slave's history its master's (Options.MasterEpochs)
// before its replication starts. Every byte the slave streams is counted in the epoch its
// history says, so the history must be the master's before the first one: adopted once the
// broker served, the bytes streamed before it were counted in the epoch before, and when the
// epoch file could not be written (a failing disk) the slave went on streaming the new epoch
// under its old history, a deposed master's divergent tail then looked like a prefix of it, and
// the replicas' logs parted (internal/sim, seed 315). An error fails the broker's start, so the
// replicas manager tries the role change again instead of following.
func (s *Service) adoptEpochs() error {
	if !s.opts.ControllerMode || s.opts.MasterEpochs == nil {
		return nil
	}
	if err := s.store.SetEpochs(s.opts.MasterEpochs); err != nil {
		return fmt.Errorf("broker: the master's epochs not adopted: %w", err)
	}
	return nil
}

// replicaID is the id a slave names to its master's HA listener: its ReplicaID in controller
// mode, none otherwise (RocketMQ 4.x's protocol).
func (s *Service) replicaID() int64 {
	if !s.opts.ControllerMode {
		return 0
	}
	return s.opts.ReplicaID
}

// confirmAck is the replication master's OnAck of a master in controller mode with all-ack:
// what every member of the SyncStateSet holds bounds what consumers see (the store's confirm
// offset), so no consumer reads a message that a new master elected from the set may lack.
// Without all-ack a send is acknowledged before any replica has it, and reads are not bounded.
func (s *Service) confirmAck() func(int64) {
	if !s.opts.ControllerMode || !s.opts.AllAckInSyncStateSet {
		return nil
	}
	store := s.store
	return func(acked int64) { store.SetConfirmOffset(acked) }
}

// SetSyncStateSet tells a master in controller mode its SyncStateSet (broker ids, its own
// ReplicaID included): sends are refused while it is smaller than MinInSyncReplicas, and with
// AllAckInSyncStateSet wait for every other member.
func (s *Service) SetSyncStateSet(ids []int64) {
	s.inSync.Store(int32(min(len(ids), math.MaxInt32)))
	if s.master == nil || !s.opts.AllAckInSyncStateSet {
		return
	}
	others := slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id == s.opts.ReplicaID })
	if others == nil {
		others = []int64{}
	}
	s.master.SetSyncStateSet(others)
}

// RefuseSend refuses a send while the SyncStateSet is smaller than MinInSyncReplicas
// (RocketMQ's IN_SYNC_REPLICAS_NOT_ENOUGH, which the core answers SYSTEM_ERROR).
func (s *Service) RefuseSend() string {
	if !s.opts.ControllerMode || int(s.inSync.Load()) >= s.opts.MinInSyncReplicas {
		return ""
	}
	return "in-sync replicas not enough"
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
func (s *Service) processEpochCache(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	if !s.opts.ControllerMode {
		return remoting.NewResponse(remoting.SystemError, "this request only for controllerMode "), nil
	}
	entries := s.store.Epochs()
	out := epochCacheJSON{ClusterName: s.opts.Broker.ClusterName, BrokerName: s.opts.Broker.Name, BrokerID: s.opts.ReplicaID,
		EpochList: make([]epochEntryJSON, 0, len(entries)), MaxOffset: s.store.MaxPhyOffset()}
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
