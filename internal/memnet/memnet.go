// Package memnet is an in-memory stream network: listeners and buffered connections that carry
// bytes between goroutines of one process. It exists for the module's deterministic simulation
// (internal/sim): a goroutine blocked on a socket is never durably blocked in a testing/synctest
// bubble, so the bubble's fake clock would stall, while every wait here is on a channel made
// inside the bubble or on its timers. HA replication and the controllers' Raft run over it there,
// through the same code that runs over TCP.
//
// A connection behaves as a socket does for the code that uses it: writes are buffered up to
// BufferBytes per direction and block beyond, reads block until bytes or the end arrive,
// deadlines fail a blocked call with os.ErrDeadlineExceeded, Close makes the peer read io.EOF
// after what was sent and fail its writes. A dial to an address nobody listens on is refused at
// once (ECONNREFUSED), as on loopback.
//
// Make a Network inside the bubble that uses it, so that its channels belong to that bubble.
package memnet

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// BufferBytes is what one direction of a connection holds before a write blocks: a socket's
// send and receive buffers together, roughly.
const BufferBytes = 256 << 10

// backlog is how many dialed connections a listener holds before Accept takes them; a dial
// beyond it is refused, as a full SYN queue refuses.
const backlog = 64

// Network is a set of listeners by address. Its methods are safe for concurrent use.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*Listener
	nextPort  int
}

// New returns an empty network.
func New() *Network {
	return &Network{listeners: make(map[string]*Listener), nextPort: 40000}
}

// Listen listens on addr, an "ip:port"; port 0 picks a free one.
func (n *Network) Listen(addr string) (net.Listener, error) {
	ta, err := parseAddr(addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if ta.Port == 0 {
		for {
			n.nextPort++
			ta.Port = n.nextPort
			if n.listeners[ta.String()] == nil {
				break
			}
		}
	}
	key := ta.String()
	if n.listeners[key] != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: ta, Err: syscall.EADDRINUSE}
	}
	l := &Listener{n: n, addr: ta, conns: make(chan *Conn, backlog), done: make(chan struct{})}
	n.listeners[key] = l
	return l, nil
}

// Dial connects to the listener at addr. ctx only matters before the connection exists, which
// is at once: there is no handshake to wait for.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	ta, err := parseAddr(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextPort++
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3), Port: n.nextPort%60000 + 1024}
	refused := &net.OpError{Op: "dial", Net: network, Addr: ta, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	// Under n.mu, so that a listener closing removes itself either before this finds it or
	// after the connection is in its backlog, which its Close then closes.
	l := n.listeners[ta.String()]
	if l == nil {
		return nil, refused
	}
	client, server := pair(local, ta)
	select {
	case l.conns <- server:
		return client, nil
	default: // backlog full
	}
	client.Close()
	server.Close()
	return nil, refused
}

// DialTimeout is Dial without a context, as net.DialTimeout; the timeout never matters.
func (n *Network) DialTimeout(addr string, _ time.Duration) (net.Conn, error) {
	return n.Dial(context.Background(), "tcp", addr)
}

func parseAddr(addr string) (*net.TCPAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("memnet: %q is not an IP address", host)
	}
	var p int
	if _, err := fmt.Sscanf(port, "%d", &p); err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("memnet: bad port %q", port)
	}
	return &net.TCPAddr{IP: ip, Port: p}, nil
}

// Listener is a listening address of a Network.
type Listener struct {
	n     *Network
	addr  *net.TCPAddr
	conns chan *Conn
	done  chan struct{}
	once  sync.Once
}

// Accept waits for the next dialed connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops listening; connections already accepted stay open, those not yet accepted are
// closed (their dialers read io.EOF).
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.n.mu.Lock()
		if l.n.listeners[l.addr.String()] == l {
			delete(l.n.listeners, l.addr.String())
		}
		l.n.mu.Unlock()
		close(l.done)
		for {
			select {
			case c := <-l.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.addr }
