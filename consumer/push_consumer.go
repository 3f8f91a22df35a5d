package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// ConsumeResult is what a listener reports for the messages it was given.
type ConsumeResult int

const (
	// ConsumeSuccess acknowledges the messages.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater (concurrent consumers) sends the messages back for redelivery from the
	// group's retry topic after a delay. An orderly consumer treats it as
	// SuspendCurrentQueueAMoment.
	ConsumeRetryLater
	// SuspendCurrentQueueAMoment (orderly consumers) pauses the queue and retries the same
	// messages locally. A concurrent consumer treats it as ConsumeRetryLater.
	SuspendCurrentQueueAMoment
)

func (r ConsumeResult) String() string {
	switch r {
	case ConsumeSuccess:
		return "CONSUME_SUCCESS"
	case ConsumeRetryLater:
		return "RECONSUME_LATER"
	case SuspendCurrentQueueAMoment:
		return "SUSPEND_CURRENT_QUEUE_A_MOMENT"
	}
	return fmt.Sprintf("ConsumeResult(%d)", int(r))
}

// Listener consumes messages. A concurrent consumer calls it from up to WithConsumeGoroutines
// goroutines at once with batches of up to WithConsumeBatchSize messages of one queue; an
// orderly one calls it for one queue at a time, in offset order. A non-nil error or a panic
// counts as ConsumeRetryLater (SuspendCurrentQueueAMoment when orderly). ctx ends when Close
// gives up waiting for listeners.
type Listener func(ctx context.Context, msgs []*Message) (ConsumeResult, error)

const (
	stateNew = iota
	stateStarting
	stateStarted
	stateClosed
)

// PushConsumer receives the messages of its subscriptions and hands them to their listeners:
// it rebalances the topics' queues among the members of its group, pulls each of its queues
// with long polling, caches what it pulled per queue (flow control), runs the listeners
// concurrently or orderly, sends failed messages back to the broker and commits offsets.
//
// Goroutines (all owned and waited for by Close): a rebalance loop, an offset persist loop, a
// pull loop per assigned queue, and either a pool of consume workers plus a consume-timeout
// scan (concurrent) or a consume loop per queue plus a lock renewal loop (orderly).
//
// Lock order: pc.mu before pc.queuesMu; neither is held across I/O or listener calls.
type PushConsumer struct {
	cfg config
	log zerolog.Logger

	mu struct {
		sync.Mutex
		state int
		subs  map[string]*subscription
		// started is closed when a Start that set stateStarting is over, either way.
		started chan struct{}
	}

	inst     instance
	clientID string
	store    offsetStore

	// ctx ends at Close: pulls, rebalances and timers stop. consumeCtx ends when Close stops
	// waiting for listeners.
	ctx           context.Context
	cancel        context.CancelFunc
	consumeCtx    context.Context
	consumeCancel context.CancelFunc
	loops         sync.WaitGroup // everything but the consume workers and orderly loops
	consumers     sync.WaitGroup // consume workers and orderly consume loops
	goMu          sync.Mutex     // guards goClosed against Add racing Close's Wait
	goClosed      bool

	queuesMu sync.Mutex
	queues   map[MessageQueue]*queueState

	rebalanceNow chan struct{}
	work         chan consumeRequest       // concurrent consume service
	polls        chan consumeRequest       // pull consumer: pulled batches waiting for Poll
	manual       map[string][]MessageQueue // pull consumer: assigned queues by topic (no rebalance)
	paused       map[MessageQueue]bool     // pull consumer: queues not pulled; guarded by queuesMu
	slots        chan struct{}             // orderly: listener calls running at once
	closeOnce    sync.Once
	closeErr     error
}

// queueState is one assigned queue: its cache and where its next pull starts.
type queueState struct {
	mq MessageQueue
	pq *processQueue
	// The rest is touched only by the queue's pull loop: where the next pull starts, the
	// broker id the last answer suggested, whether the last pull went to a slave, and the
	// address a pull last failed to reach with when to try it again.
	nextOffset  int64
	brokerID    int64
	fromSlave   bool
	failedAddr  string
	failedUntil time.Time
}

// NewPushConsumer builds a push consumer; it starts nothing until Start.
func NewPushConsumer(opts ...Option) (*PushConsumer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		cfg.closeOwned(true)
		return nil, err
	}
	cfg.closeOwned(false)
	pc := &PushConsumer{cfg: cfg, queues: map[MessageQueue]*queueState{}, rebalanceNow: make(chan struct{}, 1),
		paused: map[MessageQueue]bool{}}
	pc.log = cfg.logger.With().Str("component", "consumer").Str("group", cfg.group).Logger()
	pc.mu.subs = map[string]*subscription{}
	return pc, nil
}

// Subscribe registers listener for the messages of topic matching expr ("*" or
// "TagA || TagB"). It must be called before Start.
func (pc *PushConsumer) Subscribe(topic, expr string, listener Listener) error {
	if topic == "" || listener == nil {
		return errors.New("consumer: Subscribe needs a topic and a listener")
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != stateNew {
		return ErrStarted
	}
	pc.mu.subs[topic] = newSubscription(topic, expr, listener)
	return nil
}

// Start acquires the shared client instance, checks that every subscribed topic has a route,
// registers the group (heartbeat) and starts consuming. On error nothing is left running.
func (pc *PushConsumer) Start() error {
	pc.mu.Lock()
	if pc.mu.state != stateNew {
		pc.mu.Unlock()
		return ErrStarted
	}
	if len(pc.mu.subs) == 0 {
		pc.mu.Unlock()
		return ErrNoSubscription
	}
	if pc.cfg.model == Clustering && !pc.cfg.poll {
		retry := RetryTopic(pc.cfg.group)
		if _, ok := pc.mu.subs[retry]; !ok {
			pc.mu.subs[retry] = newSubscription(retry, protocol.SubAll, nil)
		}
	}
	// The instance calls back into HeartbeatData and SubscribedTopics, which take pc.mu, so
	// the rest runs unlocked; stateStarting keeps Subscribe, Start and Close out meanwhile.
	pc.mu.state = stateStarting
	pc.mu.started = make(chan struct{})
	pc.mu.Unlock()
	err := pc.start()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	close(pc.mu.started)
	if err != nil {
		pc.mu.state = stateNew
		return err
	}
	pc.mu.state = stateStarted
	return nil
}

func (pc *PushConsumer) start() error {
	inst, err := acquireInstance(&pc.cfg)
	if err != nil {
		return err
	}
	if err := pc.startWith(inst); err != nil {
		return errors.Join(err, inst.Release())
	}
	return nil
}

// startWith does Start's work with the instance.
func (pc *PushConsumer) startWith(inst instance) error {
	pc.inst, pc.clientID = inst, inst.ClientID()
	if pc.cfg.model == Clustering {
		pc.store = newRemoteOffsetStore(pc.cfg.group, inst, pc.cfg.syncCommit, pc.log)
	} else {
		s, err := newLocalOffsetStore(pc.cfg.offsetDir, pc.clientID, pc.cfg.group)
		if err != nil {
			return err
		}
		pc.store = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, topic := range pc.SubscribedTopics() {
		if _, err := inst.TopicRoute(ctx, topic); err != nil {
			if isRetryTopic(topic) {
				// Normal for a new group: brokers create the retry topic on its first heartbeat.
				pc.log.Debug().Str("topic", topic).Err(err).Msg("no route for the retry topic yet")
				continue
			}
			return fmt.Errorf("consumer: route of %s: %w", topic, err)
		}
	}
	pc.ctx, pc.cancel = context.WithCancel(context.Background())
	pc.consumeCtx, pc.consumeCancel = context.WithCancel(context.Background())
	// The consume service's channels exist before anything that feeds them runs.
	switch {
	case pc.cfg.poll:
		pc.polls = make(chan consumeRequest, 64)
	case pc.cfg.orderly:
		pc.slots = make(chan struct{}, pc.cfg.consumeGoroutines)
	default:
		pc.work = make(chan consumeRequest, pc.cfg.consumeGoroutines)
	}
	if err := inst.RegisterConsumer(pc.cfg.group, registered{pc}); err != nil {
		pc.cancel()
		pc.consumeCancel()
		return err
	}
	inst.SendHeartbeatToAllBrokers(ctx)
	switch {
	case pc.cfg.poll:
	case pc.cfg.orderly:
		pc.goLoop(pc.lockLoop)
	default:
		for range pc.cfg.consumeGoroutines {
			pc.goConsumer(pc.worker)
		}
		pc.goLoop(pc.expiryLoop)
	}
	pc.goLoop(pc.rebalanceLoop)
	pc.goLoop(pc.persistLoop)
	pc.Rebalance()
	pc.log.Info().Str("client_id", pc.clientID).Str("model", pc.cfg.model.String()).
		Bool("orderly", pc.cfg.orderly).Msg("consumer started")
	return nil
}

// goLoop runs f on a goroutine Close waits for; once Close began it runs nothing.
func (pc *PushConsumer) goLoop(f func()) {
	pc.goMu.Lock()
	defer pc.goMu.Unlock()
	if pc.goClosed {
		return
	}
	pc.loops.Add(1)
	go func() { defer pc.loops.Done(); f() }()
}

// goConsumer runs f as a consumer goroutine (a worker or an orderly consume loop).
func (pc *PushConsumer) goConsumer(f func()) {
	pc.goMu.Lock()
	defer pc.goMu.Unlock()
	if pc.goClosed {
		return
	}
	pc.consumers.Add(1)
	go func() { defer pc.consumers.Done(); f() }()
}

// Close stops pulling, lets listener calls in progress finish (cancelling their context after
// the close timeout), persists offsets, releases orderly locks, unregisters the group and
// releases the client instance. Messages pulled but not yet consumed are left for redelivery.
// Close waits for every goroutine the consumer started and is safe to call more than once.
func (pc *PushConsumer) Close() error {
	pc.closeOnce.Do(func() {
		pc.mu.Lock()
		for pc.mu.state == stateStarting { // Start is running: let it finish first
			started := pc.mu.started
			pc.mu.Unlock()
			<-started
			pc.mu.Lock()
		}
		started := pc.mu.state == stateStarted
		pc.mu.state = stateClosed
		pc.mu.Unlock()
		if !started {
			if pc.cfg.ownTransport && pc.cfg.transport != nil && pc.inst == nil {
				pc.closeErr = pc.cfg.transport.Close() // never handed to an instance
			}
			return
		}
		pc.cancel()
		pc.goMu.Lock()
		pc.goClosed = true
		pc.goMu.Unlock()
		pc.loops.Wait()
		if pc.work != nil {
			close(pc.work) // every sender was a loop and has exited
		}
		done := make(chan struct{})
		go func() { pc.consumers.Wait(); close(done) }()
		t := time.NewTimer(pc.cfg.closeTimeout)
		select {
		case <-done:
		case <-t.C:
			pc.log.Warn().Dur("timeout", pc.cfg.closeTimeout).Msg("listeners still running at close; cancelling them")
			pc.consumeCancel()
			<-done
		}
		t.Stop()
		pc.consumeCancel()

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		mqs := pc.assigned()
		var errs []error
		if err := pc.store.persist(ctx, mqs, true); err != nil {
			errs = append(errs, err)
		}
		if pc.cfg.orderly && pc.cfg.model == Clustering {
			pc.unlockQueues(ctx, mqs)
		}
		pc.queuesMu.Lock()
		clear(pc.queues)
		pc.queuesMu.Unlock()
		pc.inst.UnregisterConsumer(pc.cfg.group)
		errs = append(errs, pc.inst.Release())
		pc.closeErr = errors.Join(errs...)
		pc.log.Info().Msg("consumer closed")
	})
	return pc.closeErr
}

func (pc *PushConsumer) isClosing() bool { return pc.ctx.Err() != nil }

// assigned lists the queues currently held.
func (pc *PushConsumer) assigned() []MessageQueue {
	pc.queuesMu.Lock()
	defer pc.queuesMu.Unlock()
	out := make([]MessageQueue, 0, len(pc.queues))
	for mq := range pc.queues {
		out = append(out, mq)
	}
	return out
}

// subscriptionOf returns the subscription messages of topic are consumed under.
func (pc *PushConsumer) subscriptionOf(topic string) *subscription {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.mu.subs[topic]
}

// heartbeatData is the group as heartbeats carry it (the instance reaches it through
// registered.HeartbeatData).
func (pc *PushConsumer) heartbeatData() protocol.ConsumerData {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	consumeType := protocol.ConsumePassively
	if pc.cfg.poll {
		consumeType = protocol.ConsumeActively
	}
	d := protocol.ConsumerData{GroupName: pc.cfg.group, ConsumeType: consumeType,
		MessageModel: pc.cfg.model.String(), ConsumeFromWhere: pc.cfg.from.String(),
		SubscriptionDataSet: []protocol.SubscriptionData{}}
	for _, s := range pc.mu.subs {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, s.data())
	}
	return d
}

// SubscribedTopics implements the client instance's Consumer; it includes the retry topic of
// a clustering group once started.
func (pc *PushConsumer) SubscribedTopics() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	out := make([]string, 0, len(pc.mu.subs))
	for t := range pc.mu.subs {
		out = append(out, t)
	}
	return out
}

// Rebalance implements the client instance's Consumer: it asks for a rebalance soon and
// returns at once (NOTIFY_CONSUMER_IDS_CHANGED, the instance's timer).
func (pc *PushConsumer) Rebalance() {
	select {
	case pc.rebalanceNow <- struct{}{}:
	default:
	}
}

// consumeDirectlyResult is the body answering CONSUME_MESSAGE_DIRECTLY (docs/protocol.md §7.4).
type consumeDirectlyResult struct {
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  int    `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// ConsumeMessageDirectly implements the client instance's Consumer: it runs the listener once
// on one stored record (CONSUME_MESSAGE_DIRECTLY) and reports the result. Offsets are not
// touched.
func (pc *PushConsumer) ConsumeMessageDirectly(body []byte) *remoting.Command {
	if pc.cfg.poll {
		return remoting.NewResponse(remoting.SystemError, "consumer: a pull consumer does not consume directly")
	}
	var r message.Record
	if _, err := message.DecodeRecord(body, &r, false); err != nil {
		return remoting.NewResponse(remoting.SystemError, "consumer: bad message: "+err.Error())
	}
	m := fromRecord(&r, MessageQueue{Topic: string(r.Topic), QueueID: int(r.QueueID)})
	restoreRetryTopic(m, RetryTopic(pc.cfg.group))
	sub := pc.subscriptionOf(m.Topic)
	if sub == nil || sub.listener == nil {
		return remoting.NewResponse(remoting.SystemError, "consumer: no listener for topic "+m.Topic)
	}
	start := time.Now()
	markConsumeStart(m, start)
	ctx := pc.consumeCtx
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := callListener(ctx, sub.listener, []*Message{m})
	out := consumeDirectlyResult{Order: pc.cfg.orderly, AutoCommit: true, SpentTimeMills: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		out.ConsumeResult, out.Remark = 4, err.Error()
	case res == ConsumeSuccess:
		out.ConsumeResult = 0
	default:
		out.ConsumeResult = 1
	}
	b, _ := json.Marshal(out)
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = b
	return resp
}

// callListener runs l, turning a panic into an error.
func callListener(ctx context.Context, l Listener, msgs []*Message) (res ConsumeResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = ConsumeRetryLater, fmt.Errorf("consumer: listener panicked: %v", p)
		}
	}()
	return l(ctx, msgs)
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

// Assignment returns the queues the consumer holds now (its share after the last rebalance),
// sorted. It is empty before Start and after Close.
func (pc *PushConsumer) Assignment() []MessageQueue {
	out := pc.assigned()
	rebalance.SortQueues(out)
	return out
}

// ClientID returns the client id the consumer's group membership goes by ("" before Start).
func (pc *PushConsumer) ClientID() string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != stateStarted && pc.mu.state != stateClosed {
		return ""
	}
	return pc.clientID
}
