package consumer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Model is how a group shares messages.
type Model int

const (
	// Clustering gives each message to one member of the group; offsets live on the broker.
	Clustering Model = iota
	// Broadcasting gives every message to every member; offsets live in a local file.
	Broadcasting
)

func (m Model) String() string {
	if m == Broadcasting {
		return "BROADCASTING"
	}
	return "CLUSTERING"
}

// From is where a consumer starts on a queue for which its group has no stored offset
// (docs/protocol.md §10.3).
type From int

const (
	// FromLastOffset starts at the end of the queue (default). A broker answers offset 0 for a
	// young queue whose first message is still in memory, so a new group reads it all.
	FromLastOffset From = iota
	// FromFirstOffset starts at offset 0.
	FromFirstOffset
	// FromTimestamp starts at the first message stored at or after the configured time.
	FromTimestamp
)

func (f From) String() string {
	switch f {
	case FromFirstOffset:
		return "CONSUME_FROM_FIRST_OFFSET"
	case FromTimestamp:
		return "CONSUME_FROM_TIMESTAMP"
	}
	return "CONSUME_FROM_LAST_OFFSET"
}

// Defaults of the push consumer's options: RocketMQ 4.9's DefaultMQPushConsumer values, named
// after its settings where the name differs.
const (
	DefaultPullBatchSize           = 32   // pullBatchSize
	DefaultConsumeBatchSize        = 1    // consumeMessageBatchMaxSize
	DefaultConsumeGoroutines       = 20   // consumeThreadMin and consumeThreadMax
	DefaultPullThresholdForQueue   = 1000 // pullThresholdForQueue
	DefaultPullThresholdSizeMiB    = 100  // pullThresholdSizeForQueue
	DefaultConsumeConcurrentlySpan = 2000 // consumeConcurrentlyMaxSpan
	// DefaultPullSuspend is BROKER_SUSPEND_MAX_TIME_MILLIS: how long a broker may hold a pull.
	DefaultPullSuspend = 15 * time.Second
	// DefaultLitePullBatchSize and DefaultLitePullSuspend are the lite pull consumer's own
	// (DefaultLitePullConsumer pullBatchSize 10, brokerSuspendMaxTimeMillis 20 s); its other
	// defaults are the push consumer's.
	DefaultLitePullBatchSize = 10
	DefaultLitePullSuspend   = 20 * time.Second
	// DefaultPullTimeout is CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND: how long a pull waits for its
	// answer, the suspend included.
	DefaultPullTimeout = 30 * time.Second
	// DefaultPullInterval is pullInterval: no pause between pulls of a queue.
	DefaultPullInterval time.Duration = 0
	// DefaultPostSubscriptionWhenPull is postSubscriptionWhenPull: pulls rely on the
	// subscription heartbeats registered.
	DefaultPostSubscriptionWhenPull = false
	DefaultRebalanceInterval        = 20 * time.Second // rocketmq.client.rebalance.waitInterval
	DefaultPersistInterval          = 5 * time.Second  // persistConsumerOffsetInterval
	DefaultMaxReconsumeTimes        = 16               // maxReconsumeTimes -1, which concurrent consumers read as 16
	DefaultConsumeTimeout           = 15 * time.Minute // consumeTimeout
	DefaultLockInterval             = 20 * time.Second // rocketmq.client.rebalance.lockInterval
	DefaultLockExpiry               = 30 * time.Second // rocketmq.client.rebalance.lockMaxLiveTime
	DefaultSuspendDelay             = time.Second      // suspendCurrentQueueTimeMillis
	DefaultCloseTimeout             = 10 * time.Second
	DefaultFromTimestampAgo         = 30 * time.Minute // consumeTimestamp
)

// How long a queue waits after a failed pull (pull_retry.go).
const (
	// DefaultPullTimeDelayWhenException is pullTimeDelayMillsWhenException, the pause after a
	// failed pull: 1 s in RocketMQ 4.9, whose push consumer takes ClientConfig's 1000 ms in
	// place of its own field's 3000 when it is built (the official Go client waits 3 s).
	DefaultPullTimeDelayWhenException = time.Second
	// DefaultReconnectPullDelay and DefaultMaxReconnectPullDelay are ours, not RocketMQ's
	// (docs/rocketmq-differences.md): after a pull failed because its connection broke, the
	// queue pulls again after 20 ms, doubling to at most 500 ms (and never more than the pull
	// error delay) while the broker stays away, so pulls resume within half a second of a
	// restarted broker's return instead of up to 3 s after it.
	DefaultReconnectPullDelay    = 20 * time.Millisecond
	DefaultMaxReconnectPullDelay = 500 * time.Millisecond
)

// Defaults of the orderly consumer's timings, RocketMQ's client system properties.
const (
	// DefaultUnlockDelay is UNLOCK_DELAY_TIME_MILLS (rocketmq.client.unlockDelayTimeMills,
	// 20 s): how long after rebalance dropped an orderly queue that still had cached messages
	// its broker lock is released.
	DefaultUnlockDelay = 20 * time.Second
	// DefaultMaxTimeConsumeContinuously is MAX_TIME_CONSUME_CONTINUOUSLY
	// (rocketmq.client.maxTimeConsumeContinuously, 60 s): the longest an orderly consumer
	// consumes one queue before it lets the others have a turn.
	DefaultMaxTimeConsumeContinuously = time.Minute
)

// RocketMQ's bounds on the options (DefaultMQPushConsumerImpl.checkConfig); NewPushConsumer and
// NewPullConsumer refuse values outside them.
const (
	MaxConsumeGoroutines     = 1000       // consumeThreadMin/Max: [1, 1000]
	MaxConsumeSpan           = 65535      // consumeConcurrentlyMaxSpan: [1, 65535]
	MaxPullThresholdForQueue = 65535      // pullThresholdForQueue: [1, 65535]
	MaxPullThresholdBytes    = 1024 << 20 // pullThresholdSizeForQueue: [1, 1024] MiB
	MaxPullInterval          = 65535 * time.Millisecond
	MaxPullBatchSize         = 1024 // pullBatchSize: [1, 1024]
	MaxConsumeBatchSize      = 1024 // consumeMessageBatchMaxSize: [1, 1024]
)

// Option configures a consumer. Options are applied in order by NewPushConsumer, which then
// validates the result once.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is every setting of a consumer, defaults filled in. Options set any of it; each
// consumer takes the parts it uses: the puller the shared settings, the push consumer its own,
// the lite pull consumer its own, the simple consumer the shared ones it needs and its own.
type config struct {
	pullerConfig
	pushConfig
	liteConfig
	simpleConfig
}

// pullerConfig is what both consumers share: identity, membership, rebalancing, pulls, flow
// control, offsets and the client instance.
type pullerConfig struct {
	nameServers  []string
	group        string // as brokers know it: with the namespace
	namespace    string
	instanceName string
	model        Model
	from         From
	fromTime     time.Time
	strategy     rebalance.Strategy

	pullBatchSize      int
	pullThresholdMsgs  int
	pullThresholdBytes int64
	maxSpan            int64
	pullSuspend        time.Duration
	pullTimeout        time.Duration // the whole pull, pullSuspend included
	pullInterval       time.Duration
	pullErrorDelay     time.Duration
	flowControlDelay   time.Duration
	offsetIllegalDelay time.Duration
	failoverHold       time.Duration
	rebalanceInterval  time.Duration
	persistInterval    time.Duration
	syncCommit         bool
	offsetDir          string
	subscriptionInPull bool
	pollRoutes         time.Duration // client instance route refresh; 0 means its default
	heartbeat          time.Duration // client instance heartbeat period; 0 means its default
	transport          remoting.Transport
	ownTransport       bool
	owned              []remoting.Transport // every transport handed over, for closing replaced ones
	credentials        remoting.Credentials
	tlsConfig          *tls.Config
	logger             zerolog.Logger
	inst               instance // tests: use this instance instead of acquiring one
}

// pushConfig is what only the push consumer uses: its listeners, retries and orderly locks.
type pushConfig struct {
	orderly            bool
	hooks              []ConsumeHook
	trace              *traceHook // WithTrace's, also in hooks
	consumeBatchSize   int
	consumeGoroutines  int
	maxReconsumeTimes  int32
	consumeTimeout     time.Duration
	sendBackRetryDelay time.Duration
	lockInterval       time.Duration
	lockExpiry         time.Duration
	suspendDelay       time.Duration
	maxOrderlyTurn     time.Duration
	unlockDelay        time.Duration
	closeTimeout       time.Duration
}

// liteConfig is what only the lite pull consumer uses.
type liteConfig struct {
	autoCommit bool
}

func defaultConfig() config {
	return config{
		pullerConfig: pullerConfig{
			instanceName:       "DEFAULT",
			strategy:           rebalance.Averagely(),
			pullBatchSize:      DefaultPullBatchSize,
			pullThresholdMsgs:  DefaultPullThresholdForQueue,
			pullThresholdBytes: DefaultPullThresholdSizeMiB << 20,
			maxSpan:            DefaultConsumeConcurrentlySpan,
			pullSuspend:        DefaultPullSuspend,
			pullTimeout:        DefaultPullTimeout,
			pullInterval:       DefaultPullInterval,
			pullErrorDelay:     DefaultPullTimeDelayWhenException,
			flowControlDelay:   50 * time.Millisecond,
			offsetIllegalDelay: 10 * time.Second,
			failoverHold:       DefaultFailoverHold,
			rebalanceInterval:  DefaultRebalanceInterval,
			persistInterval:    DefaultPersistInterval,
			subscriptionInPull: DefaultPostSubscriptionWhenPull,
			logger:             zerolog.Nop(),
		},
		pushConfig: pushConfig{
			consumeBatchSize:   DefaultConsumeBatchSize,
			consumeGoroutines:  DefaultConsumeGoroutines,
			maxReconsumeTimes:  -1, // RocketMQ's "not set": 16 concurrent, unlimited orderly
			consumeTimeout:     DefaultConsumeTimeout,
			sendBackRetryDelay: 5 * time.Second,
			lockInterval:       DefaultLockInterval,
			lockExpiry:         DefaultLockExpiry,
			suspendDelay:       DefaultSuspendDelay,
			maxOrderlyTurn:     DefaultMaxTimeConsumeContinuously,
			unlockDelay:        DefaultUnlockDelay,
			closeTimeout:       DefaultCloseTimeout,
		},
		liteConfig:   liteConfig{autoCommit: true},
		simpleConfig: defaultSimpleConfig(),
	}
}

// liteDefaults sets the lite pull consumer's defaults where they differ from the push
// consumer's; NewPullConsumer applies it before the caller's options.
var liteDefaults = optionFunc(func(c *config) {
	c.pullBatchSize = DefaultLitePullBatchSize
	c.pullSuspend = DefaultLitePullSuspend
})

// newConfig applies opts over the defaults and validates the result once. On error every
// transport handed over is closed; otherwise only those a later option replaced.
func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		cfg.closeOwned(true)
		return config{}, err
	}
	cfg.closeOwned(false)
	return cfg, nil
}

func (c *config) validate() error {
	c.group = names.WrapNamespace(c.namespace, c.group)
	var errs []error
	// The broker's rule for a consumer group (internal/names): its retry topic %RETRY%<group>
	// must be a valid topic, so at most 120 bytes, fewer than RocketMQ clients' 255.
	if err := names.CheckRetryGroup(c.group); err != nil {
		errs = append(errs, fmt.Errorf("consumer: %w", err))
	}
	if c.group == "DEFAULT_CONSUMER" {
		errs = append(errs, errors.New("consumer: group DEFAULT_CONSUMER is reserved"))
	}
	if c.inst == nil && len(c.nameServers) == 0 {
		errs = append(errs, errors.New("consumer: no name servers"))
	}
	if c.strategy == nil {
		errs = append(errs, errors.New("consumer: nil strategy"))
	}
	if c.tlsConfig != nil && c.transport != nil {
		errs = append(errs, errors.New("consumer: WithTLS with WithTransport or WithOwnedTransport: the transport decides how it dials"))
	}
	errs = append(errs, c.checkRanges()...)
	if c.pullTimeout < c.pullSuspend {
		errs = append(errs, fmt.Errorf("consumer: pull timeout %v is shorter than the pull suspend %v", c.pullTimeout, c.pullSuspend))
	}
	for i, h := range c.hooks {
		if h == nil {
			errs = append(errs, fmt.Errorf("consumer: consume hook %d is nil", i))
		}
	}
	if c.from == FromTimestamp && c.fromTime.IsZero() {
		c.fromTime = time.Now().Add(-DefaultFromTimestampAgo)
	}
	return errors.Join(errs...)
}

// bound is an option's value and the range RocketMQ allows it; hi is unbounded for options
// RocketMQ does not bound.
type bound struct {
	name      string
	v, lo, hi int64
	dur       bool // v, lo and hi are time.Durations
}

const unbounded = math.MaxInt64

// checkRanges checks every number and period against its range: RocketMQ's where it has one,
// else positive.
func (c *config) checkRanges() []error {
	bounds := []bound{
		{name: "pull batch size", v: int64(c.pullBatchSize), lo: 1, hi: MaxPullBatchSize},
		{name: "consume batch size", v: int64(c.consumeBatchSize), lo: 1, hi: MaxConsumeBatchSize},
		{name: "consume goroutines", v: int64(c.consumeGoroutines), lo: 1, hi: MaxConsumeGoroutines},
		{name: "pull threshold", v: int64(c.pullThresholdMsgs), lo: 1, hi: MaxPullThresholdForQueue},
		{name: "pull threshold size", v: c.pullThresholdBytes, lo: 1, hi: MaxPullThresholdBytes},
		{name: "max span", v: c.maxSpan, lo: 1, hi: MaxConsumeSpan},
		{name: "max reconsume times", v: int64(c.maxReconsumeTimes), lo: -1, hi: math.MaxInt32}, // -1: not set
		{name: "pull interval", v: int64(c.pullInterval), lo: 0, hi: int64(MaxPullInterval), dur: true},
	}
	for name, d := range map[string]time.Duration{
		"pull suspend": c.pullSuspend, "pull timeout": c.pullTimeout,
		"rebalance interval": c.rebalanceInterval, "persist interval": c.persistInterval,
		"consume timeout": c.consumeTimeout, "lock interval": c.lockInterval,
		"suspend delay": c.suspendDelay, "close timeout": c.closeTimeout,
		"max time consume continuously": c.maxOrderlyTurn, "unlock delay": c.unlockDelay,
	} {
		bounds = append(bounds, bound{name: name, v: int64(d), lo: 1, hi: unbounded, dur: true})
	}
	var errs []error
	for _, b := range bounds {
		if b.v < b.lo || b.v > b.hi {
			errs = append(errs, b.err())
		}
	}
	return errs
}

func (b bound) err() error {
	f := func(v int64) string {
		if b.dur {
			return time.Duration(v).String()
		}
		return strconv.FormatInt(v, 10)
	}
	if b.hi == unbounded {
		return fmt.Errorf("consumer: %s must be positive, got %s", b.name, f(b.v))
	}
	return fmt.Errorf("consumer: %s out of range [%s, %s], got %s", b.name, f(b.lo), f(b.hi), f(b.v))
}

// WithNameServers sets the name service addresses ("host:port").
func WithNameServers(addrs ...string) Option {
	return optionFunc(func(c *config) { c.nameServers = append([]string(nil), addrs...) })
}

// WithGroup sets the consumer group (required).
func WithGroup(group string) Option { return optionFunc(func(c *config) { c.group = group }) }

// WithNamespace puts the group and every subscribed topic in namespace ns (RocketMQ
// ClientConfig.namespace, default none): brokers see "ns%group" and "ns%topic", the group's
// retry topic is "%RETRY%ns%group", and listeners see Message.Topic without the namespace, so
// the consumer meets producers made WithNamespace(ns). Queues (Assignment, Message.Queue) name
// the topics as brokers know them; methods that take a topic or queue accept either form.
func WithNamespace(ns string) Option { return optionFunc(func(c *config) { c.namespace = ns }) }

// WithInstanceName sets the instance part of the client id (ip@instance). Consumers and
// producers of one process with the same instance name share one client instance.
func WithInstanceName(name string) Option {
	return optionFunc(func(c *config) { c.instanceName = name })
}

// WithModel selects Clustering (default) or Broadcasting.
func WithModel(m Model) Option { return optionFunc(func(c *config) { c.model = m }) }

// WithConsumeFrom sets where to start on a queue without a stored offset. For FromTimestamp,
// t is the start time (zero means half an hour before the consumer starts).
func WithConsumeFrom(f From, t time.Time) Option {
	return optionFunc(func(c *config) { c.from, c.fromTime = f, t })
}

// WithStrategy sets the queue allocation strategy (default rebalance.Averagely()).
func WithStrategy(s rebalance.Strategy) Option { return optionFunc(func(c *config) { c.strategy = s }) }

// WithConsumeHook adds h to the hooks that run around every listener call (RocketMQ
// registerConsumeMessageHook), after the hooks added before it. Push consumer only.
func WithConsumeHook(h ConsumeHook) Option {
	return optionFunc(func(c *config) { c.hooks = append(c.hooks, h) })
}

// WithTrace writes trace records around every listener call (RocketMQ's SubBefore and
// SubAfter, with the call's cost and result) to topic ("" for RMQ_SYS_TRACE_TOPIC) in
// RocketMQ's trace format, so the official tools follow a message through its consumers
// (RocketMQ's enableMsgTrace and customizedTraceTopic; the official Go client's WithTrace).
// Records are sent in batches by a producer of group _INNER_TRACE_PRODUCER sharing the
// consumer's client instance, from Start until Close; when they come faster than it sends
// them, they are dropped rather than slowing consumption down. Push consumer only.
func WithTrace(topic string) Option {
	return optionFunc(func(c *config) {
		if c.trace != nil {
			c.trace.topic = topic
			return
		}
		c.trace = &traceHook{topic: topic}
		c.hooks = append(c.hooks, c.trace)
	})
}

// WithOrderly makes the consumer orderly: each queue is consumed by one goroutine at a time, in
// offset order, while this client holds the queue's broker lock. For a SimpleConsumer it makes
// the pops FIFO (order=true): a queue's messages, so each message group's, one batch at a time.
func WithOrderly(orderly bool) Option { return optionFunc(func(c *config) { c.orderly = orderly }) }

// WithPullBatchSize sets how many messages one pull asks for (RocketMQ pullBatchSize: default
// 32, at most 1024).
func WithPullBatchSize(n int) Option { return optionFunc(func(c *config) { c.pullBatchSize = n }) }

// WithConsumeBatchSize sets the most messages one listener call gets (RocketMQ
// consumeMessageBatchMaxSize: default 1, at most 1024).
func WithConsumeBatchSize(n int) Option {
	return optionFunc(func(c *config) { c.consumeBatchSize = n })
}

// WithConsumeGoroutines bounds how many listener calls run at once (RocketMQ consumeThreadMin
// and consumeThreadMax, which size one fixed pool: default 20, at most 1000).
func WithConsumeGoroutines(n int) Option {
	return optionFunc(func(c *config) { c.consumeGoroutines = n })
}

// WithPullThresholds sets flow control per queue: pulling pauses while a queue holds more than
// msgs cached messages or more than bytes of bodies (RocketMQ pullThresholdForQueue, default
// 1000, at most 65535, and pullThresholdSizeForQueue, default 100 MiB, at most 1024 MiB; bytes
// rather than whole MiB).
func WithPullThresholds(msgs int, bytes int64) Option {
	return optionFunc(func(c *config) { c.pullThresholdMsgs, c.pullThresholdBytes = msgs, bytes })
}

// WithMaxSpan pauses a concurrent consumer's pulls while the offsets cached for a queue span
// more than n (RocketMQ consumeConcurrentlyMaxSpan: default 2000, at most 65535).
func WithMaxSpan(n int64) Option { return optionFunc(func(c *config) { c.maxSpan = n }) }

// WithPullSuspend sets how long the broker may hold a pull with no new messages (RocketMQ
// BROKER_SUSPEND_MAX_TIME_MILLIS, 15 s). It may not exceed WithPullTimeout.
func WithPullSuspend(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullSuspend = d })
}

// WithPullTimeout sets how long a pull waits for its answer, the suspend time included
// (RocketMQ CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND, 30 s); it must be at least WithPullSuspend.
// A pull whose broker died without answering holds its queue that long before the queue moves
// on, to a slave for instance; tests that kill brokers shorten both.
func WithPullTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullTimeout = d })
}

// WithPullInterval pauses a queue's pulls for d after each pull that brought messages (RocketMQ
// pullInterval: default 0, at most 65535 ms), to slow consumption down.
func WithPullInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullInterval = d })
}

// WithPullErrorDelay sets the pause after a failed pull (RocketMQ
// pullTimeDelayMillsWhenException, default DefaultPullTimeDelayWhenException, 1 s). A pull
// whose connection broke is retried sooner, from DefaultReconnectPullDelay doubling to
// DefaultMaxReconnectPullDelay, capped by this delay; RocketMQ waits this delay then too.
func WithPullErrorDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullErrorDelay = d })
}

// WithRebalanceInterval sets the periodic rebalance (default 20 s).
func WithRebalanceInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.rebalanceInterval = d })
}

// WithPersistInterval sets how often offsets are written to the broker or file (default 5 s).
func WithPersistInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.persistInterval = d })
}

// WithMaxReconsumeTimes sets how often a message is consumed again before it goes to the
// dead-letter topic: RocketMQ's maxReconsumeTimes, whose default -1 means 16 for a concurrent
// consumer (the broker's retries) and unlimited for an orderly one, which then retries a
// failing message locally for ever and never moves it aside unless this is set. An orderly
// consumer sends a message that failed n more times than its first delivery to the
// dead-letter topic, or suspends the queue and tries again if that send fails.
func WithMaxReconsumeTimes(n int32) Option {
	return optionFunc(func(c *config) { c.maxReconsumeTimes = n })
}

// WithConsumeTimeout sets how long a concurrent listener may hold a message before it is sent
// back for redelivery (default 15 min); the scan runs at the same period.
func WithConsumeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.consumeTimeout = d })
}

// WithSendBackRetryDelay sets how soon messages whose send-back failed are consumed again
// locally (default 5 s).
func WithSendBackRetryDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.sendBackRetryDelay = d })
}

// WithLockInterval sets how often an orderly consumer renews its queue locks (default 20 s);
// a lock not renewed for twice that (at least 30 s) counts as lost on the client.
func WithLockInterval(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.lockInterval = d
		c.lockExpiry = max(DefaultLockExpiry*d/DefaultLockInterval, 0)
	})
}

// WithUnlockDelay sets how long after rebalance dropped an orderly queue that still had
// messages cached its broker lock is released (default DefaultUnlockDelay, RocketMQ's
// UNLOCK_DELAY_TIME_MILLS); a queue dropped with an empty cache is released at once.
func WithUnlockDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.unlockDelay = d })
}

// WithMaxTimeConsumeContinuously sets how long an orderly consumer consumes one queue before
// it pauses the queue briefly so the others get listener slots (default
// DefaultMaxTimeConsumeContinuously, RocketMQ's MAX_TIME_CONSUME_CONTINUOUSLY).
func WithMaxTimeConsumeContinuously(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxOrderlyTurn = d })
}

// WithSuspendDelay sets how long an orderly queue pauses after its listener asked to suspend
// (default 1 s).
func WithSuspendDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.suspendDelay = d })
}

// WithCloseTimeout bounds how long Close lets listeners finish before it cancels their
// context (default 10 s).
func WithCloseTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.closeTimeout = d })
}

// WithSyncCommit makes offset commits wait for the broker's answer instead of one-way sends.
func WithSyncCommit(sync bool) Option { return optionFunc(func(c *config) { c.syncCommit = sync }) }

// WithOffsetDir sets where broadcasting consumers keep offsets:
// <dir>/<clientId>/<group>/offsets.json in the Java client's LocalFileOffsetStore format,
// with the previous content in offsets.json.bak (default ~/.rocketmq_offsets, the Java
// client's default; its rocketmq.client.localOffsetStoreDir system property is not read).
// The directory's client id is the Java client's, ip@instance (ip@DEFAULT with the default
// instance name, where the client id on the wire is ip@pid), so the file survives restarts and
// a Java broadcasting consumer of the same group on the same host shares it.
func WithOffsetDir(dir string) Option { return optionFunc(func(c *config) { c.offsetDir = dir }) }

// WithSubscriptionInPull sends the subscription expression with every pull (sysFlag bit 2)
// instead of relying on the one heartbeats registered (RocketMQ postSubscriptionWhenPull,
// default off; the lite pull consumer sends it always, as RocketMQ's does).
func WithSubscriptionInPull(on bool) Option {
	return optionFunc(func(c *config) { c.subscriptionInPull = on })
}

// WithPollNameServerInterval sets how often the client instance refreshes routes (default
// 30 s); a shorter period notices a dead or returning master sooner. It applies when this
// consumer creates the client instance.
func WithPollNameServerInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pollRoutes = d })
}

// WithHeartbeatInterval sets how often the client instance sends heartbeats to every broker
// (default 30 s). It applies when this consumer creates the client instance.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.heartbeat = d })
}

// WithTransport sends through tr (for example mq.Node.NewTransport for in-process consuming);
// default a TCP client. The caller keeps ownership and closes tr after the consumer.
func WithTransport(tr remoting.Transport) Option {
	return optionFunc(func(c *config) { c.transport, c.ownTransport = tr, false })
}

// WithOwnedTransport sends through tr and hands it over: it is closed when the last handle
// using it closes, when NewPushConsumer or Start fails, or when a later transport option
// replaces it.
func WithOwnedTransport(tr remoting.Transport) Option {
	return optionFunc(func(c *config) {
		c.transport, c.ownTransport = tr, true
		c.owned = append(c.owned, tr)
	})
}

// WithCredentials signs every request the consumer's client instance sends (pulls, offsets,
// heartbeats, locks, send-backs, route queries) with the account, for brokers with ACL on:
// RocketMQ's AclClientRPCHook with SessionCredentials, the official Go client's
// WithCredentials. It signs over any transport, one given by WithTransport too. Consumers and
// producers share a client instance only when their credentials are the same.
func WithCredentials(c remoting.Credentials) Option {
	return optionFunc(func(cfg *config) { cfg.credentials = c })
}

// WithTLS makes the client instance's TCP connections TLS with cfg (RocketMQ's useTLS, the
// tls.enable client property; the official Go client's WithTls, which skips verifying the
// server; here cfg decides, and its ServerName defaults to the dialled host). nil means
// plaintext (default). It is refused with WithTransport or WithOwnedTransport: such a
// transport dials as it was built to. Consumers and producers share a client instance only
// when they were given the same cfg.
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(c *config) { c.tlsConfig = cfg })
}

// closeOwned closes the owned transports that a later option replaced, and with all also the
// one in use (when the consumer will never hand it to an instance).
func (c *config) closeOwned(all bool) {
	for _, tr := range c.owned {
		if tr != c.transport || (all && c.ownTransport) {
			tr.Close()
		}
	}
	c.owned = nil
}

// WithLogger sets the logger; nil or absent means silent.
func WithLogger(l *zerolog.Logger) Option {
	return optionFunc(func(c *config) {
		if l == nil {
			c.logger = zerolog.Nop()
			return
		}
		c.logger = *l
	})
}

// WithAutoCommit (pull consumer) commits what earlier Poll calls returned at each Poll and
// persists it every WithPersistInterval (default on). Off, only Commit commits.
func WithAutoCommit(on bool) Option { return optionFunc(func(c *config) { c.autoCommit = on }) }
