package mqtest

import (
	"fmt"
	"sync/atomic"

	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/remoting"
)

// clientsNode is the name the helpers' clients (NewProducer, NewPushConsumer, NewPullConsumer)
// go by in the cluster's fault injector: they are not nodes, and only CutClients cuts them.
const clientsNode = "mqtest-clients"

// Fault injection: the cluster's nodes send everything through one fault injector
// (internal/faults), each under its own name: their brokers' requests to name servers and to
// other brokers (in-process or TCP), and their slaves' HA connections. The helpers' clients
// send through it too, under a name of their own. So a test partitions the cluster, or stalls
// a node, without killing anything. Clients built without the helpers are never affected.
//
// A cut looks like a partition, not a reset: nothing is closed and neither end sees a
// connection drop. New requests over it fail at once with an error wrapping
// remoting.ErrConnClosed (as a connect would fail); requests already sent lose their answers
// and time out; HA connections stall until their housekeeping gives up on them, and new ones
// are refused. So a broker cut from a name server expires from its routes after BrokerExpiry,
// and a master cut from its slave loses it after HAHousekeeping. A paused node's requests,
// and requests to it, are lost, so their callers time out. Cuts and pauses survive Kill and
// Restart; a Restart waits for registration and HA connections as usual, so heal a node
// before restarting it.

// faultName is n's name in the cluster's fault injector, given at its first start.
func (n *Node) faultName() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faultID
}

// Cut cuts the links between a and b, both ways, until Heal: requests between them fail or
// time out and a slave's HA connection to its master stalls. Clients still reach both.
func (c *Cluster) Cut(a, b *Node) { c.faults.Cut(a.faultName(), b.faultName()) }

// Heal restores the links between a and b.
func (c *Cluster) Heal(a, b *Node) { c.faults.Heal(a.faultName(), b.faultName()) }

// Isolate cuts n from every other node of the cluster (name servers, controllers among them,
// and brokers); the helpers' clients still reach it, as when a master is partitioned from its
// peers but not from clients. Raft traffic between controllers is never cut: isolating a
// controller cuts it from brokers only.
func (c *Cluster) Isolate(n *Node) {
	for _, o := range append(c.NameServerNodes(), c.Brokers()...) {
		if o != n {
			c.Cut(n, o)
		}
	}
}

// CutClients cuts the helpers' clients from n: their new requests to it fail at once, and
// those under way time out.
func (c *Cluster) CutClients(n *Node) { c.faults.Cut(clientsNode, n.faultName()) }

// HealClients restores the helpers' clients' links to n.
func (c *Cluster) HealClients(n *Node) { c.faults.Heal(clientsNode, n.faultName()) }

// HealAll restores every cut link, the clients' too; paused nodes stay paused.
func (c *Cluster) HealAll() { c.faults.HealAll() }

// Pause stops n's traffic without closing anything, like SIGSTOP: requests to it (from nodes
// and the helpers' clients) and from it are lost and time out at their callers' deadlines,
// and its HA connections carry nothing, until Resume.
func (c *Cluster) Pause(n *Node) { c.faults.Pause(n.faultName()) }

// Resume lets a paused node's traffic flow again.
func (c *Cluster) Resume(n *Node) { c.faults.Resume(n.faultName()) }

// bindFaults names a node about to start in the fault injector (once: the name outlives
// restarts) and makes storeDir's node send through it; bindAddrs tells it the started node's
// addresses.
func (c *Cluster) bindFaults(n *Node, storeDir string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.faultID == "" {
		n.faultID = fmt.Sprintf("node-%d", faultSeq.Add(1))
	}
	if n.faultDir == storeDir {
		return
	}
	if n.faultDetach != nil {
		n.faultDetach()
	}
	n.faultDir, n.faultDetach = storeDir, attachFaults(storeDir, c.faults, n.faultID)
}

func (c *Cluster) bindAddrs(n *Node) {
	name := n.faultName()
	for _, a := range []string{n.Addr(), n.haAddrNow()} {
		if a != "" {
			c.faults.Bind(a, name)
		}
	}
}

// clientFaults makes tr, one of the helpers' client transports, obey the fault injector.
func (c *Cluster) clientFaults(tr remoting.Transport) remoting.Transport {
	c.faults.Join(tr, clientsNode)
	return tr
}

var faultSeq atomic.Int64

// attachFaults is node.AttachFaults; a variable so that this file names the wiring once.
var attachFaults = node.AttachFaults

// haAddrNow is a master's last HA address ("" for a slave).
func (n *Node) haAddrNow() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.haAddr
}
