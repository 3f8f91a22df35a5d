package consumer

import (
	"errors"
	"fmt"
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

// Defaults of the push consumer's options (the official client's values unless noted).
const (
	DefaultPullBatchSize           = 32
	DefaultConsumeBatchSize        = 1
	DefaultConsumeGoroutines       = 20
	DefaultPullThresholdForQueue   = 1000
	DefaultPullThresholdSizeMiB    = 100
	DefaultConsumeConcurrentlySpan = 2000
	DefaultPullSuspend             = 15 * time.Second
	DefaultPullTimeout             = 10 * time.Second
	DefaultRebalanceInterval       = 20 * time.Second
	DefaultPersistInterval         = 5 * time.Second
	DefaultMaxReconsumeTimes       = 16
	DefaultConsumeTimeout          = 15 * time.Minute
	DefaultLockInterval            = 20 * time.Second
	DefaultLockExpiry              = 30 * time.Second
	DefaultSuspendDelay            = time.Second
	DefaultCloseTimeout            = 10 * time.Second
	DefaultFromTimestampAgo        = 30 * time.Minute
)

// Option configures a consumer. Options are applied in order by NewPushConsumer, which then
// validates the result once.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is every setting of a consumer, defaults filled in. Options set any of it; each
// consumer takes the parts it uses: the puller the shared settings, the push consumer its own,
// the lite pull consumer its own.
type config struct {
	pullerConfig
	pushConfig
	liteConfig
}

// pullerConfig is what both consumers share: identity, membership, rebalancing, pulls, flow
// control, offsets and the client instance.
type pullerConfig struct {
	nameServers  []string
	group        string
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
	pullTimeout        time.Duration // beyond pullSuspend
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
	logger             zerolog.Logger
	inst               instance // tests: use this instance instead of acquiring one
}

// pushConfig is what only the push consumer uses: its listeners, retries and orderly locks.
type pushConfig struct {
	orderly            bool
	consumeBatchSize   int
	consumeGoroutines  int
	maxReconsumeTimes  int32
	consumeTimeout     time.Duration
	sendBackRetryDelay time.Duration
	lockInterval       time.Duration
	lockExpiry         time.Duration
	suspendDelay       time.Duration
	maxOrderlyTurn     time.Duration
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
			pullErrorDelay:     3 * time.Second,
			flowControlDelay:   50 * time.Millisecond,
			offsetIllegalDelay: 10 * time.Second,
			failoverHold:       DefaultFailoverHold,
			rebalanceInterval:  DefaultRebalanceInterval,
			persistInterval:    DefaultPersistInterval,
			subscriptionInPull: true,
			logger:             zerolog.Nop(),
		},
		pushConfig: pushConfig{
			consumeBatchSize:   DefaultConsumeBatchSize,
			consumeGoroutines:  DefaultConsumeGoroutines,
			maxReconsumeTimes:  DefaultMaxReconsumeTimes,
			consumeTimeout:     DefaultConsumeTimeout,
			sendBackRetryDelay: 5 * time.Second,
			lockInterval:       DefaultLockInterval,
			lockExpiry:         DefaultLockExpiry,
			suspendDelay:       DefaultSuspendDelay,
			maxOrderlyTurn:     time.Minute,
			closeTimeout:       DefaultCloseTimeout,
		},
		liteConfig: liteConfig{autoCommit: true},
	}
}

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
	positive := map[string]int64{
		"pull batch size": int64(c.pullBatchSize), "consume batch size": int64(c.consumeBatchSize),
		"consume goroutines": int64(c.consumeGoroutines), "pull threshold": int64(c.pullThresholdMsgs),
		"pull threshold size": c.pullThresholdBytes, "max span": c.maxSpan,
		"max reconsume times": int64(c.maxReconsumeTimes),
	}
	for name, v := range positive {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("consumer: %s must be positive, got %d", name, v))
		}
	}
	durations := map[string]time.Duration{
		"pull suspend": c.pullSuspend, "pull timeout": c.pullTimeout, "rebalance interval": c.rebalanceInterval,
		"persist interval": c.persistInterval, "consume timeout": c.consumeTimeout,
		"lock interval": c.lockInterval, "suspend delay": c.suspendDelay, "close timeout": c.closeTimeout,
	}
	for name, d := range durations {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("consumer: %s must be positive, got %v", name, d))
		}
	}
	if c.from == FromTimestamp && c.fromTime.IsZero() {
		c.fromTime = time.Now().Add(-DefaultFromTimestampAgo)
	}
	return errors.Join(errs...)
}

// WithNameServers sets the name service addresses ("host:port").
func WithNameServers(addrs ...string) Option {
	return optionFunc(func(c *config) { c.nameServers = append([]string(nil), addrs...) })
}

// WithGroup sets the consumer group (required).
func WithGroup(group string) Option { return optionFunc(func(c *config) { c.group = group }) }

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

// WithOrderly makes the consumer orderly: each queue is consumed by one goroutine at a time, in
// offset order, while this client holds the queue's broker lock.
func WithOrderly(orderly bool) Option { return optionFunc(func(c *config) { c.orderly = orderly }) }

// WithPullBatchSize sets how many messages one pull asks for (default 32).
func WithPullBatchSize(n int) Option { return optionFunc(func(c *config) { c.pullBatchSize = n }) }

// WithConsumeBatchSize sets the most messages one listener call gets (default 1).
func WithConsumeBatchSize(n int) Option {
	return optionFunc(func(c *config) { c.consumeBatchSize = n })
}

// WithConsumeGoroutines bounds how many listener calls run at once (default 20).
func WithConsumeGoroutines(n int) Option {
	return optionFunc(func(c *config) { c.consumeGoroutines = n })
}

// WithPullThresholds sets flow control per queue: pulling pauses while a queue holds more than
// msgs cached messages or more than bytes of bodies (defaults 1000 and 100 MiB).
func WithPullThresholds(msgs int, bytes int64) Option {
	return optionFunc(func(c *config) { c.pullThresholdMsgs, c.pullThresholdBytes = msgs, bytes })
}

// WithMaxSpan pauses a concurrent consumer's pulls while the offsets cached for a queue span
// more than n (default 2000).
func WithMaxSpan(n int64) Option { return optionFunc(func(c *config) { c.maxSpan = n }) }

// WithPullSuspend sets how long the broker may hold a pull with no new messages (default 15 s).
func WithPullSuspend(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullSuspend = d })
}

// WithPullTimeout sets how long a pull may wait for its answer beyond the suspend time
// (default DefaultPullTimeout, RocketMQ's consumerPullTimeoutMillis). A pull whose broker
// died without answering holds its queue that long (suspend + timeout) before the queue moves
// on, to a slave for instance; tests that kill brokers shorten both.
func WithPullTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pullTimeout = d })
}

// WithPullErrorDelay sets the pause after a failed pull (default 3 s).
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

// WithMaxReconsumeTimes sets how often a message is redelivered before it goes to the
// dead-letter topic (default 16).
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
// <dir>/<clientId>/<group>/offsets.json (default ~/.rocketmq_offsets).
func WithOffsetDir(dir string) Option { return optionFunc(func(c *config) { c.offsetDir = dir }) }

// WithSubscriptionInPull sends the subscription expression with every pull (sysFlag bit 2, the
// default) instead of relying on the one registered by heartbeat, as the official push
// consumer does.
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
