package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/faultgate"
	"github.com/rs/zerolog"
)

// DefaultMaxServerRequests is how many requests from servers (NOTIFY_CONSUMER_IDS_CHANGED,
// GET_CONSUMER_RUNNING_INFO, ...) one Client runs at once. A value of ours: a server flooding a
// client with requests whose handlers are slow must not start goroutines without bound.
const DefaultMaxServerRequests = 64

// ClientOptions configures a TCP Client. The zero value of each field means its default.
type ClientOptions struct {
	// DialTimeout bounds connecting (RocketMQ's connectTimeoutMillis, 3 s).
	DialTimeout time.Duration
	// MaxFrameBytes is the largest frame accepted from a server. Default 16 MiB.
	MaxFrameBytes int
	// MaxHeaderBytes and MaxExtFields bound each header from a server (see DecodeLimits); a
	// header over either closes the connection. Defaults DefaultMaxHeaderBytes and
	// DefaultMaxExtFields.
	MaxHeaderBytes int
	MaxExtFields   int
	// MaxServerRequests is how many server-initiated requests run at once; beyond it a two-way
	// request is answered SYSTEM_BUSY and a one-way one dropped. Default
	// DefaultMaxServerRequests.
	MaxServerRequests int
	// MaxPendingWriteBytes caps the bytes of requests one connection queues behind the write
	// in progress; a sender over it waits for that write. Default DefaultMaxPendingWriteBytes.
	MaxPendingWriteBytes int
	// ScanInterval is how often pending requests are checked for timeouts. Default 1 s.
	ScanInterval time.Duration
	// TLSConfig, when set, makes every connection TLS (RocketMQ's client useTLS); the
	// config's ServerName defaults to the host of the address dialled.
	TLSConfig *tls.Config
	// Hooks see every request and response.
	Hooks []RPCHook
	// Logger receives the client's logs; nil means silent.
	Logger *zerolog.Logger
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
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
	if o.MaxServerRequests <= 0 {
		o.MaxServerRequests = DefaultMaxServerRequests
	}
	if o.MaxPendingWriteBytes <= 0 {
		o.MaxPendingWriteBytes = DefaultMaxPendingWriteBytes
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = time.Second
	}
	return o
}

// ReconnectNotifier is a Transport that tells when it opened a connection to an address it had
// reached before and lost since: the peer restarted, or the network between came back. A peer
// that restarted may have forgotten what the old connection told it (a broker forgets its
// consumers), so a client that hears of it can tell it again at once instead of at its next
// period.
type ReconnectNotifier interface {
	// OnReconnect calls f with the address each time such a connection is up, on the
	// transport's goroutine, so f must not block; remove stops the calls.
	OnReconnect(f func(addr string)) (remove func())
}

// reconnectHooks are the functions OnReconnect registered.
type reconnectHooks struct {
	mu   sync.Mutex
	next uint64
	fs   map[uint64]func(addr string)
}

func (h *reconnectHooks) add(f func(addr string)) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fs == nil {
		h.fs = make(map[uint64]func(addr string))
	}
	id := h.next
	h.next++
	h.fs[id] = f
	return func() {
		h.mu.Lock()
		delete(h.fs, id)
		h.mu.Unlock()
	}
}

// fire calls every hook with addr, none under the lock.
func (h *reconnectHooks) fire(addr string) {
	h.mu.Lock()
	fs := make([]func(string), 0, len(h.fs))
	for _, f := range h.fs {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f(addr)
	}
}

// Client is a TCP Transport: one multiplexed connection per address string, created on first use
// and dialled again after it dies; concurrent requests are matched to responses by opaque.
type Client struct {
	opts   ClientOptions
	limits DecodeLimits
	log    zerolog.Logger
	table  *responseTable

	serving chan struct{} // a token per running server-initiated request
	refused rateLimiter   // server requests over MaxServerRequests

	procMu sync.RWMutex
	procs  map[int32]Processor

	mu     sync.Mutex
	conns  map[string]*clientConn
	dials  map[string]*dialCall
	dialed map[string]bool // addresses a connection was ever made to
	closed bool

	reconnect reconnectHooks
	faults    faultgate.Gate // nil unless a test injects faults (faultgate.go)

	stop chan struct{}
	wg   sync.WaitGroup
}

type dialCall struct {
	done chan struct{}
	cc   *clientConn
	err  error
}

// NewClient makes a client and starts its timeout scanner; Close stops it.
func NewClient(opts ClientOptions) *Client {
	opts = opts.withDefaults()
	l := zerolog.Nop()
	if opts.Logger != nil {
		l = *opts.Logger
	}
	c := &Client{
		opts:    opts,
		limits:  DecodeLimits{MaxHeaderBytes: opts.MaxHeaderBytes, MaxExtFields: opts.MaxExtFields},
		log:     l.With().Str("component", "remoting-client").Logger(),
		table:   newResponseTable(),
		serving: make(chan struct{}, opts.MaxServerRequests),
		refused: rateLimiter{interval: time.Second},
		procs:   make(map[int32]Processor),
		conns:   make(map[string]*clientConn),
		dials:   make(map[string]*dialCall),
		dialed:  make(map[string]bool),
		stop:    make(chan struct{}),
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		runScanner(c.table, opts.ScanInterval, c.stop)
	}()
	return c
}

// RegisterProcessor implements Transport.
func (c *Client) RegisterProcessor(code int32, p Processor) {
	c.procMu.Lock()
	c.procs[code] = p
	c.procMu.Unlock()
}

// conn returns the live connection to addr, dialling once for all concurrent callers.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	return c.connUntil(ctx, addr, time.Time{})
}

// connUntil is conn whose wait for a dial also ends at until, unless it is zero.
func (c *Client) connUntil(ctx context.Context, addr string, until time.Time) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if cc := c.conns[addr]; cc != nil && !cc.Closed() {
		c.mu.Unlock()
		return cc, nil
	}
	call := c.dials[addr]
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		c.dials[addr] = call
		c.wg.Add(1)
		go c.dial(addr, call)
	}
	c.mu.Unlock()
	var expired <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-call.done:
		return call.cc, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("remoting: connect %s: %w", addr, ctx.Err())
	case <-expired:
		return nil, fmt.Errorf("remoting: connect %s: %w", addr, context.DeadlineExceeded)
	}
}

func (c *Client) dial(addr string, call *dialCall) {
	defer c.wg.Done()
	nc, err := c.dialConn(addr)
	reconnected := false
	c.mu.Lock()
	delete(c.dials, addr)
	switch {
	case err != nil:
		call.err = fmt.Errorf("remoting: connect %s: %w", addr, err)
	case c.closed:
		nc.Close()
		call.err = ErrClosed
	default:
		cc := newClientConn(c, addr, nc)
		c.conns[addr] = cc
		call.cc = cc
		reconnected = c.dialed[addr]
		c.dialed[addr] = true
		c.wg.Add(2)
		go cc.readLoop()
		go cc.runFlusher()
	}
	c.mu.Unlock()
	close(call.done)
	if reconnected {
		c.reconnect.fire(addr)
	}
}

// dialConn opens a TCP connection to addr and, with TLSConfig, completes the TLS handshake
// within DialTimeout.
func (c *Client) dialConn(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	if c.opts.TLSConfig == nil {
		return d.Dial("tcp", addr)
	}
	cfg := c.opts.TLSConfig
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	td := tls.Dialer{NetDialer: &d, Config: cfg}
	return td.Dial("tcp", addr)
}

// OnReconnect implements ReconnectNotifier: f runs on the dialling goroutine once a new
// connection to an address that had one before is up.
func (c *Client) OnReconnect(f func(addr string)) (remove func()) { return c.reconnect.add(f) }

func (c *Client) beforeRequest(addr string, req *Command) {
	if len(c.opts.Hooks) > 0 {
		req.materialize(SignatureFields) // a hook may sign
	}
	for _, h := range c.opts.Hooks {
		h.BeforeRequest(addr, req)
	}
}

func (c *Client) hooked(addr string, req *Command, cb func(*Command, error)) func(*Command, error) {
	if len(c.opts.Hooks) == 0 {
		return cb
	}
	return func(resp *Command, err error) {
		if resp != nil {
			for _, h := range c.opts.Hooks {
				h.AfterResponse(addr, req, resp)
			}
		}
		cb(resp, err)
	}
}

// InvokeSync implements Transport.
func (c *Client) InvokeSync(ctx context.Context, addr string, req *Command) (*Command, error) {
	return c.InvokeSyncUntil(ctx, addr, req, time.Time{})
}

// InvokeSyncUntil implements DeadlineInvoker.
func (c *Client) InvokeSyncUntil(ctx context.Context, addr string, req *Command, until time.Time) (*Command, error) {
	if c.faults != nil {
		if lose, err := c.faults.Send(addr); err != nil || lose {
			if err != nil {
				return nil, err
			}
			return invokeSyncUntil(ctx, c.table, 0, lost, req, until)
		}
	}
	cc, err := c.connUntil(ctx, addr, until)
	if err != nil {
		return nil, err
	}
	c.beforeRequest(addr, req)
	resp, err := invokeSyncUntil(ctx, c.table, cc.id, cc.send, req, until)
	if resp != nil {
		for _, h := range c.opts.Hooks {
			h.AfterResponse(addr, req, resp)
		}
	}
	return resp, err
}

// TakesFields implements FieldsTransport.
func (c *Client) TakesFields() {}

// InvokeAsync implements Transport.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	return c.InvokeAsyncUntil(ctx, addr, req, time.Time{}, cb)
}

// InvokeAsyncUntil implements DeadlineInvoker.
func (c *Client) InvokeAsyncUntil(ctx context.Context, addr string, req *Command, until time.Time, cb func(*Command, error)) error {
	if c.faults != nil {
		if lose, err := c.faults.Send(addr); err != nil || lose {
			if err != nil {
				return err
			}
			return invokeAsyncUntil(ctx, c.table, 0, lost, req, until, cb)
		}
	}
	cc, err := c.connUntil(ctx, addr, until)
	if err != nil {
		return err
	}
	c.beforeRequest(addr, req)
	return invokeAsyncUntil(ctx, c.table, cc.id, cc.sendDeferred, req, until, c.hooked(addr, req, cb))
}

// InvokeOneway implements Transport.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	if c.faults != nil {
		if lose, err := c.faults.Send(addr); err != nil || lose {
			if err != nil {
				return err
			}
			return lost(req)
		}
	}
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	c.beforeRequest(addr, req)
	req.MarkOneway()
	return cc.sendDeferred(req)
}

// CloseConn closes the connection to addr, if any; the next request dials again.
func (c *Client) CloseConn(addr string) {
	c.mu.Lock()
	cc := c.conns[addr]
	c.mu.Unlock()
	if cc != nil {
		cc.Close()
	}
}

// Close implements Transport. It waits for the reader goroutines to exit.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	conns := make([]*clientConn, 0, len(c.conns))
	for _, cc := range c.conns {
		conns = append(conns, cc)
	}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.Close()
	}
	close(c.stop)
	c.wg.Wait()
	c.table.failAll(ErrClosed)
	return nil
}

// clientConn is one TCP connection of a Client, and the Channel server requests arrive on.
type clientConn struct {
	id    uint64
	c     *Client
	addr  string
	local string
	nc    net.Conn
	w     *connWriter

	stop      chan struct{} // closed by Close: ends the flusher
	closeOnce sync.Once
}

func newClientConn(c *Client, addr string, nc net.Conn) *clientConn {
	return &clientConn{id: nextChannelID(), c: c, addr: addr, nc: nc, local: nc.LocalAddr().String(),
		w: newConnWriter(nc, c.opts.MaxPendingWriteBytes), stop: make(chan struct{})}
}

func (cc *clientConn) ID() uint64         { return cc.id }
func (cc *clientConn) RemoteAddr() string { return cc.addr }
func (cc *clientConn) LocalAddr() string  { return cc.local }
func (cc *clientConn) Closed() bool       { return cc.w.isClosed() }

func (cc *clientConn) Close() error {
	var err error
	cc.closeOnce.Do(func() {
		cc.w.close()
		close(cc.stop)
		err = cc.nc.Close()
		cc.c.mu.Lock()
		if cc.c.conns[cc.addr] == cc {
			delete(cc.c.conns, cc.addr)
		}
		cc.c.mu.Unlock()
		cc.c.table.failOwner(cc.id, ErrConnClosed)
	})
	return err
}

// send writes one frame now, or behind the write in progress (connWriter).
func (cc *clientConn) send(cmd *Command) error { return cc.sendFrame(cmd, false) }

// sendDeferred queues one frame for the flusher: for callers that do not wait for it.
func (cc *clientConn) sendDeferred(cmd *Command) error { return cc.sendFrame(cmd, true) }

func (cc *clientConn) sendFrame(cmd *Command, deferred bool) error {
	defer cmd.written()
	err := cc.w.send(cmd, deferred)
	if err != nil {
		cc.Close()
	}
	return err
}

// runFlusher writes the frames deferred sends queued, until the connection closes.
func (cc *clientConn) runFlusher() {
	defer cc.c.wg.Done()
	for {
		select {
		case <-cc.stop:
			return
		case <-cc.w.kick:
			if err := cc.w.flush(); err != nil {
				cc.Close()
			}
		}
	}
}

func (cc *clientConn) readLoop() {
	defer cc.c.wg.Done()
	defer cc.Close()
	r := bufio.NewReaderSize(cc.nc, 64<<10)
	var prefix [4]byte
	for {
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return
		}
		l, err := FrameLength(prefix[:], cc.c.opts.MaxFrameBytes)
		if err != nil {
			cc.c.log.Warn().Err(err).Str("addr", cc.addr).Msg("closing connection after a malformed frame")
			return
		}
		frame := make([]byte, l)
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		cmd, err := DecodeFrameLimits(frame, cc.c.limits)
		if err != nil {
			cc.c.log.Warn().Err(err).Str("addr", cc.addr).Msg("closing connection after a malformed frame")
			return
		}
		if cc.c.faults != nil && cc.c.faults.Drop(cc.addr) {
			continue
		}
		if cmd.IsResponse() {
			cc.c.table.complete(cmd)
			continue
		}
		cc.serveRequest(cmd)
	}
}

// serveRequest runs a server-initiated request on its own goroutine, as the official clients do,
// so a slow handler never stalls responses; at most MaxServerRequests run at once.
func (cc *clientConn) serveRequest(req *Command) {
	cc.c.procMu.RLock()
	p := cc.c.procs[req.Code]
	cc.c.procMu.RUnlock()
	if p == nil {
		if !req.IsOneway() {
			resp := NewResponseFor(req, RequestCodeNotSupported,
				fmt.Sprintf(" request type %d not supported", req.Code))
			_ = cc.send(resp)
		}
		return
	}
	select {
	case cc.c.serving <- struct{}{}:
	default:
		if ok, suppressed := cc.c.refused.allow(); ok {
			cc.c.log.Warn().Str("addr", cc.addr).Int32("code", req.Code).Str("request", RequestCodeName(req.Code)).Bool("oneway", req.IsOneway()).
				Int("max_server_requests", cap(cc.c.serving)).Int64("suppressed", suppressed).
				Msg("server request refused: too many running")
		}
		if !req.IsOneway() {
			_ = cc.send(NewResponseFor(req, SystemBusy, "[OVERLOAD]system busy, start flow control for a while"))
		}
		return
	}
	cc.c.wg.Add(1)
	go func() {
		defer cc.c.wg.Done()
		defer func() { <-cc.c.serving }()
		resp, err := p.ProcessRequest(context.Background(), cc, req)
		if err != nil {
			resp = ErrorResponse(err)
		}
		if resp == nil || req.IsOneway() {
			return
		}
		resp.Opaque, resp.Serialize = req.Opaque, req.Serialize
		resp.Flag |= FlagResponse
		_ = cc.send(resp)
	}()
}

func (cc *clientConn) WriteResponse(resp *Command) error { return cc.send(resp) }

// TakesFields implements FieldsChannel.
func (cc *clientConn) TakesFields() {}

func (cc *clientConn) InvokeSync(ctx context.Context, req *Command) (*Command, error) {
	return invokeSync(ctx, cc.c.table, cc.id, cc.send, req)
}

func (cc *clientConn) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	return invokeAsync(ctx, cc.c.table, cc.id, cc.send, req, cb)
}

func (cc *clientConn) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return cc.send(req)
}
