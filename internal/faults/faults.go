// Package faults breaks links between the nodes of one process on purpose, for the module's
// tests: mqtest's Cut, Isolate, Pause and friends are built on it. remoting's transports
// consult it through internal/faultgate, so neither package's public API carries a test hook.
package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/faultgate"
	"github.com/mqgo/mq/remoting"
)

// ErrLinkCut fails a request or a dial over a link Faults has cut. It wraps
// remoting.ErrConnClosed, so callers treat it as the network error a real partition would
// cause.
var ErrLinkCut = fmt.Errorf("remoting: link cut by fault injection: %w", remoting.ErrConnClosed)

// LinkState is what Faults says about the link from a node to an address.
type LinkState int

// Link states, from the mildest.
const (
	LinkUp     LinkState = iota
	LinkPaused           // an end is paused: requests are lost and time out, HA bytes stall
	LinkCut              // new requests and dials fail at once; what was under way is lost
)

// Faults breaks links between the nodes of one process on purpose, so that partitions and
// stalled nodes are tested in go test (mqtest's Cut, Isolate and Pause). A transport or dialer
// joins it with the name of the node it belongs to (Join, Dialer); Bind tells which node an
// address belongs to. Addresses bound to no node, and transports that never joined, are never
// affected, so only the links a test names fail.
//
// A cut link looks like a partition, not like a reset: nothing is closed, so neither end sees
// a connection drop. A new request over it fails at once with ErrLinkCut, as a connect would
// fail; a request already sent loses its answer and times out at its caller's deadline, as do
// requests to or from a paused node. Frames arriving on a joined transport's connections over
// a cut or paused link (answers, and requests servers send back) are dropped. HA connections
// from Dialer stall both ways until the link is up again or their deadlines pass.
type Faults struct {
	mu     sync.RWMutex
	owner  map[string]string  // address -> node
	cut    map[[2]string]bool // unordered pairs of nodes, lesser name first
	paused map[string]bool    // nodes
	change chan struct{}      // closed and replaced at every change, waking waitUp
}

// New returns a Faults with every link up.
func New() *Faults {
	return &Faults{owner: make(map[string]string), cut: make(map[[2]string]bool),
		paused: make(map[string]bool), change: make(chan struct{})}
}

// Bind makes addr node's address (a listener or an HA port); a later Bind of addr moves it.
func (f *Faults) Bind(addr, node string) {
	f.update(func() { f.owner[addr] = node })
}

// update changes the links under the lock and wakes every waitUp.
func (f *Faults) update(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
	close(f.change)
	f.change = make(chan struct{})
}

func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Cut cuts the links between nodes a and b, both ways.
func (f *Faults) Cut(a, b string) {
	if a != b {
		f.update(func() { f.cut[pair(a, b)] = true })
	}
}

// Heal restores the links between a and b.
func (f *Faults) Heal(a, b string) { f.update(func() { delete(f.cut, pair(a, b)) }) }

// HealAll restores every cut link (paused nodes stay paused).
func (f *Faults) HealAll() { f.update(func() { clear(f.cut) }) }

// Pause stops node's traffic without closing anything, as SIGSTOP would: requests to it and
// from it are lost, so their callers time out, and bytes on its HA connections stall.
func (f *Faults) Pause(node string) { f.update(func() { f.paused[node] = true }) }

// Resume lets a paused node's traffic flow again.
func (f *Faults) Resume(node string) { f.update(func() { delete(f.paused, node) }) }

// State is the link from node from to addr now.
func (f *Faults) State(from, addr string) LinkState {
	state, _ := f.check(from, addr)
	return state
}

// check is State with the channel the next change closes.
func (f *Faults) check(from, addr string) (LinkState, <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	to, bound := f.owner[addr]
	switch {
	case bound && f.cut[pair(from, to)]:
		return LinkCut, f.change
	case f.paused[from] || bound && f.paused[to]:
		return LinkPaused, f.change
	}
	return LinkUp, f.change
}

// waitUp blocks until the link from->addr is up, done is closed, or deadline (if not zero)
// passes.
func (f *Faults) waitUp(from, addr string, done <-chan struct{}, deadline time.Time) error {
	var expired <-chan time.Time
	for {
		state, changed := f.check(from, addr)
		if state == LinkUp {
			return nil
		}
		if expired == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-changed:
		case <-done:
			return net.ErrClosed
		case <-expired:
			return os.ErrDeadlineExceeded
		}
	}
}

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer wraps dial for node self: a dial over a cut link fails with ErrLinkCut; reads and
// writes of a connection it opened wait while the link is cut or paused, up to their
// deadlines. Replication dials through it.
func (f *Faults) Dialer(self string, dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if f.State(self, addr) == LinkCut {
			return nil, fmt.Errorf("%w: %s", ErrLinkCut, addr)
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &faultConn{Conn: c, f: f, self: self, addr: addr, closed: make(chan struct{})}, nil
	}
}

// faultConn is a connection Dialer opened.
type faultConn struct {
	net.Conn
	f         *Faults
	self      string
	addr      string
	closed    chan struct{}
	closeOnce sync.Once

	mu                          sync.Mutex
	readDeadline, writeDeadline time.Time
}

func (c *faultConn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
	})
	return err
}

// Read waits while the link is down, before reading and again before handing over what it
// read: the far end's socket is not ours to stop, so what it sent meanwhile is held here. Held
// bytes past the deadline are dropped with the error, as the caller closes the connection then.
func (c *faultConn) Read(p []byte) (int, error) {
	if err := c.wait(c.deadline(true)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if werr := c.wait(c.deadline(true)); werr != nil {
			return 0, werr
		}
	}
	return n, err
}

func (c *faultConn) Write(p []byte) (int, error) {
	if err := c.wait(c.deadline(false)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *faultConn) wait(deadline time.Time) error {
	return c.f.waitUp(c.self, c.addr, c.closed, deadline)
}

func (c *faultConn) deadline(read bool) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if read {
		return c.readDeadline
	}
	return c.writeDeadline
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDeadline = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDeadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// Join makes tr, a *remoting.Client or a *remoting.InProcTransport (with its TCP fallback),
// obey f as node self's transport; it reports false, changing nothing, for any other
// transport. Call it before tr's first request.
func (f *Faults) Join(tr remoting.Transport, self string) bool {
	return faultgate.Join(tr, member{f: f, self: self})
}

// member is a joined transport's view of f: the links of node self.
type member struct {
	f    *Faults
	self string
}

// Send implements faultgate.Gate: a cut link fails the request, a paused one loses it.
func (m member) Send(addr string) (lose bool, err error) {
	switch state, _ := m.f.check(m.self, addr); state {
	case LinkCut:
		return false, fmt.Errorf("%w: %s", ErrLinkCut, addr)
	case LinkPaused:
		return true, nil
	}
	return false, nil
}

// Drop implements faultgate.Gate: nothing arrives over a link that is not up.
func (m member) Drop(addr string) bool {
	state, _ := m.f.check(m.self, addr)
	return state != LinkUp
}
