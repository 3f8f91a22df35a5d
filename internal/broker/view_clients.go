package broker

import (
	"slices"
	"strings"

	"github.com/mqgo/mq/remoting"
)

// Clients are the connections the core tracks (producer and consumer groups, their members
// and subscriptions, parked pulls) as services see them: admin's connection reads and offset
// resets, transaction checks, metrics.
type Clients struct{ b *Broker }

// Clients is the client registry's view for services.
func (b *Broker) Clients() Clients { return Clients{b} }

// ClientConn is one connection's registration in a group.
type ClientConn struct {
	Channel  remoting.Channel
	ClientID string
	Language remoting.Language
	Version  int16
}

// Members are the open connections registered in a consumer group, copied so that
// requests to them are sent without the manager's lock.
func (v Clients) Members(group string) []ClientConn {
	m := v.b.clients.consumers
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]ClientConn, 0, len(g.channels))
	for _, c := range g.channels {
		if !c.ch.Closed() {
			out = append(out, ClientConn{Channel: c.ch, ClientID: c.clientID, Language: c.language, Version: c.version})
		}
	}
	return out
}

// Member is the registration of one client in a consumer group.
func (v Clients) Member(group, clientID string) (ClientConn, bool) {
	for _, c := range v.Members(group) {
		if c.ClientID == clientID {
			return c, true
		}
	}
	return ClientConn{}, false
}

// ConsumerGroup copies a consumer group's members and subscriptions.
func (v Clients) ConsumerGroup(group string) (ConsumerGroupState, bool) {
	return v.b.clients.consumerGroupState(group)
}

// Producers are a producer group's open connections sorted by client id and address;
// ok is false when nobody registered the group.
func (v Clients) Producers(group string) (conns []ClientConn, ok bool) {
	m := v.b.clients.consumers
	m.mu.RLock()
	p, ok := m.producers[group]
	if ok {
		conns = make([]ClientConn, 0, len(p))
		for _, c := range p {
			if !c.ch.Closed() {
				conns = append(conns, ClientConn{Channel: c.ch, ClientID: c.clientID, Language: c.language, Version: c.version})
			}
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(conns, func(a, b ClientConn) int {
		if c := strings.Compare(a.ClientID, b.ClientID); c != 0 {
			return c
		}
		return strings.Compare(a.Channel.RemoteAddr(), b.Channel.RemoteAddr())
	})
	return conns, ok
}

// Counts are the connected members of every consumer group and the producer
// registrations, for metrics.
func (v Clients) Counts() (consumers map[string]int, producers int) {
	m := v.b.clients.consumers
	m.mu.RLock()
	defer m.mu.RUnlock()
	consumers = make(map[string]int, len(m.consumers))
	for g, info := range m.consumers {
		consumers[g] = len(info.channels)
	}
	for _, p := range m.producers {
		producers += len(p)
	}
	return consumers, producers
}

// ProducerConn is a live connection of a producer group's member.
type ProducerConn struct {
	Ch remoting.Channel
	// AccessKey is the ACL account its heartbeat was signed with, "" without ACL.
	AccessKey string
}

// ProducerConns are the live connections of a producer group's members with the ACL account
// each signed its heartbeat with (a transaction check goes to one of them).
func (v Clients) ProducerConns(group string) []ProducerConn {
	clients := v.b.clients.consumers.producerClients(group)
	out := make([]ProducerConn, len(clients))
	for i, c := range clients {
		out[i] = ProducerConn{Ch: c.ch, AccessKey: c.accessKey}
	}
	return out
}

// PullHolds are the pulls parked now and the parks refused since the start, for metrics.
func (v Clients) PullHolds() (parked int, refused int64) {
	return v.b.pull.hold.count(), v.b.pull.refused.Load()
}
