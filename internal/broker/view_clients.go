package broker

import (
	"github.com/mqgo/mq/internal/broker/clients"
)

// Clients are the connections the core tracks (producer and consumer groups, their members
// and subscriptions, parked pulls) as services see them: admin's connection reads and offset
// resets, transaction checks, metrics. The tables are internal/broker/clients' and
// internal/broker/longpoll's; the types these reads return are theirs.
type Clients struct{ b *Broker }

// Clients is the client registry's view for services.
func (b *Broker) Clients() Clients { return Clients{b} }

// Members are the open connections registered in a consumer group, copied so that
// requests to them are sent without the manager's lock.
func (v Clients) Members(group string) []clients.Conn {
	return v.b.clients.consumers.Members(group)
}

// Member is the registration of one client in a consumer group.
func (v Clients) Member(group, clientID string) (clients.Conn, bool) {
	return v.b.clients.consumers.Member(group, clientID)
}

// ConsumerGroup copies a consumer group's members and subscriptions.
func (v Clients) ConsumerGroup(group string) (clients.ConsumerGroupState, bool) {
	return v.b.clients.consumerGroupState(group)
}

// Producers are a producer group's open connections sorted by client id and address;
// ok is false when nobody registered the group.
func (v Clients) Producers(group string) (conns []clients.Conn, ok bool) {
	return v.b.clients.consumers.Producers(group)
}

// Counts are the connected members of every consumer group and the producer
// registrations, for metrics.
func (v Clients) Counts() (consumers map[string]int, producers int) {
	return v.b.clients.consumers.Counts()
}

// ProducerConns are the live connections of a producer group's members with the ACL account
// each signed its heartbeat with (a transaction check goes to one of them).
func (v Clients) ProducerConns(group string) []clients.ProducerConn {
	return v.b.clients.consumers.ProducerConns(group)
}

// PullHolds are the pulls parked now and the parks refused since the start, for metrics.
func (v Clients) PullHolds() (parked int, refused int64) {
	return v.b.pull.hold.Count(), v.b.pull.refused.Total()
}
