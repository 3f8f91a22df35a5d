package controller

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// RocketMQ's controllerThreadPoolNums and controllerRequestThreadPoolQueueCapacity.
const (
	requestWorkers    = 16
	requestQueueDepth = 50000
)

// maxSyncStateDataBody bounds CONTROLLER_GET_SYNC_STATE_DATA's body, a JSON list of broker
// names.
const maxSyncStateDataBody = 1 << 20

// NotLeaderRemark starts the remark of CONTROLLER_NOT_LEADER, as RocketMQ's; the leader's
// remoting address follows when known, and is in the controllerLeaderAddress field too.
const NotLeaderRemark = "The controller is not in leader state"

// Register installs the controller's request processors on d, on an executor of their own.
func (c *Controller) Register(d *remoting.Dispatcher) {
	ex := remoting.NewExecutor("controller", requestWorkers, requestQueueDepth)
	for code, p := range map[int32]func(remoting.Channel, *remoting.Command) (*remoting.Command, error){
		remoting.BrokerHeartbeat:             c.onHeartbeat,
		remoting.ControllerGetNextBrokerID:   c.onGetNextBrokerID,
		remoting.ControllerApplyBrokerID:     c.onApplyBrokerID,
		remoting.ControllerRegisterBroker:    c.onRegisterBroker,
		remoting.ControllerAlterSyncStateSet: c.onAlterSyncStateSet,
		remoting.ControllerElectMaster:       c.onElectMaster,
		remoting.ControllerGetReplicaInfo:    c.onGetReplicaInfo,
		remoting.ControllerGetMetadataInfo:   c.onGetMetadata,
		remoting.ControllerGetSyncStateData:  c.onGetSyncStateData,
		remoting.CleanBrokerData:             c.onCleanBrokerData,
	} {
		d.Register(code, remoting.ProcessorFunc(func(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp, err := p(ch, req)
			if err != nil {
				return c.errorResponse(err), nil
			}
			return resp, nil
		}), ex)
	}
}

// errorResponse answers a refusal with its code; a non-leader with CONTROLLER_NOT_LEADER and
// where the leader is.
func (c *Controller) errorResponse(err error) *remoting.Command {
	if errors.Is(err, ErrNotLeader) {
		remark := NotLeaderRemark
		id, addr := c.Leader()
		resp := remoting.NewResponse(remoting.ControllerNotLeader, remark)
		if addr != "" {
			resp.Remark += ", leader " + id + " at " + addr
			resp.ExtFields = remoting.EncodeHeader(&protocol.GetMetaDataResponseHeader{ControllerLeaderID: id, ControllerLeaderAddress: addr})
		}
		return resp
	}
	var e *Error
	if errors.As(err, &e) {
		return remoting.NewResponse(e.Code, e.Remark)
	}
	return remoting.ErrorResponse(err)
}

func success(h remoting.Header, body []byte) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	if h != nil {
		resp.ExtFields = remoting.EncodeHeader(h)
	}
	resp.Body = body
	return resp
}

func (c *Controller) onHeartbeat(ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.BrokerHeartbeatRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := c.heartbeat(&h, ch); err != nil {
		return nil, err
	}
	return success(nil, nil), nil
}

func (c *Controller) onGetNextBrokerID(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetNextBrokerIdRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	id, err := c.NextBrokerID(h.ClusterName, h.BrokerName)
	if err != nil {
		return nil, err
	}
	return success(&protocol.GetNextBrokerIdResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName, NextBrokerID: id}, nil), nil
}

func (c *Controller) onApplyBrokerID(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ApplyBrokerIdRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if err := c.ApplyBrokerID(h.ClusterName, h.BrokerName, h.AppliedBrokerID, h.RegisterCheckCode); err != nil {
		return nil, err
	}
	return success(&protocol.ApplyBrokerIdResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName}, nil), nil
}

func (c *Controller) onRegisterBroker(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.RegisterBrokerToControllerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	info, err := c.RegisterBroker(h.ClusterName, h.BrokerName, h.BrokerID, h.BrokerAddress)
	if err != nil {
		return nil, err
	}
	rh := protocol.RegisterBrokerToControllerResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName,
		MasterBrokerID: NoMaster, MasterEpoch: -1, SyncStateSetEpoch: -1}
	if info.MasterID != NoMaster {
		rh.MasterBrokerID, rh.MasterAddress = info.MasterID, info.MasterAddr
		rh.MasterEpoch, rh.SyncStateSetEpoch = info.MasterEpoch, info.SyncStateSetEpoch
	}
	body := (&protocol.SyncStateSet{SyncStateSet: info.SyncStateSet, SyncStateSetEpoch: info.SyncStateSetEpoch}).Encode()
	return success(&rh, body), nil
}

func (c *Controller) onAlterSyncStateSet(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.AlterSyncStateSetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	set, err := protocol.DecodeSyncStateSet(req.Body)
	if err != nil {
		return nil, newError(remoting.ControllerInvalidRequest, "%v", err)
	}
	epoch, err := c.AlterSyncStateSet(h.BrokerName, h.MasterBrokerID, h.MasterEpoch, set)
	if err != nil {
		return nil, err
	}
	set.SyncStateSetEpoch = epoch
	return success(&protocol.AlterSyncStateSetResponseHeader{NewSyncStateSetEpoch: epoch}, set.Encode()), nil
}

func (c *Controller) onElectMaster(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ElectMasterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	el, err := c.ElectMaster(h.ClusterName, h.BrokerName, h.BrokerID, h.DesignateElect)
	var e *Error
	if err != nil && !(errors.As(err, &e) && e.Code == remoting.ControllerMasterStillExist) {
		return nil, err
	}
	body, _ := json.Marshal(&protocol.ElectMasterResponseBody{ // ints and strings only
		BrokerMemberGroup: &protocol.BrokerMemberGroup{Cluster: el.Cluster, BrokerName: el.BrokerName, BrokerAddrs: el.Members},
		SyncStateSet:      el.SyncStateSet,
	})
	resp := success(&protocol.ElectMasterResponseHeader{MasterBrokerID: el.MasterID, MasterAddress: el.MasterAddr,
		MasterEpoch: el.MasterEpoch, SyncStateSetEpoch: el.SyncStateSetEpoch}, body)
	if e != nil {
		resp.Code, resp.Remark = e.Code, e.Remark // the master stays; the answer names it
	}
	return resp, nil
}

func (c *Controller) onGetReplicaInfo(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetReplicaInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	info, err := c.GetReplicaInfo(h.BrokerName)
	if err != nil {
		return nil, err
	}
	body := (&protocol.SyncStateSet{SyncStateSet: info.SyncStateSet, SyncStateSetEpoch: info.SyncStateSetEpoch}).Encode()
	return success(&protocol.GetReplicaInfoResponseHeader{MasterBrokerID: info.MasterID, MasterAddress: info.MasterAddr,
		MasterEpoch: info.MasterEpoch}, body), nil
}

// Metadata is CONTROLLER_GET_METADATA_INFO's answer, which every controller gives.
func (c *Controller) Metadata() protocol.GetMetaDataResponseHeader {
	id, addr := c.Leader()
	return protocol.GetMetaDataResponseHeader{ControllerLeaderID: id, ControllerLeaderAddress: addr,
		IsLeader: c.IsLeader(), Peers: c.peers()}
}

func (c *Controller) onGetMetadata(remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	md := c.Metadata()
	return success(&md, nil), nil
}

func (c *Controller) onGetSyncStateData(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) > maxSyncStateDataBody {
		return nil, newError(remoting.ControllerInvalidRequest, "body of %d bytes is over %d", len(req.Body), maxSyncStateDataBody)
	}
	var brokerNames []string
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &brokerNames); err != nil {
			return nil, newError(remoting.ControllerInvalidRequest, "body is not a JSON list of broker names: %v", err)
		}
	}
	if len(brokerNames) > maxBrokerGroups {
		return nil, newError(remoting.ControllerInvalidRequest, "%d broker names, at most %d", len(brokerNames), maxBrokerGroups)
	}
	info, err := c.SyncStateData(brokerNames)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(&info) // ints, bools and strings only
	return success(nil, body), nil
}

func (c *Controller) onCleanBrokerData(_ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CleanControllerBrokerDataRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	ids, err := parseIDList(h.BrokerControllerIdsToClean)
	if err != nil {
		return nil, err
	}
	if err := c.CleanBrokerData(h.BrokerName, ids, h.IsCleanLivingBroker); err != nil {
		return nil, err
	}
	return success(nil, nil), nil
}
