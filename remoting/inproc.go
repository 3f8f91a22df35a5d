package remoting

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/faultgate"
)

// LocalResolver returns the Dispatcher of a node running in this process at addr, or nil.
type LocalResolver func(addr string) *Dispatcher

// InProcTransport is the Transport for nodes in the same process: a request goes straight to the
// node's Dispatcher as a *Command, with no socket and no encoding, and the node's answers and
// its own requests come straight back. Addresses with no local node go to the fallback transport
// (normally a TCP Client), so one handle reaches local and remote nodes alike.
type InProcTransport struct {
	resolve  LocalResolver
	fallback Transport

	table    *responseTable // our requests, answered by nodes
	srvTable *responseTable // nodes' requests, answered by our processors

	procMu sync.RWMutex
	procs  map[int32]Processor

	mu     sync.Mutex
	chans  map[string]*inprocChannel
	linked map[string]bool // addresses a link was ever opened to
	closed bool

	reconnect reconnectHooks
	trusted   atomic.Bool
	faults    faultgate.Gate // nil unless a test injects faults (faultgate.go)

	stop chan struct{}
	wg   sync.WaitGroup
}

// Trust marks the links this transport opens as a node's own: a node's broker reaching the
// name service or the broker of the same process. Guards let such requests through (see
// Trusted), so a node with ACL on needs no account for talking to itself. Only the node that
// built the transport may call it; handles given to applications are never trusted.
func (t *InProcTransport) Trust() { t.trusted.Store(true) }

// NewInProcTransport makes an in-process transport. fallback may be nil, in which case requests
// to addresses without a local node fail with ErrNoRoute. scanInterval (default 1 s) is how often
// pending requests are checked for timeouts.
func NewInProcTransport(resolve LocalResolver, fallback Transport, scanInterval time.Duration) *InProcTransport {
	if scanInterval <= 0 {
		scanInterval = time.Second
	}
	t := &InProcTransport{
		resolve:  resolve,
		fallback: fallback,
		table:    newResponseTable(),
		srvTable: newResponseTable(),
		procs:    make(map[int32]Processor),
		chans:    make(map[string]*inprocChannel),
		linked:   make(map[string]bool),
		stop:     make(chan struct{}),
	}
	t.wg.Add(2)
	go func() { defer t.wg.Done(); runScanner(t.table, scanInterval, t.stop) }()
	go func() { defer t.wg.Done(); runScanner(t.srvTable, scanInterval, t.stop) }()
	return t
}

// RegisterProcessor implements Transport; the processor also serves the fallback's connections.
func (t *InProcTransport) RegisterProcessor(code int32, p Processor) {
	t.procMu.Lock()
	t.procs[code] = p
	t.procMu.Unlock()
	if t.fallback != nil {
		t.fallback.RegisterProcessor(code, p)
	}
}

// OnReconnect implements ReconnectNotifier for links to local nodes (a node that closed and
// started again at the same address) and, through the fallback when it is one, for TCP
// connections.
func (t *InProcTransport) OnReconnect(f func(addr string)) (remove func()) {
	removeOwn := t.reconnect.add(f)
	n, ok := t.fallback.(ReconnectNotifier)
	if !ok {
		return removeOwn
	}
	removeFallback := n.OnReconnect(f)
	return func() { removeOwn(); removeFallback() }
}

// channel returns the link to the local node at addr, or nil when there is none.
func (t *InProcTransport) channel(addr string) (*inprocChannel, error) {
	ch, relinked, err := t.link(addr)
	if relinked {
		t.reconnect.fire(addr)
	}
	return ch, err
}

// link is channel's work; it also reports whether the link is new and addr had one before.
func (t *InProcTransport) link(addr string) (*inprocChannel, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false, ErrClosed
	}
	d := t.resolve(addr)
	if ch := t.chans[addr]; ch != nil {
		if ch.d == d && !ch.Closed() {
			return ch, false, nil
		}
		ch.closeLocked()
		delete(t.chans, addr)
	}
	if d == nil {
		return nil, false, nil
	}
	id := nextChannelID()
	fresh := &inprocChannel{id: id, t: t, d: d, local: addr,
		remote: fmt.Sprintf("127.0.0.2:%d", id%65535+1)}
	// A node that closes drops its links as a server drops its sockets: requests still waiting
	// on it fail at once instead of at their deadline.
	unhook, ok := d.onClose(func() {
		t.mu.Lock()
		if t.chans[addr] == fresh {
			delete(t.chans, addr)
		}
		fresh.closeLocked()
		t.mu.Unlock()
	})
	if !ok {
		return nil, false, nil // the node is closing: as if it were gone
	}
	fresh.unhook = unhook
	t.chans[addr] = fresh
	relinked := t.linked[addr]
	t.linked[addr] = true
	d.FireEvent(ConnEvent{Type: ConnConnect, Channel: fresh})
	return fresh, relinked, nil
}

// InvokeSync implements Transport.
func (t *InProcTransport) InvokeSync(ctx context.Context, addr string, req *Command) (*Command, error) {
	return t.InvokeSyncUntil(ctx, addr, req, time.Time{})
}

// InvokeSyncUntil implements DeadlineInvoker.
func (t *InProcTransport) InvokeSyncUntil(ctx context.Context, addr string, req *Command, until time.Time) (*Command, error) {
	if t.faults != nil {
		if lose, err := t.faults.Send(addr); err != nil || lose {
			if err != nil {
				return nil, err
			}
			return invokeSyncUntil(ctx, t.table, 0, lost, req, until)
		}
	}
	ch, err := t.channel(addr)
	if err != nil {
		return nil, err
	}
	if ch == nil {
		if t.fallback == nil {
			return nil, fmt.Errorf("%w: %s", ErrNoRoute, addr)
		}
		return InvokeSyncUntil(ctx, t.fallback, addr, t.forFallback(req), until)
	}
	return invokeSyncUntil(ctx, t.table, ch.id, ch.serveOnCaller, req, until)
}

// TakesFields implements FieldsTransport. A request for an address without a local node goes
// to the fallback with its map unless the fallback takes fields too (forFallback).
func (t *InProcTransport) TakesFields() {}

// forFallback readies req for the fallback transport.
func (t *InProcTransport) forFallback(req *Command) *Command {
	if _, ok := t.fallback.(FieldsTransport); !ok {
		req.Materialize()
	}
	return req
}

// InvokeAsync implements Transport.
func (t *InProcTransport) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	return t.InvokeAsyncUntil(ctx, addr, req, time.Time{}, cb)
}

// InvokeAsyncUntil implements DeadlineInvoker.
func (t *InProcTransport) InvokeAsyncUntil(ctx context.Context, addr string, req *Command, until time.Time, cb func(*Command, error)) error {
	if t.faults != nil {
		if lose, err := t.faults.Send(addr); err != nil || lose {
			if err != nil {
				return err
			}
			return invokeAsyncUntil(ctx, t.table, 0, lost, req, until, cb)
		}
	}
	ch, err := t.channel(addr)
	if err != nil {
		return err
	}
	if ch == nil {
		if t.fallback == nil {
			return fmt.Errorf("%w: %s", ErrNoRoute, addr)
		}
		return InvokeAsyncUntil(ctx, t.fallback, addr, t.forFallback(req), until, cb)
	}
	return invokeAsyncUntil(ctx, t.table, ch.id, ch.deliver, req, until, cb)
}

// InvokeOneway implements Transport.
func (t *InProcTransport) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	if t.faults != nil {
		if lose, err := t.faults.Send(addr); err != nil || lose {
			if err != nil {
				return err
			}
			return lost(req)
		}
	}
	ch, err := t.channel(addr)
	if err != nil {
		return err
	}
	if ch == nil {
		if t.fallback == nil {
			return fmt.Errorf("%w: %s", ErrNoRoute, addr)
		}
		return t.fallback.InvokeOneway(ctx, addr, t.forFallback(req))
	}
	req.MarkOneway()
	return ch.serveOnCaller(req)
}

// CloseConn drops the link to addr as if its connection broke: the node sees ConnClose and
// pending requests fail. The next request opens a new link.
func (t *InProcTransport) CloseConn(addr string) {
	t.mu.Lock()
	ch := t.chans[addr]
	delete(t.chans, addr)
	if ch != nil {
		ch.closeLocked()
	}
	t.mu.Unlock()
	if c, ok := t.fallback.(interface{ CloseConn(string) }); ok && ch == nil {
		c.CloseConn(addr)
	}
}

// Close implements Transport: every node sees its link close, and the fallback is closed too.
func (t *InProcTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	for addr, ch := range t.chans {
		ch.closeLocked()
		delete(t.chans, addr)
	}
	t.mu.Unlock()
	close(t.stop)
	t.wg.Wait()
	t.table.failAll(ErrClosed)
	t.srvTable.failAll(ErrClosed)
	if t.fallback != nil {
		return t.fallback.Close()
	}
	return nil
}

// inprocChannel is the node's view of one in-process client: the Channel its handlers answer
// and call back on.
type inprocChannel struct {
	id     uint64
	t      *InProcTransport
	d      *Dispatcher
	local  string
	remote string
	closed atomic.Bool
	unhook func() // forgets the dispatcher's close hook
}

func (ch *inprocChannel) ID() uint64         { return ch.id }
func (ch *inprocChannel) RemoteAddr() string { return ch.remote }
func (ch *inprocChannel) LocalAddr() string  { return ch.local }
func (ch *inprocChannel) Closed() bool       { return ch.closed.Load() }
func (ch *inprocChannel) trusted() bool      { return ch.t.trusted.Load() }

// closeLocked marks the link closed and tells both ends. ch.t.mu must be held.
func (ch *inprocChannel) closeLocked() {
	if ch.closed.Swap(true) {
		return
	}
	if ch.unhook != nil {
		ch.unhook()
	}
	ch.t.table.failOwner(ch.id, ErrConnClosed)
	ch.t.srvTable.failOwner(ch.id, ErrConnClosed)
	ch.d.FireEvent(ConnEvent{Type: ConnClose, Channel: ch})
}

// Close implements Channel: the node drops the client.
func (ch *inprocChannel) Close() error {
	ch.t.mu.Lock()
	if ch.t.chans[ch.local] == ch {
		delete(ch.t.chans, ch.local)
	}
	ch.closeLocked()
	ch.t.mu.Unlock()
	return nil
}

// deliver hands a client request to the node.
func (ch *inprocChannel) deliver(req *Command) error {
	if ch.closed.Load() {
		return ErrConnClosed
	}
	takeFields(req)
	ch.d.Dispatch(ch, req)
	return nil
}

// takeFields copies req's typed header (Fields) before the node sees the request: a worker may
// read it after the call returned (a timeout, an async caller) while the caller reuses its
// header, as a consumer does its pull header. No encoder runs in between, so a send's header
// becomes binary entries its processor reads in place (Command.FieldReader), and any other
// the map.
func takeFields(req *Command) {
	if !req.fieldsToRaw() {
		req.Materialize()
	}
}

// serveOnCaller is deliver for a caller that waits for the answer anyway (or wants none): a
// request the node serves inline runs on the caller's goroutine. An asynchronous caller keeps
// deliver, so its callback never runs inside its own InvokeAsync.
func (ch *inprocChannel) serveOnCaller(req *Command) error {
	if ch.closed.Load() {
		return ErrConnClosed
	}
	takeFields(req)
	if resp := ch.d.Serve(ch, req, false); resp != nil {
		return ch.WriteResponse(resp)
	}
	return nil
}

// WriteResponse hands a node's response to the waiting client. A body lent from storage is
// copied first, since the client may keep it after the lender takes it back.
func (ch *inprocChannel) WriteResponse(resp *Command) error {
	resp.Materialize()
	if resp.OnWritten != nil {
		resp.Body = append([]byte(nil), resp.Body...)
		resp.written()
	}
	if ch.closed.Load() {
		return ErrConnClosed
	}
	if ch.t.faults != nil && ch.t.faults.Drop(ch.local) {
		return nil
	}
	ch.t.table.complete(resp)
	return nil
}

// serve runs a node-initiated request on the client's processor, on its own goroutine as the TCP
// client does.
func (ch *inprocChannel) serve(req *Command) error {
	if ch.closed.Load() {
		return ErrConnClosed
	}
	req.Materialize()
	if ch.t.faults != nil && ch.t.faults.Drop(ch.local) {
		return nil
	}
	ch.t.procMu.RLock()
	p := ch.t.procs[req.Code]
	ch.t.procMu.RUnlock()
	if p == nil {
		if !req.IsOneway() {
			resp := NewResponseFor(req, RequestCodeNotSupported,
				fmt.Sprintf(" request type %d not supported", req.Code))
			ch.t.srvTable.complete(resp)
		}
		return nil
	}
	ch.t.wg.Add(1)
	go func() {
		defer ch.t.wg.Done()
		resp, err := p.ProcessRequest(context.Background(), clientSide{ch}, req)
		if err != nil {
			resp = ErrorResponse(err)
		}
		if resp == nil || req.IsOneway() {
			return
		}
		resp.Opaque = req.Opaque
		resp.Flag |= FlagResponse
		ch.t.srvTable.complete(resp)
	}()
	return nil
}

func (ch *inprocChannel) InvokeSync(ctx context.Context, req *Command) (*Command, error) {
	return invokeSync(ctx, ch.t.srvTable, ch.id, ch.serve, req)
}

func (ch *inprocChannel) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	return invokeAsync(ctx, ch.t.srvTable, ch.id, ch.serve, req, cb)
}

func (ch *inprocChannel) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return ch.serve(req)
}

// clientSide is the Channel a client's processor sees for a node-initiated request: answers go
// back to the node, and requests from it go to the node like any other.
type clientSide struct{ ch *inprocChannel }

func (c clientSide) ID() uint64         { return c.ch.id }
func (c clientSide) RemoteAddr() string { return c.ch.local }
func (c clientSide) LocalAddr() string  { return c.ch.remote }
func (c clientSide) Closed() bool       { return c.ch.Closed() }
func (c clientSide) Close() error       { return c.ch.Close() }

func (c clientSide) WriteResponse(resp *Command) error {
	resp.Materialize()
	if c.ch.Closed() {
		return ErrConnClosed
	}
	if c.ch.t.faults != nil && c.ch.t.faults.Drop(c.ch.local) {
		return nil
	}
	c.ch.t.srvTable.complete(resp)
	return nil
}

func (c clientSide) InvokeSync(ctx context.Context, req *Command) (*Command, error) {
	return invokeSync(ctx, c.ch.t.table, c.ch.id, c.ch.deliver, req)
}

func (c clientSide) InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error {
	return invokeAsync(ctx, c.ch.t.table, c.ch.id, c.ch.deliver, req, cb)
}

func (c clientSide) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return c.ch.deliver(req)
}
