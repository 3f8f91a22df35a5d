package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/broker/clients"
	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// clientManager is the client side of the broker (RocketMQ's ClientManageProcessor with its
// ProducerManager and ConsumerManager): heartbeats, the producer and consumer groups, their
// expiry and notifications. Its own state sits in internal/broker/clients' Manager, behind its
// own mutex. The queue locks of orderly consumers are a service (internal/broker/locks).
type clientManager struct {
	*Broker
	consumers *clients.Manager
	now       func() time.Time
	// regrace holds member lists back after a crash (reregister.go).
	regrace reregisterGrace
}

func newClientManager(b *Broker) *clientManager {
	cm := &clientManager{Broker: b, now: time.Now}
	// Through cm.now, so a test that sets a fake clock there moves expiry too.
	cm.consumers = clients.NewManager(func() time.Time { return cm.now() })
	b.addRunner(cm.runClientHousekeeping)
	return cm
}

// registerClients installs HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP and
// CHECK_CLIENT_CONFIG. Heartbeats get their own pool, as in RocketMQ, so they are never queued
// behind offset or lock traffic.
func (cm *clientManager) registerClients(d *remoting.Dispatcher) {
	cm.handle(d, remoting.HeartBeat, remoting.ProcessorFunc(cm.processHeartbeat), cm.heartbeatEx)
	cm.handle(d, remoting.UnregisterClient, remoting.ProcessorFunc(cm.processUnregisterClient), cm.heartbeatEx)
	cm.handle(d, remoting.CheckClientConfig, remoting.ProcessorFunc(cm.processCheckClientConfig), cm.heartbeatEx)
	cm.handle(d, remoting.GetConsumerListByGroup, remoting.ProcessorFunc(cm.processGetConsumerList), cm.clientEx)
}

// processHeartbeat registers a client's producer and consumer groups on the channel (RocketMQ
// ClientManageProcessor.heartBeat): it makes sure every consumer group's settings and retry
// topic exist, then per group records members and subscriptions and notifies the group's
// members when either changed.
func (cm *clientManager) processHeartbeat(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	hb, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	if resp := reqnames.CheckHeartbeat(hb); resp != nil {
		return resp, nil
	}
	// The consumer manager stamps each registration as it records it (clients.Manager), so
	// however long ensureConsumerGroups takes, it cannot expire what this heartbeat registers.
	info := clients.ChannelInfo{Channel: ch, ClientID: hb.ClientID, Language: req.Language, Version: req.Version,
		AccessKey: req.ExtFields[remoting.ExtAccessKey]}
	notify, refused, full := cm.ensureConsumerGroups(hb.ConsumerDataSet)
	for i := range hb.ConsumerDataSet {
		if refused != nil && refused[i] {
			continue // as RocketMQ 5 for a group it has no settings for: no member registered
		}
		data := &hb.ConsumerDataSet[i]
		changed, members := cm.consumers.RegisterConsumer(info, data)
		if changed {
			cm.log.Info().Str("group", data.GroupName).Str("client_id", hb.ClientID).
				Str("addr", ch.RemoteAddr()).Msg("consumer group changed")
			if notify[i] {
				cm.notifyConsumerIDsChanged(data.GroupName, members)
			}
		}
	}
	for _, p := range hb.ProducerDataSet {
		cm.consumers.RegisterProducer(p.GroupName, info)
	}
	if len(hb.ProducerDataSet)+len(hb.ConsumerDataSet) > 0 {
		cm.hooks.heartbeat(ch, hb.ClientID)
	}
	if full != nil {
		return remoting.NewResponse(remoting.SubscriptionGroupNotExist, full.Error()), nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// ensureConsumerGroups makes sure each group's settings and %RETRY% topic exist and reports,
// per group, whether its members want NOTIFY_CONSUMER_IDS_CHANGED. What it creates is handed
// to the metadata writer as one change, and the new topics to the name servers in one
// registration round that it waits for: a heartbeat bringing N new groups costs about one
// write per file and one round, not N (RocketMQ writes and registers once per group). Members
// are notified only after it returns, so the routes of their retry topics exist by then.
//
// A new group the table has no room for (MaxSubscriptionGroups) is refused: refused marks it
// (nil when none was) and full is the refusal, naming the first such group and how many more
// there were, for the heartbeat's answer.
func (cm *clientManager) ensureConsumerGroups(set []protocol.ConsumerData) (notify, refused []bool, full error) {
	notify = make([]bool, len(set))
	var newGroups, newTopics bool
	var first error
	n := 0
	for i := range set {
		cfg, created, err := cm.groups.FindOrAdd(set[i].GroupName)
		if errors.Is(err, tables.ErrTooManyGroups) {
			if refused == nil {
				refused, first = make([]bool, len(set)), err
			}
			refused[i] = true
			n++
			continue
		}
		newGroups = newGroups || created
		notify[i] = err != nil || cfg.NotifyConsumerIdsChangedEnable
		if err == nil && cm.addRetryTopic(set[i].GroupName, cfg.RetryQueueNums, set[i].UnitMode) {
			newTopics = true
		}
	}
	if newGroups {
		cm.groups.Changed()
	}
	if newTopics {
		cm.topics.Changed()
	}
	if n > 1 {
		first = fmt.Errorf("%w (and %d more groups of this heartbeat)", first, n-1)
	}
	return notify, refused, first
}

// addRetryTopic adds %RETRY%group unless it exists (topics.AddIfAbsent: the caller registers)
// and reports whether it did.
func (cm *clientManager) addRetryTopic(group string, queues int32, unitMode bool) bool {
	topic := names.RetryTopic(group)
	if _, ok := cm.topics.Get(topic); ok {
		return false
	}
	if queues <= 0 {
		queues = 1
	}
	var sysFlag int32
	if unitMode {
		sysFlag = topicSysFlagUnitSub
	}
	_, created, _ := cm.topics.AddIfAbsent(topic, queues, route.PermReadWrite, sysFlag) // refused past MaxTopics
	return created
}

// notifyConsumerIDsChanged sends NOTIFY_CONSUMER_IDS_CHANGED one-way to each channel; clients
// send no reply (docs/protocol.md §7.1). DisableNotifyConsumerIdsChanged silences it for every
// group, as RocketMQ's notifyConsumerIdsChangedEnable does in its one listener.
func (cm *clientManager) notifyConsumerIDsChanged(group string, channels []remoting.Channel) {
	if cm.opts.Broker.DisableNotifyConsumerIdsChanged {
		return
	}
	for _, ch := range channels {
		if ch.Closed() {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged,
			remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil)
		if err := ch.InvokeOneway(req); err != nil {
			cm.log.Debug().Err(err).Str("group", group).Str("addr", ch.RemoteAddr()).
				Msg("notify consumer ids changed failed")
		}
	}
}

// notifyIfEnabled notifies a changed group's remaining members if the group's settings allow
// it. It does not create the group's settings.
func (cm *clientManager) notifyIfEnabled(c clients.GroupChange) {
	if len(c.Channels) == 0 {
		return
	}
	cfg, ok := cm.groups.Get(c.Group)
	if ok && !cfg.NotifyConsumerIdsChangedEnable {
		return
	}
	cm.notifyConsumerIDsChanged(c.Group, c.Channels)
}

// processUnregisterClient drops a client's producer and/or consumer group from the channel.
func (cm *clientManager) processUnregisterClient(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UnregisterClientRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if h.ProducerGroup != "" {
		cm.consumers.UnregisterProducer(h.ProducerGroup, ch.ID())
	}
	if h.ConsumerGroup != "" {
		if removed, members := cm.consumers.UnregisterConsumer(h.ConsumerGroup, ch.ID()); removed {
			cm.log.Info().Str("group", h.ConsumerGroup).Str("client_id", h.ClientID).Msg("consumer unregistered")
			cm.notifyIfEnabled(clients.GroupChange{Group: h.ConsumerGroup, Channels: members})
		}
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processCheckClientConfig tells a consumer before it starts whether the broker can filter by
// its subscription (RocketMQ ClientManageProcessor.checkClientConfig): TAG yes, SQL92 when it
// compiles, anything else no (filter.CheckExpression). The body's names are not checked: nothing but the
// expression and its type is read.
func (cm *clientManager) processCheckClientConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.DecodeCheckClientRequestBody(req.Body)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	// An absent subscriptionData decodes as a TAG one: accepted, as RocketMQ accepts none.
	if resp := filter.CheckExpression(body.SubscriptionData.SubString, body.SubscriptionData.ExpressionType); resp != nil {
		return resp, nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processGetConsumerList answers the group's client ids; like RocketMQ it answers SYSTEM_ERROR
// when the group has no member.
func (cm *clientManager) processGetConsumerList(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if cm.inReregisterGrace() {
		return reregisterBusy(), nil
	}
	ids := cm.consumers.ConsumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		cm.log.Debug().Str("group", h.ConsumerGroup).Str("addr", ch.RemoteAddr()).Msg("consumer list asked for a group without members")
		return remoting.NewResponse(remoting.SystemError, "no consumer for this group, "+h.ConsumerGroup), nil
	}
	body, err := json.Marshal(protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: ids})
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// onConnEvent drops a closed, broken or idle connection's producers and consumers, notifies the
// groups it left, and drops its parked pulls and reply routes. Its queue locks stay until they
// expire, as in RocketMQ (internal/broker/locks).
func (cm *clientManager) onConnEvent(ev remoting.ConnEvent) {
	switch ev.Type {
	case remoting.ConnClose, remoting.ConnException, remoting.ConnIdle:
	default:
		return
	}
	cm.pull.hold.DropChannel(ev.Channel.ID())
	cm.hooks.connClosed(ev.Channel)
	for _, c := range cm.consumers.RemoveChannel(ev.Channel.ID()) {
		cm.log.Info().Str("group", c.Group).Str("addr", ev.Channel.RemoteAddr()).
			Str("event", ev.Type.String()).Msg("consumer left")
		cm.notifyIfEnabled(c)
	}
}

// dropClosed drops the registrations of connections that closed unseen (Register) and
// notifies the groups they left.
func (cm *clientManager) dropClosed() {
	for _, c := range cm.consumers.DropClosed() {
		cm.log.Info().Str("group", c.Group).Msg("consumer left while the broker was replaced")
		cm.notifyIfEnabled(c)
	}
}

// runClientHousekeeping expires registrations without a heartbeat for ChannelExpiredTimeout,
// every ScanConnectionInterval (RocketMQ ClientHousekeepingService).
func (cm *clientManager) runClientHousekeeping(ctx context.Context) error {
	t := time.NewTicker(cm.opts.ScanConnectionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			cm.scanNotActiveChannels()
		}
	}
}

// scanNotActiveChannels expires stale registrations, notifies the groups that lost members and
// closes the connections left with no registration.
func (cm *clientManager) scanNotActiveChannels() {
	changes, closeList := cm.consumers.Expire(cm.opts.Periods.ClientChannelExpiredTime)
	for _, c := range changes {
		cm.log.Info().Str("group", c.Group).Msg("consumer registration expired")
		cm.notifyIfEnabled(c)
	}
	for _, ch := range closeList {
		cm.log.Info().Str("addr", ch.RemoteAddr()).Msg("closing connection without heartbeat")
		_ = ch.Close()
	}
}

// Functions for the other parts of the broker.

// producerChannels returns the live connections of a producer group (transaction checks).
func (cm *clientManager) producerChannels(group string) []remoting.Channel {
	return cm.consumers.ProducerChannels(group)
}

// clientChannel returns a live connection registered by the client with this id. Replies do
// not use it: any heartbeat can register any id, so they go by reply_route.go's holders.
func (cm *clientManager) clientChannel(clientID string) (remoting.Channel, bool) {
	return cm.consumers.FindChannel(clientID)
}

// consumerGroupState copies a consumer group's members and subscriptions (admin reads).
func (cm *clientManager) consumerGroupState(group string) (clients.ConsumerGroupState, bool) {
	return cm.consumers.Snapshot(group)
}
