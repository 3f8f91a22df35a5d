package node

import (
	"context"
	"net"
	"sync"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/faults"
	"github.com/mqgo/mq/internal/replication"
)

// faultsByStore holds what AttachFaults installed, by store directory. Options mirrors
// mq.Options field for field and test machinery has no place there, so the node finds its
// fault injector by the one setting that names it for its whole life, restarts included.
var faultsByStore sync.Map // Store.Dir -> *faultBinding

// faultBinding is a node's membership of a faults.Faults under the node's name.
type faultBinding struct {
	f    *faults.Faults
	self string
}

// AttachFaults makes the node started with Store.Dir storeDir, from its next start on, send
// everything through f as node self: its broker's requests (in-process and TCP) and its
// slave's HA dials. mqtest attaches each node before starting it; detach forgets it.
func AttachFaults(storeDir string, f *faults.Faults, self string) (detach func()) {
	b := &faultBinding{f: f, self: self}
	faultsByStore.Store(storeDir, b)
	return func() { faultsByStore.CompareAndDelete(storeDir, b) }
}

// faults is the node's binding, or nil.
func (n *Node) faults() *faultBinding {
	b, ok := faultsByStore.Load(n.opts.Store.Dir)
	if !ok {
		return nil
	}
	return b.(*faultBinding)
}

// faultTransport puts the broker's transport under the node's binding, if any, before the
// broker's first request.
func (n *Node) faultTransport() {
	if fb := n.faults(); fb != nil {
		fb.f.Join(n.brokerTr, fb.self)
	}
}

// faultHA routes the HA dials of b's slave through the node's binding, if any, and in a
// simulation b's HA listener and dials through its network, before b runs; the routes of a
// broker b replaces go.
func (n *Node) faultHA(b *broker.Broker) {
	if n.unrouteHA != nil {
		n.unrouteHA()
		n.unrouteHA = nil
	}
	fb := n.faults()
	if fb == nil && n.sim == nil {
		return
	}
	var unlisten func()
	if sim := n.sim; sim != nil {
		unlisten = replication.RouteListen(b.Store(), func(_ context.Context, addr string) (net.Listener, error) {
			return sim.Listen(addr)
		})
	}
	undial := replication.RouteDials(b.Store(), func(next replication.DialFunc) replication.DialFunc {
		if n.sim != nil {
			next = n.sim.Dial
		}
		if fb != nil {
			return fb.f.Dialer(fb.self, next)
		}
		return next
	})
	n.unrouteHA = func() {
		undial()
		if unlisten != nil {
			unlisten()
		}
	}
}
