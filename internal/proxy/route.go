package proxy

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"

	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// QueryRoute answers a topic's queues as RocketMQ's proxy does (RouteActivity): every broker of
// the route, each with its queues' permissions and the topic's accepted message types, and as
// endpoints the host of that broker's address with this endpoint's port — local mode's rule,
// which assumes every node of the cluster serves gRPC on the same port.
func (s *service) QueryRoute(ctx context.Context, req *apiv2.QueryRouteRequest) (*apiv2.QueryRouteResponse, error) {
	topic, st := resourceName(req.GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return &apiv2.QueryRouteResponse{Status: st}, nil
	}
	rd, st := s.topicRoute(ctx, topic)
	if st != nil {
		return &apiv2.QueryRouteResponse{Status: st}, nil
	}
	types := s.acceptMessageTypes(topic)
	port := s.grpcPort()
	var queues []*apiv2.MessageQueue
	for _, qd := range rd.QueueDatas {
		bd := brokerData(rd, qd.BrokerName)
		if bd == nil {
			continue
		}
		ids := make([]int64, 0, len(bd.BrokerAddrs))
		for id := range bd.BrokerAddrs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			b := &apiv2.Broker{Name: bd.BrokerName, Id: int32(id), Endpoints: endpointsOf(bd.BrokerAddrs[id], port)}
			queues = append(queues, messageQueues(req.Topic, qd, types, b)...)
		}
	}
	return &apiv2.QueryRouteResponse{Status: statusOK, MessageQueues: queues}, nil
}

// topicRoute asks the name servers for a topic's route, the first that answers deciding.
func (s *service) topicRoute(ctx context.Context, topic string) (*route.TopicRouteData, *apiv2.Status) {
	if len(s.opts.NameServers) == 0 {
		return nil, status(apiv2.Code_INTERNAL_SERVER_ERROR, "the node knows no name server to ask for routes")
	}
	var last error
	for _, addr := range s.opts.NameServers {
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		resp, err := s.routes.InvokeSync(rctx, addr, route.BuildGetRouteInfo(topic))
		cancel()
		if err != nil {
			last = err
			continue
		}
		rd, err := route.DecodeRouteInfoResponse(resp)
		var re *remoting.ResponseError
		if errors.As(err, &re) && re.Code == remoting.TopicNotExist {
			return nil, statusf(apiv2.Code_TOPIC_NOT_FOUND, "topic %s does not exist: create it first (mqadmin updateTopic), the 5.x SDKs create no topics", topic)
		}
		if err != nil {
			return nil, fromError("route of topic "+topic, err)
		}
		return rd, nil
	}
	return nil, fromError("route of topic "+topic+": no name server answered", last)
}

func brokerData(rd *route.TopicRouteData, name string) *route.BrokerData {
	for i := range rd.BrokerDatas {
		if rd.BrokerDatas[i].BrokerName == name {
			return &rd.BrokerDatas[i]
		}
	}
	return nil
}

// grpcPort is the port this endpoint listens on.
func (s *service) grpcPort() int32 {
	_, p, err := net.SplitHostPort(s.opts.Listen)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// endpointsOf is a broker's gRPC endpoint: its remoting address's host with the gRPC port.
func endpointsOf(brokerAddr string, port int32) *apiv2.Endpoints {
	host, _, err := net.SplitHostPort(brokerAddr)
	if err != nil {
		host = brokerAddr
	}
	scheme := apiv2.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = apiv2.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = apiv2.AddressScheme_IPv6
		}
	}
	return &apiv2.Endpoints{Scheme: scheme, Addresses: []*apiv2.Address{{Host: host, Port: port}}}
}

// messageQueues are one broker's queues of a topic as RouteActivity numbers them: read-only
// queues first, then write-only, then read-write, then (for a topic neither readable nor
// writable) queues without permission.
func messageQueues(topic *apiv2.Resource, qd route.QueueData, types []apiv2.MessageType, b *apiv2.Broker) []*apiv2.MessageQueue {
	var r, w, rw, none int32
	switch readable, writable := route.IsReadable(qd.Perm), route.IsWritable(qd.Perm); {
	case readable && writable:
		rw = min(qd.ReadQueueNums, qd.WriteQueueNums)
		r, w = qd.ReadQueueNums-rw, qd.WriteQueueNums-rw
	case writable:
		w = qd.WriteQueueNums
	case readable:
		r = qd.ReadQueueNums
	default:
		none = max(1, qd.ReadQueueNums, qd.WriteQueueNums)
	}
	// The counts come from the name server's table, which bounds them (MaxQueueNums); the cap
	// here keeps a corrupt table from sizing an answer.
	const maxQueues = 1 << 16
	var out []*apiv2.MessageQueue
	id := int32(0)
	for _, g := range []struct {
		n    int32
		perm apiv2.Permission
	}{{r, apiv2.Permission_READ}, {w, apiv2.Permission_WRITE}, {rw, apiv2.Permission_READ_WRITE}, {none, apiv2.Permission_NONE}} {
		for i := int32(0); i < g.n && id < maxQueues; i++ {
			out = append(out, &apiv2.MessageQueue{Topic: topic, Id: id, Permission: g.perm, Broker: b,
				AcceptMessageTypes: types})
			id++
		}
	}
	return out
}

// acceptMessageTypes are the types a topic takes, from its message.type attribute on this
// node's broker (RocketMQ's local mode reads its broker's topic config): MIXED takes every
// type, a topic without the attribute is NORMAL as TopicConfig.getTopicMessageType reads it.
func (s *service) acceptMessageTypes(topic string) []apiv2.MessageType {
	t := tables.TypeNormal
	if b := s.broker(); b != nil {
		if tc, ok := b.Topics().Get(topic); ok {
			t, _ = tables.MessageType(tc)
		}
	}
	switch t {
	case tables.TypeNormal:
		return []apiv2.MessageType{apiv2.MessageType_NORMAL}
	case tables.TypeFIFO:
		return []apiv2.MessageType{apiv2.MessageType_FIFO}
	case tables.TypeDelay:
		return []apiv2.MessageType{apiv2.MessageType_DELAY}
	case tables.TypeTransaction:
		return []apiv2.MessageType{apiv2.MessageType_TRANSACTION}
	case tables.TypeMixed:
		return []apiv2.MessageType{apiv2.MessageType_NORMAL, apiv2.MessageType_FIFO,
			apiv2.MessageType_DELAY, apiv2.MessageType_TRANSACTION}
	}
	return []apiv2.MessageType{apiv2.MessageType_MESSAGE_TYPE_UNSPECIFIED}
}
