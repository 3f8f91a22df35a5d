package remoting

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/tlstest"
	"github.com/rs/zerolog"
)

// testNode is a dispatcher served over TCP and reachable in-process.
type testNode struct {
	d    *Dispatcher
	addr string
	srv  *Server
}

func testLogger(t *testing.T) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return &l
}

// startNode serves d on 127.0.0.1:0 until the test ends.
func startNode(t *testing.T, d *Dispatcher, opts ServerOptions) *testNode {
	t.Helper()
	opts.Logger = testLogger(t)
	d.Start()
	srv := NewServer(d, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	if srv.Addr() == "" {
		cancel()
		t.Fatalf("server did not start: %v", <-done)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server run: %v", err)
		}
		d.Close()
	})
	return &testNode{d: d, addr: srv.Addr(), srv: srv}
}

// transports runs f over TCP, over TLS, over plaintext TCP to a server that also takes TLS,
// and in-process, each with a fresh node built by setup.
func transports(t *testing.T, setup func(d *Dispatcher), f func(t *testing.T, tr Transport, n *testNode)) {
	certs := testCerts(t)
	for _, kind := range []string{"tcp", "tls", "tcp-permissive", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			d := NewDispatcher(testLogger(t))
			setup(d)
			opts := ServerOptions{ScanInterval: 20 * time.Millisecond}
			if kind == "tls" || kind == "tcp-permissive" {
				opts.TLSMode, opts.TLSConfig = TLSPermissive, certs.Server()
			}
			n := startNode(t, d, opts)
			var tr Transport
			if kind != "inproc" {
				copts := ClientOptions{ScanInterval: 20 * time.Millisecond, Logger: testLogger(t)}
				if kind == "tls" {
					copts.TLSConfig = certs.Client()
				}
				tr = NewClient(copts)
			} else {
				tr = NewInProcTransport(func(addr string) *Dispatcher {
					if addr == n.addr {
						return d
					}
					return nil
				}, nil, 20*time.Millisecond)
			}
			t.Cleanup(func() { tr.Close() })
			f(t, tr, n)
		})
	}
}

func testCerts(t *testing.T) *tlstest.Certs {
	t.Helper()
	c, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// echo answers with the request's ext fields and body, and remark = code.
func echo(_ context.Context, _ Channel, req *Command) (*Command, error) {
	resp := NewResponse(Success, fmt.Sprint(req.Code))
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp, nil
}

func TestInvokeModes(t *testing.T) {
	var oneways atomic.Int32
	onewayDone := make(chan struct{}, 1)
	setup := func(d *Dispatcher) {
		ex := NewExecutor("test", 4, 64)
		d.Register(SendMessage, ProcessorFunc(echo), ex)
		d.Register(UpdateConsumerOffset, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
			oneways.Add(1)
			onewayDone <- struct{}{}
			return NewResponse(Success, ""), nil
		}), ex)
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			req := NewRequest(SendMessage, map[string]string{"topic": "T", "p": "a\x01b\x02"}, []byte("hello"))
			req.Serialize = st
			resp, err := tr.InvokeSync(ctx, n.addr, req)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			if resp.Ext("p") != "a\x01b\x02" || string(resp.Body) != "hello" || resp.Opaque != req.Opaque {
				t.Fatalf("sync response %+v", resp)
			}
			if _, ok := tr.(*Client); ok && resp.Serialize != st {
				t.Fatalf("answered in serialization %d, request used %d", resp.Serialize, st)
			}

			got := make(chan *Command, 1)
			areq := NewRequest(SendMessage, map[string]string{"k": "async"}, nil)
			areq.Serialize = st
			if err := tr.InvokeAsync(ctx, n.addr, areq, func(c *Command, err error) {
				if err != nil {
					t.Errorf("async: %v", err)
				}
				got <- c
			}); err != nil {
				t.Fatal(err)
			}
			if c := <-got; c == nil || c.Ext("k") != "async" {
				t.Fatalf("async response %+v", c)
			}

			oreq := NewRequest(UpdateConsumerOffset, nil, nil)
			oreq.Serialize = st
			if err := tr.InvokeOneway(ctx, n.addr, oreq); err != nil {
				t.Fatal(err)
			}
			<-onewayDone
		}
		if oneways.Load() != 2 {
			t.Fatalf("oneway processed %d times", oneways.Load())
		}
		oneways.Store(0)
	})
}

func TestConcurrentRequestsMatchedByOpaque(t *testing.T) {
	setup := func(d *Dispatcher) {
		d.Register(SendMessage, ProcessorFunc(func(ctx context.Context, ch Channel, req *Command) (*Command, error) {
			// Answer out of order: later requests often finish first.
			time.Sleep(time.Duration(req.Opaque%7) * time.Millisecond)
			return echo(ctx, ch, req)
		}), NewExecutor("send", 16, 256))
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := fmt.Sprint(i)
				resp, err := tr.InvokeSync(ctx, n.addr, NewRequest(SendMessage, map[string]string{"i": want}, nil))
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				if resp.Ext("i") != want {
					t.Errorf("request %d got the answer for %s", i, resp.Ext("i"))
				}
			}()
		}
		wg.Wait()
		if c, ok := tr.(*Client); ok {
			c.mu.Lock()
			nconns := len(c.conns)
			c.mu.Unlock()
			if nconns != 1 {
				t.Fatalf("%d connections, want 1 multiplexed", nconns)
			}
		}
	})
}

func TestTimeoutsFailTheRightRequests(t *testing.T) {
	release := make(chan struct{})
	setup := func(d *Dispatcher) {
		ex := NewExecutor("t", 4, 16)
		d.Register(SendMessage, ProcessorFunc(echo), ex)
		d.Register(PullMessage, ProcessorFunc(func(ctx context.Context, ch Channel, req *Command) (*Command, error) {
			<-release // never answers in time
			return nil, nil
		}), ex)
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		defer func() { release <- struct{}{}; release <- struct{}{} }()
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := tr.InvokeSync(short, n.addr, NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("sync held request: %v, want ErrTimeout", err)
		}
		asyncErr := make(chan error, 1)
		if err := tr.InvokeAsync(short, n.addr, NewRequest(PullMessage, nil, nil), func(_ *Command, err error) {
			asyncErr <- err
		}); err != nil {
			t.Fatal(err)
		}
		long, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		if _, err := tr.InvokeSync(long, n.addr, NewRequest(SendMessage, nil, nil)); err != nil {
			t.Fatalf("a prompt request beside the stuck ones failed: %v", err)
		}
		if err := <-asyncErr; !errors.Is(err, ErrTimeout) {
			t.Fatalf("async held request: %v, want ErrTimeout", err)
		}
	})
}

// A request code wider than a short (RocketMQ 5's POP codes) reaches its processor over every
// transport and serialization, and an unknown one is answered, not a reason to drop the
// connection.
func TestWideRequestCodes(t *testing.T) {
	const popMessage, unknown = 200050, 200099
	setup := func(d *Dispatcher) {
		d.Register(popMessage, ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			return NewResponse(Success, strconv.Itoa(int(req.Code))), nil
		}), NewExecutor("pop", 1, 10))
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, ser := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			req := NewRequest(popMessage, nil, nil)
			req.Serialize = ser
			resp, err := tr.InvokeSync(ctx, n.addr, req)
			if err != nil || resp.Code != Success || resp.Remark != "200050" {
				t.Fatalf("serialize %d: %v %+v", ser, err, resp)
			}
			resp, err = tr.InvokeSync(ctx, n.addr, NewRequest(unknown, nil, nil))
			if err != nil || resp.Code != RequestCodeNotSupported {
				t.Fatalf("unknown wide code: %v %+v", err, resp)
			}
		}
	})
}

func TestUnknownCodeAndBusyPool(t *testing.T) {
	var block, entered chan struct{}
	setup := func(d *Dispatcher) {
		block, entered = make(chan struct{}), make(chan struct{}, 2)
		d.Register(SendMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
			entered <- struct{}{}
			<-block
			return NewResponse(Success, ""), nil
		}), NewExecutor("tiny", 1, 1))
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		unblock := sync.OnceFunc(func() { close(block) })
		defer unblock()
		resp, err := tr.InvokeSync(ctx, n.addr, NewRequest(999, nil, nil))
		if err != nil || resp.Code != RequestCodeNotSupported {
			t.Fatalf("unknown code: %v %+v", err, resp)
		}
		results := make(chan *Command, 2)
		for i := range 2 { // one runs, one waits in the queue
			if err := tr.InvokeAsync(ctx, n.addr, NewRequest(SendMessage, nil, nil), func(c *Command, _ error) {
				results <- c
			}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				select {
				case <-entered:
				case <-ctx.Done():
					t.Fatal("first request never ran")
				}
			}
		}
		// The worker is busy and the queue holds one: the third is refused.
		var busy *Command
		for busy == nil || busy.Code != SystemBusy {
			busy, err = tr.InvokeSync(ctx, n.addr, NewRequest(SendMessage, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if busy.Code == Success {
				t.Fatal("a request beyond the pool's capacity ran")
			}
		}
		unblock()
		for range 2 {
			if c := <-results; c == nil || c.Code != Success {
				t.Fatalf("queued request: %+v", c)
			}
		}
	})
}

func TestServerToClientRequests(t *testing.T) {
	chans := make(chan Channel, 1)
	setup := func(d *Dispatcher) {
		d.Register(HeartBeat, ProcessorFunc(func(_ context.Context, ch Channel, _ *Command) (*Command, error) {
			chans <- ch
			return NewResponse(Success, ""), nil
		}), NewExecutor("hb", 1, 8))
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		notified := make(chan string, 1)
		tr.RegisterProcessor(GetConsumerRunningInfo, ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			r := NewResponse(Success, "")
			r.Body = []byte("running:" + req.Ext("consumerGroup"))
			return r, nil
		}))
		tr.RegisterProcessor(NotifyConsumerIDsChanged, ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			notified <- req.Ext("consumerGroup")
			return nil, nil
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := tr.InvokeSync(ctx, n.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
			t.Fatal(err)
		}
		ch := <-chans
		resp, err := ch.InvokeSync(ctx, NewRequest(GetConsumerRunningInfo, map[string]string{"consumerGroup": "cg"}, nil))
		if err != nil || string(resp.Body) != "running:cg" {
			t.Fatalf("server->client sync: %v %+v", err, resp)
		}
		got := make(chan *Command, 1)
		if err := ch.InvokeAsync(ctx, NewRequest(GetConsumerRunningInfo, map[string]string{"consumerGroup": "x"}, nil),
			func(c *Command, err error) { got <- c }); err != nil {
			t.Fatal(err)
		}
		if c := <-got; c == nil || string(c.Body) != "running:x" {
			t.Fatalf("server->client async: %+v", c)
		}
		if err := ch.InvokeOneway(NewRequest(NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "cg"}, nil)); err != nil {
			t.Fatal(err)
		}
		if g := <-notified; g != "cg" {
			t.Fatalf("notify carried %q", g)
		}
		resp, err = ch.InvokeSync(ctx, NewRequest(12345, nil, nil))
		if err != nil || resp.Code != RequestCodeNotSupported {
			t.Fatalf("unknown code at the client: %v %+v", err, resp)
		}
	})
}

func TestConnectionEvents(t *testing.T) {
	events := make(chan ConnEvent, 16)
	setup := func(d *Dispatcher) {
		d.Register(HeartBeat, ProcessorFunc(echo), NewExecutor("hb", 1, 8))
		d.AddConnListener(func(ev ConnEvent) { events <- ev })
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := tr.InvokeSync(ctx, n.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
			t.Fatal(err)
		}
		open := <-events
		if open.Type != ConnConnect {
			t.Fatalf("first event %v", open.Type)
		}
		tr.(interface{ CloseConn(string) }).CloseConn(n.addr)
		for ev := range events {
			if ev.Type == ConnClose {
				if ev.Channel.ID() != open.Channel.ID() || !ev.Channel.Closed() {
					t.Fatalf("close event for another channel")
				}
				break
			}
		}
		// The next request reconnects.
		if _, err := tr.InvokeSync(ctx, n.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
			t.Fatalf("after reconnect: %v", err)
		}
	})
}

func TestIdleConnectionsClosed(t *testing.T) {
	events := make(chan ConnEvent, 16)
	d := NewDispatcher(testLogger(t))
	d.AddConnListener(func(ev ConnEvent) { events <- ev })
	n := startNode(t, d, ServerOptions{IdleTimeout: 30 * time.Millisecond, ScanInterval: 10 * time.Millisecond})
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen []ConnEventType
	for ev := range events {
		seen = append(seen, ev.Type)
		if ev.Type == ConnClose {
			break
		}
	}
	if len(seen) != 3 || seen[1] != ConnIdle {
		t.Fatalf("events %v, want CONNECT IDLE CLOSE", seen)
	}
}

// A malformed frame costs its own connection only.
func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 2, 8))
	n := startNode(t, d, ServerOptions{MaxFrameBytes: 1 << 16})
	good := NewClient(ClientOptions{})
	defer good.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := good.InvokeSync(ctx, n.addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for _, junk := range [][]byte{
		{0, 0x10, 0, 0, 1, 2, 3},           // over the maximum
		{0, 0, 0, 1, 0},                    // under the header word
		{0, 0, 0, 6, 9, 0, 0, 2, '{', '}'}, // unknown serialize type
		{0, 0, 0, 7, 0, 0, 0, 3, '{', '!', '}'},
	} {
		bad, err := net.Dial("tcp", n.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bad.Write(junk); err != nil {
			t.Fatal(err)
		}
		_ = bad.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := bad.Read(make([]byte, 1)); err == nil {
			t.Fatalf("server answered junk %x instead of closing", junk)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("junk %x: connection left open", junk)
		}
		bad.Close()
	}
	if _, err := good.InvokeSync(ctx, n.addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatalf("the good connection suffered: %v", err)
	}
}

// Partial frames arriving a byte at a time still decode.
func TestServerAssemblesSplitFrames(t *testing.T) {
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 1, 8))
	n := startNode(t, d, ServerOptions{})
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := NewRequest(SendMessage, map[string]string{"a": "b"}, []byte("xyz"))
	frame := AppendFrame(nil, req)
	for i := range frame {
		if _, err := c.Write(frame[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for {
		k, err := c.Read(tmp)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, tmp[:k]...)
		if fr, m, _ := SplitFrame(buf, 0); m > 0 {
			resp, err := DecodeFrame(fr)
			if err != nil || resp.Opaque != req.Opaque || string(resp.Body) != "xyz" {
				t.Fatalf("response %+v %v", resp, err)
			}
			return
		}
	}
}

// A request parked by a local node fails with ErrConnClosed when that node's dispatcher closes,
// as a TCP request does when its server goes away, not at its deadline.
func TestInProcRequestsFailWhenNodeCloses(t *testing.T) {
	d := NewDispatcher(testLogger(t))
	parked := make(chan struct{}, 1)
	d.Register(PullMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
		parked <- struct{}{}
		return nil, nil // answered later, or never
	}), NewExecutor("pull", 1, 8))
	d.Start()
	tr := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 0)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	if err := tr.InvokeAsync(ctx, "node", NewRequest(PullMessage, nil, nil), func(_ *Command, err error) { errc <- err }); err != nil {
		t.Fatal(err)
	}
	<-parked
	d.Close()
	if err := <-errc; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("parked request: %v, want ErrConnClosed", err)
	}
}
