package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// What the tools ask about clients: a producer group's connections and one consumer's
// running state, as RocketMQ's mqadmin producerConnection and consumerStatus do.

// ErrNoConnection is the error of ProducerConnection when no broker of the topic knows the
// group: RocketMQ's "Not found the producer group connection".
var ErrNoConnection = errors.New("admin: not found the producer group connection")

// ProducerConnection returns the connections of a producer group (GET_PRODUCER_CONNECTION_LIST)
// as the first master of topic's route that knows the group has them (RocketMQ asks one broker
// of the route at random; asking in order finds the group on any broker it registered with),
// sorted by client id.
func (a *Admin) ProducerConnection(ctx context.Context, group, topic string) ([]Connection, error) {
	what := "producer connection of group " + group
	ms, err := a.routeMasters(ctx, topic, what)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, m := range ms {
		req := remoting.NewRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		if err != nil {
			// A broker the group never registered with answers SYSTEM_ERROR "not exist".
			lastErr = fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
			continue
		}
		var body struct {
			ConnectionSet []Connection `json:"connectionSet"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		if len(body.ConnectionSet) == 0 {
			continue
		}
		slices.SortFunc(body.ConnectionSet, func(x, y Connection) int { return strings.Compare(x.ClientID, y.ClientID) })
		return body.ConnectionSet, nil
	}
	if lastErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoConnection, lastErr)
	}
	return nil, ErrNoConnection
}

// ProcessQueueInfo is one queue a consumer holds (RocketMQ's ProcessQueueInfo; the JSON names
// are RocketMQ's, Droped's spelling included).
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int32 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int32 `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int32 `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	Droped                  bool  `json:"droped"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
}

// ConsumeStatus is a consumer's rates on one topic (RocketMQ's ConsumeStatus): round trips in
// milliseconds, rates per second.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// RunningSubscription is one subscription of a consumer's running info.
type RunningSubscription struct {
	Topic           string
	SubString       string
	ClassFilterMode bool
	TagsSet         []string
	ExpressionType  string
}

// ConsumerRunningInfo is what one consumer reports of its group (GET_CONSUMER_RUNNING_INFO):
// its properties (PROP_CONSUME_TYPE, PROP_CONSUMER_START_TIMESTAMP, ...), subscriptions sorted
// by topic, held queues, per-topic rates and, when asked and the client can, a stack dump.
type ConsumerRunningInfo struct {
	Properties    map[string]string
	Subscriptions []RunningSubscription
	Queues        map[MessageQueue]ProcessQueueInfo
	Status        map[string]ConsumeStatus // by topic
	Jstack        string
}

// ConsumerRunningInfo asks one consumer of group (clientID, as ConsumerConnection lists it)
// for its running info, through the first master of the group's retry topic, which relays the
// request. As RocketMQ's admin does, it waits three times Options.Timeout: the broker waits
// for the client.
func (a *Admin) ConsumerRunningInfo(ctx context.Context, group, clientID string, jstack bool) (*ConsumerRunningInfo, error) {
	what := fmt.Sprintf("running info of consumer %s of group %s", clientID, group)
	ms, err := a.routeMasters(ctx, names.RetryTopic(group), what)
	if err != nil {
		return nil, err
	}
	req := remoting.NewRequest(remoting.GetConsumerRunningInfo, remoting.EncodeHeader(
		&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: clientID, JstackEnable: jstack}), nil)
	resp, err := a.invokeFor(ctx, ms[0].addr, req, 3*a.opts.Timeout)
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return nil, fmt.Errorf("admin: %s on broker %s: %w", what, ms[0].addr, err)
	}
	raw, err := protocol.DecodeConsumerRunningInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: %s on broker %s: %w", what, ms[0].addr, err)
	}
	info := &ConsumerRunningInfo{Properties: raw.Properties, Jstack: raw.Jstack}
	if raw.MQTable != nil {
		info.Queues = make(map[MessageQueue]ProcessQueueInfo, len(raw.MQTable))
		for mq, pq := range raw.MQTable {
			info.Queues[mq] = ProcessQueueInfo(pq)
		}
	}
	if raw.StatusTable != nil {
		info.Status = make(map[string]ConsumeStatus, len(raw.StatusTable))
		for topic, st := range raw.StatusTable {
			info.Status[topic] = ConsumeStatus(st)
		}
	}
	for _, s := range raw.SubscriptionSet {
		info.Subscriptions = append(info.Subscriptions, RunningSubscription{Topic: s.Topic, SubString: s.SubString,
			ClassFilterMode: s.ClassFilterMode, TagsSet: s.TagsSet, ExpressionType: s.ExpressionType})
	}
	slices.SortFunc(info.Subscriptions, func(x, y RunningSubscription) int { return strings.Compare(x.Topic, y.Topic) })
	return info, nil
}

// invokeFor is invoke with its own bound d instead of Options.Timeout, for requests a broker
// relays to a client and answers only once the client did.
func (a *Admin) invokeFor(ctx context.Context, addr string, req *remoting.Command, d time.Duration) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if a.prover != nil {
		a.prover.Prove(req)
	}
	if a.signer != nil {
		a.signer.Sign(req)
	}
	return a.transport.InvokeSync(ctx, addr, req)
}
