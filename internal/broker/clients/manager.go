// Package clients is the broker's registry of its clients (RocketMQ's broker.client package):
// the producer and consumer groups heartbeats register, by connection, with their
// subscriptions, expiry and the snapshots admin reads (Manager: ConsumerManager and
// ProducerManager), a leaf behind its own mutex: nothing under it does I/O or calls another
// manager. The core's clientManager answers the requests (HEART_BEAT, UNREGISTER_CLIENT, ...)
// and notifies the groups the Manager reports changed. The queue locks of orderly consumers
// are a service of their own (internal/broker/locks).
package clients

import (
	"slices"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// ChannelInfo is one connection's registration in one group (RocketMQ
// ClientChannelInfo). Each (group, channel) pair has its own, so a group that stops appearing
// in a client's heartbeats expires while the client's other groups stay.
type ChannelInfo struct {
	Channel  remoting.Channel
	ClientID string
	Language remoting.Language
	Version  int16
	// AccessKey is the ACL account the client's heartbeat was signed with ("" without ACL):
	// transaction checks go only to producers whose account may publish to the real topic.
	AccessKey string
	// lastUpdate is stamped by the Manager when it records the registration.
	lastUpdate time.Time
}

// consumerGroupInfo is a consumer group's members and subscriptions (RocketMQ
// ConsumerGroupInfo). Guarded by Manager.mu.
type consumerGroupInfo struct {
	group            string
	consumeType      string
	messageModel     string
	consumeFromWhere string
	channels         map[uint64]*ChannelInfo         // by channel ID
	subs             map[string]*filter.Subscription // by topic
	lastUpdate       time.Time
}

// clientIDs returns the group's distinct client ids, sorted. Two connections of one client
// (dialled by two address spellings) count once: a duplicate would leave its share of queues
// unassigned by the clients' allocation.
func (g *consumerGroupInfo) clientIDs() []string {
	ids := make([]string, 0, len(g.channels))
	for _, c := range g.channels {
		ids = append(ids, c.ClientID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (g *consumerGroupInfo) channelList() []remoting.Channel {
	out := make([]remoting.Channel, 0, len(g.channels))
	for _, c := range g.channels {
		out = append(out, c.Channel)
	}
	return out
}

// Manager tracks consumer groups (RocketMQ ConsumerManager) and producer groups
// (ProducerManager) registered by heartbeats. One mutex guards both tables; nothing under it
// does I/O or calls another manager.
//
// Expiry rule: a registration's lastUpdate is read from now under mu at the moment it is
// recorded, and expire reads its cutoff from the same clock under mu. A registration is thus
// dropped only when more than the timeout passed since it was recorded, however long the
// heartbeat that carried it took before recording it (RocketMQ stamps the channel info once,
// before the heartbeat's loop, so a slow heartbeat can register already-expired entries).
type Manager struct {
	now func() time.Time

	mu        sync.RWMutex
	consumers map[string]*consumerGroupInfo
	producers map[string]map[uint64]*ChannelInfo // group -> channel ID -> registration
}

// NewManager returns empty tables whose registrations are stamped, and expired, by now.
func NewManager(now func() time.Time) *Manager {
	return &Manager{now: now, consumers: map[string]*consumerGroupInfo{},
		producers: map[string]map[uint64]*ChannelInfo{}}
}

// RegisterConsumer records a heartbeat's consumer group on a channel (RocketMQ
// registerConsumer), stamped now. It reports whether the group's members or subscribed topics
// changed, and then the channels to notify.
func (m *Manager) RegisterConsumer(info ChannelInfo, data *protocol.ConsumerData) (bool, []remoting.Channel) {
	subs := make(map[string]*filter.Subscription, len(data.SubscriptionDataSet))
	for i := range data.SubscriptionDataSet {
		s := filter.New(data.SubscriptionDataSet[i])
		subs[s.Topic()] = s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	info.lastUpdate = m.now()
	g := m.consumers[data.GroupName]
	if g == nil {
		g = &consumerGroupInfo{group: data.GroupName, channels: map[uint64]*ChannelInfo{},
			subs: map[string]*filter.Subscription{}}
		m.consumers[data.GroupName] = g
	}
	g.consumeType, g.messageModel, g.consumeFromWhere = data.ConsumeType, data.MessageModel, data.ConsumeFromWhere
	g.lastUpdate = info.lastUpdate
	changed := false
	if old := g.channels[info.Channel.ID()]; old == nil {
		c := info
		g.channels[info.Channel.ID()] = &c
		changed = true
	} else {
		old.ClientID, old.Language, old.Version, old.lastUpdate = info.ClientID, info.Language, info.Version, info.lastUpdate
	}
	if updateSubscriptions(g, subs) {
		changed = true
	}
	if !changed {
		return false, nil
	}
	return true, g.channelList()
}

// updateSubscriptions applies a heartbeat's subscriptions, RocketMQ 4.9's updateSubscription: a
// new topic is added, a topic missing from the heartbeat is removed (the last heartbeat decides
// the group's topics), and a known topic is replaced only by a newer subVersion. It reports
// whether topics were added or removed. A replaced expression is not a change: the members
// already hold the same queues, and RocketMQ does not make the group rebalance for it.
func updateSubscriptions(g *consumerGroupInfo, subs map[string]*filter.Subscription) bool {
	changed := false
	for topic, s := range subs {
		old := g.subs[topic]
		switch {
		case old == nil:
			g.subs[topic] = s
			changed = true
		case s.SubVersion() > old.SubVersion():
			g.subs[topic] = s
		}
	}
	for topic := range g.subs {
		if _, ok := subs[topic]; !ok {
			delete(g.subs, topic)
			changed = true
		}
	}
	return changed
}

// UnregisterConsumer removes a channel from a group, dropping the group when it empties. It
// returns the remaining members when the channel was a member.
func (m *Manager) UnregisterConsumer(group string, chID uint64) (bool, []remoting.Channel) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.consumers[group]
	if g == nil || g.channels[chID] == nil {
		return false, nil
	}
	delete(g.channels, chID)
	if len(g.channels) == 0 {
		delete(m.consumers, group)
		return true, nil
	}
	return true, g.channelList()
}

// RegisterProducer records a producer group on a channel, stamped now.
func (m *Manager) RegisterProducer(group string, info ChannelInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	info.lastUpdate = m.now()
	p := m.producers[group]
	if p == nil {
		p = map[uint64]*ChannelInfo{}
		m.producers[group] = p
	}
	c := info
	p[info.Channel.ID()] = &c
}

// UnregisterProducer removes a channel from a producer group.
func (m *Manager) UnregisterProducer(group string, chID uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.producers[group]; p != nil {
		delete(p, chID)
		if len(p) == 0 {
			delete(m.producers, group)
		}
	}
}

// GroupChange is a consumer group whose members changed, with the members left to notify.
type GroupChange struct {
	Group    string
	Channels []remoting.Channel
}

// RemoveChannel drops every registration of a channel (its connection closed) and returns the
// consumer groups it left.
func (m *Manager) RemoveChannel(chID uint64) []GroupChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []GroupChange
	for name, g := range m.consumers {
		if g.channels[chID] == nil {
			continue
		}
		delete(g.channels, chID)
		if len(g.channels) == 0 {
			delete(m.consumers, name)
		}
		out = append(out, GroupChange{Group: name, Channels: g.channelList()})
	}
	for name, p := range m.producers {
		delete(p, chID)
		if len(p) == 0 {
			delete(m.producers, name)
		}
	}
	return out
}

// Expire drops registrations recorded more than timeout ago, and returns the consumer groups
// that lost members and the channels left with no registration at all (to be closed).
func (m *Manager) Expire(timeout time.Duration) ([]GroupChange, []remoting.Channel) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.now().Add(-timeout)
	expired := map[uint64]remoting.Channel{}
	var changes []GroupChange
	for name, g := range m.consumers {
		lost := false
		for id, c := range g.channels {
			if c.lastUpdate.Before(before) {
				delete(g.channels, id)
				expired[id] = c.Channel
				lost = true
			}
		}
		if !lost {
			continue
		}
		if len(g.channels) == 0 {
			delete(m.consumers, name)
		}
		changes = append(changes, GroupChange{Group: name, Channels: g.channelList()})
	}
	for name, p := range m.producers {
		for id, c := range p {
			if c.lastUpdate.Before(before) {
				delete(p, id)
				expired[id] = c.Channel
			}
		}
		if len(p) == 0 {
			delete(m.producers, name)
		}
	}
	// A channel whose other groups are still alive stays open: closing it would break the
	// client's live consumers (docs/protocol.md §5.9: a client drops one group and keeps its
	// connection).
	for id := range expired {
		if m.registeredLocked(id) {
			delete(expired, id)
		}
	}
	closeList := make([]remoting.Channel, 0, len(expired))
	for _, ch := range expired {
		closeList = append(closeList, ch)
	}
	return changes, closeList
}

// Adopt copies into m every registration of from whose connection is still open, with the
// stamps from gave it, so each expires when it would have there: the tables of a broker that
// replaces another on the same listener (a role change), whose clients keep their connections
// and would otherwise count as gone until their next heartbeat. A registration m already holds
// for the same group and connection is newer and stays. Subscriptions are shared: they are
// never changed once built.
func (m *Manager) Adopt(from *Manager) {
	if from == m {
		return
	}
	from.mu.RLock()
	consumers := make([]*consumerGroupInfo, 0, len(from.consumers))
	for _, g := range from.consumers {
		c := &consumerGroupInfo{group: g.group, consumeType: g.consumeType, messageModel: g.messageModel,
			consumeFromWhere: g.consumeFromWhere, lastUpdate: g.lastUpdate,
			channels: make(map[uint64]*ChannelInfo, len(g.channels)), subs: make(map[string]*filter.Subscription, len(g.subs))}
		for id, ci := range g.channels {
			if !ci.Channel.Closed() {
				cp := *ci
				c.channels[id] = &cp
			}
		}
		for topic, sub := range g.subs {
			c.subs[topic] = sub
		}
		consumers = append(consumers, c)
	}
	producers := make(map[string][]ChannelInfo, len(from.producers))
	for group, p := range from.producers {
		for _, ci := range p {
			if !ci.Channel.Closed() {
				producers[group] = append(producers[group], *ci)
			}
		}
	}
	from.mu.RUnlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range consumers {
		if len(c.channels) == 0 {
			continue
		}
		g := m.consumers[c.group]
		if g == nil {
			m.consumers[c.group] = c
			continue
		}
		for id, ci := range c.channels {
			if g.channels[id] == nil {
				g.channels[id] = ci
			}
		}
	}
	for group, infos := range producers {
		p := m.producers[group]
		if p == nil {
			p = make(map[uint64]*ChannelInfo, len(infos))
			m.producers[group] = p
		}
		for i := range infos {
			if id := infos[i].Channel.ID(); p[id] == nil {
				p[id] = &infos[i]
			}
		}
	}
}

// DropClosed drops every registration whose connection has closed and returns the consumer
// groups that lost members: for connections that closed while no listener would have told
// the broker (between two brokers of a role change).
func (m *Manager) DropClosed() []GroupChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []GroupChange
	for name, g := range m.consumers {
		lost := false
		for id, c := range g.channels {
			if c.Channel.Closed() {
				delete(g.channels, id)
				lost = true
			}
		}
		if !lost {
			continue
		}
		if len(g.channels) == 0 {
			delete(m.consumers, name)
		}
		out = append(out, GroupChange{Group: name, Channels: g.channelList()})
	}
	for name, p := range m.producers {
		for id, c := range p {
			if c.Channel.Closed() {
				delete(p, id)
			}
		}
		if len(p) == 0 {
			delete(m.producers, name)
		}
	}
	return out
}

// registeredLocked reports whether a channel is in any group. m.mu must be held.
func (m *Manager) registeredLocked(chID uint64) bool {
	for _, g := range m.consumers {
		if g.channels[chID] != nil {
			return true
		}
	}
	for _, p := range m.producers {
		if p[chID] != nil {
			return true
		}
	}
	return false
}

// AllGroups returns every consumer group with its members' channels.
func (m *Manager) AllGroups() []GroupChange {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]GroupChange, 0, len(m.consumers))
	for name, g := range m.consumers {
		out = append(out, GroupChange{Group: name, Channels: g.channelList()})
	}
	return out
}

// ConsumerIDs returns a group's client ids, sorted and distinct (nil for an unknown group).
func (m *Manager) ConsumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.consumers[group]; g != nil {
		return g.clientIDs()
	}
	return nil
}

// FindSubscription returns the group's subscription of topic and the group's message model.
func (m *Manager) FindSubscription(group, topic string) (sub *filter.Subscription, groupKnown bool, messageModel string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil, false, ""
	}
	return g.subs[topic], true, g.messageModel
}

// ConsumerConnection describes one member of a consumer group (for admin reads).
type ConsumerConnection struct {
	ClientID   string
	ClientAddr string
	Language   remoting.Language
	Version    int16
}

// ConsumerGroupState is a copy of a consumer group's registration.
type ConsumerGroupState struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	Connections      []ConsumerConnection        // sorted by client id
	Subscriptions    []protocol.SubscriptionData // sorted by topic
}

// Snapshot copies a consumer group's registration.
func (m *Manager) Snapshot(group string) (ConsumerGroupState, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return ConsumerGroupState{}, false
	}
	s := ConsumerGroupState{Group: group, ConsumeType: g.consumeType, MessageModel: g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere}
	for _, c := range g.channels {
		s.Connections = append(s.Connections, ConsumerConnection{ClientID: c.ClientID,
			ClientAddr: c.Channel.RemoteAddr(), Language: c.Language, Version: c.Version})
	}
	for _, sub := range g.subs {
		s.Subscriptions = append(s.Subscriptions, sub.Data())
	}
	slices.SortFunc(s.Connections, func(a, b ConsumerConnection) int {
		if a.ClientID != b.ClientID {
			if a.ClientID < b.ClientID {
				return -1
			}
			return 1
		}
		if a.ClientAddr < b.ClientAddr {
			return -1
		}
		return 0
	})
	slices.SortFunc(s.Subscriptions, func(a, b protocol.SubscriptionData) int {
		if a.Topic < b.Topic {
			return -1
		}
		if a.Topic > b.Topic {
			return 1
		}
		return 0
	})
	return s, true
}

// ProducerChannels returns the live channels of a producer group.
func (m *Manager) ProducerChannels(group string) []remoting.Channel {
	clients := m.producerClients(group)
	out := make([]remoting.Channel, len(clients))
	for i, c := range clients {
		out[i] = c.Channel
	}
	return out
}

// producerClients returns the live members of a producer group.
func (m *Manager) producerClients(group string) []ChannelInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p := m.producers[group]
	out := make([]ChannelInfo, 0, len(p))
	for _, c := range p {
		if !c.Channel.Closed() {
			out = append(out, *c)
		}
	}
	return out
}

// FindChannel returns a live channel registered (as producer or consumer) by a client id.
func (m *Manager) FindChannel(clientID string) (remoting.Channel, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.producers {
		for _, c := range p {
			if c.ClientID == clientID && !c.Channel.Closed() {
				return c.Channel, true
			}
		}
	}
	for _, g := range m.consumers {
		for _, c := range g.channels {
			if c.ClientID == clientID && !c.Channel.Closed() {
				return c.Channel, true
			}
		}
	}
	return nil, false
}
