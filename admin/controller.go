package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Controller requests (RocketMQ 5's automatic failover), sent to a controller's remoting
// address: a name server that runs one. Where the deployment has a cluster secret, the Admin
// needs it (Options.Security.ClusterSecret).

// ControllerMetadata is a controller's answer to CONTROLLER_GET_METADATA_INFO.
type ControllerMetadata struct {
	LeaderID   string `json:"controllerLeaderId"`
	LeaderAddr string `json:"controllerLeaderAddress"`
	IsLeader   bool   `json:"isLeader"`
	// Peers are the Raft group's members as the controller lists them ("id=addr;...").
	Peers string `json:"peers"`
}

// ControllerMetadata asks the controller at addr who leads the controllers
// (mqadmin getControllerMetaData).
func (a *Admin) ControllerMetadata(ctx context.Context, addr string) (*ControllerMetadata, error) {
	resp, err := a.invokeOK(ctx, addr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("admin: controller metadata from %s: %w", addr, err)
	}
	var h protocol.GetMetaDataResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("admin: controller metadata from %s: %w", addr, err)
	}
	return &ControllerMetadata{LeaderID: h.ControllerLeaderID, LeaderAddr: h.ControllerLeaderAddress,
		IsLeader: h.IsLeader, Peers: h.Peers}, nil
}

// ElectResult is the master of a group after ElectMaster.
type ElectResult struct {
	MasterBrokerID int64   `json:"masterBrokerId"`
	MasterAddress  string  `json:"masterAddress"`
	MasterEpoch    int32   `json:"masterEpoch"`
	SyncStateSet   []int64 `json:"syncStateSet"`
}

// ElectMaster asks the controller leader at addr to make broker brokerID of the group master
// (mqadmin electMaster; CONTROLLER_ELECT_MASTER with designateElect). The controller elects
// only a live member the group's rules allow, and names the master either way: electing the
// master that is still alive is no error.
func (a *Admin) ElectMaster(ctx context.Context, addr, cluster, brokerName string, brokerID int64) (*ElectResult, error) {
	req := remoting.NewRequest(remoting.ControllerElectMaster, remoting.EncodeHeader(&protocol.ElectMasterRequestHeader{
		ClusterName: cluster, BrokerName: brokerName, BrokerID: brokerID, DesignateElect: true,
		InvokeTime: time.Now().UnixMilli()}), nil)
	resp, err := a.invokeOK(ctx, addr, req, remoting.Success, remoting.ControllerMasterStillExist)
	if err != nil {
		return nil, fmt.Errorf("admin: elect broker %d of %s: %w", brokerID, brokerName, err)
	}
	var h protocol.ElectMasterResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("admin: elect broker %d of %s: %w", brokerID, brokerName, err)
	}
	out := &ElectResult{MasterBrokerID: h.MasterBrokerID, MasterAddress: h.MasterAddress, MasterEpoch: h.MasterEpoch}
	var body protocol.ElectMasterResponseBody
	if len(resp.Body) > 0 && json.Unmarshal(resp.Body, &body) == nil {
		out.SyncStateSet = body.SyncStateSet
	}
	return out, nil
}

// BrokerReplicasInfo is a controller's answer to CONTROLLER_GET_SYNC_STATE_DATA: per broker
// name, the group's master, epochs and replicas in and out of the SyncStateSet (the JSON names
// are RocketMQ's).
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// ReplicasInfo is one broker group of a BrokerReplicasInfo.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// ReplicaIdentity is one broker of a ReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// SyncStateData asks the controller leader at addr for the replicas of the named broker groups
// (CONTROLLER_GET_SYNC_STATE_DATA, the body of mqadmin getSyncStateSet). A controller that
// does not lead answers CONTROLLER_NOT_LEADER, whose remark names the leader; a name server
// that runs no controller, REQUEST_CODE_NOT_SUPPORTED. Groups the controller does not know
// are absent from the answer.
func (a *Admin) SyncStateData(ctx context.Context, addr string, brokerNames []string) (*BrokerReplicasInfo, error) {
	body, err := json.Marshal(brokerNames)
	if err != nil {
		return nil, fmt.Errorf("admin: sync state data from %s: %w", addr, err)
	}
	resp, err := a.invokeOK(ctx, addr, remoting.NewRequest(remoting.ControllerGetSyncStateData, nil, body))
	if err != nil {
		return nil, fmt.Errorf("admin: sync state data from %s: %w", addr, err)
	}
	var info BrokerReplicasInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return nil, fmt.Errorf("admin: sync state data from %s: %w", addr, err)
	}
	return &info, nil
}
