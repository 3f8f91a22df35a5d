package broker

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker/tickets"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// registerTimeout bounds one REGISTER_BROKER or QUERY_DATA_VERSION (registerBrokerTimeoutMills).
const registerTimeout = 6 * time.Second

// registerNameServerPeriodMax caps the period of the periodic rounds, as BrokerController.start
// does (min(registerNameServerPeriod, 60 s)): a name server expires a broker silent for 120 s,
// so a longer period would let it drop live brokers.
const registerNameServerPeriodMax = 60 * time.Second

// registerWaitTimeout bounds how long a topic change waits for its registration round: the
// round in flight, then the one that carries the change.
const registerWaitTimeout = 2 * registerTimeout

// registrar is the broker's side of the name servers (RocketMQ's BrokerOuterAPI with
// BrokerController's registration schedule): REGISTER_BROKER rounds, periodic and woken by
// topic changes, and UNREGISTER_BROKER. Its state is the wake-up channel and the tickets
// topic changes wait on; it holds no lock of its own.
type registrar struct {
	*Broker
	// registerNow wakes the registration loop (triggerRegister).
	registerNow chan struct{}
	// reg holds the registration rounds that topic changes wait for.
	reg *tickets.Rounds
}

func newRegistrar(b *Broker) *registrar {
	return &registrar{Broker: b, registerNow: make(chan struct{}, 1), reg: tickets.New()}
}

// triggerRegister asks the registration loop to register with the name servers now.
func (r *registrar) triggerRegister() {
	select {
	case r.registerNow <- struct{}{}:
	default:
	}
}

// registerChanged returns once a registration round that started after the caller's topic
// change has ended (successfully or not: like RocketMQ we answer the request either way), the
// broker stopped registering, or registerWaitTimeout passed. Before the first round it returns
// at once: that round will carry the change.
func (r *registrar) registerChanged() {
	if len(r.opts.NameServers) == 0 {
		return
	}
	ticket, wait := r.reg.Ask()
	r.triggerRegister()
	if wait && !r.reg.Wait(ticket, registerWaitTimeout) {
		r.log.Debug().Msg("topic change answered before its registration round ended")
	}
}

// registerRound is one whole registration round, releasing the topic changes made before it
// started. A forced round sends REGISTER_BROKER with every topic to every name server;
// otherwise it first asks them whether they hold this broker's current DataVersion and
// registers with all of them only when one does not (RocketMQ registerBrokerAll with
// forceRegister false). A round that skips REGISTER_BROKER may still release tickets: each
// ticket's change bumped the version before it was issued, so a name server answering
// "unchanged" holds a registration that carries it.
func (r *registrar) registerRound(ctx context.Context, force bool) {
	upTo := r.reg.Begin()
	topics := r.topics.RegistrationWhole()
	if force || r.needRegister(ctx, topics.DataVersion) {
		r.registerAll(ctx, route.RegisterBrokerBody{TopicConfigSerializeWrapper: topics})
	}
	r.reg.Finish(upTo)
}

// registerSplitSize caps the topics one incremental REGISTER_BROKER carries (RocketMQ 5's
// splitRegistrationSize).
const registerSplitSize = 800

// registerIncrementRound is the round a topic change wakes: REGISTER_BROKER carrying only the
// topics created or changed since the last round took them, at most registerSplitSize per
// request, as RocketMQ's registerIncrementBrokerData sends the one topic a send created. A
// name server keeps the topics a registration leaves out, so a flood of new names costs each
// round what it added, not the whole table (which grows with the flood).
func (r *registrar) registerIncrementRound(ctx context.Context) {
	upTo := r.reg.Begin()
	pending := r.topics.TakeRegistrationPending()
	for len(pending) > 0 {
		n := min(len(pending), registerSplitSize)
		w := r.topics.RegistrationIncrement(pending[:n])
		pending = pending[n:]
		if len(w.TopicConfigTable) > 0 {
			r.registerAll(ctx, route.RegisterBrokerBody{TopicConfigSerializeWrapper: w})
		}
	}
	r.reg.Finish(upTo)
}

// registerSchedule is when the periodic rounds run: the first initialDelay after Run's first
// registration, then every period.
type registerSchedule struct {
	initialDelay, period time.Duration
}

// registerSchedule is BrokerController.start's: the first periodic round 10 s after start
// (RegisterNameServerPeriodMin), then every registerNameServerPeriod clamped to
// [RegisterNameServerPeriodMin, 60 s]. The floor wins should it exceed the ceiling, as in
// RocketMQ's max(10 s, min(period, 60 s)).
func (o Options) registerSchedule() registerSchedule {
	return registerSchedule{
		initialDelay: o.Periods.RegisterNameServerPeriodMin,
		period:       max(o.Periods.RegisterNameServerPeriodMin, min(o.Periods.RegisterNameServerPeriod, registerNameServerPeriodMax)),
	}
}

// runRegistration runs the registration rounds after the first (Run made that one before
// starting it): an incremental one for every topic change, always sent, and the periodic
// whole ones, forced unless DisableForceRegister. Being one loop, rounds never overlap. When
// ctx ends it unregisters from every name server.
func (r *registrar) runRegistration(ctx context.Context) error {
	if len(r.opts.NameServers) == 0 {
		<-ctx.Done()
		return nil
	}
	forcePeriodic := !r.opts.Broker.DisableForceRegister
	runRegisterLoop(ctx, r.opts.registerSchedule(), r.registerNow, func(periodic bool) {
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
func runRegisterLoop(ctx context.Context, s registerSchedule, now <-chan struct{}, round func(periodic bool)) {
	first := time.NewTimer(s.initialDelay)
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
				every = time.NewTicker(s.period)
				tick = every.C
			}
			round(true)
		}
	}
}

// registerFirst registers with every name server and returns when each has answered or
// failed. Run calls it before it is Ready, as RocketMQ's broker registers during start, so a
// client given the node's address finds TBW102 and the broker's topics at once.
func (r *registrar) registerFirst(ctx context.Context) {
	if len(r.opts.NameServers) == 0 {
		return
	}
	r.registerRound(ctx, true)
}

// needRegister asks every name server in parallel whether its copy of this broker's topics
// differs from version (BrokerOuterAPI.needRegister); one that says so, or cannot answer, is
// reason to register. A name server that lost the broker (it restarted, or expired it) says
// changed, so it gets a whole registration.
func (r *registrar) needRegister(ctx context.Context, version route.DataVersion) bool {
	body, err := json.Marshal(version)
	if err != nil {
		return true
	}
	var changed atomic.Bool
	var wg sync.WaitGroup
	for _, ns := range r.opts.NameServers {
		wg.Go(func() {
			if r.dataVersionChanged(ctx, ns, version, body) {
				changed.Store(true)
			}
		})
	}
	wg.Wait()
	return changed.Load()
}

// dataVersionChanged sends QUERY_DATA_VERSION to ns. Unlike RocketMQ, which counts an answer
// other than SUCCESS as unchanged, it counts one as changed: a name server that cannot answer
// the query gets a registration rather than expiring a broker that stopped sending them.
func (r *registrar) dataVersionChanged(ctx context.Context, ns string, version route.DataVersion, body []byte) bool {
	req := remoting.NewRequest(remoting.QueryDataVersion, remoting.EncodeHeader(&protocol.QueryDataVersionRequestHeader{
		BrokerName: r.opts.Broker.Name, BrokerAddr: r.opts.BrokerAddr, ClusterName: r.opts.Broker.ClusterName,
		BrokerID: r.opts.Broker.ID}), body)
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	resp, err := r.opts.Transport.InvokeSync(rctx, ns, req)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug().Err(err).Str("addr", ns).Msg("query data version failed: registering")
		}
		return true
	}
	if resp.Code != remoting.Success {
		r.log.Debug().Int16("code", resp.Code).Str("addr", ns).Msg("query data version refused: registering")
		return true
	}
	var h protocol.QueryDataVersionResponseHeader
	if _, ok := resp.ExtFields["changed"]; !ok || h.Decode(resp.ExtFields) != nil || h.Changed {
		return true
	}
	// Like RocketMQ, trust the version the name server holds over its verdict.
	var held route.DataVersion
	return len(resp.Body) > 0 && (json.Unmarshal(resp.Body, &held) != nil || held != version)
}

// registerAll sends REGISTER_BROKER with body to every name server in parallel, as RocketMQ's
// registerBrokerAll does.
func (r *registrar) registerAll(ctx context.Context, body route.RegisterBrokerBody) {
	var wg sync.WaitGroup
	for _, ns := range r.opts.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{
				ClusterName: r.opts.Broker.ClusterName, BrokerName: r.opts.Broker.Name, BrokerAddr: r.opts.BrokerAddr,
				HAServerAddr: r.HAAddr(), BrokerID: r.opts.Broker.ID, Body: body})
			rctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			resp, err := r.opts.Transport.InvokeSync(rctx, ns, req)
			var res *route.RegisterBrokerResult
			if err == nil {
				res, err = route.DecodeRegisterBrokerResult(resp)
			}
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn().Err(err).Str("addr", ns).Msg("register broker failed")
				}
				return
			}
			r.seams.onRegistered(res)
			r.log.Debug().Str("addr", ns).Msg("registered with name server")
		}()
	}
	wg.Wait()
}

// unregisterAll tells every name server this broker is leaving.
func (r *registrar) unregisterAll() {
	var wg sync.WaitGroup
	for _, ns := range r.opts.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req := route.BuildUnregisterBroker(r.opts.Broker.ClusterName, r.opts.Broker.Name, r.opts.BrokerAddr, r.opts.Broker.ID)
			if _, err := r.opts.Transport.InvokeSync(ctx, ns, req); err != nil {
				r.log.Debug().Err(err).Str("addr", ns).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}
