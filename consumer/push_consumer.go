package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
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

// PushConsumer receives the messages of its subscriptions and hands them to their listeners:
// it rebalances the topics' queues among the members of its group, pulls each of its queues
// with long polling, caches what it pulled per queue (flow control), runs the listeners
// concurrently or orderly, sends failed messages back to the broker and commits offsets.
//
// Goroutines (all owned and waited for by Close): a rebalance loop, an offset persist loop, a
// pull loop per assigned queue, and either a pool of consume workers plus a consume-timeout
// scan (concurrent) or a consume loop per queue plus a lock renewal loop (orderly).
type PushConsumer struct {
	// p pulls, rebalances and keeps offsets (puller.go), as for the lite pull consumer; the
	// PushConsumer is its queueService: the consume services (consume_concurrent.go,
	// consume_orderly.go), send-back and DLQ, and the orderly queue locks.
	p   *puller
	cfg pushConfig
	log zerolog.Logger
	// hookLog reports hooks that panic, at most once a minute.
	hookLog zerolog.Logger

	// consumeCtx ends when Close stops waiting for listeners.
	consumeCtx    context.Context
	consumeCancel context.CancelFunc
	consumers     sync.WaitGroup // consume workers and orderly consume loops
	work          *workQueue     // concurrent: batches for the workers
	slots         chan struct{}  // orderly: listener calls running at once
}

// NewPushConsumer builds a push consumer; it starts nothing until Start.
func NewPushConsumer(opts ...Option) (*PushConsumer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	pc := &PushConsumer{cfg: cfg.pushConfig}
	pc.p = newPuller(cfg.pullerConfig, protocol.ConsumePassively, pc)
	pc.log = pc.p.log
	pc.hookLog = pc.log.Sample(&zerolog.BurstSampler{Burst: 1, Period: time.Minute})
	pc.consumeCtx, pc.consumeCancel = context.WithCancel(context.Background())
	if cfg.orderly {
		pc.slots = make(chan struct{}, cfg.consumeGoroutines)
	} else {
		pc.work = newWorkQueue()
	}
	return pc, nil
}

// Subscribe registers listener for the messages of topic matching the tag expression expr ("*"
// or "TagA || TagB"). It must be called before Start: RocketMQ also takes subscriptions on a
// running consumer, this consumer answers ErrStarted.
func (pc *PushConsumer) Subscribe(topic, expr string, listener Listener) error {
	return pc.SubscribeSelector(topic, ByTag(expr), listener)
}

// SubscribeSelector is Subscribe with a selector: a tag expression, or an SQL92 one that Start
// checks with the topic's brokers (CHECK_CLIENT_CONFIG).
func (pc *PushConsumer) SubscribeSelector(topic string, sel MessageSelector, listener Listener) error {
	if topic == "" || listener == nil {
		return errSubscribeArgs
	}
	if err := sel.check(); err != nil {
		return err
	}
	topic = pc.p.wireTopic(topic)
	s := newSelectorSubscription(topic, sel, listener)
	s.listener = pc.withHooks(listener)
	return pc.p.setup(func(subs map[string]*subscription) { subs[topic] = s })
}

// errSubscribeArgs is a Subscribe without a topic (or, push consumer, without a listener).
var errSubscribeArgs = errors.New("consumer: Subscribe needs a topic and a listener")

// Start acquires the shared client instance, reads the routes of the subscribed topics,
// registers the group (heartbeat) and starts consuming. A topic the name servers do not know
// yet is logged once and consumed from its first message once it is created (a producer's
// first send creates it), as RocketMQ's Java consumer does; name servers that cannot be
// reached fail Start. On error nothing is left running.
func (pc *PushConsumer) Start() error {
	var extra []*subscription
	if pc.p.cfg.model == Clustering {
		// Messages sent back come again from the group's retry topic.
		extra = append(extra, newSubscription(RetryTopic(pc.p.cfg.group), protocol.SubAll, nil))
	}
	started, err := pc.startTrace()
	if err != nil {
		return err
	}
	if err := pc.p.start(extra...); err != nil {
		if started {
			pc.stopTrace()
		}
		return err
	}
	return nil
}

// Close stops pulling, lets listener calls in progress finish (cancelling their context after
// the close timeout), persists offsets, releases orderly locks, unregisters the group and
// releases the client instance. Messages pulled but not yet consumed are left for redelivery.
// Close waits for every goroutine the consumer started and is safe to call more than once.
func (pc *PushConsumer) Close() error {
	err := pc.p.close()
	pc.consumeCancel()
	pc.stopTrace()
	return err
}

// startService implements queueService: the consume workers and the consume-timeout scan
// (concurrent), or the lock renewal loop (orderly).
func (pc *PushConsumer) startService() {
	if pc.cfg.orderly {
		pc.p.goLoop(pc.lockLoop)
		return
	}
	for range pc.cfg.consumeGoroutines {
		pc.goConsumer(pc.worker)
	}
	pc.p.goLoop(pc.expiryLoop)
}

// stopService implements queueService: it lets listener calls in progress finish, cancelling
// their context after the close timeout.
func (pc *PushConsumer) stopService() {
	if pc.work != nil {
		pc.work.close() // every submitter was a loop and has exited
	}
	done := make(chan struct{})
	go func() { pc.consumers.Wait(); close(done) }()
	t := time.NewTimer(pc.cfg.closeTimeout)
	select {
	case <-done:
	case <-t.C:
		pc.log.Warn().Int64("timeout_ms", pc.cfg.closeTimeout.Milliseconds()).Msg("listeners still running at close; cancelling them")
		pc.consumeCancel()
		<-done
	}
	t.Stop()
	pc.consumeCancel()
}

// goConsumer runs f as a consumer goroutine (a worker or an orderly consume loop).
func (pc *PushConsumer) goConsumer(f func()) { pc.p.spawn(&pc.consumers, f) }

// pullHold implements queueService: a concurrent consumer pauses pulls while a queue's cache
// spans too many offsets; an orderly clustering one while it does not hold the queue's lock.
func (pc *PushConsumer) pullHold(qs *queueState, span int64) time.Duration {
	if !pc.cfg.orderly {
		if span > pc.p.cfg.maxSpan {
			return pc.p.cfg.flowControlDelay
		}
		return 0
	}
	if pc.lockedQueues() && !qs.pq.locked.Load() {
		return pc.p.cfg.pullErrorDelay
	}
	return 0
}

// lockedQueues reports whether queues are consumed under a broker lock (orderly clustering).
func (pc *PushConsumer) lockedQueues() bool { return pc.cfg.orderly && pc.p.cfg.model == Clustering }

// SubscribedTopics implements the client instance's Consumer; it includes the retry topic of
// a clustering group once started.
func (pc *PushConsumer) SubscribedTopics() []string { return pc.p.SubscribedTopics() }

// Rebalance implements the client instance's Consumer: it asks for a rebalance soon and
// returns at once (NOTIFY_CONSUMER_IDS_CHANGED, the instance's timer).
func (pc *PushConsumer) Rebalance() { pc.p.Rebalance() }

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
	var r message.Record
	if _, err := message.DecodeRecord(body, &r, false); err != nil {
		return remoting.NewResponse(remoting.SystemError, "consumer: bad message: "+err.Error())
	}
	m := fromRecord(&r, MessageQueue{Topic: string(r.Topic), QueueID: int(r.QueueID)})
	restoreRetryTopic(m, RetryTopic(pc.p.cfg.group))
	m.Topic = names.WithoutNamespace(pc.p.cfg.namespace, m.Topic)
	sub := pc.p.subscriptionOf(m.Topic)
	if sub == nil {
		// One of the group's dead letters, which RocketMQ's dashboard re-sends this way: it goes
		// to the listener of the topic it was first sent to (RETRY_TOPIC), as Java's one
		// listener for every topic would take it.
		restoreRetryTopic(m, DLQTopic(pc.p.cfg.group))
		m.Topic = names.WithoutNamespace(pc.p.cfg.namespace, m.Topic)
		sub = pc.p.subscriptionOf(m.Topic)
	}
	if sub == nil || sub.direct == nil {
		return remoting.NewResponse(remoting.SystemError, "consumer: no listener for topic "+m.Topic)
	}
	start := time.Now()
	batch := []*Message{m}
	markConsumeStart(batch, start, nil)
	res, err := callListener(pc.consumeCtx, sub.direct, batch)
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

// Assignment returns the queues the consumer holds now (its share after the last rebalance),
// sorted. It is empty before Start and after Close.
func (pc *PushConsumer) Assignment() []MessageQueue {
	out := pc.p.assigned()
	rebalance.SortQueues(out)
	return out
}

// ClientID returns the client id the consumer's group membership goes by ("" before Start).
func (pc *PushConsumer) ClientID() string { return pc.p.startedClientID() }

// consumeDirectly implements queueService.
func (pc *PushConsumer) consumeDirectly(body []byte) *remoting.Command {
	return pc.ConsumeMessageDirectly(body)
}

// ConsumeHook observes the listener calls of a push consumer (RocketMQ ConsumeMessageHook), for
// tracing or metrics. Both methods run on the goroutine that calls the listener, for every call
// a consume service makes (not for CONSUME_MESSAGE_DIRECTLY): ConsumeBefore just before it,
// ConsumeAfter just after it with its result, also when it failed or panicked. They hold a
// consume goroutine, so they must be quick; a panic in one is logged and ignored, as RocketMQ
// ignores a hook's exception.
type ConsumeHook interface {
	ConsumeBefore(cc *ConsumeContext)
	ConsumeAfter(cc *ConsumeContext)
}

// ConsumeContext is one listener call as the hooks see it (RocketMQ ConsumeMessageContext): the
// same value goes to every hook's ConsumeBefore and ConsumeAfter of the call.
type ConsumeContext struct {
	// Group is the consumer group as brokers know it (with the namespace).
	Group string
	// Queue is the queue the messages were pulled from (a retry queue for redeliveries).
	Queue MessageQueue
	// Messages are the listener's; hooks may read them until ConsumeAfter returns and must not
	// change them.
	Messages []*Message
	// Orderly reports an orderly consumer.
	Orderly bool
	// Result and Err are the listener's answer (a panic is ConsumeRetryLater with an error),
	// set before ConsumeAfter.
	Result ConsumeResult
	Err    error
	// Props is the hooks' own: what a ConsumeBefore leaves for a ConsumeAfter. Nil until a
	// hook sets it.
	Props map[string]string
}

// Success reports whether the listener acknowledged the messages (RocketMQ's context success).
func (cc *ConsumeContext) Success() bool { return cc.Err == nil && cc.Result == ConsumeSuccess }

// withHooks wraps l in the consume hooks; l itself when there are none.
func (pc *PushConsumer) withHooks(l Listener) Listener {
	hooks := pc.cfg.hooks
	if len(hooks) == 0 {
		return l
	}
	return func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
		cc := &ConsumeContext{Group: pc.p.cfg.group, Messages: msgs, Orderly: pc.cfg.orderly}
		if len(msgs) > 0 {
			cc.Queue = msgs[0].Queue
		}
		for _, h := range hooks {
			pc.runHook(h.ConsumeBefore, cc)
		}
		cc.Result, cc.Err = callListener(ctx, l, msgs)
		for _, h := range hooks {
			pc.runHook(h.ConsumeAfter, cc)
		}
		return cc.Result, cc.Err
	}
}

// runHook calls f, logging and otherwise ignoring a panic.
func (pc *PushConsumer) runHook(f func(*ConsumeContext), cc *ConsumeContext) {
	defer func() {
		if r := recover(); r != nil {
			pc.hookLog.Error().Str("topic", cc.Queue.Topic).Interface("panic", r).Msg("consume hook panicked")
		}
	}()
	f(cc)
}
