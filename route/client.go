package route

import (
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Client-side helpers: build the name server requests a broker or a client sends and decode
// the answers, so callers only pick a transport. They work against this name server and Apache
// RocketMQ 4.x name servers alike.

// RegisterBrokerRequest is what a broker tells a name server about itself in REGISTER_BROKER.
type RegisterBrokerRequest struct {
	ClusterName  string
	BrokerName   string
	BrokerAddr   string // "ip:port" clients dial
	HAServerAddr string // "ip:port" slaves replicate from
	BrokerID     int64  // MasterID for a master
	Body         RegisterBrokerBody
	// Compress selects RocketMQ's compact zlib body (smaller, but drops topicSysFlag and order).
	Compress bool
}

// RegisterBrokerResult is a name server's answer to REGISTER_BROKER.
type RegisterBrokerResult struct {
	HAServerAddr string            // the master's HA address (slaves only, when the master is known)
	MasterAddr   string            // the master's address (slaves only, when the master is known)
	KVTable      map[string]string // ORDER_TOPIC_CONFIG: topic -> order topic conf; may be nil
}

// BuildRegisterBroker returns the REGISTER_BROKER request for r, with the body's CRC32 set.
func BuildRegisterBroker(r *RegisterBrokerRequest) *remoting.Command {
	body := r.Body.Encode(r.Compress)
	h := &protocol.RegisterBrokerRequestHeader{BrokerName: r.BrokerName, BrokerAddr: r.BrokerAddr,
		ClusterName: r.ClusterName, HAServerAddr: r.HAServerAddr, BrokerID: r.BrokerID,
		Compressed: r.Compress, BodyCrc32: bodyCRC32(body)}
	return remoting.NewRequest(remoting.RegisterBroker, remoting.EncodeHeader(h), body)
}

// DecodeRegisterBrokerResult reads a REGISTER_BROKER response. A non-success code is a
// *remoting.ResponseError; a malformed body wraps ErrMalformed.
func DecodeRegisterBrokerResult(resp *remoting.Command) (*RegisterBrokerResult, error) {
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return nil, err
	}
	var h protocol.RegisterBrokerResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	res := &RegisterBrokerResult{HAServerAddr: h.HAServerAddr, MasterAddr: h.MasterAddr}
	if len(resp.Body) > 0 {
		kv, err := DecodeKVTable(resp.Body)
		if err != nil {
			return nil, err
		}
		res.KVTable = kv.Table
	}
	return res, nil
}

// BuildUnregisterBroker returns the UNREGISTER_BROKER request a broker sends when it shuts down.
func BuildUnregisterBroker(cluster, brokerName, brokerAddr string, brokerID int64) *remoting.Command {
	h := &protocol.UnregisterBrokerRequestHeader{BrokerName: brokerName, BrokerAddr: brokerAddr,
		ClusterName: cluster, BrokerID: brokerID}
	return remoting.NewRequest(remoting.UnregisterBroker, remoting.EncodeHeader(h), nil)
}

// BuildGetRouteInfo returns the GET_ROUTEINFO_BY_TOPIC request for topic.
func BuildGetRouteInfo(topic string) *remoting.Command {
	return remoting.NewRequest(remoting.GetRouteInfoByTopic,
		remoting.EncodeHeader(&protocol.GetRouteInfoRequestHeader{Topic: topic}), nil)
}

// DecodeRouteInfoResponse reads a GET_ROUTEINFO_BY_TOPIC response. TOPIC_NOT_EXIST (17) and any
// other failure come back as *remoting.ResponseError; an empty or malformed body wraps
// ErrMalformed.
func DecodeRouteInfoResponse(resp *remoting.Command) (*TopicRouteData, error) {
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return nil, fmt.Errorf("%w: topic route response without body", ErrMalformed)
	}
	return DecodeTopicRouteData(resp.Body)
}

// BuildGetBrokerClusterInfo returns the GET_BROKER_CLUSTER_INFO request.
func BuildGetBrokerClusterInfo() *remoting.Command {
	return remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)
}

// BuildGetAllTopicList returns the GET_ALL_TOPIC_LIST_FROM_NAMESERVER request.
func BuildGetAllTopicList() *remoting.Command {
	return remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil)
}

// BuildDeleteTopic returns the DELETE_TOPIC_IN_NAMESRV request for topic.
func BuildDeleteTopic(topic string) *remoting.Command {
	return remoting.NewRequest(remoting.DeleteTopicInNamesrv,
		remoting.EncodeHeader(&protocol.DeleteTopicFromNamesrvRequestHeader{Topic: topic}), nil)
}
