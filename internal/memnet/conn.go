package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipe is one direction of a connection: what the writer sent and the reader has not read.
type pipe struct {
	mu      sync.Mutex
	buf     []byte
	wclosed bool          // the writer closed: the reader gets io.EOF once buf is drained
	rclosed bool          // the reader closed: writes fail as on a reset connection
	changed chan struct{} // closed and replaced at every change, waking whoever waits
}

func newPipe() *pipe { return &pipe{changed: make(chan struct{})} }

// broadcastLocked wakes every waiter. p.mu must be held.
func (p *pipe) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Conn is one end of a connection. It implements net.Conn.
type Conn struct {
	local, remote net.Addr
	in, out       *pipe

	mu        sync.Mutex
	closed    bool
	rdl, wdl  time.Time
	dlChanged chan struct{} // closed and replaced when a deadline changes or the conn closes
}

var _ net.Conn = (*Conn)(nil)

// pair makes the two ends of a connection from local (the dialer) to remote.
func pair(local, remote net.Addr) (client, server *Conn) {
	up, down := newPipe(), newPipe()
	client = &Conn{local: local, remote: remote, in: down, out: up, dlChanged: make(chan struct{})}
	server = &Conn{local: remote, remote: local, in: up, out: down, dlChanged: make(chan struct{})}
	return client, server
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// state is whether c is closed, its deadline for reads or writes, and the channel a deadline
// change closes.
func (c *Conn) state(read bool) (closed bool, deadline time.Time, changed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if read {
		return c.closed, c.rdl, c.dlChanged
	}
	return c.closed, c.wdl, c.dlChanged
}

// wait blocks until one of the channels is closed or deadline (if not zero) passes; it reports
// false for the deadline.
func wait(a, b <-chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		select {
		case <-a:
		case <-b:
		}
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a:
	case <-b:
	case <-t.C:
		return false
	}
	return true
}

// Read reads what the peer wrote, blocking until there is some, the peer closed (io.EOF), c
// closed, or the read deadline passed.
func (c *Conn) Read(b []byte) (int, error) {
	for {
		closed, deadline, dlChanged := c.state(true)
		if closed {
			return 0, c.opError("read", net.ErrClosed)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		p := c.in
		p.mu.Lock()
		if len(p.buf) > 0 {
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.broadcastLocked()
			p.mu.Unlock()
			return n, nil
		}
		if p.wclosed {
			p.mu.Unlock()
			return 0, io.EOF
		}
		changed := p.changed
		p.mu.Unlock()
		if len(b) == 0 {
			return 0, nil
		}
		if !wait(changed, dlChanged, deadline) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
	}
}

// Write hands b to the peer, blocking while its direction holds BufferBytes; it fails once the
// peer closed (ECONNRESET), c closed, or the write deadline passed, having written part of b.
func (c *Conn) Write(b []byte) (int, error) {
	written := 0
	for {
		closed, deadline, dlChanged := c.state(false)
		if closed {
			return written, c.opError("write", net.ErrClosed)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return written, c.opError("write", os.ErrDeadlineExceeded)
		}
		p := c.out
		p.mu.Lock()
		if p.rclosed {
			p.mu.Unlock()
			return written, c.opError("write", os.NewSyscallError("write", syscall.ECONNRESET))
		}
		if room := BufferBytes - len(p.buf); room > 0 {
			k := min(room, len(b))
			p.buf = append(p.buf, b[:k]...)
			b = b[k:]
			written += k
			p.broadcastLocked()
		}
		if len(b) == 0 {
			p.mu.Unlock()
			return written, nil
		}
		changed := p.changed
		p.mu.Unlock()
		if !wait(changed, dlChanged, deadline) {
			return written, c.opError("write", os.ErrDeadlineExceeded)
		}
	}
}

// Close closes c: its blocked calls fail, the peer reads io.EOF after what c wrote and its
// writes fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.closed = true
	close(c.dlChanged)
	c.dlChanged = make(chan struct{})
	c.mu.Unlock()
	c.in.mu.Lock()
	c.in.rclosed, c.in.buf = true, nil
	c.in.broadcastLocked()
	c.in.mu.Unlock()
	c.out.mu.Lock()
	c.out.wclosed = true
	c.out.broadcastLocked()
	c.out.mu.Unlock()
	return nil
}

func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

func (c *Conn) SetDeadline(t time.Time) error { return c.setDeadline(t, true, true) }

func (c *Conn) SetReadDeadline(t time.Time) error { return c.setDeadline(t, true, false) }

func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setDeadline(t, false, true) }

func (c *Conn) setDeadline(t time.Time, read, write bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opError("set deadline", net.ErrClosed)
	}
	if read {
		c.rdl = t
	}
	if write {
		c.wdl = t
	}
	close(c.dlChanged)
	c.dlChanged = make(chan struct{})
	return nil
}
