package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// puller is what the push and the lite pull consumer share (RocketMQ's RebalanceImpl and the
// pull half of DefaultMQPushConsumerImpl): the subscriptions, the group's membership through
// the client instance, rebalancing, a long-polling pull loop per held queue with flow control
// (pull.go, pull_addr.go, rebalance.go), the offset store, and the lifecycle around them. What
// happens to pulled messages, and what taking or giving up a queue means beyond that, is the
// consumer's queueService.
//
// Goroutines, all waited for by close: the rebalance loop, the persist loop, a pull loop per
// held queue, and what the service starts through goLoop and spawn.
//
// Locks: mu and queuesMu are never held together, nor across I/O or a call into the service.
type puller struct {
	cfg         pullerConfig
	log         zerolog.Logger
	svc         queueService
	consumeType string // heartbeats: CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (lite pull)
	// pickQueues picks the queues of a topic to hold: shareInGroup, unless the lite pull
	// consumer assigned queues by hand. Set before start, read by the rebalance loop.
	pickQueues allocateFunc

	mu struct {
		sync.Mutex
		serviceState
		subs map[string]*subscription // by topic as brokers know it
	}

	// Set by start before the consumer counts as started, unchanged afterwards.
	inst     instance
	clientID string
	store    offsetStore
	// ctx ends at close: pulls, rebalances and timers stop.
	ctx    context.Context
	cancel context.CancelFunc

	loops    sync.WaitGroup // rebalance, persist and pull loops, and the service's timers
	goMu     sync.Mutex     // guards goClosed against Add racing close's Wait
	goClosed bool

	queuesMu sync.Mutex
	queues   map[MessageQueue]*queueState

	stats consumeStats // rates for GET_CONSUMER_RUNNING_INFO (stats.go)

	rebalanceNow chan struct{}
	closeOnce    sync.Once
	closeErr     error

	// noRoute holds the subscribed topics the name servers did not know at the last look, so
	// that their absence is logged once, not at every rebalance. Touched by start, then only by
	// the rebalance loop.
	noRoute map[string]bool
}

// queueService is what a consumer adds to the puller. The puller calls it from its loops and
// from close, never holding one of its locks.
type queueService interface {
	// admit readies a newly allocated queue before its start offset is read; false leaves
	// the queue to the next rebalance (an orderly consumer that could not lock it).
	admit(ctx context.Context, pq *processQueue) bool
	// taken runs once qs is in the queue table and its pull loop runs.
	taken(qs *queueState)
	// pullHold returns how long qs's next pull waits (0: none), once the message and byte
	// thresholds passed; span is the offsets its cache spans.
	pullHold(qs *queueState, span int64) time.Duration
	// submit hands on messages just cached for qs. It may block, which holds back qs's pulls,
	// until the messages are taken, qs is dropped or the puller stops.
	submit(qs *queueState, msgs []*Message)
	// dropped runs after rebalance gave qs up and persisted its offset.
	dropped(ctx context.Context, qs *queueState)
	// consumeDirectly answers CONSUME_MESSAGE_DIRECTLY (docs/protocol.md §7.4).
	consumeDirectly(body []byte) *remoting.Command
	// startService starts the service's goroutines, after registration and before the first
	// rebalance.
	startService()
	// stopService runs in close once every loop stopped, before offsets are persisted.
	stopService()
	// closeQueues runs in close once the offsets of held were persisted.
	closeQueues(ctx context.Context, held []MessageQueue)
}

// queueState is one held queue: its cache and where its next pull starts.
type queueState struct {
	mq MessageQueue
	pq *processQueue
	// The rest is touched only by the queue's pull loop: where the next pull starts, the
	// broker id the last answer suggested, whether the last pull went to a slave, the
	// address a pull last failed to reach with when to try it again, how quickly to retry
	// after failures (pull_retry.go), and the request header.
	nextOffset  int64
	brokerID    int64
	fromSlave   bool
	pulledFrom  string // the address of the last pull
	failedAddr  string
	failedUntil time.Time
	retry       pullRetry
	pullHeader  protocol.PullMessageRequestHeader // the next pull's, reused
	// The queue's offset range as the last answer gave it, for MIN_OFFSET and MAX_OFFSET: the
	// minimum seldom moves, and the maximum not while a backlog is pulled.
	minOffset, maxOffset offsetString
}

// offsetString is an offset and its decimal string, kept so that a value seen again costs no
// allocation.
type offsetString struct {
	off int64
	s   string
}

// of returns off in decimal.
func (o *offsetString) of(off int64) string {
	if o.s == "" || o.off != off {
		o.off, o.s = off, strconv.FormatInt(off, 10)
	}
	return o.s
}

// consumeRequest is a batch of one queue's messages on its way to a listener or to Poll.
type consumeRequest struct {
	qs   *queueState
	msgs []*Message
}

func newPuller(cfg pullerConfig, consumeType string, svc queueService) *puller {
	p := &puller{cfg: cfg, svc: svc, consumeType: consumeType, queues: map[MessageQueue]*queueState{},
		rebalanceNow: make(chan struct{}, 1)}
	p.log = cfg.logger.With().Str("component", "consumer").Str("group", cfg.group).Logger()
	p.pickQueues = p.shareInGroup
	p.mu.subs = map[string]*subscription{}
	return p
}

// setup runs f on the subscription table while the consumer has not started; otherwise it
// returns what stateErrLocked says.
func (p *puller) setup(f func(subs map[string]*subscription)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stateErrLocked(); err != nil {
		return err
	}
	f(p.mu.subs)
	return nil
}

// stateErrLocked is why the consumer can no longer start or take subscriptions; nil while it
// is new. p.mu must be held.
func (p *puller) stateErrLocked() error {
	switch p.mu.state {
	case stateStarting, stateStarted:
		return ErrStarted
	case stateStartFailed:
		return fmt.Errorf("%w: %w", ErrStartFailed, p.mu.startErr)
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// start acquires the shared client instance, adds extra to the subscriptions (those not there
// yet), checks routes and subscriptions, registers the group and starts pulling. On error
// nothing is left running and the puller is start-failed, unless nothing was tried yet (no
// subscription, or not new).
func (p *puller) start(extra ...*subscription) error {
	p.mu.Lock()
	if err := p.stateErrLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	if len(p.mu.subs) == 0 {
		p.mu.Unlock()
		return ErrNoSubscription
	}
	for _, s := range extra {
		if _, ok := p.mu.subs[s.topic]; !ok {
			p.mu.subs[s.topic] = s
		}
	}
	// The instance calls back into HeartbeatData and SubscribedTopics, which take p.mu, so
	// the rest runs unlocked; stateStarting keeps setup, start and close out meanwhile.
	p.mu.beginStart()
	p.mu.Unlock()
	err := p.acquireAndStart()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.endStart(err)
	return err
}

func (p *puller) acquireAndStart() error {
	inst, err := acquireInstance(&p.cfg)
	if err != nil {
		return err
	}
	if err := p.startWith(inst); err != nil {
		return errors.Join(err, inst.Release())
	}
	return nil
}

// startWith does start's work with the instance.
func (p *puller) startWith(inst instance) error {
	p.inst, p.clientID = inst, inst.ClientID()
	store, err := p.newOffsetStore()
	if err != nil {
		return err
	}
	p.store = store
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.checkRoutes(ctx); err != nil {
		return err
	}
	if err := p.checkSubscriptions(ctx); err != nil {
		return err
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if err := inst.RegisterConsumer(p.cfg.group, p); err != nil {
		p.cancel()
		if errors.Is(err, client.ErrConsumerGroupRegistered) {
			return fmt.Errorf("%w: %w", ErrGroupExists, err)
		}
		return err
	}
	inst.SendHeartbeatToAllBrokers(ctx)
	p.svc.startService()
	p.goLoop(p.rebalanceLoop)
	p.goLoop(p.persistLoop)
	p.Rebalance()
	p.log.Info().Str("client_id", p.clientID).Str("model", p.cfg.model.String()).
		Str("consume_type", p.consumeType).Msg("consumer started")
	return nil
}

// newOffsetStore keeps offsets on the broker (clustering) or in a local file (broadcasting).
func (p *puller) newOffsetStore() (offsetStore, error) {
	if p.cfg.model == Clustering {
		return newRemoteOffsetStore(p.cfg.group, p.inst, p.cfg.syncCommit, p.log), nil
	}
	return newLocalOffsetStore(p.cfg.offsetDir, offsetFileClientID(p.cfg.instanceName), p.cfg.group)
}

// offsetFileClientID names a broadcasting consumer's offsets directory as a Java consumer's:
// RocketMQ swaps the DEFAULT instance name for the pid only in clustering mode, so a
// broadcasting consumer's file is under ip@DEFAULT and survives restarts.
func offsetFileClientID(instanceName string) string {
	if instanceName == "" {
		instanceName = client.DefaultInstanceName
	}
	return client.LocalIPv4() + "@" + instanceName
}

// checkRoutes reads the route of every subscribed topic. A topic the name servers answer
// TOPIC_NOT_EXIST for does not stop the start: as RocketMQ's Java consumer, this one starts,
// says so once in its log, and its rebalance takes the topic's queues once it exists (a
// producer's first send creates it). Any other failure, name servers that do not answer
// among them, fails the start: a wrong address is found now rather than never.
func (p *puller) checkRoutes(ctx context.Context) error {
	for _, topic := range p.SubscribedTopics() {
		_, err := p.inst.TopicRoute(ctx, topic)
		switch {
		case err == nil:
		case isRetryTopic(topic):
			// Normal for a new group: brokers create the retry topic on its first heartbeat.
			p.log.Debug().Str("topic", topic).Err(err).Msg("no route for the retry topic yet")
		case isTopicNotExist(err):
			p.noteNoRoute(topic, err)
		default:
			return fmt.Errorf("consumer: route of %s: %w", topic, err)
		}
	}
	return nil
}

// isTopicNotExist reports whether err is a name server's answer that it has no route of the
// topic (TOPIC_NOT_EXIST).
func isTopicNotExist(err error) bool {
	var re *remoting.ResponseError
	return errors.As(err, &re) && re.Code == remoting.TopicNotExist
}

// noteNoRoute records that topic has no route, logging it the first time. Only start and then
// the rebalance loop call it and routeFound, one after the other.
func (p *puller) noteNoRoute(topic string, err error) {
	if p.noRoute[topic] {
		return
	}
	if p.noRoute == nil {
		p.noRoute = map[string]bool{}
	}
	p.noRoute[topic] = true
	p.log.Warn().Str("topic", topic).Err(err).
		Msg("the topic does not exist yet; consuming from its first message once it is created")
}

// routeFound notes that topic, which had no route, has one now.
func (p *puller) routeFound(topic string) {
	if !p.noRoute[topic] {
		return
	}
	delete(p.noRoute, topic)
	p.log.Info().Str("topic", topic).Msg("the topic exists now; taking its queues")
}

// checkSubscriptions asks one broker of each topic whose subscription is not a tag expression
// whether it serves it (CHECK_CLIENT_CONFIG, RocketMQ's checkClientInBroker at start): a broker
// without SQL92 filtering refuses, and Start fails with its answer rather than the consumer
// receiving nothing. A topic with no known broker is not checked, as in RocketMQ.
func (p *puller) checkSubscriptions(ctx context.Context) error {
	for _, d := range p.HeartbeatData().SubscriptionDataSet {
		if protocol.IsTagType(d.ExpressionType) {
			continue
		}
		addr := p.inst.AnyBrokerAddrOfTopic(d.Topic)
		if addr == "" {
			continue
		}
		if err := checkClientConfig(ctx, p.inst.Transport(), addr, p.cfg.group, p.clientID, d); err != nil {
			return fmt.Errorf("consumer: broker %s on the %s subscription %q of %s: %w",
				addr, d.ExpressionType, d.SubString, d.Topic, err)
		}
	}
	return nil
}

// goLoop runs f on a goroutine close waits for before the service stops; once close began it
// runs nothing.
func (p *puller) goLoop(f func()) { p.spawn(&p.loops, f) }

// spawn runs f on a goroutine counted in wg; once close began it runs nothing, so wg's Wait
// after that cannot race an Add.
func (p *puller) spawn(wg *sync.WaitGroup, f func()) {
	p.goMu.Lock()
	defer p.goMu.Unlock()
	if p.goClosed {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); f() }()
}

// close stops pulling and the service, persists the held queues' offsets, unregisters the
// group and releases the client instance. It waits for a start in progress first, and runs
// once: later calls return the first one's error.
func (p *puller) close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown() })
	return p.closeErr
}

func (p *puller) shutdown() error {
	switch p.mu.closeAfterStart(&p.mu.Mutex) {
	case stateNew:
		if p.cfg.ownTransport && p.cfg.transport != nil {
			return p.cfg.transport.Close() // never handed to an instance
		}
		return nil
	case stateStartFailed:
		return nil // the failed start released everything
	}
	p.cancel()
	p.goMu.Lock()
	p.goClosed = true
	p.goMu.Unlock()
	p.loops.Wait()
	p.svc.stopService()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	held := p.assigned()
	var errs []error
	if err := p.store.persist(ctx, held, true); err != nil {
		errs = append(errs, err)
	}
	p.svc.closeQueues(ctx, held)
	p.queuesMu.Lock()
	clear(p.queues)
	p.queuesMu.Unlock()
	p.inst.UnregisterConsumer(p.cfg.group)
	errs = append(errs, p.inst.Release())
	p.log.Info().Msg("consumer closed")
	return errors.Join(errs...)
}

func (p *puller) isClosing() bool { return p.ctx.Err() != nil }

// isStarted reports whether start succeeded and close has not begun.
func (p *puller) isStarted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.state == stateStarted
}

// startedClientID is the client id once start succeeded, "" before.
func (p *puller) startedClientID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.state != stateStarted && p.mu.state != stateClosed {
		return ""
	}
	return p.clientID
}

// assigned lists the queues held now.
func (p *puller) assigned() []MessageQueue {
	p.queuesMu.Lock()
	defer p.queuesMu.Unlock()
	return slices.Collect(maps.Keys(p.queues))
}

// states lists the states of the queues held now.
func (p *puller) states() []*queueState {
	p.queuesMu.Lock()
	defer p.queuesMu.Unlock()
	out := make([]*queueState, 0, len(p.queues))
	for _, qs := range p.queues {
		out = append(out, qs)
	}
	return out
}

// subscriptionOf returns the subscription messages of topic are consumed under; topic may be
// as brokers know it or as listeners see it (without the namespace).
func (p *puller) subscriptionOf(topic string) *subscription {
	topic = p.wireTopic(topic)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.subs[topic]
}

// wireTopic is topic as brokers know it: in the consumer's namespace. Idempotent.
func (p *puller) wireTopic(topic string) string { return names.WrapNamespace(p.cfg.namespace, topic) }

// wireQueue is mq with its topic as brokers know it.
func (p *puller) wireQueue(mq MessageQueue) MessageQueue {
	mq.Topic = p.wireTopic(mq.Topic)
	return mq
}

// HeartbeatData implements the client instance's Consumer: the group as heartbeats carry it.
func (p *puller) HeartbeatData() protocol.ConsumerData {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := protocol.ConsumerData{GroupName: p.cfg.group, ConsumeType: p.consumeType,
		MessageModel: p.cfg.model.String(), ConsumeFromWhere: p.cfg.from.String(),
		SubscriptionDataSet: []protocol.SubscriptionData{}}
	for _, s := range p.mu.subs {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, s.data())
	}
	return d
}

// SubscribedTopics implements the client instance's Consumer.
func (p *puller) SubscribedTopics() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.mu.subs))
	for t := range p.mu.subs {
		out = append(out, t)
	}
	return out
}

// Rebalance implements the client instance's Consumer: it asks the rebalance loop for a round
// soon and returns at once.
func (p *puller) Rebalance() {
	select {
	case p.rebalanceNow <- struct{}{}:
	default:
	}
}

// ConsumeMessageDirectly implements the client instance's Consumer through the service.
func (p *puller) ConsumeMessageDirectly(body []byte) *remoting.Command {
	return p.svc.consumeDirectly(body)
}

// sleep waits d, or less if ctx ends or done closes; it reports whether the full wait passed.
func sleep(ctx context.Context, done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-done:
	}
	return false
}
