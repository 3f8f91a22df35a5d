package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// TLSMode is how a server treats TLS (RocketMQ's tls.server.mode).
type TLSMode string

// TLS modes, named as RocketMQ's.
const (
	// TLSDisabled serves plaintext only, mq's default (RocketMQ's is permissive with a
	// self-signed test certificate; docs/rocketmq-differences.md says why): a TLS handshake
	// is a malformed frame.
	TLSDisabled TLSMode = "disabled"
	// TLSPermissive serves TLS and plaintext on the same port, told apart by the first byte.
	TLSPermissive TLSMode = "permissive"
	// TLSEnforcing serves TLS only and closes a connection that starts in plaintext.
	TLSEnforcing TLSMode = "enforcing"
)

// ParseTLSMode reads a mode by its RocketMQ name; "" is TLSDisabled.
func ParseTLSMode(s string) (TLSMode, error) {
	switch m := TLSMode(s); m {
	case "", TLSDisabled:
		return TLSDisabled, nil
	case TLSPermissive, TLSEnforcing:
		return m, nil
	}
	return "", fmt.Errorf("remoting: TLS mode %q: want disabled, permissive or enforcing", s)
}

// tlsRecordHandshake is the first byte of every TLS connection (a handshake record). No
// plaintext frame starts with it: its length word would be at least 0x16000000 bytes, far
// over any MaxFrameBytes a server accepts.
const tlsRecordHandshake = 0x16

// tlsHandshakeTimeout bounds a TLS handshake (Netty's SslHandler default, 10 s).
const tlsHandshakeTimeout = 10 * time.Second

// tlsConn is a TLS connection of a Server. gnet has no TLS, so once a connection's first byte
// shows a TLS handshake, the event loop hands the socket (a duplicate of its descriptor, and
// the bytes already read) to the Go runtime's poller, where crypto/tls serves it on a reader
// goroutine of its own and a writer (connWriter) that coalesces answers; its requests reach
// the same Dispatcher as plaintext ones. Plaintext connections never leave gnet and pay one
// look at their first byte, in permissive mode only.
type tlsConn struct {
	id         uint64
	s          *Server
	raw        net.Conn // the socket, until the handshake wraps it
	nc         *tls.Conn
	w          *connWriter
	remote     string
	local      string
	lastActive atomic.Int64
	idled      atomic.Bool
	announced  atomic.Bool // ConnConnect fired: ConnClose is due

	stop      chan struct{} // closed by Close: ends the flusher
	closeOnce sync.Once
	closeErr  error
}

// handOffTLS moves the connection to a tlsConn and lets gnet close its own descriptor (a close,
// not a shutdown, so the duplicate stays connected). Loop-only.
func (s *Server) handOffTLS(sc *serverConn, c interface {
	Dup() (int, error)
	Next(int) ([]byte, error)
}) error {
	fd, err := c.Dup()
	if err != nil {
		return fmt.Errorf("duplicate socket: %w", err)
	}
	buffered, _ := c.Next(-1)
	prefix := append([]byte(nil), buffered...)
	f := os.NewFile(uintptr(fd), "tls")
	raw, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("adopt socket: %w", err)
	}
	tc := &tlsConn{id: nextChannelID(), s: s, raw: &prefixedConn{Conn: raw, prefix: prefix},
		remote: sc.remote, local: sc.local, stop: make(chan struct{})}
	tc.lastActive.Store(time.Now().UnixNano())
	s.mu.Lock()
	delete(s.conns, sc.id)
	if s.tlsClosed {
		s.mu.Unlock()
		raw.Close()
		return ErrClosed
	}
	s.tlsConns[tc.id] = tc
	s.tlsWG.Add(1)
	s.mu.Unlock()
	go tc.run()
	return nil
}

// run completes the handshake, then reads and serves frames until the connection ends.
func (tc *tlsConn) run() {
	defer tc.s.tlsWG.Done()
	err := tc.handshake()
	if err == nil {
		tc.announced.Store(true)
		tc.s.d.FireEvent(ConnEvent{Type: ConnConnect, Channel: tc})
		tc.s.tlsWG.Add(1)
		go tc.runFlusher()
		err = tc.readLoop()
	}
	if errors.Is(err, io.EOF) || tc.Closed() {
		err = nil
	}
	tc.close(err)
}

func (tc *tlsConn) handshake() error {
	nc := tls.Server(tc.raw, tc.s.opts.TLSConfig)
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	if err := nc.HandshakeContext(ctx); err != nil {
		if ok, suppressed := tc.s.badFrames.allow(); ok {
			tc.s.log.Warn().Err(err).Str("addr", tc.remote).Int64("suppressed", suppressed).
				Msg("closing connection after a failed TLS handshake")
		}
		return err
	}
	tc.s.mu.Lock()
	closed := tc.s.tlsClosed
	if !closed {
		tc.nc = nc
		tc.w = newConnWriter(nc, tc.s.opts.MaxPendingWriteBytes)
		tc.w.noWait = true
	}
	tc.s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return nil
}

// readLoop serves frames as the event loop does for plaintext: responses complete the server's
// own requests, requests go through Dispatcher.Serve and answers given here are written at
// once. While the answers not yet written are over MaxPendingWriteBytes it reads nothing.
func (tc *tlsConn) readLoop() error {
	s := tc.s
	r := bufio.NewReaderSize(tc.nc, 64<<10)
	var prefix [4]byte
	for {
		if !tc.w.waitRoom() {
			return nil
		}
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return err
		}
		tc.lastActive.Store(time.Now().UnixNano())
		l, err := FrameLength(prefix[:], s.opts.MaxFrameBytes)
		if err != nil {
			return tc.malformed(err)
		}
		var cmd *Command
		if l > maxScratchFrame {
			// Its header first: a body over its code's limit is read into nothing.
			req, answer, skip, readErr, badFrame := s.readBigFrame(r, l)
			switch {
			case readErr != nil:
				return readErr
			case badFrame != nil:
				return tc.malformed(badFrame)
			case skip > 0:
				if answer != nil {
					if err := tc.sendFrame(answer, false); err != nil {
						return err
					}
				}
				if _, err := io.CopyN(io.Discard, r, int64(skip)); err != nil {
					return err
				}
				continue
			}
			cmd = req
		} else {
			frame := make([]byte, l)
			if _, err := io.ReadFull(r, frame); err != nil {
				return err
			}
			if cmd, err = DecodeFrameLimits(frame, s.limits); err != nil {
				return tc.malformed(err)
			}
		}
		if cmd.IsResponse() {
			s.table.complete(cmd)
			continue
		}
		if resp := s.d.Serve(tc, cmd, false); resp != nil {
			if err := tc.sendFrame(resp, false); err != nil {
				return err
			}
		}
	}
}

func (tc *tlsConn) malformed(err error) error {
	if ok, suppressed := tc.s.badFrames.allow(); ok {
		tc.s.log.Warn().Err(err).Str("addr", tc.remote).Int64("suppressed", suppressed).
			Msg("closing connection after a malformed frame")
	}
	return err
}

// runFlusher writes what other goroutines queued (answers from workers, the server's own
// requests), until the connection closes.
func (tc *tlsConn) runFlusher() {
	defer tc.s.tlsWG.Done()
	for {
		select {
		case <-tc.stop:
			return
		case <-tc.w.kick:
			if err := tc.w.flush(); err != nil {
				tc.close(err)
				return
			}
		}
	}
}

// sendFrame writes cmd now (the reader's own answers) or queues it for the flusher (deferred:
// every other goroutine, which must not wait for the socket).
func (tc *tlsConn) sendFrame(cmd *Command, now bool) error {
	defer cmd.written()
	if tc.w == nil {
		return ErrConnClosed
	}
	err := tc.w.send(cmd, !now)
	if err != nil {
		tc.close(err)
	}
	return err
}

func (tc *tlsConn) send(cmd *Command) error { return tc.sendFrame(cmd, false) }

// close ends the connection once: the socket, the flusher, the server's requests waiting on it,
// and the listeners' events.
func (tc *tlsConn) close(cause error) {
	tc.closeOnce.Do(func() {
		s := tc.s
		s.mu.Lock()
		w := tc.w
		delete(s.tlsConns, tc.id)
		s.mu.Unlock()
		if w != nil {
			w.close()
		}
		close(tc.stop)
		tc.closeErr = tc.raw.Close()
		s.table.failOwner(tc.id, ErrConnClosed)
		if !tc.announced.Load() {
			return
		}
		if cause != nil {
			s.d.FireEvent(ConnEvent{Type: ConnException, Channel: tc, Err: cause})
		}
		s.d.FireEvent(ConnEvent{Type: ConnClose, Channel: tc, Err: cause})
	})
}

func (tc *tlsConn) ID() uint64         { return tc.id }
func (tc *tlsConn) RemoteAddr() string { return tc.remote }
func (tc *tlsConn) LocalAddr() string  { return tc.local }

func (tc *tlsConn) Closed() bool {
	select {
	case <-tc.stop:
		return true
	default:
		return false
	}
}

// Close closes the connection from any goroutine.
func (tc *tlsConn) Close() error {
	tc.close(nil)
	return nil
}

func (tc *tlsConn) WriteResponse(resp *Command) error { return tc.send(resp) }

// TakesFields implements FieldsChannel.
func (tc *tlsConn) TakesFields() {}

func (tc *tlsConn) InvokeSync(ctx context.Context, req *Command) (*Command, error) {
	return invokeSync(ctx, tc.s.table, tc.id, tc.send, req)
}

func (tc *tlsConn) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	return invokeAsync(ctx, tc.s.table, tc.id, tc.send, req, cb)
}

func (tc *tlsConn) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return tc.send(req)
}

// closeTLSConns closes every TLS connection and waits for their goroutines; new hand-offs are
// refused from here on.
func (s *Server) closeTLSConns() {
	s.mu.Lock()
	s.tlsClosed = true
	conns := make([]*tlsConn, 0, len(s.tlsConns))
	for _, tc := range s.tlsConns {
		conns = append(conns, tc)
	}
	s.mu.Unlock()
	for _, tc := range conns {
		tc.close(nil)
	}
	s.tlsWG.Wait()
}

// prefixedConn reads the bytes the event loop had already taken off the socket before the
// socket itself.
type prefixedConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
