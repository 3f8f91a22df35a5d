package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/remoting"
)

// Sim is what a node needs to run inside a testing/synctest bubble, for the module's
// deterministic simulation (internal/sim). A socket never blocks durably, so a bubble's fake
// clock would stall on one: a node started with StartSim opens none. Its listeners are only
// addresses in this process's table of local nodes (clients reach it with an in-process
// transport, LocalTransport), its broker's transport has no TCP fallback, and HA replication
// and the controller's Raft listen and dial through Listen and Dial.
type Sim struct {
	Listen func(addr string) (net.Listener, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// StartSim is Start for a node inside a simulation. Every listen address must name its port:
// nothing binds, so nothing could pick one.
func StartSim(opts Options, sim Sim) (*Node, error) {
	if sim.Listen == nil || sim.Dial == nil {
		return nil, fmt.Errorf("mq: StartSim needs Listen and Dial")
	}
	return startWith(opts, nil, &sim)
}

// LocalTransport returns a transport that reaches the nodes of this process and nothing else:
// an address no local node serves fails at once with remoting.ErrNoRoute. The caller closes
// it.
func LocalTransport() *remoting.InProcTransport {
	return remoting.NewInProcTransport(lookupLocal, nil, 0)
}

// listener is what a node needs of a listener: remoting.Server, or simListener in a simulation.
type listener interface {
	Run(ctx context.Context) error
	Ready() <-chan struct{}
	Addr() string
	ConnCount() int
}

// simListener is a listener that binds nothing: the node is reachable at addr through the
// table of local nodes only.
type simListener struct {
	addr  string
	ready chan struct{}
}

func newSimListener(addr string) (*simListener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mq: listen address %q: %w", addr, err)
	}
	if port == "0" {
		return nil, fmt.Errorf("mq: listen address %q: a simulated node needs its port", addr)
	}
	l := &simListener{addr: addr, ready: make(chan struct{})}
	close(l.ready)
	return l, nil
}

func (l *simListener) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (l *simListener) Ready() <-chan struct{}        { return l.ready }
func (l *simListener) Addr() string                  { return l.addr }
func (l *simListener) ConnCount() int                { return 0 }

// raftNet is how the controller's Raft connects: TCP (nil, nil), or the simulation's network
// under the node's fault binding.
func (n *Node) raftNet() (listen func(string) (net.Listener, error), dial func(string, time.Duration) (net.Conn, error)) {
	if n.sim == nil {
		return nil, nil
	}
	d := n.sim.Dial
	if fb := n.faults(); fb != nil {
		d = fb.f.Dialer(fb.self, d)
	}
	return n.sim.Listen, func(addr string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(n.ctx, timeout)
		defer cancel()
		return d(ctx, "tcp", addr)
	}
}

// InspectBroker runs f with the node's broker, unless there is none or a restart is swapping
// it (then it reports false without calling f): the simulation reads a broker's store between
// its steps, and a store being closed by RestartBroker must not be read.
func (n *Node) InspectBroker(f func(b *broker.Broker)) bool {
	if !n.restartMu.TryLock() {
		return false
	}
	defer n.restartMu.Unlock()
	b := n.broker.Load()
	if b == nil || n.closing.Load() {
		return false
	}
	f(b)
	return true
}
