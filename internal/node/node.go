// Package node wires a name service, a broker and their listeners into one running node. The
// root package mq defines the API (mq.Options, mq.Node, mq.StartNode) and runs this wiring
// behind it; the wiring lives here so that packages the root imports (the consumer's tests
// start nodes) can use it without an import cycle, and so that the module's own tools (mqtest)
// reach the broker through Of without the public API handing out internal types.
package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/broker/services"
	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// Node is a running name service and/or broker. Its methods are safe for concurrent use.
type Node struct {
	opts      Options
	storeHook func(*storage.Options)
	sim       *Sim // nil unless started by StartSim
	// testHookClosed, if set, runs in Close once all but the HTTP listener has closed.
	testHookClosed func()
	log            zerolog.Logger

	nameServer *route.NameServer
	controller addon.Controller              // nil unless Options.Controller.ID
	replicas   *ha.Replicas                  // nil unless Options.ControllerMode.Addrs
	broker     atomic.Pointer[broker.Broker] // replaced by RestartBroker
	brokerTr   *remoting.InProcTransport
	// brokerGate is closed while a broker serves; a RestartBroker replaces it with an open one
	// for the time it swaps brokers, and requests for broker codes wait on it (newEndpoint).
	brokerGate atomic.Pointer[chan struct{}]
	// brokerRun is the running broker's context and its Run's result; restartMu serializes
	// restarts.
	brokerRun struct {
		cancel context.CancelFunc
		done   chan error
	}
	restartMu sync.Mutex
	unrouteHA func() // forgets the slave's faulty dial route (faults.go), or nil
	servers   []*endpoint
	grpc      addon.GRPCServer   // nil unless Options.GRPC.Listen
	acl       *acl.Guard         // nil: ACL off
	secret    *clusterauth.Guard // nil: no ClusterSecret
	ready     chan struct{}      // closed once started: requests held during the start go on

	http httpState

	ctx       context.Context // the node's lifetime (its errgroup's)
	cancel    context.CancelFunc
	g         *errgroup.Group
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// endpoint is one listener with its processor table.
type endpoint struct {
	role string // "namesrv", "broker" or "namesrv+broker"
	d    *remoting.Dispatcher
	srv  listener
}

// Start builds and starts a node, returning once every listener is bound. On error nothing
// is left running.
func Start(opts Options) (*Node, error) { return start(opts, nil) }

// start is Start with a hook that adjusts the store's options before it opens: the package's
// tests shrink the preallocated files with it when they create many queues.
func start(opts Options, storeHook func(*storage.Options)) (*Node, error) {
	return startWith(opts, storeHook, nil)
}

// startWith is start inside a simulation when sim is not nil (StartSim).
func startWith(opts Options, storeHook func(*storage.Options), sim *Sim) (*Node, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	n, err := newNode(opts, sim)
	if err != nil {
		return nil, err
	}
	n.storeHook = storeHook
	if err := n.start(); err != nil {
		return nil, errors.Join(err, n.Close())
	}
	return n, nil
}

func newNode(opts Options, sim *Sim) (*Node, error) {
	l := zerolog.Nop()
	if opts.Logger != nil {
		l = *opts.Logger
	}
	n := &Node{opts: opts, sim: sim, ready: make(chan struct{}), log: l.With().Str("component", "node").Logger()}
	if err := n.loadACL(); err != nil {
		return nil, err
	}
	if opts.Security.ClusterSecret != "" {
		n.secret = clusterauth.NewGuard(opts.Security.ClusterSecret)
	}
	separate := opts.NameServerListen != "" && opts.BrokerListen != ""
	var roles [][2]string // role, address
	switch {
	case !opts.DisableNameServer && !opts.DisableBroker && !separate:
		roles = append(roles, [2]string{"namesrv+broker", opts.Listen})
	default:
		if !opts.DisableNameServer {
			roles = append(roles, [2]string{"namesrv", firstNonEmpty(opts.NameServerListen, opts.Listen)})
		}
		if !opts.DisableBroker {
			roles = append(roles, [2]string{"broker", firstNonEmpty(opts.BrokerListen, opts.Listen)})
		}
	}
	for _, r := range roles {
		ep, err := n.newEndpoint(r[0], r[1])
		if err != nil {
			return nil, err
		}
		n.servers = append(n.servers, ep)
	}
	if !opts.DisableNameServer {
		n.nameServer = route.NewNameServer(opts.nameServerOptions())
		if err := n.nameServer.LoadKVConfig(); err != nil {
			return nil, fmt.Errorf("mq: name service: %w", err)
		}
		n.nameServer.Register(n.servers[0].d, remoting.NewExecutor("namesrv",
			opts.Limits.ServerWorkerThreads, opts.Limits.ServerQueueCapacity))
	}
	n.initMetrics()
	return n, nil
}

func (n *Node) newEndpoint(role, addr string) (*endpoint, error) {
	d := remoting.NewDispatcher(n.opts.Logger)
	if g := n.guard(); g != nil {
		d.SetGuard(g)
	}
	var srv listener
	if n.sim != nil {
		sl, err := newSimListener(addr)
		if err != nil {
			return nil, err
		}
		srv = sl
	} else {
		srv = remoting.NewServer(d, n.opts.serverOptions(addr))
	}
	// Codes nobody serves: while the node starts (the broker registers its processors once
	// the listener is bound and the store recovered) or swaps its broker (RestartBroker), a
	// request waits for the broker and is dispatched again, as if it had come then: a
	// RocketMQ broker does not listen before its store is up, and clients do not retry an
	// answer (an async send would fail across a restart). A code still without a processor
	// then is not supported.
	ex := remoting.NewExecutor("default", 1, 1000)
	d.RegisterDefault(remoting.ProcessorFunc(func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		for {
			select {
			case <-n.ready:
			case <-ctx.Done():
				return remoting.NewResponse(remoting.ServiceNotAvailable, "node is starting"), nil
			}
			gate := n.brokerGate.Load()
			if gate == nil {
				break
			}
			select {
			case <-*gate:
			case <-ctx.Done():
				return remoting.NewResponse(remoting.ServiceNotAvailable, "broker is restarting"), nil
			}
			if n.brokerGate.Load() == gate {
				break
			}
		}
		if !d.Registered(req.Code) {
			return remoting.NewResponse(remoting.RequestCodeNotSupported,
				fmt.Sprintf(" request type %d not supported", req.Code)), nil
		}
		// The guard saw it on its way here: it must not see it again (the cluster secret's
		// nonces would call it a replay).
		d.DispatchAdmitted(ch, req)
		return nil, nil
	}), ex)
	return &endpoint{role: role, d: d, srv: srv}, nil
}

func (n *Node) start() error {
	if err := n.listenHTTP(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.g, ctx = errgroup.WithContext(ctx)
	n.ctx = ctx
	for _, ep := range n.servers {
		ep.d.Start()
		n.g.Go(func() error { return ep.srv.Run(ctx) })
	}
	if n.nameServer != nil {
		n.g.Go(func() error { return n.nameServer.Run(ctx) })
	}
	if f, _ := n.opts.aclFile(); f != nil {
		n.g.Go(func() error {
			return acl.Watch(ctx, f.Path(), f.Parse, n.opts.Security.ACLWatchInterval, n.acl, n.baseLog())
		})
	}
	timeout := time.NewTimer(n.opts.StartTimeout)
	defer timeout.Stop()
	for _, ep := range n.servers {
		select {
		case <-ep.srv.Ready():
		case <-timeout.C:
			return fmt.Errorf("mq: %s listener not ready after %v", ep.role, n.opts.StartTimeout)
		}
		if ep.srv.Addr() == "" {
			cancel()
			return fmt.Errorf("mq: %s listener: %w", ep.role, n.g.Wait())
		}
		registerLocal(ep.srv.Addr(), ep.d)
		n.log.Info().Str("role", ep.role).Str("addr", ep.srv.Addr()).Msg("serving")
	}
	if err := n.startController(); err != nil {
		cancel()
		return err
	}
	if !n.opts.DisableBroker {
		if err := n.startBroker(ctx); err != nil {
			cancel()
			return err
		}
	}
	close(n.ready)
	if err := n.startGRPC(); err != nil {
		cancel()
		return err
	}
	return nil
}

// startBroker opens the store (recovering it if needed) and runs the broker on its listener,
// which is bound by now so the broker knows the address it advertises; it returns once the
// broker is Ready.
func (n *Node) startBroker(ctx context.Context) error {
	ep := n.endpointOf("broker")
	copts := remoting.ClientOptions{Logger: n.opts.Logger}
	if n.opts.Security.TLSClientEnable {
		copts.TLSConfig = n.opts.clientTLS()
	}
	copts.Hooks = n.opts.proveHooks()
	if n.sim != nil {
		n.brokerTr = LocalTransport() // no sockets in a simulation
	} else {
		n.brokerTr = remoting.NewInProcTransport(lookupLocal, remoting.NewClient(copts), 0)
	}
	// The broker's requests to nodes of this process (its own name service among them) pass
	// their guards; those over TCP (registration, controllers, the master's metadata and
	// epochs) carry the cluster proof and are signed with Options.Credentials.
	n.brokerTr.Trust()
	n.faultTransport()
	bo, err := n.opts.brokerOptions(ep.srv.Addr(), n.brokerNameServers(), n.brokerTr)
	if err != nil {
		return err
	}
	if len(n.opts.ControllerMode.Addrs) > 0 {
		return n.startReplicatedBroker(ctx, bo)
	}
	if err := n.runBroker(ctx, bo, nil); err != nil {
		return err
	}
	return n.waitBroker(ctx)
}

// runBroker builds a broker from bo, installs it on the broker listener's dispatcher and runs
// it under a context of its own (a child of ctx), so RestartBroker can stop it without
// stopping the node. prev, when not nil, is the stopped broker it replaces, whose clients'
// registrations it takes over (Broker.AdoptClients).
func (n *Node) runBroker(ctx context.Context, bo broker.Options, prev *broker.Broker) error {
	if n.storeHook != nil {
		n.storeHook(&bo.Store)
	}
	if n.acl != nil {
		// Requests that read messages by offset or key are checked again on the topic of
		// what they read, which the guard in front of the processor cannot know.
		bo.ReadCheck = n.acl.CheckRead
		bo.WriteCheck = n.acl.CheckWrite
	}
	b, err := broker.New(bo)
	if err != nil {
		return fmt.Errorf("mq: %w", err)
	}
	if err := services.Attach(b, n.serviceDeps()); err != nil {
		return fmt.Errorf("mq: %w", errors.Join(err, b.Close()))
	}
	if prev != nil {
		b.AdoptClients(prev)
	}
	n.broker.Store(b)
	n.faultHA(b)
	b.Register(n.endpointOf("broker").d)
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	n.brokerRun.cancel, n.brokerRun.done = cancel, done
	n.g.Go(func() error {
		err := b.Run(bctx)
		done <- err
		return err
	})
	return nil
}

// RestartBroker replaces the node's broker by one built from its options as edit changes
// them, on the same listener and store directory: a role change of controller mode (RocketMQ
// 5 switches roles in place; mq restarts the broker part, which also cuts the store where a
// new master's history parts from it). Requests for broker codes wait meanwhile and are then
// served by the new broker; clients keep their connections and their registrations (the new
// broker adopts the old one's producer and consumer tables). It returns once the new broker is
// Ready. On error the node is left without a broker (Broker returns nil) and the error says
// why; the next RestartBroker starts one.
func (n *Node) RestartBroker(edit func(*broker.Options)) error {
	n.restartMu.Lock()
	defer n.restartMu.Unlock()
	if n.opts.DisableBroker {
		return errors.New("mq: no broker to restart")
	}
	gate := make(chan struct{})
	n.brokerGate.Store(&gate)
	defer func() {
		close(gate)
	}()
	ep := n.endpointOf("broker")
	prev := n.broker.Load()
	if err := n.stopBroker(ep); err != nil {
		return err
	}
	bo, err := n.opts.brokerOptions(ep.srv.Addr(), n.brokerNameServers(), n.brokerTr)
	if err != nil {
		return err
	}
	if edit != nil {
		edit(&bo)
	}
	if err := n.runBroker(n.ctx, bo, prev); err != nil {
		return err
	}
	return n.waitRestarted()
}

// stopBroker stops and closes the running broker, if any, and leaves the node without one: a
// restart that fails after this point (the new broker's store does not open) must not leave
// the next one waiting for a Run that ended long ago. n.restartMu must be held.
func (n *Node) stopBroker(ep *endpoint) error {
	old := n.broker.Load()
	if old == nil {
		return nil
	}
	old.Unregister(ep.d)
	n.brokerRun.cancel()
	runErr := <-n.brokerRun.done
	n.broker.Store(nil)
	n.brokerRun.cancel, n.brokerRun.done = nil, nil
	if err := old.Close(); err != nil {
		return fmt.Errorf("mq: closing the broker: %w", errors.Join(runErr, err))
	}
	if runErr != nil {
		return fmt.Errorf("mq: stopping the broker: %w", runErr)
	}
	return nil
}

// waitRestarted waits until the restarted broker is Ready, its Run failed, the node closes,
// or StartTimeout passed. It runs on a goroutine of the node's errgroup (the replicas
// manager), so unlike waitBroker it must not wait for the group.
func (n *Node) waitRestarted() error {
	timeout := time.NewTimer(n.opts.StartTimeout)
	defer timeout.Stop()
	select {
	case <-n.broker.Load().Ready():
		return nil
	case err := <-n.brokerRun.done:
		n.brokerRun.done <- err // for the next RestartBroker
		return fmt.Errorf("mq: restarted broker stopped: %v", err)
	case <-n.ctx.Done():
		return fmt.Errorf("mq: node closing: %w", n.ctx.Err())
	case <-timeout.C:
		return fmt.Errorf("mq: restarted broker not ready after %v", n.opts.StartTimeout)
	}
}

// brokerNameServers are the name servers the broker registers with: Options.NameServers, else
// this node's own.
func (n *Node) brokerNameServers() []string {
	if len(n.opts.NameServers) == 0 && n.nameServer != nil {
		return []string{n.endpointOf("namesrv").srv.Addr()}
	}
	return n.opts.NameServers
}

// waitBroker waits until the broker is Ready, a part of the node failed, or StartTimeout passed.
func (n *Node) waitBroker(ctx context.Context) error {
	timeout := time.NewTimer(n.opts.StartTimeout)
	defer timeout.Stop()
	select {
	case <-n.broker.Load().Ready():
	case <-ctx.Done():
		n.cancel()
		return fmt.Errorf("mq: %w", n.g.Wait())
	case <-timeout.C:
		return fmt.Errorf("mq: broker not ready after %v", n.opts.StartTimeout)
	}
	if addr := n.broker.Load().HAAddr(); addr != "" {
		n.log.Info().Str("role", "ha").Str("addr", addr).Msg("serving")
	}
	return nil
}

func (n *Node) endpointOf(role string) *endpoint {
	for _, ep := range n.servers {
		if ep.role == role || ep.role == "namesrv+broker" {
			return ep
		}
	}
	return nil
}

// Addr is the address of the node's first listener: the shared one, or the name service's when
// the roles listen apart.
func (n *Node) Addr() string { return n.servers[0].srv.Addr() }

// NameServerAddr is where the name service listens, or "" when this node has none.
func (n *Node) NameServerAddr() string { return n.addrOf("namesrv") }

// BrokerAddr is where the broker listens, or "" when this node has none.
func (n *Node) BrokerAddr() string { return n.addrOf("broker") }

func (n *Node) addrOf(role string) string {
	if ep := n.endpointOf(role); ep != nil {
		return ep.srv.Addr()
	}
	return ""
}

// HAAddr is the advertised address of a master's HA listener, or "" for a slave or a node
// without a broker.
func (n *Node) HAAddr() string {
	b := n.broker.Load()
	if b == nil {
		return ""
	}
	return b.HAAddr()
}

// loadACL compiles the ACL of Options.Security.ACL or Options.Security.ACLFile, when either is set.
func (n *Node) loadACL() error {
	cfg := n.opts.Security.ACL
	if f, _ := n.opts.aclFile(); f != nil {
		data, err := os.ReadFile(f.Path())
		if err == nil {
			cfg, err = f.Parse(data)
		}
		if err != nil {
			return fmt.Errorf("mq: ACLFile: %w", err)
		}
	}
	if cfg == nil {
		return nil
	}
	c, err := acl.New(cfg)
	if err != nil {
		return fmt.Errorf("mq: ACL: %w", err)
	}
	n.acl = new(acl.Guard)
	n.acl.Store(c)
	return nil
}

// UpdateACL replaces the accounts and permissions of a node started with ACL; requests from
// then on are checked against cfg. A cfg that does not validate changes nothing.
func (n *Node) UpdateACL(cfg *acl.Config) error {
	if n.acl == nil {
		return errors.New("mq: the node was started without ACL")
	}
	if cfg == nil {
		return errors.New("mq: UpdateACL needs a configuration (ACL cannot be turned off while running)")
	}
	c, err := acl.New(cfg)
	if err != nil {
		return fmt.Errorf("mq: ACL: %w", err)
	}
	n.acl.Store(c)
	return nil
}

// ACLRefusals is how many requests ACL has refused on this node's listeners (0 without ACL).
func (n *Node) ACLRefusals() uint64 {
	if n.acl == nil {
		return 0
	}
	return n.acl.Refused()
}

// Broker gives direct access to this node's broker, or nil when it has none, for the module's
// own tests and tools.
func (n *Node) Broker() *broker.Broker { return n.broker.Load() }

// NameServer gives direct access to this node's route table, or nil when it has none.
func (n *Node) NameServer() *route.NameServer { return n.nameServer }

// NewTransport returns a transport that reaches nodes of this process in-process (no socket, no
// encoding) and every other address over TCP. The caller closes it.
func (n *Node) NewTransport() remoting.Transport {
	if n.sim != nil {
		return LocalTransport()
	}
	return remoting.NewInProcTransport(lookupLocal,
		remoting.NewClient(remoting.ClientOptions{Logger: n.opts.Logger}), 0)
}

// baseLog is the logger the node was given, without the node's component, for parts that
// name their own (a second "component" key would make their lines invalid for strict JSON
// readers); a no-op logger when the node runs silent.
func (n *Node) baseLog() zerolog.Logger {
	if n.opts.Logger == nil {
		return zerolog.Nop()
	}
	return *n.opts.Logger
}

// Logger is the logger the node was given (nil when it runs silent).
func (n *Node) Logger() *zerolog.Logger { return n.opts.Logger }

// Of returns the node behind a *mq.Node (nil for anything else). Package mq sets it in its
// init, so that mqtest and the module's tests reach the broker and the route table while the
// public API offers neither.
var Of func(mqNode any) *Node

// NameServers is where this node's clients look up routes: its own name service, else the
// ones its broker registers with.
func (n *Node) NameServers() []string {
	if a := n.NameServerAddr(); a != "" {
		return []string{a}
	}
	return n.opts.NameServers
}

// Close stops the node: listeners first, then in-flight requests drain, then background
// services, and the HTTP listener (Options.HTTP.Listen) last. It waits for every goroutine the node started and is safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closing.Store(true)
		// The gRPC endpoint first: its calls are requests to the broker, which must still
		// answer them while they end.
		if n.grpc != nil {
			n.closeErr = n.grpc.Close()
		}
		for _, ep := range n.servers {
			unregisterLocal(ep.srv.Addr(), ep.d)
		}
		if n.cancel != nil {
			n.cancel()
			n.closeErr = n.g.Wait()
		}
		for _, ep := range n.servers {
			ep.d.Close()
		}
		if n.controller != nil {
			n.closeErr = errors.Join(n.closeErr, n.controller.Close())
		}
		if b := n.broker.Load(); b != nil {
			n.closeErr = errors.Join(n.closeErr, b.Close())
		}
		if n.brokerTr != nil {
			n.closeErr = errors.Join(n.closeErr, n.brokerTr.Close())
		}
		if n.unrouteHA != nil {
			n.unrouteHA()
		}
		if h := n.testHookClosed; h != nil {
			h()
		}
		// Last, so that probes read "closing" for as long as the node takes to close.
		n.closeErr = errors.Join(n.closeErr, n.closeHTTP())
		n.log.Info().Msg("closed")
	})
	return n.closeErr
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Nodes started in this process, by listen address, for in-process transports.
var local struct {
	sync.RWMutex
	m map[string]*remoting.Dispatcher
}

func registerLocal(addr string, d *remoting.Dispatcher) {
	local.Lock()
	defer local.Unlock()
	if local.m == nil {
		local.m = make(map[string]*remoting.Dispatcher)
	}
	local.m[addr] = d
}

func unregisterLocal(addr string, d *remoting.Dispatcher) {
	local.Lock()
	defer local.Unlock()
	if local.m[addr] == d {
		delete(local.m, addr)
	}
}

func lookupLocal(addr string) *remoting.Dispatcher {
	local.RLock()
	defer local.RUnlock()
	return local.m[addr]
}
