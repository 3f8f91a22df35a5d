// Package registrar is a broker's side of the name servers (RocketMQ's BrokerOuterAPI with
// BrokerController's registration schedule): REGISTER_BROKER rounds, periodic and woken by
// topic changes, QUERY_DATA_VERSION before a periodic round when forced registration is off,
// and UNREGISTER_BROKER when the broker stops. It knows the broker only through Config (its
// identity, its name servers, its topic table's registration snapshots, its permission, its HA
// address), so
// the broker's core imports it and it imports nothing of the core.
package registrar

import (
	"context"
	"time"

	"github.com/mqgo/mq/internal/broker/tickets"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Timeout bounds one REGISTER_BROKER or QUERY_DATA_VERSION (registerBrokerTimeoutMills). The
// core sizes its own waits on topic changes after it.
const Timeout = 6 * time.Second

// registerNameServerPeriodMax caps the period of the periodic rounds, as BrokerController.start
// does (min(registerNameServerPeriod, 60 s)): a name server expires a broker silent for 120 s,
// so a longer period would let it drop live brokers.
const registerNameServerPeriodMax = 60 * time.Second

// registerWaitTimeout bounds how long a topic change waits for its registration round: the
// round in flight, then the one that carries the change.
const registerWaitTimeout = 2 * Timeout

// Config is what the registrar needs of the broker. The topic table is reached through
// functions rather than a type so that the table's owner stays the core's business.
type Config struct {
	// The broker's identity, as every REGISTER_BROKER, QUERY_DATA_VERSION and
	// UNREGISTER_BROKER carries it.
	ClusterName, BrokerName, BrokerAddr string
	BrokerID                            int64
	// NameServers are registered with; none makes the registrar idle.
	NameServers []string
	// Transport carries the requests to the name servers.
	Transport remoting.Transport
	// Schedule is when the periodic rounds run (NewSchedule).
	Schedule Schedule
	// DisableForceRegister makes a periodic round ask QUERY_DATA_VERSION first and register
	// only with a changed answer (RocketMQ's forceRegister false).
	DisableForceRegister bool
	// Log is the broker's logger: the registrar's lines are the broker's.
	Log zerolog.Logger

	// WholeTopics returns every topic with the table's data version, for a whole registration;
	// the table counts everything as registered from then on.
	WholeTopics func() route.TopicConfigSerializeWrapper
	// TakePendingTopics returns, and forgets, the names of the topics created or changed since
	// a round last took them.
	TakePendingTopics func() []string
	// IncrementTopics returns the named topics under a data version of their own, for an
	// incremental registration.
	IncrementTopics func(names []string) route.TopicConfigSerializeWrapper
	// Permission is the broker's permission (RocketMQ's brokerPermission), read for every
	// registration: when it is not read and write, every topic is registered with it instead
	// of its own (withPermission). Nil means read and write.
	Permission func() int32
	// HAAddr is the HA address a master advertises, "" when none; read for every registration
	// since the listener is bound after the registrar is built.
	HAAddr func() string
	// Registered receives every name server's REGISTER_BROKER answer (the master's HA address
	// for a slave).
	Registered func(*route.RegisterBrokerResult)
}

// Registrar runs the registration rounds. Its state is the wake-up channel and the tickets
// topic changes wait on; it holds no lock of its own.
type Registrar struct {
	cfg Config
	// registerNow wakes the registration loop (triggerRegister).
	registerNow chan struct{}
	// reg holds the registration rounds that topic changes wait for.
	reg *tickets.Rounds
}

// New returns a registrar that has registered nothing: Run's caller calls RegisterFirst, then
// Run.
func New(cfg Config) *Registrar {
	return &Registrar{cfg: cfg, registerNow: make(chan struct{}, 1), reg: tickets.New()}
}

// Rounds are the tickets topic changes wait on (RegisterChanged); the core's tests count them.
func (r *Registrar) Rounds() *tickets.Rounds { return r.reg }

// triggerRegister asks the registration loop to register with the name servers now.
func (r *Registrar) triggerRegister() {
	select {
	case r.registerNow <- struct{}{}:
	default:
	}
}

// RegisterChanged returns once a registration round that started after the caller's topic
// change has ended (successfully or not: like RocketMQ we answer the request either way), the
// broker stopped registering, or registerWaitTimeout passed. Before the first round it returns
// at once: that round will carry the change.
func (r *Registrar) RegisterChanged() {
	if len(r.cfg.NameServers) == 0 {
		return
	}
	ticket, wait := r.reg.Ask()
	r.triggerRegister()
	if wait && !r.reg.Wait(ticket, registerWaitTimeout) {
		r.cfg.Log.Debug().Msg("topic change answered before its registration round ended")
	}
}

// registerRound is one whole registration round, releasing the topic changes made before it
// started. A forced round sends REGISTER_BROKER with every topic to every name server;
// otherwise it first asks them whether they hold this broker's current DataVersion and
// registers with all of them only when one does not (RocketMQ registerBrokerAll with
// forceRegister false). A round that skips REGISTER_BROKER may still release tickets: each
// ticket's change bumped the version before it was issued, so a name server answering
// "unchanged" holds a registration that carries it.
func (r *Registrar) registerRound(ctx context.Context, force bool) {
	upTo := r.reg.Begin()
	topics := r.withPermission(r.cfg.WholeTopics())
	if force || r.needRegister(ctx, topics.DataVersion) {
		r.registerAll(ctx, route.RegisterBrokerBody{TopicConfigSerializeWrapper: topics})
	}
	r.reg.Finish(upTo)
}

// withPermission is a registration's topic table as RocketMQ's registerBrokerAll sends it: when
// the broker is not both readable and writable, every topic carries the broker's permission, so
// producers (not writable) or consumers (not readable) leave the broker at their next route
// refresh while its own table keeps each topic's permission.
func (r *Registrar) withPermission(w route.TopicConfigSerializeWrapper) route.TopicConfigSerializeWrapper {
	if r.cfg.Permission == nil {
		return w
	}
	p := r.cfg.Permission()
	if route.IsReadable(p) && route.IsWritable(p) {
		return w
	}
	for name, tc := range w.TopicConfigTable {
		tc.Perm = p
		w.TopicConfigTable[name] = tc
	}
	return w
}

// SplitSize caps the topics one incremental REGISTER_BROKER carries (RocketMQ 5's
// splitRegistrationSize).
const SplitSize = 800

// registerIncrementRound is the round a topic change wakes: REGISTER_BROKER carrying only the
// topics created or changed since the last round took them, at most SplitSize per
// request, as RocketMQ's registerIncrementBrokerData sends the one topic a send created. A
// name server keeps the topics a registration leaves out, so a flood of new names costs each
// round what it added, not the whole table (which grows with the flood).
func (r *Registrar) registerIncrementRound(ctx context.Context) {
	upTo := r.reg.Begin()
	pending := r.cfg.TakePendingTopics()
	for len(pending) > 0 {
		n := min(len(pending), SplitSize)
		w := r.withPermission(r.cfg.IncrementTopics(pending[:n]))
		pending = pending[n:]
		if len(w.TopicConfigTable) > 0 {
			r.registerAll(ctx, route.RegisterBrokerBody{TopicConfigSerializeWrapper: w})
		}
	}
	r.reg.Finish(upTo)
}

// Schedule is when the periodic rounds run: the first InitialDelay after Run's first
// registration, then every Period.
type Schedule struct {
	InitialDelay, Period time.Duration
}

// NewSchedule is BrokerController.start's schedule: the first periodic round periodMin after
// start (RegisterNameServerPeriodMin), then every period (registerNameServerPeriod) clamped to
// [periodMin, 60 s]. The floor wins should it exceed the ceiling, as in RocketMQ's
// max(10 s, min(period, 60 s)).
func NewSchedule(periodMin, period time.Duration) Schedule {
	return Schedule{
		InitialDelay: periodMin,
		Period:       max(periodMin, min(period, registerNameServerPeriodMax)),
	}
}

// Run runs the registration rounds after the first (the caller made that one, RegisterFirst,
// before starting it): an incremental one for every topic change, always sent, and the
// periodic whole ones, forced unless DisableForceRegister. Being one loop, rounds never
// overlap. When ctx ends it unregisters from every name server.
func (r *Registrar) Run(ctx context.Context) error {
	if len(r.cfg.NameServers) == 0 {
		<-ctx.Done()
		return nil
	}
	forcePeriodic := !r.cfg.DisableForceRegister
	runRegisterLoop(ctx, r.cfg.Schedule, r.registerNow, func(periodic bool) {
		if periodic {
			r.registerRound(ctx, forcePeriodic)
		} else {
			r.registerIncrementRound(ctx)
		}
	})
	r.reg.Stop()
	r.unregisterAll()
	return nil
}

// runRegisterLoop calls round(false) for every signal on now and round(true) on s's clock, one
// call at a time, until ctx ends. The clock runs at a fixed rate from the first periodic round,
// like RocketMQ's scheduleAtFixedRate, dropping ticks a slow round overran.
func runRegisterLoop(ctx context.Context, s Schedule, now <-chan struct{}, round func(periodic bool)) {
	first := time.NewTimer(s.InitialDelay)
	defer first.Stop()
	tick := first.C
	var every *time.Ticker
	defer func() {
		if every != nil {
			every.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-now:
			round(false)
		case <-tick:
			if every == nil {
				every = time.NewTicker(s.Period)
				tick = every.C
			}
			round(true)
		}
	}
}

// RegisterFirst registers with every name server and returns when each has answered or
// failed. The broker calls it before it is Ready, as RocketMQ's broker registers during start,
// so a client given the node's address finds TBW102 and the broker's topics at once.
func (r *Registrar) RegisterFirst(ctx context.Context) {
	if len(r.cfg.NameServers) == 0 {
		return
	}
	r.registerRound(ctx, true)
}
