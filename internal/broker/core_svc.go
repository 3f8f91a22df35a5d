package broker

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// What the request-reply, statistics and admin services (internal/broker/reply, stats and
// admin) reach of the core: the seams the core calls them through, and the narrow reads and
// writes they make. Each seam is nil until a service sets it, and nil means what RocketMQ does
// with the feature off: a send remembers no reply route, nothing is counted.

// RequestNoter is the reply service's part of the send path: a plain send is shown to it before
// its append, so that a replier that reads the stored request finds its route already there.
type RequestNoter interface {
	NoteRequest(ch remoting.Channel, props string)
}

// Counter counts what the broker stores and serves (RocketMQ's BrokerStatsManager). Its methods
// are called on the send and pull paths, concurrently: they must not block.
type Counter interface {
	// CountPut records n messages of size bytes stored in topic.
	CountPut(topic string, n, size int)
	// CountGet records n messages of size bytes of topic returned to group.
	CountGet(topic, group string, n, size int)
	// ForgetTopic drops a deleted topic's counters.
	ForgetTopic(topic string)
}

// svcSeams are the services' seams, set before Register and Run and read without a lock after.
type svcSeams struct {
	requests RequestNoter
	counter  Counter
}

// SetRequestNoter makes n see every plain send before its append. Call it before Run.
func (b *Broker) SetRequestNoter(n RequestNoter) { b.svc.requests = n }

// SetCounter makes c count every put and get. Call it before Run.
func (b *Broker) SetCounter(c Counter) { b.svc.counter = c }

// Counter is the counter SetCounter set, nil without.
func (b *Broker) Counter() Counter { return b.svc.counter }

// noteRequest shows a plain send to the reply service.
func (b *Broker) noteRequest(ch remoting.Channel, props string) {
	if n := b.svc.requests; n != nil {
		n.NoteRequest(ch, props)
	}
}

// countPut records n messages of size bytes stored in topic.
func (b *Broker) countPut(topic string, n, size int) {
	if c := b.svc.counter; c != nil {
		c.CountPut(topic, n, size)
	}
}

// CountPut is countPut for services that store messages of their own.
func (b *Broker) CountPut(topic string, n, size int) { b.countPut(topic, n, size) }

// countGet records n messages of size bytes of topic returned to group.
func (b *Broker) countGet(topic, group string, n, size int) {
	if c := b.svc.counter; c != nil {
		c.CountGet(topic, group, n, size)
	}
}

// forgetTopicCounters drops a deleted topic's counters.
func (b *Broker) forgetTopicCounters(topic string) {
	if c := b.svc.counter; c != nil {
		c.ForgetTopic(topic)
	}
}

// Send-path pieces the reply service shares with plain sends.

// Values of the MSG_REGION and TRACE_ON fields of every send answer.
const (
	RegionID = defaultRegion
	TraceOn  = traceOn
)

// SendResponse is a send answer with RocketMQ's MSG_REGION and TRACE_ON fields.
func SendResponse(code int16, remark string) *remoting.Command { return sendResponse(code, remark) }

// BornHost is the connection's peer address, or 0.0.0.0:0 when it does not parse.
func BornHost(ch remoting.Channel) netip.AddrPort { return bornHost(ch) }

// SetProperty returns props with key set to value.
func SetProperty(props, key, value string) string { return setProperty(props, key, value) }

// StoreHost is the address stored in every message this broker appends.
func (b *Broker) StoreHost() netip.AddrPort { return b.storeHost }

// CheckSendTo runs a send's checks on h (the topic, its permission, auto-creation, the queue,
// the body's and properties' sizes) and returns the queue to write and the sysFlag to store,
// or the send answer refusing it.
func (b *Broker) CheckSendTo(ch remoting.Channel, h *protocol.SendMessageRequestHeader, bodyLen int) (queueID, sysFlag int32, refusal *remoting.Command) {
	tc, resp := b.send.checkSend(ch, h)
	if resp != nil {
		return 0, 0, resp
	}
	queueID, resp = pickQueue(h.QueueID, tc)
	if resp != nil {
		return 0, 0, resp
	}
	if bodyLen > b.opts.MaxMessageBytes || len(h.Properties) > message.MaxPropertiesBytes {
		return 0, 0, sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
	}
	return queueID, storedSysFlag(h.SysFlag, tc), nil
}

// StoreAsSend appends m as a send does: it waits for SYNC_MASTER slaves and counts the put.
// stored reports whether the message was written (the send succeeds).
func (b *Broker) StoreAsSend(ctx context.Context, m *storage.Message) (r storage.PutResult, stored bool, err error) {
	r, err = b.store.PutMessage(m)
	b.waitForSlave(ctx, &r)
	if stored = putStored(r.Status); stored {
		b.countPut(m.Topic, r.Count, r.WroteBytes)
	}
	return r, stored, err
}

// Reads and writes of the admin service.

// Topic returns a topic's config.
func (b *Broker) Topic(topic string) (TopicConfig, bool) { return b.topics.get(topic) }

// TopicCount is how many topics the broker has.
func (b *Broker) TopicCount() int { return len(b.topics.names()) }

// SubscriptionGroups copies the subscription group table.
func (b *Broker) SubscriptionGroups() SubscriptionGroupWrapper { return b.groups.snapshot() }

// UpdateSubscriptionGroup checks c (its name and retry queue count) and stores it; the error is
// the refusal, with RocketMQ's code and a remark naming the field.
func (b *Broker) UpdateSubscriptionGroup(c SubscriptionGroupConfig) error {
	if c.GroupName == "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "subscription group config without groupName"}
	}
	if resp := checkGroupField("groupName", c.GroupName); resp != nil {
		return &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
	}
	// 0 is valid: RocketMQ reads it as "no retries for this group" (send-back answers SUCCESS).
	if remark := b.queueNumsRemark("retryQueueNums", c.RetryQueueNums, 0); remark != "" {
		return &remoting.ResponseError{Code: remoting.SystemError, Remark: "subscription group[" + c.GroupName + "]: " + remark}
	}
	b.groups.update(c)
	return nil
}

// DeleteSubscriptionGroup removes a group's settings and reports whether it had any.
func (b *Broker) DeleteSubscriptionGroup(group string) bool { return b.groups.delete(group) }

// ConsumerOffsets copies the committed offsets: topic@group -> queue -> offset.
func (b *Broker) ConsumerOffsets() map[string]map[int32]int64 { return b.offsets.snapshot() }

// ConsumerOffset is a group's committed offset in a queue, -1 when it has none.
func (b *Broker) ConsumerOffset(group, topic string, queueID int32) int64 {
	return b.offsets.query(group, topic, queueID)
}

// CommitOffset commits a group's offset in a queue.
func (b *Broker) CommitOffset(group, topic string, queueID int32, offset int64) {
	b.offsets.commit(group, topic, queueID, offset)
}

// TopicsOfGroup are the topics a group has committed offsets in.
func (b *Broker) TopicsOfGroup(group string) []string { return b.offsets.topicsOf(group) }

// SplitOffsetKey splits a key of ConsumerOffsets into its topic and group.
func SplitOffsetKey(key string) (topic, group string, ok bool) {
	return strings.Cut(key, topicGroupSeparator)
}

// QueueLoopBound is n capped at MaxQueueNums: what an admin read visits of a stored count.
func (b *Broker) QueueLoopBound(n int32) int32 { return b.queueLoopBound(n) }

// ClientConn is one connection's registration in a group.
type ClientConn struct {
	Channel  remoting.Channel
	ClientID string
	Language remoting.Language
	Version  int16
}

// GroupMembers are the open connections registered in a consumer group, copied so that
// requests to them are sent without the manager's lock.
func (b *Broker) GroupMembers(group string) []ClientConn {
	m := b.clients.consumers
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

// GroupMember is the registration of one client in a consumer group.
func (b *Broker) GroupMember(group, clientID string) (ClientConn, bool) {
	for _, c := range b.GroupMembers(group) {
		if c.ClientID == clientID {
			return c, true
		}
	}
	return ClientConn{}, false
}

// ConsumerGroup copies a consumer group's members and subscriptions.
func (b *Broker) ConsumerGroup(group string) (ConsumerGroupState, bool) {
	return b.clients.consumerGroupState(group)
}

// ProducerConnections are a producer group's open connections sorted by client id and address;
// ok is false when nobody registered the group.
func (b *Broker) ProducerConnections(group string) (conns []ClientConn, ok bool) {
	m := b.clients.consumers
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

// GroupCounts are the connected members of every consumer group and the producer
// registrations, for metrics.
func (b *Broker) GroupCounts() (consumers map[string]int, producers int) {
	m := b.clients.consumers
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

// PullHolds are the pulls parked now and the parks refused since the start, for metrics.
func (b *Broker) PullHolds() (parked int, refused int64) {
	return b.pull.hold.count(), b.pull.refused.Load()
}

// SlaveAcks are a master's connected slaves and what each acknowledged (metrics); nil on a
// slave or without HA.
func (b *Broker) SlaveAcks() []SlaveAck { return b.slaveAcks() }

// CheckReadRaw applies the ACL read check to a stored record a request reads (ReadCheck): nil
// when allowed, else the refusal.
func (b *Broker) CheckReadRaw(ch remoting.Channel, req *remoting.Command, raw []byte) *remoting.Command {
	return b.checkReadRaw(ch, req, raw)
}
