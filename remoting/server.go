package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
)

// DefaultMaxPendingWriteBytes is how many bytes of responses a connection may leave unsent
// before the server stops reading its requests. Ours, not RocketMQ's (its Netty outbound buffer
// grows without bound); 4 MiB is a few pull responses, so a client that reads at all keeps going.
const DefaultMaxPendingWriteBytes = 4 << 20

// DefaultMaxConnections is how many connections a server keeps open at once. Ours: RocketMQ has
// no such limit.
const DefaultMaxConnections = 10000

// maxDefaultEventLoops is RocketMQ's serverSelectorThreads (3).
const maxDefaultEventLoops = 3

// DefaultEventLoops is the number of event loops a server runs unless told: RocketMQ's
// serverSelectorThreads (3), but one fewer than GOMAXPROCS, at least one. A loop waits for
// events in a raw epoll_wait, which keeps its P until the runtime's monitor takes it back (up
// to 10 ms when the process was idle); with a loop per P, a request worker a loop woke could
// wait that long for a P. One P left over runs them at once: on 2 CPUs, split-mode end-to-end
// p99 at 5,000 msg/s fell from 6.9-10.6 ms to 1.25-1.64 ms and async sends rose ~20%
// (docs/rocketmq-differences.md).
func DefaultEventLoops() int {
	return min(maxDefaultEventLoops, max(1, runtime.GOMAXPROCS(0)-1))
}

// DefaultChannelMaxIdleTime closes connections that sent nothing for this long (RocketMQ
// serverChannelMaxIdleTimeSeconds, 120 s).
const DefaultChannelMaxIdleTime = 120 * time.Second

// ServerOptions configures a Server. The zero value of each field means its default.
type ServerOptions struct {
	// Addr is the TCP "host:port" to listen on; port 0 picks a free port. Default 127.0.0.1:0.
	Addr string
	// MaxFrameBytes is the largest frame accepted, its 4-byte length word included (RocketMQ's
	// frameMaxLength); a larger length word closes the connection.
	// Default DefaultMaxFrameBytes (16 MiB).
	MaxFrameBytes int
	// MaxHeaderBytes and MaxExtFields bound each request's header (see DecodeLimits); a header
	// over either closes the connection. Defaults DefaultMaxHeaderBytes and DefaultMaxExtFields.
	MaxHeaderBytes int
	MaxExtFields   int
	// MaxPendingWriteBytes caps the bytes of one connection's responses handed to the socket
	// layer but not yet sent. Above it, further responses wait (uncopied) until the peer reads,
	// and the server stops taking the connection's requests; it takes them again once the
	// backlog drains. A peer that, meanwhile, sends more than MaxFrameBytes +
	// MaxPendingWriteBytes of requests is disconnected. Default DefaultMaxPendingWriteBytes.
	MaxPendingWriteBytes int
	// MaxConnections is how many connections may be open at once; one more is closed as soon as
	// it is accepted. Default DefaultMaxConnections.
	MaxConnections int
	// IdleTimeout closes a connection that sent nothing for this long, after a ConnIdle event
	// (RocketMQ's serverChannelMaxIdleTimeSeconds). Default DefaultChannelMaxIdleTime.
	IdleTimeout time.Duration
	// ScanInterval is how often server-initiated requests are checked for timeouts and
	// connections for idleness. Default 1 s.
	ScanInterval time.Duration
	// EventLoops is the number of gnet event loops. Default: DefaultEventLoops.
	EventLoops int
	// TLSMode and TLSConfig make the server speak TLS (RocketMQ's tls.server.mode): disabled
	// (the default), permissive (TLS and plaintext on the same port) or enforcing (TLS only).
	// TLSConfig needs a certificate unless the mode is disabled.
	TLSMode   TLSMode
	TLSConfig *tls.Config
	// Logger receives the server's logs; nil means silent.
	Logger *zerolog.Logger
}

func (o ServerOptions) withDefaults() ServerOptions {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxExtFields <= 0 {
		o.MaxExtFields = DefaultMaxExtFields
	}
	if o.MaxPendingWriteBytes <= 0 {
		o.MaxPendingWriteBytes = DefaultMaxPendingWriteBytes
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultChannelMaxIdleTime
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = time.Second
	}
	if o.TLSMode == "" || o.TLSConfig == nil {
		o.TLSMode = TLSDisabled
	}
	return o
}

// Server serves the remoting protocol over TCP on gnet event loops. The loops only split and
// decode frames; requests go to the Dispatcher's executors and responses leave with async writes,
// so a loop never waits for a handler.
//
// Memory per connection is bounded: a frame by MaxFrameBytes, a header by MaxHeaderBytes and
// MaxExtFields, unsent responses by MaxPendingWriteBytes (beyond it responses wait, uncopied,
// and the connection's requests are left unread), requests left unread by MaxFrameBytes +
// MaxPendingWriteBytes; and the number of connections by MaxConnections.
type Server struct {
	gnet.BuiltinEventEngine

	opts      ServerOptions
	limits    DecodeLimits
	d         *Dispatcher
	log       zerolog.Logger
	table     *responseTable
	badFrames rateLimiter
	refused   rateLimiter // connections over MaxConnections
	flooders  rateLimiter // connections that sent too much while paused

	ready   chan struct{}
	addr    atomic.Value // string
	engine  gnet.Engine
	bootErr error

	onBootHook func()
	stopping   atomic.Bool // the listener is shut: gnet's errors about it are expected

	mu        sync.Mutex
	conns     map[uint64]*serverConn
	tlsConns  map[uint64]*tlsConn // connections handed off to crypto/tls (server_tls.go)
	tlsClosed bool                // Run is over: hand-offs are refused
	tlsWG     sync.WaitGroup

	stalls stallPoller
}

// NewServer builds a server for d. It listens only when Run is called.
func NewServer(d *Dispatcher, opts ServerOptions) *Server {
	opts = opts.withDefaults()
	l := zerolog.Nop()
	if opts.Logger != nil {
		l = *opts.Logger
	}
	return &Server{
		opts:      opts,
		limits:    DecodeLimits{MaxHeaderBytes: opts.MaxHeaderBytes, MaxExtFields: opts.MaxExtFields, rawSendHeaders: true},
		d:         d,
		log:       l.With().Str("component", "remoting").Logger(),
		table:     newResponseTable(),
		badFrames: rateLimiter{interval: time.Second},
		refused:   rateLimiter{interval: time.Second},
		flooders:  rateLimiter{interval: time.Second},
		ready:     make(chan struct{}),
		conns:     make(map[uint64]*serverConn),
		tlsConns:  make(map[uint64]*tlsConn),
		stalls:    newStallPoller(),
	}
}

// Ready is closed once the listener is bound (or Run failed before binding).
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the bound "host:port", known once Ready is closed.
func (s *Server) Addr() string {
	a, _ := s.addr.Load().(string)
	return a
}

// Run listens and serves until ctx ends, then closes every connection and returns nil. It returns
// an error if the listener cannot be bound.
func (s *Server) Run(ctx context.Context) error {
	readyOnce := sync.OnceFunc(func() { close(s.ready) })
	defer readyOnce()
	// gnet.Run returns once the engine has shut down, while Engine.Stop polls for that every
	// half second; stopCtx ends the poll as soon as Run is back.
	stopCtx, stopped := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-stopCtx.Done():
			return
		}
		<-s.ready
		if s.bootErr == nil {
			s.stopAccepting(stopCtx.Done())
			_ = s.engine.Stop(stopCtx)
		}
	}()
	go func() {
		defer wg.Done()
		s.stalls.run(stopCtx.Done())
	}()
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithTicker(true),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{log: s.log, quiet: &s.stopping}),
	}
	loops := s.opts.EventLoops
	if loops <= 0 {
		loops = DefaultEventLoops()
	}
	opts = append(opts, gnet.WithNumEventLoop(loops))
	s.onBootHook = readyOnce
	err := gnet.Run(s, "tcp://"+s.opts.Addr, opts...)
	s.stopping.Store(true) // gnet's own complaints from here on are about the shutdown
	readyOnce()
	stopped()
	wg.Wait()
	s.closeTLSConns()
	s.table.failAll(ErrClosed)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("remoting: serve %s: %w", s.opts.Addr, err)
	}
	if s.bootErr != nil {
		return s.bootErr
	}
	return nil
}

// stopAccepting shuts the listening socket before the engine is told to stop, and waits (a
// second at most) for gnet to stop on its own. gnet's main reactor accepts each connection and
// hands it to an event loop as a queued task; an event loop already told to shut down never runs
// that task, so a connection accepted while the engine stops would stay open, unserved and never
// closed, for the life of the process, and a client that dialled in that window (a producer
// reconnecting to a node being closed) would wait out its full timeout for an answer. Once the
// socket is shut, the kernel resets the connections not yet accepted and refuses new ones; the
// main reactor's next accept fails and it shuts the engine down itself, after queueing every
// connection it accepted, so each reaches a running loop and is closed with the others.
func (s *Server) stopAccepting(stopped <-chan struct{}) {
	fd, err := s.engine.Dup()
	if err != nil {
		return
	}
	s.stopping.Store(true)
	err = shutdownListener(fd)
	closeFD(fd)
	if err != nil { // not Linux, say: stop as before
		s.stopping.Store(false)
		s.log.Debug().Err(err).Msg("listener not shut before stopping; stopping anyway")
		return
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
	}
}

// OnBoot records the engine and the bound address. Loop-only.
func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.engine = eng
	addr, err := boundAddr(eng)
	if err != nil {
		s.bootErr = err
		s.onBootHook()
		return gnet.Shutdown
	}
	s.addr.Store(addr)
	s.log.Info().Str("addr", addr).Msg("listening")
	s.onBootHook()
	// Whoever waits for Ready (StartNode) was just made runnable on this P, and gnet goes on
	// to start its event loops, which would take its place and hold the P in epoll_wait: it
	// would then wait for the runtime's monitor to take the P back, up to 10 ms on an idle
	// process (4 starts in 10 did). Yield so that it runs first.
	runtime.Gosched()
	return gnet.None
}

func boundAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", fmt.Errorf("remoting: listener fd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return "", fmt.Errorf("remoting: listener address: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// OnOpen registers the connection, or closes it at once when MaxConnections are open (it then
// has no context, so OnClose ignores it and listeners never hear of it). Loop-only.
func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s.mu.Lock()
	if n := len(s.conns) + len(s.tlsConns); n >= s.opts.MaxConnections {
		s.mu.Unlock()
		if ok, suppressed := s.refused.allow(); ok {
			s.log.Warn().Str("addr", addrString(c.RemoteAddr())).Int("max_connections", n).
				Int64("suppressed", suppressed).Msg("connection refused: too many connections")
		}
		return nil, gnet.Close
	}
	sc := &serverConn{
		id:     nextChannelID(),
		s:      s,
		c:      c,
		remote: addrString(c.RemoteAddr()),
		local:  addrString(c.LocalAddr()),
	}
	sc.out.limit = s.opts.MaxPendingWriteBytes
	sc.lastActive.Store(time.Now().UnixNano())
	c.SetContext(sc)
	s.conns[sc.id] = sc
	s.mu.Unlock()
	// With TLS on, the first byte says which kind of connection this is: listeners hear of it
	// once it is known to stay here.
	sc.sniff = s.opts.TLSMode != TLSDisabled
	if !sc.sniff {
		sc.announce()
	}
	return nil, gnet.None
}

// announce tells the listeners of a new connection. Loop-only.
func (sc *serverConn) announce() {
	sc.announced = true
	sc.s.d.FireEvent(ConnEvent{Type: ConnConnect, Channel: sc})
}

// sniffTLS looks at a new connection's first byte: a TLS handshake leaves for crypto/tls
// (handOffTLS), plaintext stays, unless the mode is enforcing. done reports that OnTraffic is
// over, with action. Loop-only.
func (s *Server) sniffTLS(sc *serverConn, c gnet.Conn) (action gnet.Action, done bool) {
	b, _ := c.Peek(1)
	if len(b) == 0 {
		return gnet.None, true
	}
	sc.sniff = false
	if b[0] == tlsRecordHandshake {
		if err := s.handOffTLS(sc, c); err != nil {
			s.log.Debug().Err(err).Str("addr", sc.remote).Msg("TLS connection not taken")
		}
		sc.handedOff = true
		return gnet.Close, true
	}
	if s.opts.TLSMode == TLSEnforcing {
		if ok, suppressed := s.badFrames.allow(); ok {
			s.log.Warn().Str("addr", sc.remote).Int64("suppressed", suppressed).
				Msg("closing plaintext connection: TLS is enforced")
		}
		return gnet.Close, true
	}
	sc.announce()
	return gnet.None, false
}

// OnClose forgets the connection, releases the responses it still held and fails requests the
// server sent on it. Loop-only.
func (s *Server) OnClose(c gnet.Conn, err error) gnet.Action {
	sc, _ := c.Context().(*serverConn)
	if sc == nil {
		return gnet.None
	}
	sc.closed.Store(true)
	sc.out.close()
	if sc.replies != nil {
		releaseFrame(sc.replies, nil)
		sc.replies = nil
	}
	s.stalls.remove(sc)
	s.mu.Lock()
	delete(s.conns, sc.id)
	s.mu.Unlock()
	s.table.failOwner(sc.id, ErrConnClosed)
	if !sc.announced {
		return gnet.None
	}
	if err != nil {
		s.d.FireEvent(ConnEvent{Type: ConnException, Channel: sc, Err: err})
	}
	s.d.FireEvent(ConnEvent{Type: ConnClose, Channel: sc, Err: err})
	return gnet.None
}

// OnTraffic splits whole frames off the inbound buffer and dispatches them. Partial frames stay
// buffered until the rest arrives. While the connection's unsent responses are over
// MaxPendingWriteBytes it takes no frames at all; the stall poller wakes it (gnet's Wake runs
// OnTraffic again) until the backlog drains. Loop-only.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	sc, _ := c.Context().(*serverConn)
	if sc == nil || sc.handedOff {
		return gnet.Close
	}
	if sc.sniff {
		if action, done := s.sniffTLS(sc, c); done {
			return action
		}
	}
	// A wake-up brings no bytes; only bytes count as activity, or a peer that never reads would
	// never go idle.
	if c.InboundBuffered() > sc.unread {
		sc.lastActive.Store(time.Now().UnixNano())
	}
	if sc.out.over.Load() && !sc.out.drain(c) {
		return s.pause(sc, c)
	}
	sc.paused = false
	s.stalls.remove(sc)
	action := s.readFrames(sc, c)
	s.flushReplies(sc, c)
	return action
}

// maxScratchFrame is the largest frame read into a pooled buffer; a larger one gets its own, so
// that the pool does not keep huge buffers.
const maxScratchFrame = 64 << 10

// scratchPool holds the buffers frames are read into while they are decoded and served. One
// goes back as soon as Serve returns, so the buffers in use are about one per event loop, however
// many connections are open.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// putScratch gives a frame's pooled buffer back (nil: the frame had its own).
func putScratch(b *[]byte) {
	if b != nil {
		scratchPool.Put(b)
	}
}

// replyBatchBytes is how many bytes of answers given on the loop gather before they are
// written: the answers to one read's requests leave in one write, not one write each.
const replyBatchBytes = 64 << 10

// readFrames takes the connection's whole frames and dispatches them; answers given on the loop
// gather in sc.replies. Loop-only.
func (s *Server) readFrames(sc *serverConn, c gnet.Conn) gnet.Action {
	for {
		if sc.out.over.Load() {
			return s.pause(sc, c)
		}
		if sc.skip > 0 && !s.skipBody(sc, c) {
			return gnet.None
		}
		n := c.InboundBuffered()
		sc.unread = n
		if n < 4 {
			return gnet.None
		}
		prefix, _ := c.Peek(4)
		l, err := FrameLength(prefix, s.opts.MaxFrameBytes)
		if err != nil {
			return s.rejectConn(sc, err)
		}
		if n < 4+l {
			if l <= maxScratchFrame || sc.headSeen {
				return gnet.None
			}
			switch refused, err := s.checkBody(sc, c, n, l); {
			case err != nil:
				return s.rejectConn(sc, err)
			case refused:
				continue
			}
			return gnet.None
		}
		sc.headSeen = false
		// A frame is read into a pooled buffer, which Serve copies from when the request
		// outlives it; a response's body is copied for whoever waits for it.
		var frame []byte
		var scratch *[]byte
		if l <= maxScratchFrame {
			scratch = scratchPool.Get().(*[]byte)
			if cap(*scratch) < l {
				*scratch = make([]byte, l)
			}
			frame = (*scratch)[:l]
		} else {
			frame = make([]byte, l)
		}
		borrowed := scratch != nil
		_, _ = c.Discard(4)
		_, _ = c.Read(frame)
		sc.unread = n - 4 - l
		cmd, err := DecodeFrameLimits(frame, s.limits)
		if err != nil {
			putScratch(scratch)
			return s.rejectConn(sc, err)
		}
		if cmd.IsResponse() {
			if borrowed {
				cmd.Body = bytes.Clone(cmd.Body)
			}
			putScratch(scratch)
			s.table.complete(cmd)
			continue
		}
		resp := s.d.Serve(sc, cmd, borrowed)
		putScratch(scratch)
		if resp != nil {
			if sc.replies == nil {
				sc.replies = framePool.Get().(*[]byte)
				*sc.replies = (*sc.replies)[:0]
			}
			*sc.replies = AppendFrame(*sc.replies, resp)
			resp.written()
			if len(*sc.replies) >= replyBatchBytes {
				s.flushReplies(sc, c)
			}
		}
	}
}

// flushReplies writes the answers gathered on the loop. Loop-only.
func (s *Server) flushReplies(sc *serverConn, c gnet.Conn) {
	bp := sc.replies
	if bp == nil {
		return
	}
	sc.replies = nil
	if err := sc.out.sendOnLoop(sc, c, outFrame{hdr: bp}); err != nil {
		s.log.Debug().Err(err).Str("addr", sc.remote).Msg("responses not written")
	}
}

// pause leaves the connection's inbound bytes unread until its backlog drains, and closes it
// when the bytes it sent meanwhile exceed what a paused connection may buffer. Loop-only.
func (s *Server) pause(sc *serverConn, c gnet.Conn) gnet.Action {
	if sc.closed.Load() { // a loop-side write failed and gnet closed c
		return gnet.None
	}
	n := c.InboundBuffered()
	sc.unread = n
	if limit := s.opts.MaxFrameBytes + s.opts.MaxPendingWriteBytes; n > limit {
		if ok, suppressed := s.flooders.allow(); ok {
			s.log.Warn().Str("addr", sc.remote).Int("unread_bytes", n).Int("limit", limit).
				Int64("suppressed", suppressed).
				Msg("closing connection that kept sending requests without reading its responses")
		}
		return gnet.Close
	}
	sc.paused = true
	s.stalls.add(sc)
	return gnet.None
}

// rejectConn closes a connection whose byte stream cannot be trusted, logging at most once a
// second across the server.
func (s *Server) rejectConn(sc *serverConn, err error) gnet.Action {
	if ok, suppressed := s.badFrames.allow(); ok {
		s.log.Warn().Err(err).Str("addr", sc.remote).Int64("suppressed", suppressed).
			Msg("closing connection after a malformed frame")
	}
	return gnet.Close
}

// OnTick scans for timed-out server requests and idle connections. It runs on gnet's ticker
// goroutine, beside the loops.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	now := time.Now()
	s.table.scan(now)
	idleBefore := now.Add(-s.opts.IdleTimeout).UnixNano()
	var idle []*serverConn
	s.mu.Lock()
	for _, sc := range s.conns {
		if sc.lastActive.Load() < idleBefore && sc.idled.CompareAndSwap(false, true) {
			idle = append(idle, sc)
		}
	}
	var idleTLS []*tlsConn
	for _, tc := range s.tlsConns {
		if tc.lastActive.Load() < idleBefore && tc.idled.CompareAndSwap(false, true) {
			idleTLS = append(idleTLS, tc)
		}
	}
	s.mu.Unlock()
	for _, sc := range idle {
		s.d.FireEvent(ConnEvent{Type: ConnIdle, Channel: sc})
		s.log.Info().Str("addr", sc.remote).Msg("closing idle connection")
		_ = sc.Close()
	}
	for _, tc := range idleTLS {
		if tc.announced.Load() {
			s.d.FireEvent(ConnEvent{Type: ConnIdle, Channel: tc})
		}
		s.log.Info().Str("addr", tc.remote).Msg("closing idle connection")
		_ = tc.Close()
	}
	return s.opts.ScanInterval, gnet.None
}

// ConnCount returns the number of open connections.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) + len(s.tlsConns)
}

var channelSeq atomic.Uint64

func nextChannelID() uint64 { return channelSeq.Add(1) }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// serverConn is the Channel of one accepted TCP connection.
type serverConn struct {
	id         uint64
	s          *Server
	c          gnet.Conn
	remote     string
	local      string
	lastActive atomic.Int64
	closed     atomic.Bool
	idled      atomic.Bool // ConnIdle fired; gnet closes it asynchronously, so later scans skip it
	stalled    atomic.Bool // in Server.stalls
	out        outbox

	// Loop-only.
	sniff     bool    // TLS is on and the first byte has not been seen (sniffTLS)
	handedOff bool    // the socket went to a tlsConn: gnet closes only its own descriptor
	announced bool    // listeners heard of the connection: they hear of its close too
	paused    bool    // frames are left unread until out drains
	unread    int     // inbound bytes left when OnTraffic last returned
	replies   *[]byte // answers given on the loop, not yet written (pooled)
	// headSeen: the header of the large frame now arriving passed its body limit
	// (server_body.go); skip: bytes of a refused body still to discard as they arrive.
	headSeen bool
	skip     int
}

func (sc *serverConn) ID() uint64         { return sc.id }
func (sc *serverConn) RemoteAddr() string { return sc.remote }
func (sc *serverConn) LocalAddr() string  { return sc.local }
func (sc *serverConn) Closed() bool       { return sc.closed.Load() }

// Close closes the connection from any goroutine.
func (sc *serverConn) Close() error {
	if sc.closed.Load() {
		return nil
	}
	return sc.c.Close()
}

// send writes cmd with one vectored write: the pooled header buffer and the body as is, so a body
// lent from mapped storage is never copied. cmd.OnWritten runs once gnet has taken the bytes (or
// the connection closed). Over MaxPendingWriteBytes the frame waits in the outbox instead.
func (sc *serverConn) send(cmd *Command) error {
	if sc.closed.Load() {
		cmd.written()
		return ErrConnClosed
	}
	bp := framePool.Get().(*[]byte)
	*bp = AppendFrameHeader((*bp)[:0], cmd)
	f := outFrame{hdr: bp, body: cmd.Body, done: cmd.OnWritten}
	cmd.OnWritten = nil
	return sc.out.send(sc, f)
}

func (sc *serverConn) WriteResponse(resp *Command) error { return sc.send(resp) }

// TakesFields implements FieldsChannel.
func (sc *serverConn) TakesFields() {}

func (sc *serverConn) InvokeSync(ctx context.Context, req *Command) (*Command, error) {
	return invokeSync(ctx, sc.s.table, sc.id, sc.send, req)
}

func (sc *serverConn) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	return invokeAsync(ctx, sc.s.table, sc.id, sc.send, req, cb)
}

func (sc *serverConn) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return sc.send(req)
}
