package broker

import (
	"context"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
)

// registerTimeout bounds one REGISTER_BROKER (registerBrokerTimeoutMills).
const registerTimeout = 6 * time.Second

// registerWaitTimeout bounds how long a topic change waits for its registration round: the
// round in flight, then the one that carries the change.
const registerWaitTimeout = 2 * registerTimeout

// registrar coalesces the registrations that topic changes wait for, as group commit
// coalesces fsyncs. A change takes a ticket (ask) after it is in the topic table and wakes
// the registration loop; a round reads the last ticket issued (begin) before it snapshots the
// table, and on its end (finish) releases every ticket up to that one. So each waiter's change
// is in the round that releases it, and changes made while a round is in flight share the next
// one: N concurrent creators, or one heartbeat creating N retry topics, cost one or two rounds,
// not N.
type registrar struct {
	mu      sync.Mutex
	asked   uint64        // tickets issued
	covered uint64        // every ticket up to this one was in a finished round
	done    chan struct{} // closed (and replaced) when covered advances or the loop stops
	begun   bool          // a round has begun: earlier changes ride on the first round
	stopped bool          // the registration loop has ended: nobody waits any more
}

func newRegistrar() *registrar { return &registrar{done: make(chan struct{})} }

// ask issues a ticket for a change already in the topic table, and reports whether the caller
// should wait for it. Before the first round has begun there is nothing to wait for: that
// round snapshots the table after this change (a change made while New loads the metadata,
// before anything registers, must not wait for a loop that has not started).
func (r *registrar) ask() (ticket uint64, wait bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	return r.asked, r.begun && !r.stopped
}

func (r *registrar) begin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun = true
	return r.asked
}

func (r *registrar) finish(upTo uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.covered = max(r.covered, upTo)
	close(r.done)
	r.done = make(chan struct{})
}

func (r *registrar) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	close(r.done)
	r.done = make(chan struct{})
}

// wait blocks until a round covered ticket, the loop stopped, or timeout passed; it reports
// whether the ticket was covered.
func (r *registrar) wait(ticket uint64, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		covered, stopped, done := r.covered >= ticket, r.stopped, r.done
		r.mu.Unlock()
		if covered || stopped {
			return covered
		}
		select {
		case <-done:
		case <-timer.C:
			return false
		}
	}
}

// triggerRegister asks the registration loop to register with the name servers now.
func (b *Broker) triggerRegister() {
	select {
	case b.registerNow <- struct{}{}:
	default:
	}
}

// registerChanged returns once a registration round that started after the caller's topic
// change has ended (successfully or not: like RocketMQ we answer the request either way), the
// broker stopped registering, or registerWaitTimeout passed. Before the first round it returns
// at once: that round will carry the change.
func (b *Broker) registerChanged() {
	if len(b.opts.NameServers) == 0 {
		return
	}
	ticket, wait := b.reg.ask()
	b.triggerRegister()
	if wait && !b.reg.wait(ticket, registerWaitTimeout) {
		b.log.Debug().Msg("topic change answered before its registration round ended")
	}
}

// registerRound is one REGISTER_BROKER to every name server, releasing the topic changes made
// before it started.
func (b *Broker) registerRound(ctx context.Context) {
	upTo := b.reg.begin()
	b.registerAll(ctx)
	b.reg.finish(upTo)
}

// runRegistration registers with every name server every RegisterNameServerPeriod and whenever
// the topics change, and unregisters when ctx ends. Run made the first round before starting
// it, and it runs every later one, so rounds never overlap.
func (b *Broker) runRegistration(ctx context.Context) error {
	if len(b.opts.NameServers) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(b.opts.RegisterNameServerPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			b.reg.stop()
			b.unregisterAll()
			return nil
		case <-t.C:
		case <-b.registerNow:
		}
		b.registerRound(ctx)
	}
}

// registerFirst registers with every name server and returns when each has answered or
// failed. Run calls it before it is Ready, as RocketMQ's broker registers during start, so a
// client given the node's address finds TBW102 and the broker's topics at once.
func (b *Broker) registerFirst(ctx context.Context) {
	if len(b.opts.NameServers) == 0 {
		return
	}
	b.registerRound(ctx)
}

// registerAll sends REGISTER_BROKER to every name server in parallel, as RocketMQ's
// registerBrokerAll does.
func (b *Broker) registerAll(ctx context.Context) {
	body := route.RegisterBrokerBody{TopicConfigSerializeWrapper: b.topics.snapshot()}
	var wg sync.WaitGroup
	for _, ns := range b.opts.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{
				ClusterName: b.opts.ClusterName, BrokerName: b.opts.BrokerName, BrokerAddr: b.opts.BrokerAddr,
				HAServerAddr: b.HAAddr(), BrokerID: b.opts.BrokerID, Body: body})
			rctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			resp, err := b.opts.Transport.InvokeSync(rctx, ns, req)
			var res *route.RegisterBrokerResult
			if err == nil {
				res, err = route.DecodeRegisterBrokerResult(resp)
			}
			if err != nil {
				if ctx.Err() == nil {
					b.log.Warn().Err(err).Str("addr", ns).Msg("register broker failed")
				}
				return
			}
			b.onRegistered(res)
			b.log.Debug().Str("addr", ns).Msg("registered with name server")
		}()
	}
	wg.Wait()
}

// unregisterAll tells every name server this broker is leaving.
func (b *Broker) unregisterAll() {
	var wg sync.WaitGroup
	for _, ns := range b.opts.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req := route.BuildUnregisterBroker(b.opts.ClusterName, b.opts.BrokerName, b.opts.BrokerAddr, b.opts.BrokerID)
			if _, err := b.opts.Transport.InvokeSync(ctx, ns, req); err != nil {
				b.log.Debug().Err(err).Str("addr", ns).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}
