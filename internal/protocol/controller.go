package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Controller headers and bodies (RocketMQ 5 org.apache.rocketmq.remoting.protocol.header.controller
// and BROKER_HEARTBEAT's header from header.namesrv): what brokers in controller mode and admin
// tools send to the Raft-replicated controller. Java's nullable Long and Integer fields are left
// out when null; here a negative value stands for null (omitneg).

// BrokerHeartbeatRequestHeader is the header of BROKER_HEARTBEAT (904). A broker in controller
// mode sends it to every controller; the leader judges liveness and elects from the epoch,
// offsets and priority it carries. ElectionPriority is read as the lowest (Java's
// Integer.MAX_VALUE) when absent.
type BrokerHeartbeatRequestHeader struct {
	ClusterName           string `ext:"clusterName,required"`
	BrokerAddr            string `ext:"brokerAddr,required"`
	BrokerName            string `ext:"brokerName,required"`
	BrokerID              int64  `ext:"brokerId,omitneg"`
	Epoch                 int32  `ext:"epoch,omitneg"`
	MaxOffset             int64  `ext:"maxOffset,omitneg"`
	ConfirmOffset         int64  `ext:"confirmOffset,omitneg"`
	HeartbeatTimeoutMills int64  `ext:"heartbeatTimeoutMills,omitneg"`
	ElectionPriority      int32  `ext:"electionPriority,omitneg"`
}

// GetNextBrokerIdRequestHeader is the header of CONTROLLER_GET_NEXT_BROKER_ID (1012), the first
// step of a broker's registration: which id would the controller give it.
type GetNextBrokerIdRequestHeader struct {
	ClusterName string `ext:"clusterName,required"`
	BrokerName  string `ext:"brokerName,required"`
}

// ApplyBrokerIdResponseHeader answers CONTROLLER_APPLY_BROKER_ID; it names the group as the
// request did, so it shares GetNextBrokerIdRequestHeader's codec.
type ApplyBrokerIdResponseHeader = GetNextBrokerIdRequestHeader

// GetNextBrokerIdResponseHeader answers CONTROLLER_GET_NEXT_BROKER_ID.
type GetNextBrokerIdResponseHeader struct {
	ClusterName  string `ext:"clusterName"`
	BrokerName   string `ext:"brokerName"`
	NextBrokerID int64  `ext:"nextBrokerId,omitneg"`
}

// ApplyBrokerIdRequestHeader is the header of CONTROLLER_APPLY_BROKER_ID (1013): the broker claims
// an id. RegisterCheckCode is "<address>;<time>", so the same broker claiming again is known.
type ApplyBrokerIdRequestHeader struct {
	ClusterName       string `ext:"clusterName,required"`
	BrokerName        string `ext:"brokerName,required"`
	AppliedBrokerID   int64  `ext:"appliedBrokerId,required"`
	RegisterCheckCode string `ext:"registerCheckCode,required"`
}

// RegisterBrokerToControllerRequestHeader is the header of CONTROLLER_REGISTER_BROKER (1003): a
// broker with an id says where it is now and learns the group's master, if one is alive.
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName   string `ext:"clusterName,required"`
	BrokerName    string `ext:"brokerName,required"`
	BrokerID      int64  `ext:"brokerId,required"`
	BrokerAddress string `ext:"brokerAddress,required"`
	InvokeTime    int64  `ext:"invokeTime"`
}

// RegisterBrokerToControllerResponseHeader answers CONTROLLER_REGISTER_BROKER; the master fields
// are absent when the group has no live master. The body is a SyncStateSet.
type RegisterBrokerToControllerResponseHeader struct {
	ClusterName       string `ext:"clusterName"`
	BrokerName        string `ext:"brokerName"`
	MasterBrokerID    int64  `ext:"masterBrokerId,omitneg"`
	MasterAddress     string `ext:"masterAddress,omitempty"`
	MasterEpoch       int32  `ext:"masterEpoch,omitneg"`
	SyncStateSetEpoch int32  `ext:"syncStateSetEpoch,omitneg"`
}

// AlterSyncStateSetRequestHeader is the header of CONTROLLER_ALTER_SYNC_STATE_SET (1001): the
// master of a group proposes a new SyncStateSet (the body) under the epochs it knows.
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string `ext:"brokerName,required"`
	MasterBrokerID int64  `ext:"masterBrokerId,required"`
	MasterEpoch    int32  `ext:"masterEpoch,required"`
	InvokeTime     int64  `ext:"invokeTime"`
}

// AlterSyncStateSetResponseHeader answers CONTROLLER_ALTER_SYNC_STATE_SET with the epoch of the
// accepted set (also in the SyncStateSet body).
type AlterSyncStateSetResponseHeader struct {
	NewSyncStateSetEpoch int32 `ext:"newSyncStateSetEpoch"`
}

// ElectMasterRequestHeader is the header of CONTROLLER_ELECT_MASTER (1002). A broker sends it
// with its own id to become the group's first master; an admin sends DesignateElect to make a
// chosen in-sync broker master.
type ElectMasterRequestHeader struct {
	ClusterName    string `ext:"clusterName,required"`
	BrokerName     string `ext:"brokerName,required"`
	BrokerID       int64  `ext:"brokerId,omitneg"`
	DesignateElect bool   `ext:"designateElect"`
	InvokeTime     int64  `ext:"invokeTime"`
}

// ElectMasterResponseHeader answers CONTROLLER_ELECT_MASTER. Its body is an
// ElectMasterResponseBody.
type ElectMasterResponseHeader struct {
	MasterBrokerID    int64  `ext:"masterBrokerId,omitneg"`
	MasterAddress     string `ext:"masterAddress,omitempty"`
	MasterEpoch       int32  `ext:"masterEpoch,omitneg"`
	SyncStateSetEpoch int32  `ext:"syncStateSetEpoch,omitneg"`
}

// NotifyBrokerRoleChangedRequestHeader is the header of NOTIFY_BROKER_ROLE_CHANGED (1008), the
// one-way message the controller leader sends a group's brokers after an election; the body is
// the new SyncStateSet. It carries the election's answer, so it shares that codec.
type NotifyBrokerRoleChangedRequestHeader = ElectMasterResponseHeader

// GetReplicaInfoRequestHeader is the header of CONTROLLER_GET_REPLICA_INFO (1004).
type GetReplicaInfoRequestHeader struct {
	BrokerName string `ext:"brokerName,required"`
}

// GetReplicaInfoResponseHeader answers CONTROLLER_GET_REPLICA_INFO; the body is the SyncStateSet.
type GetReplicaInfoResponseHeader struct {
	MasterBrokerID int64  `ext:"masterBrokerId,omitneg"`
	MasterAddress  string `ext:"masterAddress,omitempty"`
	MasterEpoch    int32  `ext:"masterEpoch,omitneg"`
}

// GetMetaDataResponseHeader answers CONTROLLER_GET_METADATA_INFO (1005), which every controller
// serves: who leads, so a broker knows where to send its requests. Peers is
// "<id>:<raft address>;" per controller.
type GetMetaDataResponseHeader struct {
	Group                   string `ext:"group,omitempty"`
	ControllerLeaderID      string `ext:"controllerLeaderId,omitempty"`
	ControllerLeaderAddress string `ext:"controllerLeaderAddress,omitempty"`
	IsLeader                bool   `ext:"isLeader"`
	Peers                   string `ext:"peers,omitempty"`
}

// CleanControllerBrokerDataRequestHeader is the header of CLEAN_BROKER_DATA (1011): forget a group,
// or the ids listed in BrokerControllerIdsToClean ("1;2"), unless they are alive and
// IsCleanLivingBroker is false.
type CleanControllerBrokerDataRequestHeader struct {
	ClusterName                string `ext:"clusterName,omitempty"`
	BrokerName                 string `ext:"brokerName,required"`
	BrokerControllerIdsToClean string `ext:"brokerControllerIdsToClean,omitempty"`
	IsCleanLivingBroker        bool   `ext:"isCleanLivingBroker"`
	InvokeTime                 int64  `ext:"invokeTime"`
}

// MaxSyncStateSetBody bounds the JSON body of a SyncStateSet a peer sends: far more than any
// group's ids, far less than anything that costs memory to refuse.
const MaxSyncStateSetBody = 64 << 10

// MaxSyncStateSetSize bounds the members of a SyncStateSet (and the replicas of a group).
const MaxSyncStateSetSize = 64

// SyncStateSet is RocketMQ's SyncStateSet body: the broker ids in sync with the master and the
// epoch of that set.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// Encode writes the set as fastjson does, ids in ascending order.
func (s *SyncStateSet) Encode() []byte {
	ids := slices.Sorted(slices.Values(s.SyncStateSet))
	if ids == nil {
		ids = []int64{}
	}
	b, _ := json.Marshal(SyncStateSet{SyncStateSet: ids, SyncStateSetEpoch: s.SyncStateSetEpoch}) // ints only
	return b
}

// DecodeSyncStateSet reads a SyncStateSet body from a peer: bounded in bytes and members, ids
// positive and distinct.
func DecodeSyncStateSet(body []byte) (SyncStateSet, error) {
	var s SyncStateSet
	if len(body) == 0 {
		return s, errors.New("syncStateSet: empty body")
	}
	if len(body) > MaxSyncStateSetBody {
		return s, fmt.Errorf("syncStateSet: body of %d bytes is over %d", len(body), MaxSyncStateSetBody)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return SyncStateSet{}, fmt.Errorf("syncStateSet: %w", err)
	}
	if len(s.SyncStateSet) > MaxSyncStateSetSize {
		return SyncStateSet{}, fmt.Errorf("syncStateSet: %d members, at most %d", len(s.SyncStateSet), MaxSyncStateSetSize)
	}
	slices.Sort(s.SyncStateSet)
	for i, id := range s.SyncStateSet {
		if id <= 0 {
			return SyncStateSet{}, fmt.Errorf("syncStateSet: broker id %d is not positive", id)
		}
		if i > 0 && s.SyncStateSet[i-1] == id {
			return SyncStateSet{}, fmt.Errorf("syncStateSet: broker id %d twice", id)
		}
	}
	return s, nil
}

// BrokerMemberGroup is RocketMQ's BrokerMemberGroup body: a group's broker ids and addresses.
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// ElectMasterResponseBody is the body of CONTROLLER_ELECT_MASTER's answer.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// BrokerReplicasInfo is the body of CONTROLLER_GET_SYNC_STATE_DATA's answer, per broker name.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// ReplicasInfo is one group in a BrokerReplicasInfo.
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
