package clients

import (
	"slices"
	"strings"

	"github.com/mqgo/mq/remoting"
)

// Reads for the services (through the core's Clients view): admin's connection lists and
// offset resets, transaction checks, metrics. Each copies under the read lock, so that
// requests to the connections are sent without it.

// Conn is one connection's registration in a group.
type Conn struct {
	Channel  remoting.Channel
	ClientID string
	Language remoting.Language
	Version  int16
}

// Members are the open connections registered in a consumer group.
func (m *Manager) Members(group string) []Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]Conn, 0, len(g.channels))
	for _, c := range g.channels {
		if !c.Channel.Closed() {
			out = append(out, Conn{Channel: c.Channel, ClientID: c.ClientID, Language: c.Language, Version: c.Version})
		}
	}
	return out
}

// Member is the open connection of one client in a consumer group.
func (m *Manager) Member(group, clientID string) (Conn, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.consumers[group]; g != nil {
		for _, c := range g.channels {
			if c.ClientID == clientID && !c.Channel.Closed() {
				return Conn{Channel: c.Channel, ClientID: c.ClientID, Language: c.Language, Version: c.Version}, true
			}
		}
	}
	return Conn{}, false
}

// Producers are a producer group's open connections sorted by client id and address;
// ok is false when nobody registered the group.
func (m *Manager) Producers(group string) (conns []Conn, ok bool) {
	m.mu.RLock()
	p, ok := m.producers[group]
	if ok {
		conns = make([]Conn, 0, len(p))
		for _, c := range p {
			if !c.Channel.Closed() {
				conns = append(conns, Conn{Channel: c.Channel, ClientID: c.ClientID, Language: c.Language, Version: c.Version})
			}
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(conns, func(a, b Conn) int {
		if c := strings.Compare(a.ClientID, b.ClientID); c != 0 {
			return c
		}
		return strings.Compare(a.Channel.RemoteAddr(), b.Channel.RemoteAddr())
	})
	return conns, ok
}

// Counts are the connected members of every consumer group and the producer
// registrations.
func (m *Manager) Counts() (consumers map[string]int, producers int) {
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
func (m *Manager) ProducerConns(group string) []ProducerConn {
	clients := m.producerClients(group)
	out := make([]ProducerConn, len(clients))
	for i, c := range clients {
		out[i] = ProducerConn{Ch: c.Channel, AccessKey: c.AccessKey}
	}
	return out
}
