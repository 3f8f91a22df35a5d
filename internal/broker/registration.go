package broker

import (
	"context"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
)

// registerTimeout bounds one REGISTER_BROKER (registerBrokerTimeoutMills).
const registerTimeout = 6 * time.Second

// triggerRegister asks the registration loop to register with the name servers now.
func (b *Broker) triggerRegister() {
	select {
	case b.registerNow <- struct{}{}:
	default:
	}
}

// registerChanged registers the changed topic table now when the broker is up, else leaves it
// to the first registration.
func (b *Broker) registerChanged() {
	if len(b.opts.NameServers) == 0 {
		return
	}
	if !b.registered.Load() {
		b.triggerRegister()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	b.registerAll(ctx)
}

// runRegistration registers with every name server at start, every RegisterNameServerPeriod and
// whenever the topics change, and unregisters when ctx ends.
func (b *Broker) runRegistration(ctx context.Context) error {
	if len(b.opts.NameServers) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(b.opts.RegisterNameServerPeriod)
	defer t.Stop()
	if !b.registered.Load() {
		b.registerAll(ctx)
		b.registered.Store(true)
	}
	for {
		select {
		case <-ctx.Done():
			b.unregisterAll()
			return nil
		case <-t.C:
		case <-b.registerNow:
		}
		b.registerAll(ctx)
	}
}

// RegisterWithNameServers registers with every name server now and returns when each has
// answered or failed. The node calls it before StartNode returns, as RocketMQ's broker registers
// during start, so a client given the node's address finds TBW102 and the broker's topics at
// once.
func (b *Broker) RegisterWithNameServers(ctx context.Context) {
	if len(b.opts.NameServers) == 0 {
		return
	}
	b.registerAll(ctx)
	b.registered.Store(true)
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
				HAServerAddr: b.haServerAddr(), BrokerID: b.opts.BrokerID, Body: body})
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
