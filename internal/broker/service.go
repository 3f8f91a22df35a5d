package broker

import (
	"context"
	"errors"

	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// A Service is a part of the broker kept in a package of its own — transactions, scheduled
// delivery and timers, request-reply, HA and controller mode, statistics, admin — that owns
// its request codes, its state, its files and its background loops, and reaches the core only
// through its views (Topics, Groups, Offsets, Clients, Messages), its Seams, its Hooks, its
// Pools, Store, Logger and Options. The node builds the core with New, builds each service over
// it and attaches it with Attach, then calls Register and Run.
type Service interface {
	// Handlers are the request codes the service serves. Register installs them behind the
	// core's checks of the names a request carries; Unregister takes them out.
	Handlers() []Handler
	// Run runs the service's background loops until ctx ends. A service without loops returns
	// nil at once. An error stops the broker.
	Run(ctx context.Context) error
	// Close writes what the service keeps on disk. It is called once, after Run has returned
	// (or without Run when the broker never ran), before the store closes.
	Close() error
}

// Handler is one request code a service serves.
type Handler struct {
	Code int32
	// Names are the header fields that carry topic or group names, checked before Proc runs;
	// nil when the header carries none (a body's names are the processor's to check).
	Names []reqnames.Field
	Proc  remoting.Processor
	// Pool is the executor the request runs on: one of Pools' or the service's own.
	Pool *remoting.Executor
	// MaxBody, when above 0, is the longest body the code takes: a longer one is answered
	// SYSTEM_ERROR by the dispatcher and dropped as it arrives, never buffered whole
	// (remoting.Dispatcher.SetMaxBody).
	MaxBody int
	// Inline, when set, reports the requests Proc answers without blocking or waiting: the
	// transport may run those on its own goroutine instead of Pool (remoting.Dispatcher.
	// RegisterInline, as the core does for sends appended under ASYNC_FLUSH).
	Inline func(*remoting.Command) bool
}

// Pools are the core's request executors, as RocketMQ's BrokerController keeps them; a service
// runs its handlers on one of them unless it needs its own.
type Pools struct {
	Send, Pull, Query, Admin, Client, Heartbeat *remoting.Executor
}

// Hooks are where services join the core's paths. A service adds to them while it is built
// (after New, before Register and Run); the core calls them in the order they were added, on
// its own goroutines, so a hook must not block.
type Hooks struct {
	onDispatch  []func(storage.DispatchEvent)
	onHeartbeat []func(ch remoting.Channel, clientID string)
	onConnClose []func(ch remoting.Channel)
}

// OnDispatch adds f to the store's dispatch: f sees every record once its ConsumeQueue unit is
// written, after the core has woken the pulls parked on its queue.
func (h *Hooks) OnDispatch(f func(storage.DispatchEvent)) { h.onDispatch = append(h.onDispatch, f) }

// OnHeartbeat adds f to the handling of every HEART_BEAT that passed the core's checks.
func (h *Hooks) OnHeartbeat(f func(ch remoting.Channel, clientID string)) {
	h.onHeartbeat = append(h.onHeartbeat, f)
}

// OnConnClose adds f to the core's cleanup of a connection that closed, failed or went idle.
func (h *Hooks) OnConnClose(f func(ch remoting.Channel)) { h.onConnClose = append(h.onConnClose, f) }

func (h *Hooks) dispatched(e storage.DispatchEvent) {
	for _, f := range h.onDispatch {
		f(e)
	}
}

func (h *Hooks) heartbeat(ch remoting.Channel, clientID string) {
	for _, f := range h.onHeartbeat {
		f(ch, clientID)
	}
}

func (h *Hooks) connClosed(ch remoting.Channel) {
	for _, f := range h.onConnClose {
		f(ch)
	}
}

// Attach adds s to the broker: Register installs its handlers, Run runs it, Close closes it.
// Call it after New and before Register and Run.
func (b *Broker) Attach(s Service) { b.services = append(b.services, s) }

// Hooks are the core's hook points (see Hooks).
func (b *Broker) Hooks() *Hooks { return &b.hooks }

// Pools are the core's request executors.
func (b *Broker) Pools() Pools {
	return Pools{Send: b.sendEx, Pull: b.pullEx, Query: b.queryEx, Admin: b.adminEx, Client: b.clientEx,
		Heartbeat: b.heartbeatEx}
}

// Logger is the logger the node gave the broker, without the broker's fields: a service adds
// its own component.
func (b *Broker) Logger() *zerolog.Logger { return b.opts.Logger }

// Options are the broker's settings, defaults applied. Read them; never change them.
func (b *Broker) Options() *Options { return &b.opts }

// registerServices installs the handlers of every attached service on d.
func (b *Broker) registerServices(d *remoting.Dispatcher) {
	for _, s := range b.services {
		for _, h := range s.Handlers() {
			if h.Inline != nil {
				b.codes = append(b.codes, h.Code)
				d.RegisterInline(h.Code, guardNames(h.Code, h.Names, h.Proc), h.Pool, h.Inline)
			} else {
				b.handleNamed(d, h.Code, h.Names, h.Proc, h.Pool)
			}
			if h.MaxBody > 0 {
				d.SetMaxBody(h.Code, h.MaxBody, remoting.RequestCodeName(h.Code))
			}
		}
	}
}

// runServices starts every attached service's Run.
func (b *Broker) runServices(ctx context.Context, run func(func() error)) {
	for _, s := range b.services {
		run(func() error { return s.Run(ctx) })
	}
}

// closeServices closes every attached service, last attached first.
func (b *Broker) closeServices() error {
	var errs []error
	for i := len(b.services) - 1; i >= 0; i-- {
		errs = append(errs, b.services[i].Close())
	}
	return errors.Join(errs...)
}
