package producer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Defaults of the producer options (RocketMQ's DefaultMQProducer values unless noted).
const (
	DefaultGroup       = "DEFAULT_PRODUCER"
	DefaultSendTimeout = 3 * time.Second
	// DefaultRetries is retryTimesWhenSendFailed: attempts after the first of a sync send.
	DefaultRetries = 2
	// DefaultAsyncRetries is retryTimesWhenSendAsyncFailed: attempts after the first of an
	// async send whose request got no answer.
	DefaultAsyncRetries   = 2
	DefaultMaxMessageSize = 4 << 20
	DefaultCompressOver   = 4 << 10
	DefaultCompressLevel  = 5
	DefaultCreateTopicKey = names.TopicAutoCreate
	DefaultTopicQueueNums = 4
	DefaultCloseTimeout   = 5 * time.Second
	// DefaultMaxAsyncInFlight bounds SendAsync calls awaiting their callback (RocketMQ 5's
	// backPressureForAsyncSendNum).
	DefaultMaxAsyncInFlight       = 10000
	DefaultPollNameServerInterval = 30 * time.Second
	DefaultHeartbeatInterval      = 30 * time.Second
	// DefaultRetryUnreachableUntilTimeout: sends wait for an unreachable broker until their
	// timeout. No RocketMQ setting; RocketMQ's producer gives up after
	// 1 + retryTimesWhenSendFailed attempts (see WithRetryUnreachableUntilTimeout).
	DefaultRetryUnreachableUntilTimeout = true
	// DefaultAsyncBatchLinger and DefaultAsyncBatchMaxBytes are RocketMQ 5's autoBatch
	// defaults (batchMaxDelayMs, batchMaxBytes), for WithAsyncBatching, which is off by
	// default as autoBatch is.
	DefaultAsyncBatchLinger   = 10 * time.Millisecond
	DefaultAsyncBatchMaxBytes = 32 << 10
)

// Option configures a Producer; see the With... functions.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	nameServers       []string
	group             string
	instanceName      string
	namespace         string
	sendTimeout       time.Duration
	retries           int
	asyncRetries      int
	maxMessageSize    int
	compressOver      int
	compressLevel     int
	faultTolerance    bool
	retryUnreachable  bool
	autoCreateTopic   bool
	createTopicKey    string
	topicQueueNums    int
	closeTimeout      time.Duration
	maxAsyncInFlight  int
	pollInterval      time.Duration
	heartbeatInterval time.Duration
	transport         remoting.Transport
	ownTransport      bool
	credentials       remoting.Credentials
	tlsConfig         *tls.Config
	txListener        TransactionListener
	// trace turns WithTrace on, with traceTopic ("" for the default).
	trace      bool
	traceTopic string
	// owned lists every transport handed over with WithOwnedTransport, so New closes those a
	// later transport option replaced.
	owned  []remoting.Transport
	logger *zerolog.Logger

	// asyncBatching turns WithAsyncBatching on, with batchLinger and batchMaxBytes.
	asyncBatching bool
	batchLinger   time.Duration
	batchMaxBytes int

	now func() time.Time // clock of the fault strategy; tests replace it
	// queueStart is where each topic's round robin starts. RocketMQ starts its ThreadLocalIndex
	// at random so that producers started together do not all send to the same queue first;
	// tests fix it to make the order of attempts known.
	queueStart func() uint32
	// jitter draws each pause for an unreachable broker from its backoff (halfJitter); tests
	// make it exact.
	jitter func(time.Duration) time.Duration
}

func defaultConfig() config {
	return config{
		group:             DefaultGroup,
		sendTimeout:       DefaultSendTimeout,
		retries:           DefaultRetries,
		asyncRetries:      DefaultAsyncRetries,
		maxMessageSize:    DefaultMaxMessageSize,
		compressOver:      DefaultCompressOver,
		compressLevel:     DefaultCompressLevel,
		faultTolerance:    false,
		retryUnreachable:  DefaultRetryUnreachableUntilTimeout,
		autoCreateTopic:   true,
		createTopicKey:    DefaultCreateTopicKey,
		topicQueueNums:    DefaultTopicQueueNums,
		closeTimeout:      DefaultCloseTimeout,
		maxAsyncInFlight:  DefaultMaxAsyncInFlight,
		pollInterval:      DefaultPollNameServerInterval,
		heartbeatInterval: DefaultHeartbeatInterval,
		now:               time.Now,
		queueStart:        rand.Uint32,
		jitter:            halfJitter,
	}
}

func (c *config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
	}
	if len(c.nameServers) == 0 {
		bad("no name server (WithNameServers)")
	}
	if err := validateGroup(c.group); err != nil {
		bad("group: %v", err)
	}
	if c.sendTimeout <= 0 {
		bad("send timeout %v", c.sendTimeout)
	}
	if c.retries < 0 {
		bad("retries %d", c.retries)
	}
	if c.asyncRetries < 0 {
		bad("async retries %d", c.asyncRetries)
	}
	if c.maxMessageSize <= 0 {
		bad("max message size %d", c.maxMessageSize)
	}
	if c.compressLevel < -2 || c.compressLevel > 9 {
		bad("compress level %d", c.compressLevel)
	}
	if c.maxAsyncInFlight <= 0 {
		bad("max async in flight %d", c.maxAsyncInFlight)
	}
	if c.topicQueueNums <= 0 {
		bad("default topic queue nums %d", c.topicQueueNums)
	}
	if c.tlsConfig != nil && c.transport != nil {
		bad("WithTLS with WithTransport or WithOwnedTransport: the transport decides how it dials")
	}
	if c.asyncBatching {
		if c.batchLinger < 0 || c.batchLinger >= c.sendTimeout {
			bad("async batch linger %v outside [0, send timeout %v)", c.batchLinger, c.sendTimeout)
		}
		if c.batchMaxBytes <= 0 || c.batchMaxBytes > c.maxMessageSize {
			bad("async batch max bytes %d outside [1, max message size %d]", c.batchMaxBytes, c.maxMessageSize)
		}
	}
	return errors.Join(errs...)
}

// validateGroup applies the broker's group rules (internal/names), so a group New accepts is
// one the broker accepts.
func validateGroup(g string) error {
	if err := names.CheckGroup(g); err != nil {
		return errors.New(nameProblem(err))
	}
	return nil
}

// WithNameServers sets the name server addresses ("host:port"). Required.
func WithNameServers(addrs ...string) Option {
	return optionFunc(func(c *config) { c.nameServers = append([]string(nil), addrs...) })
}

// WithGroup sets the producer group (default DEFAULT_PRODUCER).
func WithGroup(group string) Option { return optionFunc(func(c *config) { c.group = group }) }

// WithInstanceName sets the instance name of the client id ip@instance (default: the process
// id). Producers and consumers with the same client id, name servers and transport share one
// client instance.
func WithInstanceName(name string) Option {
	return optionFunc(func(c *config) { c.instanceName = name })
}

// WithNamespace prefixes topics ("ns%topic") and the group on the wire.
func WithNamespace(ns string) Option { return optionFunc(func(c *config) { c.namespace = ns }) }

// WithSendTimeout bounds one send including its retries (default 3 s). A context deadline
// that comes sooner wins.
func WithSendTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.sendTimeout = d })
}

// WithRetries sets how many times a failed SendSync or SendBatch is retried, on another broker
// than the attempt before (default 2, so up to 3 attempts; RocketMQ's retryTimesWhenSendFailed).
// Async sends have their own count (WithAsyncRetries); one-way sends are never retried.
func WithRetries(n int) Option { return optionFunc(func(c *config) { c.retries = n }) }

// WithAsyncRetries sets how many times a SendAsync whose request got no answer (it could not
// be sent, the connection broke, or the answer did not come in time) is retried, on another
// broker than the attempt before (default 2; RocketMQ's retryTimesWhenSendAsyncFailed). A
// broker's error answer is not retried, as in RocketMQ.
func WithAsyncRetries(n int) Option { return optionFunc(func(c *config) { c.asyncRetries = n }) }

// WithMaxMessageSize sets the largest body accepted (default 4 MiB).
func WithMaxMessageSize(n int) Option { return optionFunc(func(c *config) { c.maxMessageSize = n }) }

// WithCompressOver compresses single-message bodies of at least n bytes with zlib (default
// 4 KiB; 0 or less disables compression).
func WithCompressOver(n int) Option { return optionFunc(func(c *config) { c.compressOver = n }) }

// WithCompressLevel sets the zlib level (default 5).
func WithCompressLevel(level int) Option {
	return optionFunc(func(c *config) { c.compressLevel = level })
}

// WithLatencyFaultTolerance turns broker isolation on slow or failed sends on or off (default
// off, as RocketMQ's sendLatencyFaultEnable). Off, a retry still avoids the broker the
// attempt before failed on, but later sends go round robin over every broker. On, each
// attempt's latency isolates its broker for RocketMQ's notAvailableDuration (550 ms → 30 s,
// 1 s → 60 s, 2 s → 120 s, 3 s → 180 s, 15 s or a failure → 600 s), during which the round
// robin skips it unless no other broker is left, and FailoverOrder sends move off it.
func WithLatencyFaultTolerance(on bool) Option {
	return optionFunc(func(c *config) { c.faultTolerance = on })
}

// WithRetryUnreachableUntilTimeout says whether a sync, batch, async or ordered send whose
// brokers cannot be reached at all (connection refused or broken, no node at an in-process
// address, no master known; not a broker's error code, not a timeout) keeps trying until its
// send timeout, so a broker restart shorter than the timeout costs latency, not an error
// (default true). Once every broker of the send's route (an ordered send or SendToQueue: its
// queue's broker) failed so, the send pauses 50 ms, then 100 ms, doubling up to 500 ms, each
// pause drawn from its upper half at random, and starts a new round of 1 + retries attempts;
// the last attempt starts at least 50 ms before the deadline, and Close ends a pause.
// SendOneway is never retried. This is a deliberate difference from RocketMQ 4.9 (no such
// setting there): its sendDefaultImpl resends at once and gives up after
// 1 + retryTimesWhenSendFailed attempts (async: retryTimesWhenSendAsyncFailed), which false
// restores; see docs/rocketmq-differences.md.
func WithRetryUnreachableUntilTimeout(on bool) Option {
	return optionFunc(func(c *config) { c.retryUnreachable = on })
}

// WithAutoCreateTopic says whether a topic the name servers do not know is sent to with the
// route of the create-topic key (TBW102), letting brokers create it (default true).
func WithAutoCreateTopic(on bool) Option {
	return optionFunc(func(c *config) { c.autoCreateTopic = on })
}

// WithDefaultTopicQueueNums caps the queues of an auto-created topic (default 4).
func WithDefaultTopicQueueNums(n int) Option {
	return optionFunc(func(c *config) { c.topicQueueNums = n })
}

// WithCloseTimeout bounds how long Close waits for in-flight async sends (default 5 s).
func WithCloseTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.closeTimeout = d })
}

// WithMaxAsyncInFlight bounds the SendAsync calls whose callback has not run yet (default
// 10,000); SendAsync blocks while the bound is reached, until a callback runs or its context
// ends.
func WithMaxAsyncInFlight(n int) Option {
	return optionFunc(func(c *config) { c.maxAsyncInFlight = n })
}

// WithAsyncBatching gathers SendAsync messages bound for the same queue into batches, each
// sent as one SEND_BATCH_MESSAGE request (default off; RocketMQ 5's autoBatch, not in 4.x):
// fewer, larger requests for more messages per second. A message picks its queue as without
// batching and joins that queue's open batch; the batch leaves once the next message would take
// it past maxBytes of encoded elements (at most the max message size;
// DefaultAsyncBatchMaxBytes is 32 KiB) or once linger has passed since its first message
// (DefaultAsyncBatchLinger is 10 ms; 0 sends a message at once unless its queue has a batch in
// flight, so messages gather only while one is). A queue has one batch in flight at a time, so
// it stores its batched messages in the order SendAsync took them (unless a batch is retried
// on another queue); the next batch keeps gathering meanwhile. A batch is retried as an async
// send is (WithAsyncRetries), and its send timeout is its messages' soonest, counted from
// their SendAsync, linger included, so linger must be shorter than the send timeout.
//
// Each callback runs once, with the message's own SendResult (its MsgID, its OffsetMsgID and
// QueueOffset when the broker answers one offset id per message, as RocketMQ 4.x brokers and
// ours do) or the batch's error. Messages waiting in a batch count against
// WithMaxAsyncInFlight; when SendAsync has to wait for room, the open batches leave without
// lingering. Close sends what is open first. Messages a batch cannot hold go alone, as
// without batching: a delay level or DELAY/TIMER_DELIVER_MS property, a %RETRY% topic, a
// TRAN_MSG, PGROUP or WAIT property, a body the producer would compress (WithCompressOver), an
// encoded element larger than maxBytes.
func WithAsyncBatching(linger time.Duration, maxBytes int) Option {
	return optionFunc(func(c *config) { c.asyncBatching, c.batchLinger, c.batchMaxBytes = true, linger, maxBytes })
}

// WithPollNameServerInterval sets how often routes are refreshed (default 30 s). It applies
// when this producer creates the client instance.
func WithPollNameServerInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pollInterval = d })
}

// WithHeartbeatInterval sets how often brokers get a heartbeat (default 30 s). It applies when
// this producer creates the client instance.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.heartbeatInterval = d })
}

// WithTransport sends through tr (for example mq.Node.NewTransport for in-process sends). The
// caller keeps ownership and closes tr after the producer.
func WithTransport(tr remoting.Transport) Option {
	return optionFunc(func(c *config) { c.transport, c.ownTransport = tr, false })
}

// WithOwnedTransport sends through tr and hands it over: it is closed when the last handle
// using it closes, when New fails, or when a later transport option replaces it.
func WithOwnedTransport(tr remoting.Transport) Option {
	return optionFunc(func(c *config) {
		c.transport, c.ownTransport = tr, true
		c.owned = append(c.owned, tr)
	})
}

// WithTrace writes a trace record (RocketMQ's Pub) for every message SendSync, SendToQueue,
// SendOrdered or SendAsync stored, to topic ("" for RMQ_SYS_TRACE_TOPIC) in RocketMQ's trace
// format, so the official tools follow the message by its id (RocketMQ's enableMsgTrace and
// customizedTraceTopic; the official Go client's WithTrace). Records are sent in batches by a
// producer of group _INNER_TRACE_PRODUCER sharing this producer's client instance; when they
// come faster than it sends them, they are dropped rather than slowing sends down.
func WithTrace(topic string) Option {
	return optionFunc(func(c *config) { c.trace, c.traceTopic = true, topic })
}

// WithCredentials signs every request the producer's client instance sends (sends, route
// queries, heartbeats) with the account, for brokers with ACL on: RocketMQ's AclClientRPCHook
// with SessionCredentials, the official Go client's WithCredentials. It signs over any
// transport, one given by WithTransport too. Producers and consumers share a client instance
// only when their credentials are the same.
func WithCredentials(c remoting.Credentials) Option {
	return optionFunc(func(cfg *config) { cfg.credentials = c })
}

// WithTLS makes the client instance's TCP connections TLS with cfg (RocketMQ's useTLS, the
// tls.enable client property; the official Go client's WithTls, which skips verifying the
// server; here cfg decides, and its ServerName defaults to the dialled host). nil means
// plaintext (default). New refuses it with WithTransport or WithOwnedTransport: such a
// transport dials as it was built to. Producers and consumers share a client instance only
// when they were given the same cfg.
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(c *config) { c.tlsConfig = cfg })
}

// WithLogger sets the logger (default silent).
func WithLogger(l *zerolog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }
