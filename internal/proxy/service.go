package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// DefaultRequestTimeout bounds a broker request made for a call whose context has no deadline
// (RocketMQ's sendMsgTimeout, 3 s; the SDKs give every call a deadline of their own).
const DefaultRequestTimeout = 3 * time.Second

// sweepInterval is how often clients past the channel expiry are dropped.
const sweepInterval = 10 * time.Second

// service implements apiv2.MessagingServiceServer. The RPCs it does not serve yet come from
// the embedded Unimplemented type, which answers gRPC's UNIMPLEMENTED.
type service struct {
	apiv2.UnimplementedMessagingServiceServer

	opts    addon.GRPCOptions
	log     zerolog.Logger
	routes  remoting.Transport // to the name servers, shared by every client
	clients *clients
	nextQ   atomic.Uint32 // round robin over a topic's write queues
	checks  checkRelay    // transaction checks on their way to Telemetry streams

	stop chan struct{}
	wg   sync.WaitGroup
}

func newService(o addon.GRPCOptions, log zerolog.Logger) *service {
	s := &service{opts: o, log: log, routes: o.Routes(), stop: make(chan struct{})}
	s.clients = &clients{newTransport: o.Local, max: DefaultMaxClients, expire: DefaultChannelExpiredTimeout,
		byID: make(map[string]*client)}
	s.clients.onNew = s.onNewClient
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(sweepInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				s.clients.expireIdle(now)
			}
		}
	}()
	return s
}

// close ends the sweeper and drops every client; the gRPC server has stopped by then.
func (s *service) close() {
	close(s.stop)
	s.wg.Wait()
	s.checks.close()
	s.clients.closeAll()
	s.routes.Close()
}

// broker is this node's running broker, nil while it has none.
func (s *service) broker() *broker.Broker {
	if s.opts.Broker == nil {
		return nil
	}
	return s.opts.Broker()
}

// invoke sends a request to this node's broker on the client's connection, bounded by the
// call's deadline or DefaultRequestTimeout, signed with the caller's ACL account when ACL is on.
func (s *service) invoke(ctx context.Context, c *client, req *remoting.Command) (*remoting.Command, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	signRequest(ctx, req)
	return c.tr.InvokeSync(ctx, s.opts.BrokerAddr, req)
}

// resourceName checks a topic or group named in a request and returns its name as the broker
// knows it: inside its namespace, as RocketMQ's 4.x clients write "namespace%name".
func resourceName(r *apiv2.Resource, what string, code apiv2.Code, check func(string) error) (string, *apiv2.Status) {
	if r == nil || r.Name == "" {
		return "", statusf(code, "the request names no %s", what)
	}
	name := names.WrapNamespace(r.ResourceNamespace, r.Name)
	if err := check(name); err != nil {
		return "", statusf(code, "%s: %v", what, err)
	}
	return name, nil
}
