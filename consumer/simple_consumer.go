package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// consumePop is the consume type a simple consumer's heartbeats carry (RocketMQ 5's
// ConsumeType.CONSUME_POP), so admin tools show how the group consumes.
const consumePop = "CONSUME_POP"

// ErrNotStarted is a Receive, Ack or ChangeInvisibleDuration before Start.
var ErrNotStarted = errors.New("consumer: not started")

// SimpleConsumer consumes by POP, RocketMQ 5's model (its SimpleConsumer): the application asks
// for messages when it wants them (Receive), each handed out with an invisible duration during
// which the broker gives it to nobody else, and acknowledges each one it processed (Ack); one not
// acknowledged in time is handed out again, to any member of the group. The broker keeps the
// group's progress, so members need no rebalancing and may come and go at any time.
//
// With WithOrderly(true) (5.x's FIFO consumer groups, whose subscription group 5.x's proxy
// reads consumeMessageOrderly from) the pops are FIFO: a queue, and so each message group
// sent to it (producer.Message.MessageGroup), is handed out one batch at a time in order, the
// next batch only once every message of this one was acknowledged or came back after its
// invisible time, the unacknowledged first.
//
//	sc, err := consumer.NewSimpleConsumer(consumer.WithNameServers(addr),
//		consumer.WithGroup("orders-service"), consumer.WithAwaitDuration(10*time.Second))
//	if err != nil { ... }
//	sc.Subscribe("orders", consumer.ByTag("*"))
//	if err := sc.Start(); err != nil { ... }
//	defer sc.Close()
//	views, err := sc.Receive(ctx, 16, 30*time.Second)
//	for _, v := range views {
//		handle(v.Body)
//		if err := sc.Ack(ctx, v); err != nil { ... } // else it comes back after 30 s
//	}
//
// Requests go through the client instance the push and pull consumers use (routes from the
// name servers, heartbeats, the transport: TCP, or a node's in-process one with WithTransport),
// to the master of each broker holding readable queues of the topic. A Receive pops from one
// broker (queueId -1: any of its queues), the next Receive of the topic from the next broker,
// and the topics subscribed take turns, as 5.x's SDKs go round.
//
// Options: the consumer package's Option (WithNameServers, WithGroup, WithNamespace,
// WithInstanceName, WithConsumeFrom first or last offset, WithOrderly, WithTransport,
// WithCredentials, WithTLS, WithLogger, ...) and the simple consumer's own WithAwaitDuration and
// WithRequestTimeout; pull and listener settings do not apply.
//
// Methods are safe for concurrent use; the consumer runs a goroutine of its own per broker it
// acknowledges to, while acks are on their way and for a second after (Ack merges them; the
// client instance's route and heartbeat loops are shared). Close waits for calls in progress,
// whose context it cancels.
type SimpleConsumer struct {
	cfg   config
	group string // as brokers know it
	log   zerolog.Logger

	// topicNext picks the topic of the next Receive, round robin over the sorted topics.
	topicNext atomic.Uint32

	mu struct {
		sync.Mutex
		serviceState
		subs map[string]*simpleSub // by topic as brokers know it
	}
	// Set by Start before the consumer counts as started, unchanged afterwards.
	inst   instance
	ctx    context.Context // ends at Close: calls in progress stop
	cancel context.CancelFunc
	calls  sync.WaitGroup // Receive, Ack, ChangeInvisibleDuration, Subscribe and ack senders in progress
	// open says the consumer takes calls: set by Start once started, cleared by Close before it
	// waits for the calls in progress. begin holds it shared while it counts a call in, so the
	// goroutines of a batch's acks do not queue on mu.
	open struct {
		sync.RWMutex
		yes bool
	}
	acks ackMerger
	// lateWarned is when warnLatePop last logged (unix ms).
	lateWarned atomic.Int64
}

// latePopWarnEvery bounds the warnings of pops answered as late: one a minute.
const latePopWarnEvery = time.Minute

// warnLatePop logs a pop the broker answered as late, at most once per latePopWarnEvery.
func (c *SimpleConsumer) warnLatePop(err error) {
	now := time.Now().UnixMilli()
	last := c.lateWarned.Load()
	if now-last < latePopWarnEvery.Milliseconds() || !c.lateWarned.CompareAndSwap(last, now) {
		return
	}
	c.log.Warn().Err(err).Msg("pop answered as late, read as no messages: check the clocks of this host and the broker's")
}

// simpleSub is one subscribed topic: its selector and where its pops go next.
type simpleSub struct {
	topic string // as the application named it
	sub   *subscription
	// next picks the broker of the topic's next Receive, round robin from a random start.
	next atomic.Uint32
}

// NewSimpleConsumer builds a simple consumer; Subscribe (before or after Start) and Start it.
// A group is required. Its defaults are 5.x's: DefaultAwaitDuration, DefaultSimpleRequestTimeout,
// consuming from the last offset (POP's init mode MAX: a group new to a queue starts at the
// queue's last message, or at its first while the queue still holds that one in memory, as
// RocketMQ 5's broker does); WithConsumeFrom(FromFirstOffset) starts it at the first offset
// (init mode MIN). An owned transport (WithOwnedTransport) is closed when NewSimpleConsumer or Start
// fails, or by Close.
func NewSimpleConsumer(opts ...Option) (*SimpleConsumer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSimple(); err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			cfg.transport.Close() // handed over, and never to be handed to an instance
		}
		return nil, err
	}
	c := &SimpleConsumer{cfg: cfg, group: cfg.group}
	c.log = cfg.logger.With().Str("component", "consumer").Str("group", cfg.group).Str("consume_type", consumePop).Logger()
	c.mu.subs = map[string]*simpleSub{}
	return c, nil
}

// Subscribe receives the messages of topic that sel selects (a tag expression, ByTag("*") for
// all, or BySQL92), replacing the topic's earlier selector. After Start it first reads the
// topic's route, failing when the name servers do not know the topic, as 5.x's subscribe does.
func (c *SimpleConsumer) Subscribe(topic string, sel MessageSelector) error {
	if err := names.CheckTopic(topic); err != nil {
		return fmt.Errorf("consumer: subscribe: %w", err)
	}
	if err := sel.check(); err != nil {
		return err
	}
	wire := names.WrapNamespace(c.cfg.namespace, topic)
	s := &simpleSub{topic: names.WithoutNamespace(c.cfg.namespace, wire), sub: newSelectorSubscription(wire, sel, nil)}
	s.next.Store(rand.Uint32())
	c.mu.Lock()
	switch c.mu.state {
	case stateNew:
		c.mu.subs[wire] = s
		c.mu.Unlock()
		return nil
	case stateStarted:
	default:
		err := c.stateErrLocked()
		c.mu.Unlock()
		return err
	}
	c.calls.Add(1)
	c.mu.Unlock()
	defer c.calls.Done()
	ctx, cancel := c.callContext(context.Background(), c.cfg.requestTimeout)
	defer cancel()
	if _, err := c.inst.TopicRoute(ctx, wire); err != nil {
		return fmt.Errorf("consumer: subscribe to %s: %w", topic, err)
	}
	c.mu.Lock()
	c.mu.subs[wire] = s
	c.mu.Unlock()
	// Brokers learn the new subscription now rather than at the next heartbeat.
	c.inst.SendHeartbeatToAllBrokers(ctx)
	return nil
}

// Unsubscribe stops receiving topic. Messages of it received and not acknowledged may still be
// acknowledged.
func (c *SimpleConsumer) Unsubscribe(topic string) error {
	wire := names.WrapNamespace(c.cfg.namespace, topic)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.state == stateClosed {
		return ErrClosed
	}
	delete(c.mu.subs, wire)
	return nil
}

// Start acquires the client instance, reads the route of every subscribed topic (a topic the
// name servers do not know fails Start), registers the group for heartbeats and makes the
// consumer ready to Receive. A failed Start releases what it acquired and is final (ErrStartFailed
// afterwards), as the other consumers'.
func (c *SimpleConsumer) Start() error {
	c.mu.Lock()
	if err := c.stateErrLocked(); err != nil {
		c.mu.Unlock()
		return err
	}
	if len(c.mu.subs) == 0 {
		c.mu.Unlock()
		return ErrNoSubscription
	}
	topics := slices.Sorted(func(yield func(string) bool) {
		for t := range c.mu.subs {
			if !yield(t) {
				return
			}
		}
	})
	// The instance calls HeartbeatData, which takes c.mu, from RegisterConsumer's heartbeat.
	c.mu.beginStart()
	c.mu.Unlock()
	err := c.start(topics)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.endStart(err)
	if err == nil {
		c.open.Lock()
		c.open.yes = true
		c.open.Unlock()
	}
	return err
}

func (c *SimpleConsumer) start(topics []string) error {
	inst, err := acquireInstance(&c.cfg.pullerConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range topics {
		if _, err := inst.TopicRoute(ctx, t); err != nil {
			return errors.Join(fmt.Errorf("consumer: route of topic %s: %w", t, err), inst.Release())
		}
	}
	c.inst = inst
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := inst.RegisterConsumer(c.group, (*simpleMember)(c)); err != nil {
		c.cancel()
		err = errors.Join(err, inst.Release())
		if errors.Is(err, client.ErrConsumerGroupRegistered) {
			return fmt.Errorf("%w: %w", ErrGroupExists, err)
		}
		return err
	}
	inst.SendHeartbeatToAllBrokers(ctx)
	c.log.Info().Str("client_id", inst.ClientID()).Msg("simple consumer started")
	return nil
}

// stateErrLocked is why the consumer cannot start or subscribe as a new one. c.mu must be held.
func (c *SimpleConsumer) stateErrLocked() error {
	switch c.mu.state {
	case stateStarting, stateStarted:
		return ErrStarted
	case stateStartFailed:
		return fmt.Errorf("%w: %w", ErrStartFailed, c.mu.startErr)
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// Close cancels the calls in progress and waits for them, unregisters the group and releases the
// client instance. Messages received and not acknowledged come back after their invisible time.
// Close is idempotent.
func (c *SimpleConsumer) Close() error {
	switch c.mu.closeAfterStart(&c.mu.Mutex) {
	case stateNew:
		if c.cfg.ownTransport && c.cfg.transport != nil {
			return c.cfg.transport.Close() // never handed to an instance
		}
		return nil
	case stateStarted:
	default: // closed already, or a failed start released everything
		return nil
	}
	c.open.Lock()
	c.open.yes = false
	c.open.Unlock()
	c.cancel()
	c.calls.Wait()
	c.inst.UnregisterConsumer(c.group)
	err := c.inst.Release()
	c.log.Info().Msg("simple consumer closed")
	return err
}

// begin counts a call in while the consumer is started; the caller counts it out with
// c.calls.Done once it returned nil (a method value handed back would cost every call an
// allocation).
func (c *SimpleConsumer) begin() error {
	c.open.RLock()
	if c.open.yes {
		c.calls.Add(1)
		c.open.RUnlock()
		return nil
	}
	c.open.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.mu.state {
	case stateStarted:
		c.calls.Add(1)
		return nil
	case stateClosed:
		return ErrClosed
	case stateStartFailed:
		return fmt.Errorf("%w: %w", ErrStartFailed, c.mu.startErr)
	}
	return ErrNotStarted
}

// callContext bounds a call by ctx, d and the consumer's life.
func (c *SimpleConsumer) callContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// Receive pops up to maxMessageNum messages (at most MaxReceiveMessageNum; more asks for that
// many) of the next subscribed topic from the next broker holding readable queues of it,
// hidden from the rest of the group for invisibleDuration (to the millisecond, at least 1 ms;
// the broker bounds it). When the broker has none it holds the request up to the await
// duration; an empty result with a nil error means none came. The call waits for the answer up
// to the await duration plus the request timeout, or ctx's deadline when sooner.
//
// A message that is not acknowledged within invisibleDuration is handed out again; so is one
// whose Ack is lost. Errors are the transport's or the broker's (a *remoting.ResponseError, for
// example POLLING_FULL when too many receives are parked at the broker).
func (c *SimpleConsumer) Receive(ctx context.Context, maxMessageNum int32, invisibleDuration time.Duration) ([]*MessageView, error) {
	if maxMessageNum <= 0 {
		return nil, fmt.Errorf("consumer: maxMessageNum must be positive, got %d", maxMessageNum)
	}
	if invisibleDuration < time.Millisecond {
		return nil, fmt.Errorf("consumer: invisible duration must be at least 1ms, got %v", invisibleDuration)
	}
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	s := c.nextTopic()
	if s == nil {
		return nil, ErrNoSubscription
	}
	ctx, cancel := c.callContext(ctx, c.cfg.awaitDuration+c.cfg.requestTimeout)
	defer cancel()
	r, err := c.inst.TopicRoute(ctx, s.sub.topic)
	if err != nil {
		return nil, fmt.Errorf("consumer: route of topic %s: %w", s.topic, err)
	}
	brokers := popBrokers(r)
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: no readable queue with a master for topic %s in its route", ErrNoBroker, s.topic)
	}
	b := brokers[s.next.Add(1)%uint32(len(brokers))]
	h := c.popHeader(s, b.name, min(maxMessageNum, MaxReceiveMessageNum), invisibleDuration)
	resp, err := c.inst.Transport().InvokeSync(ctx, b.addr, newRequest(c.inst.Transport(), remoting.PopMessage, h, nil))
	if err != nil {
		return nil, fmt.Errorf("consumer: pop %s from broker %s: %w", s.topic, b.name, err)
	}
	views, err := readPopAnswer(resp, b.name, s.topic, s.sub.topic, c.cfg.orderly)
	if errors.Is(err, errLatePop) {
		c.warnLatePop(err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: pop %s from broker %s: %w", s.topic, b.name, err)
	}
	return views, nil
}

// nextTopic is the subscription of the next Receive, nil without any.
func (c *SimpleConsumer) nextTopic() *simpleSub {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.subs) == 0 {
		return nil
	}
	topics := make([]string, 0, len(c.mu.subs))
	for t := range c.mu.subs {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	return c.mu.subs[topics[c.topicNext.Add(1)%uint32(len(topics))]]
}

// popBroker is a broker a topic's messages may be popped from.
type popBroker struct{ name, addr string }

// popBrokers lists the brokers of r with readable queues and a master, by name: POP goes to
// masters, which keep the checkpoints (5.x's SubscriptionLoadBalancer takes readable master
// queues).
func popBrokers(r *route.TopicRouteData) []popBroker {
	var out []popBroker
	for _, qd := range r.QueueDatas {
		if !route.IsReadable(qd.Perm) || qd.ReadQueueNums <= 0 {
			continue
		}
		for i := range r.BrokerDatas {
			bd := &r.BrokerDatas[i]
			if bd.BrokerName == qd.BrokerName && bd.MasterAddr() != "" &&
				!slices.ContainsFunc(out, func(b popBroker) bool { return b.name == qd.BrokerName }) {
				out = append(out, popBroker{name: qd.BrokerName, addr: bd.MasterAddr()})
			}
		}
	}
	slices.SortFunc(out, func(a, b popBroker) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return out
}

// popHeader is the POP_MESSAGE header of a Receive of s from broker.
func (c *SimpleConsumer) popHeader(s *simpleSub, broker string, n int32, invisible time.Duration) *protocol.PopMessageRequestHeader {
	init := protocol.PopInitModeMax
	if c.cfg.from == FromFirstOffset {
		init = protocol.PopInitModeMin
	}
	return &protocol.PopMessageRequestHeader{ConsumerGroup: c.group, Topic: s.sub.topic, QueueID: -1,
		MaxMsgNums: n, InvisibleTime: invisible.Milliseconds(), PollTime: c.cfg.awaitDuration.Milliseconds(),
		BornTime: time.Now().UnixMilli(), InitMode: init, ExpType: s.sub.exprType, Exp: s.sub.expr,
		Order: c.cfg.orderly, AttemptID: newAttemptID(), BrokerName: broker}
}

// newAttemptID is a fresh attempt id for a POP: 5.x's SDKs send a UUID with each receive so
// that a broker answering a retried one may hand out what the lost one took.
func newAttemptID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[x>>4], hex[x&0x0f])
	}
	return string(out)
}

// Ack acknowledges v: the broker never hands it out again. An error is the transport's or the
// broker's (a *remoting.ResponseError); after one the message may come back. A late ack, of a
// handle whose invisible time ran out (the message went back to be handed out again, under a
// handle of its own), succeeds and acknowledges nothing, as RocketMQ takes it.
//
// Acks made while another Ack to the same broker is on the wire leave together in one
// BATCH_ACK_MESSAGE (as 5.x's proxy merges its SDKs' acks); each Ack still returns only once
// the broker answered for it. A batch the broker refuses as a whole is retried ack by ack.
func (c *SimpleConsumer) Ack(ctx context.Context, v *MessageView) error {
	if v == nil || v.handle.Load() == nil {
		return errNotReceived
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.calls.Done()
	return c.ack(ctx, v)
}

// errNotReceived answers an ack of a view no Receive returned.
var errNotReceived = errors.New("consumer: ack of a message view the simple consumer did not receive")

// AckAsync acknowledges v as Ack does but returns at once, as 5.x's ackAsync: done, unless
// nil, gets Ack's result once the broker answered, or the request timeout passed. A receiving
// loop that acknowledges this way asks for the next messages while the broker takes the acks,
// as a push consumer pulls on while it commits. The error returned is one Ack would return
// before sending anything (a view not received, a consumer not started or closed, ctx ended
// already); done is then not called. ctx bounds only the look-up of the broker's address
// (when the routes no longer name it): once the ack joined the acks to its broker it is not
// withdrawn. done runs on a goroutine of the consumer's, after the dones of the acks that
// left before it in the same request: it should not block. Close waits for the acks under way.
func (c *SimpleConsumer) AckAsync(ctx context.Context, v *MessageView, done func(error)) error {
	if v == nil || v.handle.Load() == nil {
		return errNotReceived
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("consumer: ack %s: %w", v.MsgID, err)
	}
	if err := c.begin(); err != nil {
		return err
	}
	if done == nil {
		done = func(error) {}
	}
	r := v.handle.Load()
	if addr := c.inst.MasterAddr(r.info.BrokerName); addr != "" {
		// No goroutine per ack: the ack joins its broker's batch and the batch's answer calls
		// done (finishAsync).
		c.joinAck(addr, ackEntry{v: v, r: r, done: done})
		return nil
	}
	go func() {
		defer c.calls.Done()
		done(c.ack(ctx, v))
	}()
	return nil
}

// ack is Ack's work once the call is counted in.
func (c *SimpleConsumer) ack(ctx context.Context, v *MessageView) error {
	r := v.handle.Load()
	addr, err := c.handleAddr(ctx, v, r)
	if err == nil {
		err = c.mergedAck(ctx, addr, v, r)
		if err == errAckAlone {
			err = c.ackAlone(ctx, addr, v, r)
		}
	}
	return ackError(v, err)
}

// ackError is an Ack's error as the caller sees it, naming the message; nil stays nil.
func ackError(v *MessageView, err error) error {
	if err != nil {
		return fmt.Errorf("consumer: ack %s: %w", v.MsgID, err)
	}
	return nil
}

// ackAlone sends the ack of v with handle r to addr as an ACK_MESSAGE of its own, bounded by
// ctx, the request timeout and the consumer's life.
func (c *SimpleConsumer) ackAlone(ctx context.Context, addr string, v *MessageView, r *receipt) error {
	ctx, cancel := c.callContext(ctx, c.cfg.requestTimeout)
	defer cancel()
	_, err := c.invokeAt(ctx, addr, remoting.AckMessage, ackHeader(c.group, v.wireTopic, r), nil)
	return err
}

// ChangeInvisibleDuration hides v for d from now instead of until its current invisible time
// ends, and gives v the new receipt handle the broker answers with (the old one no longer
// acknowledges it). d is at least 1 ms; the broker bounds it.
func (c *SimpleConsumer) ChangeInvisibleDuration(ctx context.Context, v *MessageView, d time.Duration) error {
	if v == nil || v.handle.Load() == nil {
		return errors.New("consumer: change of a message view the simple consumer did not receive")
	}
	if d < time.Millisecond {
		return fmt.Errorf("consumer: invisible duration must be at least 1ms, got %v", d)
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.calls.Done()
	r := v.handle.Load()
	ctx, cancel := c.callContext(ctx, c.cfg.requestTimeout)
	defer cancel()
	resp, err := c.invokeHandle(ctx, v, r, remoting.ChangeMessageInvisibleTime, changeInvisibleHeader(c.group, v.wireTopic, r, d.Milliseconds()))
	if err != nil {
		return fmt.Errorf("consumer: change invisible duration of %s: %w", v.MsgID, err)
	}
	var h protocol.ChangeInvisibleTimeResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return fmt.Errorf("consumer: change invisible duration of %s: answer: %w", v.MsgID, err)
	}
	// Only the handle this change was made with is replaced: a concurrent change that answered
	// first keeps its own.
	v.handle.CompareAndSwap(r, changedReceipt(r, &h))
	return nil
}

// invokeHandle sends a request about the message of handle r to the master of r's broker and
// returns its SUCCESS answer, or the error.
func (c *SimpleConsumer) invokeHandle(ctx context.Context, v *MessageView, r *receipt, code int32, h remoting.Header) (*remoting.Command, error) {
	addr, err := c.handleAddr(ctx, v, r)
	if err != nil {
		return nil, err
	}
	return c.invokeAt(ctx, addr, code, h, nil)
}

// handleAddr is the address of the master of the broker of handle r; a route it must look up
// anew is bounded by ctx, the request timeout and the consumer's life.
func (c *SimpleConsumer) handleAddr(ctx context.Context, v *MessageView, r *receipt) (string, error) {
	addr := c.inst.MasterAddr(r.info.BrokerName)
	if addr == "" {
		// The routes no longer name the broker's master (it is down, or the route changed):
		// a fresh look may.
		ctx, cancel := c.callContext(ctx, c.cfg.requestTimeout)
		defer cancel()
		if _, err := c.inst.TopicRoute(ctx, v.wireTopic); err == nil {
			addr = c.inst.MasterAddr(r.info.BrokerName)
		}
		if addr == "" {
			return "", fmt.Errorf("%w: no master of broker %s", ErrNoBroker, r.info.BrokerName)
		}
	}
	return addr, nil
}

// invokeAt sends a request with header h (none when nil) and body to addr and returns its
// SUCCESS answer, or the error.
func (c *SimpleConsumer) invokeAt(ctx context.Context, addr string, code int32, h remoting.Header, body []byte) (*remoting.Command, error) {
	return c.invokeUntil(ctx, addr, code, h, body, time.Time{})
}

// invokeUntil is invokeAt bounded also by until (none when zero), without a context of its own
// when the transport takes a deadline apart from its context.
func (c *SimpleConsumer) invokeUntil(ctx context.Context, addr string, code int32, h remoting.Header, body []byte, until time.Time) (*remoting.Command, error) {
	var fields map[string]string
	if h != nil {
		fields = remoting.EncodeHeader(h)
	}
	resp, err := remoting.InvokeSyncUntil(ctx, c.inst.Transport(), addr, remoting.NewRequest(code, fields, body), until)
	if err != nil {
		return nil, err
	}
	if err := remoting.ErrorFromResponse(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// simpleMember is the SimpleConsumer as the client instance sees it: the instance's Consumer
// interface names internal types, which the SimpleConsumer's exported methods must not.
type simpleMember SimpleConsumer

// HeartbeatData implements the client instance's Consumer: the group, consuming by POP, with
// its subscriptions.
func (m *simpleMember) HeartbeatData() protocol.ConsumerData {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := protocol.ConsumerData{GroupName: m.group, ConsumeType: consumePop, MessageModel: Clustering.String(),
		ConsumeFromWhere: m.cfg.from.String(), SubscriptionDataSet: []protocol.SubscriptionData{}}
	for _, s := range m.mu.subs {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, s.sub.data())
	}
	return d
}

// SubscribedTopics implements the client instance's Consumer: the routes it keeps fresh.
func (m *simpleMember) SubscribedTopics() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.mu.subs))
	for t := range m.mu.subs {
		out = append(out, t)
	}
	return out
}

// Rebalance implements the client instance's Consumer: POP needs none.
func (m *simpleMember) Rebalance() {}

// ConsumeMessageDirectly implements the client instance's Consumer: there is no listener.
func (m *simpleMember) ConsumeMessageDirectly([]byte) *remoting.Command {
	return remoting.NewResponse(remoting.SystemError, "consumer: a simple consumer has no listener to consume directly")
}

var _ clientConsumer = (*simpleMember)(nil)
