package ha

import (
	"context"

	"github.com/mqgo/mq/storage"
)

// ChangeRole runs the replicas manager's role change to the master masterID at masterAddr of
// epoch, as the controllers' answer would.
func (r *Replicas) ChangeRole(ctx context.Context, masterID int64, masterAddr string, epoch int32) error {
	return r.changeRole(ctx, replicaState{masterID: masterID, masterAddr: masterAddr, epoch: epoch})
}

// SyncReplicaInfo runs one look of the replicas manager at the controllers' view of its group
// (what its run loop does every SyncBrokerMetadataPeriod), applying what it finds.
func (r *Replicas) SyncReplicaInfo(ctx context.Context) { r.syncReplicaInfo(ctx) }

// SetStoreOptions sets the store options PrepareStart would have noted: a role change on a node
// left without a broker reads the store's history through them.
func (r *Replicas) SetStoreOptions(so storage.Options) { r.storeOpts = so }
