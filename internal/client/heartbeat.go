package client

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// heartbeatData builds the HEART_BEAT body, or nil when there is no group to announce.
func (i *Instance) heartbeatData() *protocol.HeartbeatData {
	i.mu.RLock()
	groups := make([]string, 0, len(i.producers))
	for g := range i.producers {
		groups = append(groups, g)
	}
	consumers := make([]Consumer, 0, len(i.consumers))
	for _, c := range i.consumers {
		consumers = append(consumers, c)
	}
	i.mu.RUnlock()
	if len(groups)+len(consumers) == 0 {
		return nil
	}
	sort.Strings(groups)
	hb := &protocol.HeartbeatData{ClientID: i.clientID, ProducerDataSet: make([]protocol.ProducerData, 0, len(groups)),
		ConsumerDataSet: make([]protocol.ConsumerData, 0, len(consumers))}
	for _, g := range groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: g})
	}
	for _, c := range consumers {
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, c.HeartbeatData())
	}
	sort.Slice(hb.ConsumerDataSet, func(a, b int) bool {
		return hb.ConsumerDataSet[a].GroupName < hb.ConsumerDataSet[b].GroupName
	})
	return hb
}

// SendHeartbeatToAllBrokers sends one heartbeat round now and waits for it: to every master,
// and to every address of every broker when a consumer is registered (docs/protocol.md §5.1).
// Failures are logged, not returned.
func (i *Instance) SendHeartbeatToAllBrokers(ctx context.Context) {
	hb := i.heartbeatData()
	if hb == nil {
		return
	}
	body := hb.Encode()
	addrs := i.brokerAddrs(len(hb.ConsumerDataSet) > 0)
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, DefaultHeartbeatTimeout)
			defer cancel()
			resp, err := i.tr.InvokeSync(hctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, body))
			if err == nil {
				err = remoting.ErrorFromResponse(resp)
			}
			if err != nil {
				i.log.Debug().Err(err).Str("addr", addr).Msg("heartbeat failed")
			}
		}()
	}
	wg.Wait()
}

// kickHeartbeat asks the heartbeat loop for a round soon, without waiting.
func (i *Instance) kickHeartbeat() {
	select {
	case i.kick <- struct{}{}:
	default:
	}
}

// onReconnect runs when the transport opened a new connection to an address it had lost. A
// broker that restarted has forgotten our groups: until a heartbeat tells it again it answers
// "no consumer for this group" or leaves us out of the member list, and a member joining
// meanwhile takes our queues. So we heartbeat at once instead of at the next period, and make
// the consumers rebalance after it. RocketMQ 4.9's client has no such hook (its remoting
// client runs without a channel event listener) and waits for its 30 s heartbeat.
func (i *Instance) onReconnect(addr string) {
	if !i.isBrokerAddr(addr) {
		return
	}
	i.log.Debug().Str("addr", addr).Msg("reconnected to a broker; heartbeat and rebalance now")
	i.rebalanceAfterKick.Store(true)
	i.kickHeartbeat()
}

// OffsetPersister is a Consumer that can write the consume offsets it holds in memory back to
// the brokers; the instance asks it to after a reconnect, before the heartbeat.
type OffsetPersister interface {
	PersistOffsets(ctx context.Context)
}

// persistConsumerOffsets writes every consumer's offsets back before a reconnect's heartbeat.
// A broker killed without a clean shutdown comes back with the offsets of its last flush
// (FlushConsumerOffsetInterval, 5 s) and refuses our pulls, which carry our offsets, until our
// heartbeat registers the group. A member that joins meanwhile and is given one of our queues
// would start from that stale offset and consume seconds of messages again. Persisting before
// the heartbeat means any member list that names us comes after our offsets reached the broker.
// RocketMQ 4.9 persists only every persistConsumerOffsetInterval and on a dropped queue.
func (i *Instance) persistConsumerOffsets() {
	ctx, cancel := context.WithTimeout(i.ctx, 3*time.Second)
	defer cancel()
	for _, c := range i.consumerList() {
		if p, ok := c.(OffsetPersister); ok {
			p.PersistOffsets(ctx)
		}
	}
}

func (i *Instance) heartbeatLoop() {
	defer i.wg.Done()
	t := time.NewTicker(i.opts.HeartbeatBrokerInterval)
	defer t.Stop()
	for {
		select {
		case <-i.stop:
			return
		case <-t.C:
			i.cleanOfflineBrokers()
		case <-i.kick:
		}
		// Taken before the round, so a reconnect during it gets a round of its own.
		rebalance := i.rebalanceAfterKick.Swap(false)
		if rebalance {
			i.persistConsumerOffsets()
		}
		i.SendHeartbeatToAllBrokers(i.ctx)
		if rebalance {
			for _, c := range i.consumerList() {
				c.Rebalance()
			}
		}
	}
}

// registerProcessors installs the handlers of the requests brokers send to clients
// (docs/protocol.md §7). CHECK_TRANSACTION_STATE (39) is not handled yet: there is no
// transactional producer.
func (i *Instance) registerProcessors() {
	i.tr.RegisterProcessor(remoting.NotifyConsumerIDsChanged, remoting.ProcessorFunc(i.processNotifyIDsChanged))
	i.tr.RegisterProcessor(remoting.GetConsumerRunningInfo, remoting.ProcessorFunc(i.processRunningInfo))
	i.tr.RegisterProcessor(remoting.ConsumeMessageDirectly, remoting.ProcessorFunc(i.processConsumeDirectly))
	i.tr.RegisterProcessor(remoting.CheckTransactionState, remoting.ProcessorFunc(i.processCheckTransactionState))
	i.tr.RegisterProcessor(remoting.PushReplyMessageToClient, remoting.ProcessorFunc(i.processPushReply))
	i.tr.RegisterProcessor(remoting.ResetConsumerClientOffset, remoting.ProcessorFunc(i.processResetOffset))
	i.tr.RegisterProcessor(remoting.GetConsumerStatusFromClient, remoting.ProcessorFunc(i.processConsumeStatus))
}

// processNotifyIDsChanged rebalances every consumer; no reply (docs/protocol.md §7.1).
func (i *Instance) processNotifyIDsChanged(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	i.log.Debug().Str("group", req.Ext("consumerGroup")).Msg("consumer ids changed; rebalancing")
	for _, c := range i.consumerList() {
		c.Rebalance()
	}
	return nil, nil
}

// processRunningInfo answers GET_CONSUMER_RUNNING_INFO with a minimal body: properties and
// subscriptions (docs/protocol.md §7.3).
func (i *Instance) processRunningInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group := req.Ext("consumerGroup")
	c := i.consumer(group)
	if c == nil {
		return remoting.NewResponse(remoting.SystemError,
			"The Consumer Group <"+group+"> not exist in this consumer"), nil
	}
	if r, ok := c.(RunningInfoReporter); ok {
		return i.runningInfoResponse(c, r)
	}
	data := c.HeartbeatData()
	subs := data.SubscriptionDataSet
	if subs == nil {
		subs = []protocol.SubscriptionData{}
	}
	info := struct {
		Properties      map[string]string           `json:"properties"`
		SubscriptionSet []protocol.SubscriptionData `json:"subscriptionSet"`
		StatusTable     map[string]any              `json:"statusTable"`
		MQTable         map[string]any              `json:"mqTable"`
		Jstack          string                      `json:"jstack"`
	}{
		Properties: map[string]string{
			"PROP_NAMESERVER_ADDR":      strings.Join(i.opts.NameServers, ";") + ";",
			"PROP_CONSUME_TYPE":         data.ConsumeType,
			"PROP_CLIENT_VERSION":       "mq-go",
			"PROP_CONSUMEORDERLY":       "false",
			"PROP_THREADPOOL_CORE_SIZE": "-1",
		},
		SubscriptionSet: subs,
		StatusTable:     map[string]any{},
		MQTable:         map[string]any{},
	}
	body, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// processConsumeDirectly hands CONSUME_MESSAGE_DIRECTLY to the group's consumer (docs/protocol.md
// §7.4).
func (i *Instance) processConsumeDirectly(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group := req.Ext("consumerGroup")
	c := i.consumer(group)
	if c == nil {
		return remoting.NewResponse(remoting.SystemError,
			"The Consumer Group <"+group+"> not exist in this consumer"), nil
	}
	if len(req.Body) == 0 {
		return remoting.NewResponse(remoting.SystemError, "no message body"), nil
	}
	resp := c.ConsumeMessageDirectly(req.Body)
	if resp == nil {
		return remoting.NewResponse(remoting.SystemError, "the consumer did not answer"), nil
	}
	return resp, nil
}
