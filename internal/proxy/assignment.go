package proxy

import (
	"context"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/route"
)

// QueryAssignment tells a push consumer which queues to receive from, as RocketMQ's proxy does
// (RouteActivity.queryAssignment): each readable master broker of the topic's route, at that
// broker's gRPC endpoint, as one queue of id -1 (a receive pops every queue of a broker), or
// as each of its read queues for a FIFO group. No load is split among the group's clients: POP
// shares every queue among them on the broker.
func (s *service) QueryAssignment(ctx context.Context, req *apiv2.QueryAssignmentRequest) (*apiv2.QueryAssignmentResponse, error) {
	fail := func(st *apiv2.Status) (*apiv2.QueryAssignmentResponse, error) {
		return &apiv2.QueryAssignmentResponse{Status: st}, nil
	}
	if _, st := s.clients.get(ctx); st != nil {
		return fail(st)
	}
	topic, st := resourceName(req.GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return fail(st)
	}
	group, st := resourceName(req.GetGroup(), "consumer group", apiv2.Code_ILLEGAL_CONSUMER_GROUP, names.CheckGroup)
	if st != nil {
		return fail(st)
	}
	rd, st := s.topicRoute(ctx, topic)
	if st != nil {
		return fail(st)
	}
	fifo := false
	if b := s.broker(); b != nil {
		if g, ok := b.Groups().Find(group); ok {
			fifo = g.ConsumeMessageOrderly
		}
	}
	port := s.grpcPort()
	var out []*apiv2.Assignment
	for _, qd := range rd.QueueDatas {
		if !route.IsReadable(qd.Perm) || qd.ReadQueueNums <= 0 {
			continue
		}
		bd := brokerData(rd, qd.BrokerName)
		if bd == nil {
			continue
		}
		addr, ok := bd.BrokerAddrs[0] // the master (MixAll.MASTER_ID)
		if !ok {
			continue
		}
		b := &apiv2.Broker{Name: bd.BrokerName, Id: 0, Endpoints: endpointsOf(addr, port)}
		perm := permissionOf(qd.Perm)
		if !fifo {
			out = append(out, &apiv2.Assignment{MessageQueue: &apiv2.MessageQueue{Topic: req.Topic, Id: -1,
				Permission: perm, Broker: b}})
			continue
		}
		for i := int32(0); i < qd.ReadQueueNums && i < maxAssignedQueues; i++ {
			out = append(out, &apiv2.Assignment{MessageQueue: &apiv2.MessageQueue{Topic: req.Topic, Id: i,
				Permission: perm, Broker: b}})
		}
	}
	if len(out) == 0 {
		return fail(status(apiv2.Code_FORBIDDEN, "no readable queue"))
	}
	return &apiv2.QueryAssignmentResponse{Status: statusOK, Assignments: out}, nil
}

// maxAssignedQueues bounds the queues of one broker in an answer (the name server's table
// bounds them; this keeps a corrupt table from sizing one).
const maxAssignedQueues = 1 << 16

// permissionOf is a queue permission as RouteActivity.convertToPermission reads it.
func permissionOf(perm int32) apiv2.Permission {
	switch r, w := route.IsReadable(perm), route.IsWritable(perm); {
	case r && w:
		return apiv2.Permission_READ_WRITE
	case r:
		return apiv2.Permission_READ
	case w:
		return apiv2.Permission_WRITE
	}
	return apiv2.Permission_NONE
}
