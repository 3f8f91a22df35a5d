package broker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/broker/tables"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// Broker is a RocketMQ broker: the message store, the request processors, replication and the
// managers of topics, subscription groups, consumer offsets and clients. Build it with New,
// install its processors with Register, run it with Run (Ready says when it serves), stop it
// with Close.
type Broker struct {
	opts      Options
	log       zerolog.Logger
	store     *storage.Store
	storeHost netip.AddrPort

	// The metadata tables and their writer (internal/broker/tables).
	topics  *tables.Topics
	groups  *tables.Groups
	offsets *tables.Offsets
	meta    *tables.Writer
	// topicCreates and topicsFull bound topic auto-creation (topic_create.go).
	topicCreates *tables.CreateLimiter
	topicsFull   tables.Refusals

	// Request pools, as RocketMQ's BrokerController keeps them.
	sendEx, pullEx, queryEx, adminEx, clientEx, heartbeatEx *remoting.Executor

	// The parts built in their own files.
	send    *sender
	clients *clientManager
	pull    *puller
	query   *querier

	// runners are the background services Run starts, in order.
	runners []func(ctx context.Context) error
	// services are the parts in packages of their own (service.go); hooks are where they join
	// the core's paths.
	services []Service
	hooks    Hooks
	// seams are where services plug into the core's paths (seams.go).
	seams Seams

	// codes are the request codes Register installed; removeListener takes its connection
	// listener out (Unregister).
	codes          []int32
	removeListener func()

	registrar *registrar.Registrar // REGISTER_BROKER with every name server (registration.go)
	perm      atomic.Int32         // brokerPermission (registration.go)
	ready     chan struct{}        // closed by Run once it serves (Ready)
	closeOnce sync.Once
	closeErr  error
}

// New opens (and recovers) the store and loads the broker's metadata. It starts nothing.
func New(opts Options) (*Broker, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		opts:         opts,
		log:          opts.Logger.With().Str("component", "broker").Str("broker", opts.Broker.Name).Logger(),
		storeHost:    netip.MustParseAddrPort(opts.BrokerAddr),
		topicCreates: tables.NewCreateLimiter(opts.Limits.AutoCreateTopicBurst, opts.Limits.AutoCreateTopicRate),
		ready:        make(chan struct{}),
		sendEx:       remoting.NewExecutor("send", opts.SendThreads, 10000),
		pullEx:       remoting.NewExecutor("pull", opts.PullThreads, 100000),
		queryEx:      remoting.NewExecutor("query", opts.QueryThreads, 20000),
		adminEx:      remoting.NewExecutor("admin", opts.AdminThreads, 10000),
		clientEx:     remoting.NewExecutor("client", opts.ClientThreads, 100000),
		heartbeatEx:  remoting.NewExecutor("heartbeat", 2, 50000),
	}
	b.seams.role, b.seams.controllerMode = opts.Broker.Role, opts.ControllerMode
	storeOpts := opts.Store
	storeOpts.Logger = opts.Logger
	storeOpts.Slave = opts.Broker.Role == storage.Slave
	storeOpts.DelayLevels = opts.Timers.DelayLevels
	storeOpts.OnDispatch = b.onDispatch
	storeOpts.RetentionFloor = b.seams.retentionFloor
	storeOpts.ConsumedOffsets = b.slowestConsumedOffsets
	store, err := storage.Open(storeOpts)
	if err != nil {
		return nil, fmt.Errorf("broker: open store: %w", err)
	}
	b.store = store
	b.perm.Store(route.PermReadWrite)
	b.registrar = newRegistrar(b)
	if err := b.loadMetadata(); err != nil {
		return nil, errors.Join(err, store.Close())
	}
	b.addRunner(b.meta.Run)
	b.send = newSender(b)
	b.clients = newClientManager(b)
	b.pull = newPuller(b)
	b.query = &querier{b}
	return b, nil
}

// slowestConsumedOffsets is the store's ConsumedOffsets (tables.Offsets.Slowest). The store
// calls it only after a round deleted unexpired segments, never before New has loaded the
// offsets, but a nil table answers none.
func (b *Broker) slowestConsumedOffsets() map[string]map[int32]int64 {
	if b.offsets == nil {
		return nil
	}
	return b.offsets.Slowest()
}

// onDispatch is the store's dispatch hook: wake held pulls, then the services' hooks (the HA
// writers among them, which stream at once what the log grew by).
func (b *Broker) onDispatch(e storage.DispatchEvent) {
	b.pull.onMessageArriving(e)
	b.hooks.dispatched(e)
}

// loadMetadata loads the topic, group and offset tables from <store>/config; a topic change
// waits for its registration round (registrar.RegisterChanged) as well as for the writer.
func (b *Broker) loadMetadata() error {
	o := b.opts
	t, err := tables.Load(tables.Config{
		Log:                                b.log,
		Path:                               b.configPath,
		ClusterName:                        o.Broker.ClusterName,
		BrokerName:                         o.Broker.Name,
		DisableAutoCreateTopic:             o.Broker.DisableAutoCreateTopic,
		DefaultTopicQueueNums:              o.DefaultTopicQueueNums,
		DisableAutoCreateSubscriptionGroup: o.DisableAutoCreateSubscriptionGroup,
		MaxTopics:                          o.Limits.MaxTopics,
		MaxSubscriptionGroups:              o.Limits.MaxSubscriptionGroups,
		MaxQueueNums:                       o.Limits.MaxQueueNums,
		FlushInterval:                      o.Periods.FlushConsumerOffsetInterval,
		TopicWriteWait:                     topicWriteWaitTimeout,
		OnTopicsChanged:                    func() { b.registrar.RegisterChanged() },
	})
	if err != nil {
		return err
	}
	b.topics, b.groups, b.offsets, b.meta = t.Topics, t.Groups, t.Offsets, t.Writer
	return nil
}

// topicWriteWaitTimeout bounds how long a topic change waits for the metadata writer: its
// pass and the one before.
const topicWriteWaitTimeout = 2 * registrar.Timeout

// Register installs every processor of the broker on d and its connection listener; Unregister
// takes them out again.
func (b *Broker) Register(d *remoting.Dispatcher) {
	// Requests are answered from now on, before Run has started the metadata writer: topic
	// changes must wait for its first pass from here, or a topic answered SUCCESS could be
	// lost to a crash (CI caught one after SIGKILL). A Run that never starts the writer ends
	// with Close, whose FlushAll releases them.
	b.meta.Start()
	b.send.register(d)
	b.clients.registerClients(d)
	b.pull.registerPull(d)
	b.send.registerRetry(d)
	b.query.register(d)
	b.registerServices(d)
	b.removeListener = d.AddConnListener(b.clients.onConnEvent)
	// Registrations adopted from the broker this one replaces whose connection closed after
	// that broker stopped listening: nobody told either broker.
	b.clients.dropClosed()
}

// Unregister takes the broker's processors and connection listener out of d, waiting for the
// requests its pools hold: a node replacing its broker (a role change) calls it before it
// stops this one. Requests for the broker's codes then go to d's default processor.
func (b *Broker) Unregister(d *remoting.Dispatcher) {
	if b.removeListener != nil {
		b.removeListener()
	}
	d.Unregister(b.codes)
}

// AdoptClients takes over the producer and consumer registrations of prev, the broker this
// one replaces on the same listener (a role change of controller mode: the node's
// RestartBroker), whose clients keep their connections. RocketMQ 5 changes roles in place,
// its client tables untouched; a broker starting with empty ones would answer a group's
// member list with only the members whose heartbeat reached it first, and each of them would
// take queues the others still consume: the same messages delivered twice, and the others'
// lower offsets committed over theirs. Call it after New and before Register (whose sweep
// drops what closed in between); prev must be stopped.
func (b *Broker) AdoptClients(prev *Broker) {
	b.clients.consumers.Adopt(prev.clients.consumers)
}

// Run starts replication (a master binds its HA listener first, so that its address goes
// out with the first REGISTER_BROKER), registers with the name servers once, closes Ready, and
// runs the store and the broker's background services, the metadata writer among them, until
// ctx ends. It returns once they all have; the writer's last pass has then written what
// changed. The first failing service stops the others; a master whose HA listener cannot bind
// returns that error and never gets Ready. Call it once.
func (b *Broker) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	if err := b.seams.startReplication(ctx, g.Go); err != nil || ctx.Err() != nil {
		// Stopped, or the HA listener failed, before it was bound: g.Wait says which.
		stop()
		return errors.Join(err, g.Wait())
	}
	b.registrar.RegisterFirst(ctx)
	g.Go(func() error { return b.store.Run(ctx) })
	g.Go(func() error { return b.registrar.Run(ctx) })
	for _, r := range b.runners {
		g.Go(func() error { return r(ctx) })
	}
	b.runServices(ctx, g.Go)
	g.Go(func() error { return b.clients.startReregisterGrace(ctx) })
	close(b.ready)
	b.log.Info().Str("addr", b.opts.BrokerAddr).Str("role", string(b.opts.Broker.Role)).Str("ha_addr", b.HAAddr()).
		Str("store", b.opts.Store.Dir).Strs("namesrv", b.opts.NameServers).Msg("broker started")
	return g.Wait()
}

// Ready is closed once Run has bound the HA listener (masters), registered with the name
// servers once and started every service. It stays open if Run fails first.
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// Close writes every metadata table (also what services changed after the writer's last pass)
// and closes the store. Call it after Run has returned; safe to call twice.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.closeErr = errors.Join(b.closeServices(), b.persistAll(), b.store.Close())
	})
	return b.closeErr
}

// persistAll writes every metadata table, dirty or not: a table loaded from disk and never
// changed is rewritten whole, as RocketMQ's shutdown persists every ConfigManager.
func (b *Broker) persistAll() error { return b.meta.FlushAll() }

// Store exposes the message store (tests and the node's admin use it).
func (b *Broker) Store() *storage.Store { return b.store }

// Addr is the broker's advertised address.
func (b *Broker) Addr() string { return b.opts.BrokerAddr }

// HAAddr is the address a master advertises its HA listener under, sent in REGISTER_BROKER so
// slaves learn it; "" on a slave, without replication, and until Run has bound the listener.
func (b *Broker) HAAddr() string { return b.seams.haAddr() }

// IsMaster reports whether this broker takes writes.
func (b *Broker) IsMaster() bool { return b.opts.Broker.ID == 0 }

// addRunner adds a background service to Run. Call it from an init* function only.
func (b *Broker) addRunner(r func(ctx context.Context) error) { b.runners = append(b.runners, r) }

// configPath is where a metadata file lives: <store>/config/<name>.
func (b *Broker) configPath(name string) string { return b.store.ConfigPath(name) }

// handle installs p for code on d behind the broker's checks of the names a request carries
// (internal/broker/reqnames), so no processor can see a topic or group that was not validated.
func (b *Broker) handle(d *remoting.Dispatcher, code int32, p remoting.Processor, ex *remoting.Executor) {
	fields, ok := reqnames.Fields(code)
	if !ok {
		b.log.Warn().Int32("code", code).Str("request", remoting.RequestCodeName(code)).Msg("processor registered without an entry in requestNames: " +
			"its names are not checked")
	}
	b.handleNamed(d, code, fields, p, ex)
}

// handleNamed installs p for code on d behind the checks of the header fields that carry names.
func (b *Broker) handleNamed(d *remoting.Dispatcher, code int32, fields []reqnames.Field, p remoting.Processor, ex *remoting.Executor) {
	b.codes = append(b.codes, code)
	d.Register(code, guardNames(code, fields, p), ex)
}
