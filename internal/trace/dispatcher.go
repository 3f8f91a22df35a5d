package trace

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Defaults of the dispatcher: RocketMQ's AsyncTraceDispatcher values.
const (
	DefaultQueueSize     = 2048
	DefaultBatchSize     = 100
	DefaultMaxMsgSize    = 128000
	DefaultFlushInterval = 100 * time.Millisecond
	// DefaultSendTimeout bounds one trace message's send (the Go client's 5 s).
	DefaultSendTimeout = 5 * time.Second
	// dropLogPeriod spaces the warnings about dropped records.
	dropLogPeriod = 10 * time.Second
)

// Sender sends one trace message: body to topic with keys as its KEYS property.
type Sender interface {
	SendTrace(ctx context.Context, topic string, keys []string, body []byte) error
	Close() error
}

// SenderOptions is what a trace producer is built from: the client settings of the producer
// or consumer it traces, so it shares their client instance.
type SenderOptions struct {
	NameServers  []string
	InstanceName string
	Transport    remoting.Transport // never owned by the trace producer
	Credentials  remoting.Credentials
	TLSConfig    *tls.Config
	Logger       *zerolog.Logger
}

var (
	senderMu  sync.Mutex
	newSender func(SenderOptions) (Sender, error)
)

// RegisterSenderFactory lets the producer package, which this package cannot import (the
// producer imports it), provide trace producers to consumers.
func RegisterSenderFactory(f func(SenderOptions) (Sender, error)) {
	senderMu.Lock()
	defer senderMu.Unlock()
	newSender = f
}

// NewSender builds a trace producer with the registered factory.
func NewSender(o SenderOptions) (Sender, error) {
	senderMu.Lock()
	f := newSender
	senderMu.Unlock()
	if f == nil {
		return nil, errors.New("trace: no trace producer factory registered (import the producer package)")
	}
	return f(o)
}

// Config configures a Dispatcher; zero fields take the defaults.
type Config struct {
	Topic         string
	QueueSize     int
	BatchSize     int
	MaxMsgSize    int
	FlushInterval time.Duration
	SendTimeout   time.Duration
	// Logger is the owning client's (which names its component): the dispatcher adds
	// "service":"trace", not a second "component", so its lines keep unique keys.
	Logger zerolog.Logger
}

// Dispatcher gathers trace contexts and sends them in batches from one goroutine, so the send
// and consume paths only ever enqueue (RocketMQ's AsyncTraceDispatcher). When its queue is
// full, records are dropped and counted rather than waited for.
type Dispatcher struct {
	cfg    Config
	sender Sender
	log    zerolog.Logger

	mu     sync.RWMutex // guards closed against Append sending on a closed queue
	closed bool
	queue  chan *Context
	done   chan struct{}

	dropped     atomic.Int64
	lastDropLog atomic.Int64 // unix ns of the last warning about drops
	sendErrors  atomic.Int64
}

// NewDispatcher starts a dispatcher sending through s; Close stops it and closes s.
func NewDispatcher(cfg Config, s Sender) *Dispatcher {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxMsgSize <= 0 {
		cfg.MaxMsgSize = DefaultMaxMsgSize
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	d := &Dispatcher{
		cfg:    cfg,
		sender: s,
		log:    cfg.Logger.With().Str("service", "trace").Str("topic", cfg.Topic).Logger(),
		queue:  make(chan *Context, cfg.QueueSize),
		done:   make(chan struct{}),
	}
	go d.run()
	return d
}

// Topic is the trace topic.
func (d *Dispatcher) Topic() string { return d.cfg.Topic }

// Dropped is how many contexts were refused because the queue was full or closed.
func (d *Dispatcher) Dropped() int64 { return d.dropped.Load() }

// SendErrors is how many trace messages failed to send.
func (d *Dispatcher) SendErrors() int64 { return d.sendErrors.Load() }

// Append enqueues c without blocking; false when it was dropped.
func (d *Dispatcher) Append(c *Context) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.closed {
		select {
		case d.queue <- c:
			return true
		default:
		}
	}
	n := d.dropped.Add(1)
	now := time.Now().UnixNano()
	last := d.lastDropLog.Load()
	if now-last >= int64(dropLogPeriod) && d.lastDropLog.CompareAndSwap(last, now) {
		d.log.Warn().Int64("dropped", n).Bool("closed", d.closed).Msg("trace queue full: dropping trace records")
	}
	return false
}

// Close stops accepting contexts, sends what is queued and closes the sender. ctx bounds the
// wait; the sender is closed even when ctx ends first.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.queue)
	}
	d.mu.Unlock()
	var err error
	select {
	case <-d.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return errors.Join(err, d.sender.Close())
}

func (d *Dispatcher) run() {
	defer close(d.done)
	batch := make([]*Context, 0, d.cfg.BatchSize)
	timer := time.NewTimer(d.cfg.FlushInterval)
	timer.Stop()
	for {
		var timeout <-chan time.Time
		if len(batch) > 0 {
			timeout = timer.C
		}
		select {
		case c, ok := <-d.queue:
			if !ok {
				d.flush(batch)
				return
			}
			if len(batch) == 0 {
				timer.Reset(d.cfg.FlushInterval)
			}
			batch = append(batch, c)
			if len(batch) < d.cfg.BatchSize {
				continue
			}
			timer.Stop()
		case <-timeout:
		}
		d.flush(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// flush sends batch as messages of at most MaxMsgSize bytes each (a larger single record goes
// alone), each keyed by the ids and keys of the messages it traces.
func (d *Dispatcher) flush(batch []*Context) {
	var body []byte
	var keys []string
	seen := make(map[string]struct{})
	send := func() {
		if len(body) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.SendTimeout)
		err := d.sender.SendTrace(ctx, d.cfg.Topic, keys, body)
		cancel()
		if err != nil {
			if d.sendErrors.Add(1) == 1 {
				d.log.Warn().Err(err).Msg("sending trace data failed")
			} else {
				d.log.Debug().Err(err).Msg("sending trace data failed")
			}
		}
		body, keys = nil, nil
		clear(seen)
	}
	for _, c := range batch {
		rec := Append(nil, c)
		if len(body) > 0 && len(body)+len(rec) > d.cfg.MaxMsgSize {
			send()
		}
		body = append(body, rec...)
		for _, k := range Keys(c) {
			if _, ok := seen[k]; !ok && k != "" {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
	}
	send()
}
