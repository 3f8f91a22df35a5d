package registrar

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The requests to the name servers (RocketMQ's BrokerOuterAPI).

// needRegister asks every name server in parallel whether its copy of this broker's topics
// differs from version (BrokerOuterAPI.needRegister); one that says so, or cannot answer, is
// reason to register. A name server that lost the broker (it restarted, or expired it) says
// changed, so it gets a whole registration.
func (r *Registrar) needRegister(ctx context.Context, version route.DataVersion) bool {
	body, err := json.Marshal(version)
	if err != nil {
		return true
	}
	var changed atomic.Bool
	var wg sync.WaitGroup
	for _, ns := range r.cfg.NameServers {
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
func (r *Registrar) dataVersionChanged(ctx context.Context, ns string, version route.DataVersion, body []byte) bool {
	req := remoting.NewRequest(remoting.QueryDataVersion, remoting.EncodeHeader(&protocol.QueryDataVersionRequestHeader{
		BrokerName: r.cfg.BrokerName, BrokerAddr: r.cfg.BrokerAddr, ClusterName: r.cfg.ClusterName,
		BrokerID: r.cfg.BrokerID}), body)
	rctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	resp, err := r.cfg.Transport.InvokeSync(rctx, ns, req)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Log.Debug().Err(err).Str("addr", ns).Msg("query data version failed: registering")
		}
		return true
	}
	if resp.Code != remoting.Success {
		r.cfg.Log.Debug().Int32("code", resp.Code).Str("addr", ns).Msg("query data version refused: registering")
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
func (r *Registrar) registerAll(ctx context.Context, body route.RegisterBrokerBody) {
	var wg sync.WaitGroup
	for _, ns := range r.cfg.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{
				ClusterName: r.cfg.ClusterName, BrokerName: r.cfg.BrokerName, BrokerAddr: r.cfg.BrokerAddr,
				HAServerAddr: r.cfg.HAAddr(), BrokerID: r.cfg.BrokerID, Body: body})
			rctx, cancel := context.WithTimeout(ctx, Timeout)
			defer cancel()
			resp, err := r.cfg.Transport.InvokeSync(rctx, ns, req)
			var res *route.RegisterBrokerResult
			if err == nil {
				res, err = route.DecodeRegisterBrokerResult(resp)
			}
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Log.Warn().Err(err).Str("addr", ns).Msg("register broker failed")
				}
				return
			}
			r.cfg.Registered(res)
			r.cfg.Log.Debug().Str("addr", ns).Msg("registered with name server")
		}()
	}
	wg.Wait()
}

// unregisterAll tells every name server this broker is leaving.
func (r *Registrar) unregisterAll() {
	var wg sync.WaitGroup
	for _, ns := range r.cfg.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req := route.BuildUnregisterBroker(r.cfg.ClusterName, r.cfg.BrokerName, r.cfg.BrokerAddr, r.cfg.BrokerID)
			if _, err := r.cfg.Transport.InvokeSync(ctx, ns, req); err != nil {
				r.cfg.Log.Debug().Err(err).Str("addr", ns).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}
