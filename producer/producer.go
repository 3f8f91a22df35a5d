package producer

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/trace"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Producer sends messages to RocketMQ 4.x brokers (this module's nodes or Apache's), in-process
// or over TCP. It is ready when New returns and safe for concurrent use; Close it when done.
type Producer struct {
	cfg       config
	wireGroup string
	// headerRoom is the room a send's header leaves for the fields signing adds.
	headerRoom int
	inst       *client.Instance
	tr         remoting.Transport
	log        zerolog.Logger
	fault      *faultTolerance

	pubMu sync.RWMutex
	pubs  map[string]*publishInfo // wire topic -> queues
	// replyClusters are the clusters whose reply topic a request asked the route of (request.go).
	replyClusters sync.Map

	// life guards closed against the count of inflight: a send registers under the read lock,
	// Close flips closed under the write lock and then waits for drained, which the send that
	// brings the count to zero after the flip signals (no goroutine waits on Close's behalf, so
	// none outlives a Close that gave up at its timeout).
	life     sync.RWMutex
	closed   bool
	closing  chan struct{} // closed by Close: ends the pauses of sends waiting for a broker
	inflight atomic.Int64
	drained  chan struct{} // 1-buffered: the last send after Close says so
	asyncSem chan struct{} // one token per SendAsync awaiting its callback
	batches  *asyncBatcher // WithAsyncBatching's; nil without

	// tracer is WithTrace's dispatcher; nil without.
	tracer *trace.Dispatcher

	closeOnce sync.Once
	closeErr  error
}

// New validates the options, acquires the shared client instance and registers the group.
// There is no Start: the producer is ready when New returns. The first send to a topic fetches
// its route.
func New(opts ...Option) (*Producer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	for _, tr := range cfg.owned {
		if tr != nil && tr != cfg.transport {
			_ = tr.Close() // handed over, then replaced by a later option
		}
	}
	if err := cfg.validate(); err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			_ = cfg.transport.Close()
		}
		return nil, err
	}
	inst, err := client.Acquire(client.Options{
		NameServers:             cfg.nameServers,
		InstanceName:            cfg.instanceName,
		Transport:               cfg.transport,
		OwnTransport:            cfg.ownTransport,
		Credentials:             cfg.credentials,
		TLSConfig:               cfg.tlsConfig,
		PollNameServerInterval:  cfg.pollInterval,
		HeartbeatBrokerInterval: cfg.heartbeatInterval,
		Namespace:               cfg.namespace,
		Logger:                  cfg.logger,
	})
	if err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			_ = cfg.transport.Close()
		}
		return nil, err
	}
	p := &Producer{
		cfg:       cfg,
		wireGroup: cfg.group,
		inst:      inst,
		tr:        inst.Transport(),
		fault:     newFaultTolerance(cfg.faultTolerance, cfg.now),
		pubs:      make(map[string]*publishInfo),
		asyncSem:  make(chan struct{}, cfg.maxAsyncInFlight),
		closing:   make(chan struct{}),
		drained:   make(chan struct{}, 1),
	}
	if cfg.namespace != "" {
		p.wireGroup = names.WrapNamespace(cfg.namespace, cfg.group)
	}
	if !cfg.credentials.IsZero() {
		p.headerRoom = remoting.SignatureFields
	}
	if cfg.asyncBatching {
		p.batches = newAsyncBatcher(p)
	}
	l := inst.Logger()
	p.log = l.With().Str("component", "producer").Str("group", p.wireGroup).Logger()
	if err := p.startTrace(); err != nil {
		return nil, errors.Join(err, inst.Release())
	}
	if err := inst.RegisterProducer(p.wireGroup); err != nil {
		return nil, errors.Join(err, inst.Release())
	}
	if cfg.txListener != nil {
		inst.RegisterTransactionChecker(p.wireGroup, p.checkTransaction)
	}
	return p, nil
}

// ClientID returns the client id (ip@instance) brokers see.
func (p *Producer) ClientID() string { return p.inst.ClientID() }

// Close stops accepting sends, sends the batches of SendAsync still open (WithAsyncBatching),
// waits for in-flight sends (sync and async, at most the close timeout; async callbacks still
// run afterwards if their responses arrive), unregisters the group from the brokers and
// releases the client instance. A send pausing for an unreachable broker is not waited for:
// it fails with ErrClosed at once (async: when its pause ends, within 500 ms). It is safe to
// call more than once.
func (p *Producer) Close() error {
	p.closeOnce.Do(func() {
		p.life.Lock()
		p.closed = true
		p.life.Unlock()
		close(p.closing)
		if p.batches != nil {
			p.batches.flush(true)
		}
		if p.inflight.Load() > 0 {
			t := time.NewTimer(p.cfg.closeTimeout)
			select {
			case <-p.drained:
			case <-t.C:
				p.log.Warn().Int64("timeout_ms", p.cfg.closeTimeout.Milliseconds()).Msg("closing with sends still in flight")
			}
			t.Stop()
		}
		if p.cfg.txListener != nil {
			p.inst.RegisterTransactionChecker(p.wireGroup, nil)
		}
		p.stopTrace()
		p.inst.UnregisterProducer(p.wireGroup)
		p.closeErr = p.inst.Release()
	})
	return p.closeErr
}

// begin registers an in-flight send; false once the producer is closed.
func (p *Producer) begin() bool {
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

// end is begin's counterpart, once per send that began.
func (p *Producer) end() {
	if p.inflight.Add(-1) != 0 {
		return
	}
	p.life.RLock()
	closed := p.closed
	p.life.RUnlock()
	if closed {
		select {
		case p.drained <- struct{}{}:
		default:
		}
	}
}
