package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Processor handles requests of one or more codes.
//
// ProcessRequest returns the response to send, or (nil, nil) when it answers later through
// ch.WriteResponse (a parked long poll) or not at all. An error becomes a response: a
// *ResponseError keeps its code and remark, a *HeaderError answers SYSTEM_ERROR naming the field,
// anything else SYSTEM_ERROR with the error text. The transport fills in the opaque, the response
// flag and the serialization of the request, and drops the answer to a one-way request.
type Processor interface {
	ProcessRequest(ctx context.Context, ch Channel, req *Command) (*Command, error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, ch Channel, req *Command) (*Command, error)

// ProcessRequest implements Processor.
func (f ProcessorFunc) ProcessRequest(ctx context.Context, ch Channel, req *Command) (*Command, error) {
	return f(ctx, ch, req)
}

type listenerEntry struct {
	id uint64
	l  ConnListener
}

type processorEntry struct {
	p  Processor
	ex *Executor
	// fallback marks the default processor, which serves codes nobody registered.
	fallback bool
	// inline reports the requests p answers without blocking or waiting, which a transport
	// may run on its own goroutine (Serve); nil means none.
	inline func(*Command) bool
	// bodyCapped: a request whose body is longer than maxBody is refused (SetMaxBody).
	bodyCapped bool
	maxBody    int
	name       string // the code's name in the refusal
	// rawHeader: p (and inline) read the header through Command.FieldReader or LookupExt,
	// so a request may reach them with its fields unparsed (ReadsRawHeader).
	rawHeader bool
}

// eventQueueSize bounds the connect and idle events waiting for listeners (RocketMQ's
// NettyEventExecutor keeps 10,000). Close and exception events are never dropped: see
// eventQueue.
const eventQueueSize = 10000

// Dispatcher is the processor table shared by the TCP server and the in-process transport:
// request code -> processor + executor, a default processor, and the connection listeners.
// Dispatch never blocks, so it may be called from an event loop.
type Dispatcher struct {
	log zerolog.Logger

	mu        sync.RWMutex
	table     map[int32]processorEntry
	def       *processorEntry
	executors []*Executor
	listeners []listenerEntry
	// listenerSeq numbers listeners for their removal.
	listenerSeq uint64
	started     bool
	closed      bool

	ctx     context.Context
	cancel  context.CancelFunc
	events  eventQueue
	dropped rateLimiter // events dropped from a full queue
	wg      sync.WaitGroup
	inline  sync.WaitGroup // requests Serve is processing; Close waits for them as for executors

	guard    atomic.Pointer[Guard]
	observer atomic.Pointer[observerBox]

	hookMu     sync.Mutex
	closeHooks map[uint64]func()
	hookSeq    uint64
	hooksRun   bool
}

// NewDispatcher makes an empty processor table. log may be nil.
func NewDispatcher(log *zerolog.Logger) *Dispatcher {
	l := zerolog.Nop()
	if log != nil {
		l = *log
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{
		log:     l.With().Str("component", "remoting").Logger(),
		table:   make(map[int32]processorEntry),
		ctx:     ctx,
		cancel:  cancel,
		events:  newEventQueue(eventQueueSize),
		dropped: rateLimiter{interval: time.Second},
	}
}

// Register routes requests with the given code to p, run on ex. Several codes may share one
// executor. Registering twice replaces the earlier processor.
func (d *Dispatcher) Register(code int32, p Processor, ex *Executor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.table[code] = processorEntry{p: p, ex: ex}
	d.addExecutorLocked(ex)
}

// RegisterInline is Register for a processor that answers some requests without blocking or
// waiting, such as a send appended under ASYNC_FLUSH, which is a copy into mapped memory: inline
// reports those, and a transport that reads on a goroutine of its own (the server's event loop,
// an in-process caller) runs them there through Serve, sparing the hop to ex and back. inline
// runs on that goroutine for every request of the code, so it must be cheap itself. A request
// processed inline may lie in the transport's read buffer: p must copy what it keeps of it. The hop
// is most of a small request's latency: a worker woken, then the loop woken again to write.
func (d *Dispatcher) RegisterInline(code int32, p Processor, ex *Executor, inline func(*Command) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.table[code] = processorEntry{p: p, ex: ex, inline: inline}
	d.addExecutorLocked(ex)
}

// SetMaxBody refuses requests of code (registered already) whose body is longer than max:
// they are answered SYSTEM_ERROR with a remark naming the code by name, and never reach the
// processor or wait in its executor. A code that takes no body (max 0, as PULL_MESSAGE) thus
// cannot be made to hold megabytes while it waits: RocketMQ ignores such a body, but keeps it
// with the request. The server also looks at the header of a large frame before its body
// has arrived (MaxBody) and drops a body over the limit as it comes, unbuffered.
func (d *Dispatcher) SetMaxBody(code int32, max int, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.table[code]; ok {
		e.bodyCapped, e.maxBody, e.name = true, max, name
		d.table[code] = e
	}
}

// ReadsRawHeader marks the processor of code (registered already) as reading its requests'
// extension fields only through Command.FieldReader and Command.LookupExt: the server then
// hands it send requests with the fields as they lay in the frame, and no map is built for
// them (rawSendCode). Every other processor, and the guard, gets the map.
func (d *Dispatcher) ReadsRawHeader(code int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.table[code]; ok {
		e.rawHeader = true
		d.table[code] = e
	}
}

// MaxBody returns the longest body a request of code may carry, and false when there is no
// limit.
func (d *Dispatcher) MaxBody(code int32) (int, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	e, ok := d.table[code]
	return e.maxBody, ok && e.bodyCapped
}

// bodyRefusal is the answer to a request of e's code whose body of n bytes is over the limit.
func bodyRefusal(e processorEntry, n int) *Command {
	if e.maxBody == 0 {
		return NewResponse(SystemError, fmt.Sprintf("%s takes no body; this request carried %d bytes", e.name, n))
	}
	return NewResponse(SystemError, fmt.Sprintf("%s takes at most %d bytes of body; this request carried %d",
		e.name, e.maxBody, n))
}

// RefuseBody answers req, whose body of n bytes the transport saw coming past its code's
// MaxBody and will not read: the response is ready to write, nil for a one-way request.
func (d *Dispatcher) RefuseBody(req *Command, n int) *Command {
	d.mu.RLock()
	e := d.table[req.Code]
	d.mu.RUnlock()
	if req.IsOneway() {
		return nil
	}
	resp := bodyRefusal(e, n)
	prepareReply(req, resp)
	return resp
}

// Guard decides whether the peer on ch may make req, before any processor sees it: nil lets the
// request through, a response refuses it (the dispatcher fills in the correlation fields). It
// runs on the goroutine that would process the request, for every request, so it must be cheap
// and must not block. ACL (NO_PERMISSION for a request not signed by an account allowed to make
// it) is one.
type Guard func(ch Channel, req *Command) *Command

// SetGuard installs g in front of every processor, for every channel but the trusted ones (see
// Trusted); nil removes it. Requests already being
// processed are not checked again.
func (d *Dispatcher) SetGuard(g Guard) {
	if g == nil {
		d.guard.Store(nil)
		return
	}
	d.guard.Store(&g)
}

// RequestObserver sees each request a dispatcher processes, for metrics. Its methods run on the
// goroutine that processed the request (an event loop for inline requests): they must be
// quick and must not block.
type RequestObserver interface {
	// Processed reports a request processed in elapsed. known is false for codes the default
	// processor served (whatever a client sent, so not a label to keep). respCode is the
	// answer's code; answered is false when the processor answers later or not at all (a
	// parked pull, a sync-flush send waiting for its group commit).
	Processed(code int32, known bool, respCode int32, answered bool, elapsed time.Duration)
	// Rejected reports a request answered SYSTEM_BUSY because its executor's queue was full.
	Rejected(code int32, known bool)
}

type observerBox struct{ o RequestObserver }

// SetObserver installs o for every request processed from now on; nil removes it.
func (d *Dispatcher) SetObserver(o RequestObserver) {
	if o == nil {
		d.observer.Store(nil)
		return
	}
	d.observer.Store(&observerBox{o})
}

// RegisterDefault routes every code without its own processor to p.
func (d *Dispatcher) RegisterDefault(p Processor, ex *Executor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.def = &processorEntry{p: p, ex: ex, fallback: true}
	d.addExecutorLocked(ex)
}

// addExecutorLocked remembers ex for Start and Close. d.mu must be held.
func (d *Dispatcher) addExecutorLocked(ex *Executor) {
	for _, e := range d.executors {
		if e == ex {
			return
		}
	}
	d.executors = append(d.executors, ex)
	if d.started {
		ex.start()
	}
}

// AddConnListener registers l for connection events; remove unregisters it.
func (d *Dispatcher) AddConnListener(l ConnListener) (remove func()) {
	d.mu.Lock()
	d.listenerSeq++
	id := d.listenerSeq
	d.listeners = append(d.listeners, listenerEntry{id, l})
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.listeners = slices.DeleteFunc(slices.Clone(d.listeners), func(e listenerEntry) bool { return e.id == id })
	}
}

// Unregister removes the processors of codes, so that their requests go to the default
// processor, then stops, after they drained, the executors no processor left uses: a part of
// a node (a broker) leaves the dispatcher this way to be replaced. Requests already queued or
// running on those executors finish first; Unregister returns once they have.
func (d *Dispatcher) Unregister(codes []int32) {
	d.mu.Lock()
	gone := map[*Executor]bool{}
	for _, c := range codes {
		if e, ok := d.table[c]; ok {
			gone[e.ex] = true
			delete(d.table, c)
		}
	}
	for _, e := range d.table {
		delete(gone, e.ex)
	}
	if d.def != nil {
		delete(gone, d.def.ex)
	}
	d.executors = slices.DeleteFunc(d.executors, func(ex *Executor) bool { return gone[ex] })
	d.mu.Unlock()
	// No Dispatch submits to them any more: it takes entries under d.mu.
	for ex := range gone {
		ex.stop()
	}
}

// Registered reports whether code has a processor of its own.
func (d *Dispatcher) Registered(code int32) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.table[code]
	return ok
}

// Start starts the executors' workers and the event goroutine. Close undoes it.
func (d *Dispatcher) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.closed {
		return
	}
	d.started = true
	for _, ex := range d.executors {
		ex.start()
	}
	d.wg.Add(1)
	go d.runEvents()
}

// Close stops taking requests, lets the executors finish what they hold and waits for them and
// for the event goroutine. Safe to call more than once.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	executors := d.executors
	d.mu.Unlock()
	d.cancel()
	d.runCloseHooks()
	for _, ex := range executors {
		ex.stop()
	}
	d.inline.Wait()
	d.events.close()
	d.wg.Wait()
}

// onClose registers f to run once when Close begins (the in-process transport drops its links
// then); the returned function unregisters it. It reports false, registering nothing, when
// Close has begun already.
func (d *Dispatcher) onClose(f func()) (unregister func(), ok bool) {
	d.hookMu.Lock()
	defer d.hookMu.Unlock()
	if d.hooksRun {
		return nil, false
	}
	if d.closeHooks == nil {
		d.closeHooks = make(map[uint64]func())
	}
	d.hookSeq++
	id := d.hookSeq
	d.closeHooks[id] = f
	return func() {
		d.hookMu.Lock()
		delete(d.closeHooks, id)
		d.hookMu.Unlock()
	}, true
}

// runCloseHooks runs the close hooks, outside every lock (they take their owners' locks).
func (d *Dispatcher) runCloseHooks() {
	d.hookMu.Lock()
	d.hooksRun = true
	hooks := d.closeHooks
	d.closeHooks = nil
	d.hookMu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// Context is the dispatcher's lifetime; it ends when Close begins.
func (d *Dispatcher) Context() context.Context { return d.ctx }

func (d *Dispatcher) runEvents() {
	defer d.wg.Done()
	for {
		ev, ok := d.events.pop()
		if !ok {
			return
		}
		d.mu.RLock()
		ls := d.listeners
		d.mu.RUnlock()
		for _, l := range ls {
			l.l(ev)
		}
	}
}

// FireEvent queues a connection event for the listeners without blocking a transport. Connect
// and idle events are dropped (and logged, at most once a second) while eventQueueSize of them
// wait; close and exception events are always delivered, since listeners free what a channel
// held when it closes.
func (d *Dispatcher) FireEvent(ev ConnEvent) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed || !d.started {
		return
	}
	if !d.events.push(ev) {
		if ok, suppressed := d.dropped.allow(); ok {
			d.log.Warn().Str("event", ev.Type.String()).Str("addr", ev.Channel.RemoteAddr()).
				Int64("suppressed", suppressed).Msg("connection event queue full, event dropped")
		}
	}
}

// eventQueue is the FIFO from transports to the event goroutine. One FIFO keeps each channel's
// events in order (a listener must not see a channel close before it connects). Connect and idle
// events count against max; close and exception events do not, and are bounded instead by the
// channels: each fires each at most once.
type eventQueue struct {
	ready chan struct{} // holds a token while events or closing wait

	mu        sync.Mutex
	q         []ConnEvent
	head      int
	droppable int // connect and idle events in q[head:]
	max       int
	closed    bool
}

func newEventQueue(max int) eventQueue {
	return eventQueue{ready: make(chan struct{}, 1), max: max}
}

func mayDrop(t ConnEventType) bool { return t == ConnConnect || t == ConnIdle }

// push queues ev, or reports false when it is droppable and the queue is full.
func (e *eventQueue) push(ev ConnEvent) bool {
	e.mu.Lock()
	if mayDrop(ev.Type) {
		if e.droppable >= e.max {
			e.mu.Unlock()
			return false
		}
		e.droppable++
	}
	e.q = append(e.q, ev)
	e.mu.Unlock()
	e.signal()
	return true
}

func (e *eventQueue) signal() {
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// pop waits for the next event; it reports false once the queue is closed and empty.
func (e *eventQueue) pop() (ConnEvent, bool) {
	for {
		e.mu.Lock()
		if e.head < len(e.q) {
			ev := e.q[e.head]
			e.q[e.head] = ConnEvent{}
			e.head++
			if mayDrop(ev.Type) {
				e.droppable--
			}
			switch {
			case e.head == len(e.q):
				e.head = 0
				e.q = e.q[:0]
				if cap(e.q) > 1024 {
					e.q = nil // let a burst's backing array go
				}
			case e.head >= 1024 && e.head >= len(e.q)/2:
				// A queue that never quite empties would otherwise keep every event
				// it ever held.
				n := copy(e.q, e.q[e.head:])
				clear(e.q[n:])
				e.q = e.q[:n]
				e.head = 0
			}
			e.mu.Unlock()
			return ev, true
		}
		closed := e.closed
		e.mu.Unlock()
		if closed {
			return ConnEvent{}, false
		}
		<-e.ready
	}
}

// close lets pop return false once the queued events are delivered.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.signal()
}

// Dispatch hands req to its processor's executor and returns at once. Unknown codes answer
// REQUEST_CODE_NOT_SUPPORTED; a full executor answers SYSTEM_BUSY.
func (d *Dispatcher) Dispatch(ch Channel, req *Command) { d.dispatch(ch, req, false) }

// DispatchAdmitted is Dispatch for a request the guard let through already: a default
// processor that held a request while the node started hands it on this way once its code has
// a processor. The guard does not check it again; a check that remembers what it saw (the
// cluster secret's nonces) would take it for a replay.
func (d *Dispatcher) DispatchAdmitted(ch Channel, req *Command) { d.dispatch(ch, req, true) }

func (d *Dispatcher) dispatch(ch Channel, req *Command, admitted bool) {
	d.mu.RLock()
	e, ok := d.table[req.Code]
	if ok && e.bodyCapped && len(req.Body) > e.maxBody {
		d.mu.RUnlock()
		d.reply(ch, req, bodyRefusal(e, len(req.Body)))
		return
	}
	if !ok && d.def != nil {
		e, ok = *d.def, true
	}
	closed := d.closed
	if ok && !closed {
		// Two closures rather than one capturing admitted: the common one stays as small as
		// it was.
		task := func() { d.run(e, ch, req, false) }
		if admitted {
			task = func() { d.run(e, ch, req, true) }
		}
		ok = e.ex.trySubmit(task)
		d.mu.RUnlock()
		if !ok {
			if box := d.observer.Load(); box != nil {
				box.o.Rejected(req.Code, !e.fallback)
			}
			d.reply(ch, req, NewResponse(SystemBusy,
				"[OVERLOAD]system busy, start flow control for a while"))
		}
		return
	}
	d.mu.RUnlock()
	if closed {
		d.reply(ch, req, NewResponse(ServiceNotAvailable, "server is shutting down"))
		return
	}
	d.reply(ch, req, NewResponse(RequestCodeNotSupported,
		fmt.Sprintf(" request type %d not supported", req.Code)))
}

// Serve is Dispatch for a transport that can answer on the goroutine it reads requests on: a
// request its processor registered as inline (RegisterInline) is processed here, and its
// response comes back ready to write (opaque, flag and serialization filled in), or nil when
// there is none to write (a one-way request, or a processor that answers later through
// ch.WriteResponse); any other request is dispatched as by Dispatch and Serve returns nil.
//
// borrowed says that req.Body lies in the transport's buffer, valid only until Serve returns:
// a request that is not processed here is given a copy first. (A processor served inline
// copies what it keeps: a send appends the body to the log.)
func (d *Dispatcher) Serve(ch Channel, req *Command, borrowed bool) *Command {
	d.mu.RLock()
	e, ok := d.table[req.Code]
	if ok && e.bodyCapped && len(req.Body) > e.maxBody {
		d.mu.RUnlock()
		if req.IsOneway() {
			return nil
		}
		resp := bodyRefusal(e, len(req.Body))
		prepareReply(req, resp)
		return resp
	}
	ok = ok && e.inline != nil && !d.closed
	if ok {
		d.inline.Add(1) // under the lock: Close cannot have begun waiting
	}
	d.mu.RUnlock()
	if ok && !e.rawHeader {
		req.Materialize()
	}
	if ok && !e.inline(req) {
		d.inline.Done()
		ok = false
	}
	if !ok {
		if borrowed && len(req.Body) > 0 {
			req.Body = bytes.Clone(req.Body)
		}
		d.Dispatch(ch, req)
		return nil
	}
	resp := d.process(e, ch, req, false)
	d.inline.Done()
	if resp == nil {
		return nil
	}
	if req.IsOneway() {
		resp.written()
		return nil
	}
	prepareReply(req, resp)
	return resp
}

// ServeHere processes req on the caller's goroutine, whatever executor its code has, and
// writes the answer to ch: for a caller that knows this request is cheap and must not wait
// for a worker, such as a parked pull woken by the message it waited for (the read finds what
// was just written). A code without a processor, or a dispatcher closing, goes to Dispatch.
func (d *Dispatcher) ServeHere(ch Channel, req *Command) {
	d.mu.RLock()
	e, ok := d.table[req.Code]
	ok = ok && !d.closed
	if ok {
		d.inline.Add(1) // under the lock: Close cannot have begun waiting
	}
	d.mu.RUnlock()
	if !ok {
		d.Dispatch(ch, req)
		return
	}
	defer d.inline.Done()
	d.run(e, ch, req, false)
}

func (d *Dispatcher) run(e processorEntry, ch Channel, req *Command, admitted bool) {
	if resp := d.process(e, ch, req, admitted); resp != nil {
		d.reply(ch, req, resp)
	}
}

// process runs e's processor on req, turns an error into its response and reports the request
// to the observer, if any. admitted skips the guard (DispatchAdmitted).
func (d *Dispatcher) process(e processorEntry, ch Channel, req *Command, admitted bool) *Command {
	if !e.rawHeader {
		req.Materialize()
	}
	box := d.observer.Load()
	var start time.Time
	if box != nil {
		start = time.Now()
	}
	resp, err := d.safeProcess(e.p, ch, req, admitted)
	if err != nil {
		resp = ErrorResponse(err)
	}
	if box != nil {
		var code int32
		if resp != nil {
			code = resp.Code
		}
		box.o.Processed(req.Code, !e.fallback, code, resp != nil, time.Since(start))
	}
	return resp
}

// safeProcess turns a processor panic into an error, so one bad request cannot take the node
// down; the panic is logged since it is a bug.
func (d *Dispatcher) safeProcess(p Processor, ch Channel, req *Command, admitted bool) (resp *Command, err error) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error().Int32("code", req.Code).Str("request", RequestCodeName(req.Code)).Interface("panic", r).Msg("processor panicked")
			resp, err = nil, fmt.Errorf("processor panic: %v", r)
		}
	}()
	if g := d.guard.Load(); g != nil && !admitted && !Trusted(ch) {
		req.Materialize() // a guard reads the map (a signature covers every field)
		if refused := (*g)(ch, req); refused != nil {
			return refused, nil
		}
	}
	return p.ProcessRequest(d.ctx, ch, req)
}

// ErrorResponse converts a processor error to the response RocketMQ would send for it.
func ErrorResponse(err error) *Command {
	var re *ResponseError
	if errors.As(err, &re) {
		return NewResponse(re.Code, re.Remark)
	}
	return NewResponse(SystemError, err.Error())
}

// reply fills in the correlation fields and writes resp, unless req was one-way.
func (d *Dispatcher) reply(ch Channel, req, resp *Command) {
	if req.IsOneway() {
		resp.written()
		return
	}
	prepareReply(req, resp)
	if err := ch.WriteResponse(resp); err != nil {
		d.log.Debug().Err(err).Int32("code", req.Code).Str("request", RequestCodeName(req.Code)).Str("addr", ch.RemoteAddr()).
			Msg("response not written")
	}
}

// AnswerLater writes resp on ch as the answer to req, for a processor that returned (nil, nil)
// and answers once its work is done: it fills in the correlation fields, as the dispatcher
// would, and writes nothing for a one-way req.
func AnswerLater(ch Channel, req, resp *Command) error {
	if req.IsOneway() {
		resp.written()
		return nil
	}
	prepareReply(req, resp)
	return ch.WriteResponse(resp)
}

// prepareReply makes resp the answer to req: its opaque, the response flag, its serialization.
func prepareReply(req, resp *Command) {
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	resp.Serialize = req.Serialize
}
