package broker

import (
	"context"
	"encoding/json"
	"github.com/mqgo/mq/internal/names"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// clientState holds the producer and consumer managers and the queue locks (owned by
// clients.go, consumer_manager.go and lock.go).
type clientState struct {
	consumers *consumerManager
	locks     *lockManager
	now       func() time.Time
}

func (b *Broker) initClients() {
	b.clients = &clientState{locks: newLockManager(), now: time.Now}
	// Through b.clients.now, so a test that sets a fake clock there moves expiry too.
	b.clients.consumers = newConsumerManager(func() time.Time { return b.clients.now() })
	b.addRunner(b.runClientHousekeeping)
}

// registerClients installs HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
// CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ and UNLOCK_BATCH_MQ. Heartbeats get their own pool, as in
// RocketMQ, so they are never queued behind offset or lock traffic.
func (b *Broker) registerClients(d *remoting.Dispatcher) {
	b.handle(d, remoting.HeartBeat, remoting.ProcessorFunc(b.processHeartbeat), b.heartbeatEx)
	b.handle(d, remoting.UnregisterClient, remoting.ProcessorFunc(b.processUnregisterClient), b.heartbeatEx)
	b.handle(d, remoting.CheckClientConfig, remoting.ProcessorFunc(b.processCheckClientConfig), b.heartbeatEx)
	b.handle(d, remoting.GetConsumerListByGroup, remoting.ProcessorFunc(b.processGetConsumerList), b.clientEx)
	b.handle(d, remoting.LockBatchMQ, remoting.ProcessorFunc(b.processLockBatch), b.clientEx)
	b.handle(d, remoting.UnlockBatchMQ, remoting.ProcessorFunc(b.processUnlockBatch), b.clientEx)
}

// processHeartbeat registers a client's producer and consumer groups on the channel (RocketMQ
// ClientManageProcessor.heartBeat): it makes sure every consumer group's settings and retry
// topic exist, then per group records members and subscriptions and notifies the group's
// members when either changed.
func (b *Broker) processHeartbeat(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	hb, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	if resp := checkHeartbeatNames(hb); resp != nil {
		return resp, nil
	}
	// The consumer manager stamps each registration as it records it (consumer_manager.go), so
	// however long ensureConsumerGroups takes, it cannot expire what this heartbeat registers.
	info := clientChannelInfo{ch: ch, clientID: hb.ClientID, language: req.Language, version: req.Version,
		accessKey: req.ExtFields[remoting.ExtAccessKey]}
	notify := b.ensureConsumerGroups(hb.ConsumerDataSet)
	for i := range hb.ConsumerDataSet {
		data := &hb.ConsumerDataSet[i]
		changed, members := b.clients.consumers.registerConsumer(info, data)
		if changed {
			b.log.Info().Str("group", data.GroupName).Str("client_id", hb.ClientID).
				Str("addr", ch.RemoteAddr()).Msg("consumer group changed")
			if notify[i] {
				b.notifyConsumerIDsChanged(data.GroupName, members)
			}
		}
	}
	for _, p := range hb.ProducerDataSet {
		b.clients.consumers.registerProducer(p.GroupName, info)
	}
	if len(hb.ProducerDataSet)+len(hb.ConsumerDataSet) > 0 {
		b.hooks.heartbeat(ch, hb.ClientID)
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// topicSysFlagUnitSub is RocketMQ's TopicSysFlag for a unit-mode group's retry topic.
const topicSysFlagUnitSub = 1 << 1

// ensureConsumerGroups makes sure each group's settings and %RETRY% topic exist and reports,
// per group, whether its members want NOTIFY_CONSUMER_IDS_CHANGED. What it creates is handed
// to the metadata writer as one change, and the new topics to the name servers in one
// registration round that it waits for: a heartbeat bringing N new groups costs about one
// write per file and one round, not N (RocketMQ writes and registers once per group). Members
// are notified only after it returns, so the routes of their retry topics exist by then.
func (b *Broker) ensureConsumerGroups(set []protocol.ConsumerData) []bool {
	notify := make([]bool, len(set))
	var newGroups, newTopics bool
	for i := range set {
		cfg, ok, created := b.groups.findOrAdd(set[i].GroupName)
		newGroups = newGroups || created
		notify[i] = !ok || cfg.NotifyConsumerIdsChangedEnable
		if ok && b.addRetryTopic(set[i].GroupName, cfg.RetryQueueNums, set[i].UnitMode) {
			newTopics = true
		}
	}
	if newGroups {
		b.meta.changed(metaGroups)
	}
	if newTopics {
		b.topics.changed()
	}
	return notify
}

// addRetryTopic adds %RETRY%group unless it exists (topics.addIfAbsent: the caller registers)
// and reports whether it did.
func (b *Broker) addRetryTopic(group string, queues int32, unitMode bool) bool {
	topic := names.RetryTopic(group)
	if _, ok := b.topics.get(topic); ok {
		return false
	}
	if queues <= 0 {
		queues = 1
	}
	var sysFlag int32
	if unitMode {
		sysFlag = topicSysFlagUnitSub
	}
	_, created, _ := b.topics.addIfAbsent(topic, queues, route.PermReadWrite, sysFlag) // refused past MaxTopics
	return created
}

// notifyConsumerIDsChanged sends NOTIFY_CONSUMER_IDS_CHANGED one-way to each channel; clients
// send no reply (docs/protocol.md §7.1). DisableNotifyConsumerIdsChanged silences it for every
// group, as RocketMQ's notifyConsumerIdsChangedEnable does in its one listener.
func (b *Broker) notifyConsumerIDsChanged(group string, channels []remoting.Channel) {
	if b.opts.DisableNotifyConsumerIdsChanged {
		return
	}
	for _, ch := range channels {
		if ch.Closed() {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged,
			remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil)
		if err := ch.InvokeOneway(req); err != nil {
			b.log.Debug().Err(err).Str("group", group).Str("addr", ch.RemoteAddr()).
				Msg("notify consumer ids changed failed")
		}
	}
}

// notifyIfEnabled notifies a changed group's remaining members if the group's settings allow
// it. It does not create the group's settings.
func (b *Broker) notifyIfEnabled(c groupChange) {
	if len(c.channels) == 0 {
		return
	}
	cfg, ok := b.groups.get(c.group)
	if ok && !cfg.NotifyConsumerIdsChangedEnable {
		return
	}
	b.notifyConsumerIDsChanged(c.group, c.channels)
}

// processUnregisterClient drops a client's producer and/or consumer group from the channel.
func (b *Broker) processUnregisterClient(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UnregisterClientRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if h.ProducerGroup != "" {
		b.clients.consumers.unregisterProducer(h.ProducerGroup, ch.ID())
	}
	if h.ConsumerGroup != "" {
		if removed, members := b.clients.consumers.unregisterConsumer(h.ConsumerGroup, ch.ID()); removed {
			b.log.Info().Str("group", h.ConsumerGroup).Str("client_id", h.ClientID).Msg("consumer unregistered")
			b.notifyIfEnabled(groupChange{group: h.ConsumerGroup, channels: members})
		}
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processCheckClientConfig tells a consumer before it starts whether the broker can filter by
// its subscription (RocketMQ ClientManageProcessor.checkClientConfig): TAG yes, SQL92 when it
// compiles, anything else no (expression.go). The body's names are not checked: nothing but the
// expression and its type is read.
func (b *Broker) processCheckClientConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.DecodeCheckClientRequestBody(req.Body)
	if err != nil {
		return remoting.NewResponse(remoting.SystemError, err.Error()), nil
	}
	// An absent subscriptionData decodes as a TAG one: accepted, as RocketMQ accepts none.
	if resp := checkExpression(body.SubscriptionData.SubString, body.SubscriptionData.ExpressionType); resp != nil {
		return resp, nil
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processGetConsumerList answers the group's client ids; like RocketMQ it answers SYSTEM_ERROR
// when the group has no member.
func (b *Broker) processGetConsumerList(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if b.inReregisterGrace() {
		return reregisterBusy(), nil
	}
	ids := b.clients.consumers.consumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		b.log.Debug().Str("group", h.ConsumerGroup).Str("addr", ch.RemoteAddr()).Msg("consumer list asked for a group without members")
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
// groups it left, and drops its parked pulls and reply routes. Its queue locks stay until they expire, as in
// RocketMQ.
func (b *Broker) onConnEvent(ev remoting.ConnEvent) {
	switch ev.Type {
	case remoting.ConnClose, remoting.ConnException, remoting.ConnIdle:
	default:
		return
	}
	b.pull.hold.dropChannel(ev.Channel.ID())
	b.hooks.connClosed(ev.Channel)
	for _, c := range b.clients.consumers.removeChannel(ev.Channel.ID()) {
		b.log.Info().Str("group", c.group).Str("addr", ev.Channel.RemoteAddr()).
			Str("event", ev.Type.String()).Msg("consumer left")
		b.notifyIfEnabled(c)
	}
}

// runClientHousekeeping expires registrations without a heartbeat for ChannelExpiredTimeout,
// every ScanConnectionInterval (RocketMQ ClientHousekeepingService).
func (b *Broker) runClientHousekeeping(ctx context.Context) error {
	t := time.NewTicker(b.opts.ScanConnectionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			b.scanNotActiveChannels()
		}
	}
}

// scanNotActiveChannels forgets expired queue locks, expires stale registrations, notifies the groups that lost members and
// closes the connections left with no registration.
func (b *Broker) scanNotActiveChannels() {
	b.clients.locks.expire(b.clients.now(), b.opts.RebalanceLockMaxLiveTime)
	changes, closeList := b.clients.consumers.expire(b.opts.ChannelExpiredTimeout)
	for _, c := range changes {
		b.log.Info().Str("group", c.group).Msg("consumer registration expired")
		b.notifyIfEnabled(c)
	}
	for _, ch := range closeList {
		b.log.Info().Str("addr", ch.RemoteAddr()).Msg("closing connection without heartbeat")
		_ = ch.Close()
	}
}

// Functions for the other parts of the broker.

// producerChannels returns the live connections of a producer group (transaction checks).
func (b *Broker) producerChannels(group string) []remoting.Channel {
	return b.clients.consumers.producerChannels(group)
}

// clientChannel returns a live connection registered by the client with this id. Replies do
// not use it: any heartbeat can register any id, so they go by reply_route.go's holders.
func (b *Broker) clientChannel(clientID string) (remoting.Channel, bool) {
	return b.clients.consumers.findChannel(clientID)
}

// consumerGroupState copies a consumer group's members and subscriptions (admin reads).
func (b *Broker) consumerGroupState(group string) (ConsumerGroupState, bool) {
	return b.clients.consumers.snapshot(group)
}
