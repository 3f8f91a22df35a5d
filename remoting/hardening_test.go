package remoting

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// waitFor polls cond until it holds or the test has waited too long. Its users drive a real
// gnet server over loopback sockets, which cannot run in a synctest bubble (socket I/O never
// blocks durably), and the state they wait for (gnet's buffers, the server's connection table)
// offers no channel to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// serverConnOf returns the server's side of the client connection nc.
func serverConnOf(t *testing.T, srv *Server, nc net.Conn) *serverConn {
	t.Helper()
	var found *serverConn
	waitFor(t, "the server to register the connection", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, sc := range srv.conns {
			if sc.remote == nc.LocalAddr().String() {
				found = sc
			}
		}
		return found != nil
	})
	return found
}

// loopState reads what gnet itself buffers for sc, on sc's event loop (the only place gnet
// allows it).
func loopState(t *testing.T, sc *serverConn) (inbound, outbound int) {
	t.Helper()
	done := make(chan struct{})
	err := sc.c.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer close(done)
		if !sc.closed.Load() {
			inbound, outbound = sc.c.InboundBuffered(), sc.c.OutboundBuffered()
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	<-done
	return inbound, outbound
}

// largeResponder answers PULL_MESSAGE with body, lent as a pull lends mapped storage, and counts
// the requests handled and the bodies the transport gave back. With park set it answers nothing
// until answerParked, as a long poll does, so a test can have every response of a burst
// produced at once.
type largeResponder struct {
	body              []byte
	park              bool
	handled, released atomic.Int64

	mu     sync.Mutex
	parked []parkedPull
}

type parkedPull struct {
	ch  Channel
	req *Command
}

func (r *largeResponder) respond(ch Channel, req *Command) {
	resp := NewResponseFor(req, Success, "")
	resp.Body = r.body
	resp.OnWritten = func() { r.released.Add(1) }
	_ = ch.WriteResponse(resp)
}

func (r *largeResponder) register(d *Dispatcher) {
	d.Register(PullMessage, ProcessorFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.handled.Add(1)
		if r.park {
			r.parked = append(r.parked, parkedPull{ch, req})
		} else {
			r.respond(ch, req)
		}
		return nil, nil
	}), NewExecutor("pull", 4, 10000))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("send", 2, 1000))
}

// answerParked waits for n parked requests, answers them all and stops parking.
func (r *largeResponder) answerParked(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "the burst to be taken", func() bool { return r.handled.Load() >= int64(n) })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.park = false
	for _, p := range r.parked {
		r.respond(p.ch, p.req)
	}
	r.parked = nil
}

// honestTraffic sends small requests on its own connection until the returned function is
// called, which reports how many were answered; every one must be.
func honestTraffic(t *testing.T, addr string) func() int {
	t.Helper()
	c := NewClient(ClientOptions{Logger: testLogger(t)})
	quit := make(chan struct{})
	answered := make(chan int, 1)
	go func() {
		defer c.Close()
		n := 0
		defer func() { answered <- n }()
		for {
			select {
			case <-quit:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := c.InvokeSync(ctx, addr, NewRequest(SendMessage, map[string]string{"k": "v"}, []byte("hi")))
			cancel()
			if err != nil {
				t.Errorf("honest request %d: %v", n, err)
				<-quit
				return
			}
			n++
			time.Sleep(time.Millisecond) // pacing: an honest client's trickle beside the attack, not a wait
		}
	}()
	var n int
	stop := sync.OnceFunc(func() { close(quit); n = <-answered })
	t.Cleanup(stop)
	return func() int { stop(); return n }
}

// writeRequests writes n requests in one write and returns their opaques and size.
func writeRequests(t *testing.T, nc net.Conn, code int32, n int) ([]int32, int) {
	t.Helper()
	var buf []byte
	opaques := make([]int32, n)
	for i := range n {
		req := NewRequest(code, map[string]string{"topic": "T", "queueId": "0"}, nil)
		opaques[i] = req.Opaque
		buf = AppendFrame(buf, req)
	}
	if _, err := nc.Write(buf); err != nil {
		t.Fatal(err)
	}
	return opaques, len(buf)
}

// A peer that asks for large responses and never reads them holds at most MaxPendingWriteBytes
// plus one response in the server's buffers; the server stops reading it meanwhile, serves other
// connections throughout, and catches up once the peer reads.
func TestUnreadResponsesBounded(t *testing.T) {
	const (
		limit    = 256 << 10
		bodySize = 64 << 10
		burst    = 400 // 25 MiB of responses
		later    = 50
	)
	r := &largeResponder{body: make([]byte, bodySize), park: true}
	d := NewDispatcher(testLogger(t))
	r.register(d)
	n := startNode(t, d, ServerOptions{MaxPendingWriteBytes: limit, ScanInterval: 10 * time.Millisecond})

	stopHonest := honestTraffic(t, n.addr)

	nc, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc := serverConnOf(t, n.srv, nc)
	want := map[int32]bool{}
	opaques, _ := writeRequests(t, nc, PullMessage, burst)
	for _, o := range opaques {
		want[o] = true
	}
	frameSize := len(AppendFrameHeader(nil, &Command{Body: r.body})) + bodySize + 64
	// Every request taken has been answered, into gnet or into the outbox.
	settled := func() bool {
		st := sc.out.stats()
		return st.queued == 0 && r.handled.Load() == r.released.Load()+int64(st.held)
	}
	r.answerParked(t, burst)
	waitFor(t, "the server to answer the burst", settled)
	in0, outbound := loopState(t, sc)
	st := sc.out.stats()
	if outbound > limit+frameSize || st.peak > limit+frameSize {
		t.Fatalf("gnet holds %d bytes for the connection (peak %d); the cap is %d plus one %d-byte response",
			outbound, st.peak, limit, frameSize)
	}
	if st.held == 0 {
		t.Fatalf("no response waits: the test did not produce a backlog")
	}

	// While its backlog is over the cap the server leaves the connection's requests unread.
	opaques, size := writeRequests(t, nc, PullMessage, later)
	for _, o := range opaques {
		want[o] = true
	}
	waitFor(t, "the later requests to wait unread in the inbound buffer", func() bool {
		in, _ := loopState(t, sc)
		return in >= in0+size
	})
	waitFor(t, "the server to settle", settled)
	if h := r.handled.Load(); h > burst {
		t.Fatalf("the server took %d requests from a connection over its write cap", h-burst)
	}
	if _, outbound := loopState(t, sc); outbound > limit+frameSize || sc.out.stats().peak > limit+frameSize {
		t.Fatalf("gnet holds %d bytes for the connection (peak %d)", outbound, sc.out.stats().peak)
	}

	// Other connections are served while this one is stalled.
	c := NewClient(ClientOptions{Logger: testLogger(t)})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.InvokeSync(ctx, n.addr, NewRequest(PullMessage, nil, nil)); err != nil {
		t.Fatalf("a request on another connection during the stall: %v", err)
	}
	if got := stopHonest(); got == 0 {
		t.Fatal("no honest request was answered during the attack")
	}

	// Once the peer reads, every response arrives, the later requests included.
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for len(want) > 0 {
		resp := readFrame(t, nc)
		if !want[resp.Opaque] {
			t.Fatalf("unexpected response opaque %d", resp.Opaque)
		}
		delete(want, resp.Opaque)
	}
	waitFor(t, "every lent body to be given back", func() bool {
		return r.released.Load() == r.handled.Load()
	})
}

// Closing a connection releases the responses still waiting for it.
func TestHeldResponsesReleasedOnClose(t *testing.T) {
	r := &largeResponder{body: make([]byte, 64<<10), park: true}
	d := NewDispatcher(testLogger(t))
	r.register(d)
	n := startNode(t, d, ServerOptions{MaxPendingWriteBytes: 64 << 10})
	nc, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	sc := serverConnOf(t, n.srv, nc)
	writeRequests(t, nc, PullMessage, 400)
	r.answerParked(t, 400)
	waitFor(t, "responses to wait in the outbox", func() bool { return sc.out.stats().held > 0 })
	nc.Close()
	waitFor(t, "the server to release every body", func() bool {
		return sc.Closed() && r.released.Load() == r.handled.Load()
	})
}

// A paused peer that keeps sending requests is disconnected once it sent more than
// MaxFrameBytes + MaxPendingWriteBytes; the server does not buffer its bytes without bound.
func TestPausedConnectionFloodClosed(t *testing.T) {
	r := &largeResponder{body: make([]byte, 64<<10), park: true}
	d := NewDispatcher(testLogger(t))
	r.register(d)
	closed := make(chan uint64, 16)
	d.AddConnListener(func(ev ConnEvent) {
		if ev.Type == ConnClose {
			closed <- ev.Channel.ID()
		}
	})
	const maxFrame, limit = 16 << 10, 64 << 10
	n := startNode(t, d, ServerOptions{MaxFrameBytes: maxFrame, MaxPendingWriteBytes: limit})
	nc, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc := serverConnOf(t, n.srv, nc)
	writeRequests(t, nc, PullMessage, 400)
	r.answerParked(t, 400)
	waitFor(t, "the connection to stall", func() bool { return sc.out.stats().held > 0 })
	// Requests the server will not read: a little past the limit, in several writes.
	junk := AppendFrame(nil, NewRequest(SendMessage, nil, make([]byte, 8<<10)))
	for sent := 0; sent <= maxFrame+limit+len(junk); sent += len(junk) {
		if _, err := nc.Write(junk); err != nil {
			break // already closed
		}
	}
	select {
	case id := <-closed:
		if id != sc.id {
			t.Fatalf("closed connection %d, want %d", id, sc.id)
		}
	case <-time.After(20 * time.Second):
		in, _ := loopState(t, sc)
		t.Fatalf("a paused connection holding %d unread bytes was left open", in)
	}
}

func readFrame(t *testing.T, nc net.Conn) *Command {
	t.Helper()
	var prefix [4]byte
	if _, err := io.ReadFull(nc, prefix[:]); err != nil {
		t.Fatal(err)
	}
	l, err := FrameLength(prefix[:], 0)
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, l)
	if _, err := io.ReadFull(nc, frame); err != nil {
		t.Fatal(err)
	}
	c, err := DecodeFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// assertClosedByPeer fails unless the server closes nc soon.
func assertClosedByPeer(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := nc.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("%s: connection left open (%v)", what, err)
	}
}

func TestMaxConnections(t *testing.T) {
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 1, 16))
	connects := make(chan struct{}, 16)
	d.AddConnListener(func(ev ConnEvent) {
		if ev.Type == ConnConnect {
			connects <- struct{}{}
		}
	})
	n := startNode(t, d, ServerOptions{MaxConnections: 3})
	ask := func(nc net.Conn) {
		t.Helper()
		writeRequests(t, nc, SendMessage, 1)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp := readFrame(t, nc); resp.Code != Success {
			t.Fatalf("response %+v", resp)
		}
	}
	var open []net.Conn
	for range 3 {
		nc, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ask(nc)
		open = append(open, nc)
	}
	extra, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	assertClosedByPeer(t, extra, "a connection over MaxConnections")
	if got := n.srv.ConnCount(); got != 3 {
		t.Fatalf("%d connections open, want 3", got)
	}
	if len(connects) != 3 {
		t.Fatalf("%d connect events, want 3: listeners heard of a refused connection", len(connects))
	}
	for _, nc := range open {
		ask(nc) // the admitted ones are unaffected
	}
	open[0].Close()
	waitFor(t, "the server to see a close", func() bool { return n.srv.ConnCount() == 2 })
	again, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	ask(again)
}

// Headers over the limits close the connection that sent them, and only that one.
func TestServerHeaderLimits(t *testing.T) {
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 1, 16))
	n := startNode(t, d, ServerOptions{MaxHeaderBytes: 1024, MaxExtFields: 8})
	good := NewClient(ClientOptions{Logger: testLogger(t)})
	defer good.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for name, frame := range map[string][]byte{
			"header": commandWithHeader(t, st, 1025),
			"fields": commandWithFields(st, 9),
		} {
			bad, err := net.Dial("tcp", n.addr)
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte{0, 0, 0, 0}
			prefix[0], prefix[1], prefix[2], prefix[3] = byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame))
			if _, err := bad.Write(append(prefix, frame...)); err != nil {
				t.Fatal(err)
			}
			assertClosedByPeer(t, bad, serializeNames[st]+" "+name+" over the limit")
			bad.Close()
		}
		req := NewRequest(SendMessage, map[string]string{"a": "1"}, nil)
		req.Serialize = st
		if _, err := good.InvokeSync(ctx, n.addr, req); err != nil {
			t.Fatalf("the good connection suffered: %v", err)
		}
	}
}

// The client closes a connection whose server sends a header over its limits.
func TestClientHeaderLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Add(1)
	go func() { // answers each request with as many extFields as the request's "n" says
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				for {
					req := readFrameErr(nc)
					if req == nil {
						return
					}
					resp := NewResponseFor(req, Success, "")
					resp.Flag = FlagResponse
					resp.ExtFields = map[string]string{}
					for i := range int(req.Code) {
						resp.ExtFields[string(rune('a'+i%26))+itoa(int64(i))] = "v"
					}
					if _, err := nc.Write(AppendFrame(nil, resp)); err != nil {
						return
					}
				}
			}()
		}
	}()
	c := NewClient(ClientOptions{MaxExtFields: 8, Logger: testLogger(t)})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := c.InvokeSync(ctx, ln.Addr().String(), NewRequest(8, nil, nil)); err != nil || len(resp.ExtFields) != 8 {
		t.Fatalf("8 fields: %v", err)
	}
	if _, err := c.InvokeSync(ctx, ln.Addr().String(), NewRequest(9, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("9 fields: %v, want ErrConnClosed", err)
	}
}

func readFrameErr(nc net.Conn) *Command {
	var prefix [4]byte
	if _, err := io.ReadFull(nc, prefix[:]); err != nil {
		return nil
	}
	l, err := FrameLength(prefix[:], 1<<20)
	if err != nil {
		return nil
	}
	frame := make([]byte, l)
	if _, err := io.ReadFull(nc, frame); err != nil {
		return nil
	}
	c, _ := DecodeFrame(frame)
	return c
}

// With the event queue full behind a stuck listener, connect events may be dropped but every
// close event still arrives, after its connection's connect.
func TestCloseEventsNeverDropped(t *testing.T) {
	const conns = 20
	d := NewDispatcher(testLogger(t))
	d.events.max = 4
	release := make(chan struct{})
	var mu sync.Mutex
	var events []ConnEvent
	d.AddConnListener(func(ev ConnEvent) {
		<-release
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	n := startNode(t, d, ServerOptions{})
	var ncs []net.Conn
	for range conns {
		nc, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		ncs = append(ncs, nc)
	}
	waitFor(t, "every connection to open", func() bool { return n.srv.ConnCount() == conns })
	for _, nc := range ncs {
		nc.Close()
	}
	waitFor(t, "every connection to close", func() bool { return n.srv.ConnCount() == 0 })
	close(release)
	waitFor(t, "the close events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		closes := 0
		for _, ev := range events {
			if ev.Type == ConnClose {
				closes++
			}
		}
		return closes == conns
	})
	mu.Lock()
	defer mu.Unlock()
	closedIDs := map[uint64]bool{}
	connects := 0
	for _, ev := range events {
		switch ev.Type {
		case ConnConnect:
			connects++
			if closedIDs[ev.Channel.ID()] {
				t.Fatalf("channel %d: connect delivered after its close", ev.Channel.ID())
			}
		case ConnClose:
			closedIDs[ev.Channel.ID()] = true
		}
	}
	if len(closedIDs) != conns {
		t.Fatalf("close events for %d channels, want %d", len(closedIDs), conns)
	}
	if connects > 1+d.events.max {
		t.Fatalf("%d connect events delivered through a queue of %d", connects, d.events.max)
	}
}

// A server flooding a client with requests whose handlers block gets SYSTEM_BUSY beyond
// MaxServerRequests, one-way requests beyond it are dropped, and the client starts no more
// handlers than that.
func TestClientBoundsServerRequests(t *testing.T) {
	const max = 4
	chans := make(chan Channel, 1)
	d := NewDispatcher(testLogger(t))
	d.Register(HeartBeat, ProcessorFunc(func(_ context.Context, ch Channel, _ *Command) (*Command, error) {
		chans <- ch
		return NewResponse(Success, ""), nil
	}), NewExecutor("hb", 1, 8))
	n := startNode(t, d, ServerOptions{})
	c := NewClient(ClientOptions{MaxServerRequests: max, Logger: testLogger(t)})
	defer c.Close()
	var running, peak, ran atomic.Int64
	release := make(chan struct{})
	block := ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
		now := running.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		ran.Add(1)
		<-release
		running.Add(-1)
		return NewResponse(Success, ""), nil
	})
	c.RegisterProcessor(GetConsumerRunningInfo, block)
	c.RegisterProcessor(NotifyConsumerIDsChanged, block)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.InvokeSync(ctx, n.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	ch := <-chans

	results := make(chan *Command, 2*max)
	ask := func() {
		if err := ch.InvokeAsync(ctx, NewRequest(GetConsumerRunningInfo, nil, nil), func(c *Command, err error) {
			if err != nil {
				t.Errorf("server request: %v", err)
			}
			results <- c
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range max {
		ask()
	}
	waitFor(t, "the handlers to start", func() bool { return running.Load() == max })
	for range 3 { // dropped: the client reads them before the requests below
		if err := ch.InvokeOneway(NewRequest(NotifyConsumerIDsChanged, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	for range max {
		ask()
	}
	for range max {
		if resp := <-results; resp == nil || resp.Code != SystemBusy {
			t.Fatalf("request over the limit answered %+v, want SYSTEM_BUSY", resp)
		}
	}
	close(release)
	for range max {
		if resp := <-results; resp == nil || resp.Code != Success {
			t.Fatalf("admitted request answered %+v", resp)
		}
	}
	if peak.Load() != max || ran.Load() != max {
		t.Fatalf("%d handlers ran, at most %d at once; want %d", ran.Load(), peak.Load(), max)
	}
	// The slots come back.
	resp, err := ch.InvokeSync(ctx, NewRequest(GetConsumerRunningInfo, nil, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("after the flood: %v %+v", err, resp)
	}
}
