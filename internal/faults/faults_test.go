package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mqgo/mq/remoting"
)

// testNode is a remoting server on 127.0.0.1:0 and its dispatcher.
type testNode struct {
	d    *remoting.Dispatcher
	addr string
}

func testLogger(t *testing.T) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return &l
}

func startNode(t *testing.T, d *remoting.Dispatcher) *testNode {
	t.Helper()
	d.Start()
	srv := remoting.NewServer(d, remoting.ServerOptions{ScanInterval: 20 * time.Millisecond, Logger: testLogger(t)})
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
	return &testNode{d: d, addr: srv.Addr()}
}

// transports runs f against a node set up by setup, once per transport a node can join
// Faults with: the TCP Client, the in-process transport, and the in-process transport whose
// requests all go to its Client fallback (it joins with it).
func transports(t *testing.T, setup func(d *remoting.Dispatcher), f func(t *testing.T, tr remoting.Transport, n *testNode)) {
	for _, kind := range []string{"tcp", "inproc", "inproc-fallback"} {
		t.Run(kind, func(t *testing.T) {
			d := remoting.NewDispatcher(testLogger(t))
			setup(d)
			n := startNode(t, d)
			copts := remoting.ClientOptions{ScanInterval: 20 * time.Millisecond, Logger: testLogger(t)}
			var tr remoting.Transport
			switch kind {
			case "tcp":
				tr = remoting.NewClient(copts)
			case "inproc":
				tr = remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
					if addr == n.addr {
						return d
					}
					return nil
				}, nil, 20*time.Millisecond)
			case "inproc-fallback":
				tr = remoting.NewInProcTransport(func(string) *remoting.Dispatcher { return nil }, remoting.NewClient(copts), 20*time.Millisecond)
			}
			t.Cleanup(func() { tr.Close() })
			f(t, tr, n)
		})
	}
}

// echo answers with the request's body.
func echo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = req.Body
	return resp, nil
}

// joinFaults makes tr node "client"'s transport under a fresh Faults, with n bound as "node".
func joinFaults(t *testing.T, tr remoting.Transport, n *testNode) *Faults {
	t.Helper()
	f := New()
	if !f.Join(tr, "client") {
		t.Fatalf("transport %T cannot join Faults", tr)
	}
	f.Bind(n.addr, "node")
	return f
}

func invokeWithin(tr remoting.Transport, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := tr.InvokeSync(ctx, addr, remoting.NewRequest(remoting.SendMessage, nil, []byte("x")))
	return err
}

// Only remoting's own transports can join; another refuses, and nothing breaks its links.
func TestFaultsJoinOtherTransport(t *testing.T) {
	f := New()
	var other struct{ remoting.Transport }
	if f.Join(other, "client") {
		t.Fatal("Join accepted a transport remoting does not implement")
	}
}

// A cut fails new requests at once with ErrLinkCut and loses the answer of the one in
// flight, which times out; a heal brings the link back; other nodes' links are untouched.
func TestFaultsCutAndHeal(t *testing.T) {
	var held, arrived chan struct{} // new for each transport: setup runs first
	setup := func(d *remoting.Dispatcher) {
		held, arrived = make(chan struct{}), make(chan struct{}, 1)
		held, arrived := held, arrived
		ex := remoting.NewExecutor("test", 4, 64)
		d.Register(remoting.SendMessage, remoting.ProcessorFunc(echo), ex)
		d.Register(remoting.PullMessage, remoting.ProcessorFunc(func(ctx context.Context, _ remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
			arrived <- struct{}{}
			select {
			case <-held:
			case <-ctx.Done():
			}
			return remoting.NewResponse(remoting.Success, ""), nil
		}), ex)
	}
	transports(t, setup, func(t *testing.T, tr remoting.Transport, n *testNode) {
		f := joinFaults(t, tr, n)
		if err := invokeWithin(tr, n.addr, 10*time.Second); err != nil {
			t.Fatalf("before the cut: %v", err)
		}
		inFlight := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := tr.InvokeSync(ctx, n.addr, remoting.NewRequest(remoting.PullMessage, nil, nil))
			inFlight <- err
		}()
		<-arrived

		f.Cut("client", "node")
		close(held) // the node answers now, over the cut link
		if err := <-inFlight; !errors.Is(err, remoting.ErrTimeout) {
			t.Fatalf("request in flight at the cut: %v, want remoting.ErrTimeout", err)
		}
		if err := invokeWithin(tr, n.addr, 10*time.Second); !errors.Is(err, ErrLinkCut) || !errors.Is(err, remoting.ErrConnClosed) {
			t.Fatalf("request over a cut link: %v, want ErrLinkCut", err)
		}
		if got := f.State("client", n.addr); got != LinkCut {
			t.Fatalf("State = %v, want LinkCut", got)
		}
		if got := f.State("other", n.addr); got != LinkUp {
			t.Fatalf("State of another node's link = %v, want LinkUp", got)
		}

		f.Heal("node", "client")
		if err := invokeWithin(tr, n.addr, 10*time.Second); err != nil {
			t.Fatalf("after healing: %v", err)
		}
		f.Cut("client", "node")
		f.HealAll()
		if err := invokeWithin(tr, n.addr, 10*time.Second); err != nil {
			t.Fatalf("after HealAll: %v", err)
		}
	})
}

// Requests to a paused node, and from one, are lost and time out; Resume ends it.
func TestFaultsPause(t *testing.T) {
	setup := func(d *remoting.Dispatcher) {
		d.Register(remoting.SendMessage, remoting.ProcessorFunc(echo), remoting.NewExecutor("test", 4, 64))
	}
	transports(t, setup, func(t *testing.T, tr remoting.Transport, n *testNode) {
		f := joinFaults(t, tr, n)
		for _, paused := range []string{"node", "client"} {
			f.Pause(paused)
			if err := invokeWithin(tr, n.addr, 50*time.Millisecond); !errors.Is(err, remoting.ErrTimeout) {
				t.Fatalf("request with %s paused: %v, want remoting.ErrTimeout", paused, err)
			}
			got := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			err := tr.InvokeAsync(ctx, n.addr, remoting.NewRequest(remoting.SendMessage, nil, nil),
				func(_ *remoting.Command, err error) { got <- err })
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := <-got; !errors.Is(err, remoting.ErrTimeout) {
				t.Fatalf("async request with %s paused: %v, want remoting.ErrTimeout", paused, err)
			}
			f.Resume(paused)
			if err := invokeWithin(tr, n.addr, 10*time.Second); err != nil {
				t.Fatalf("after resuming %s: %v", paused, err)
			}
		}
	})
}

// A connection Dialer opened stalls while an end is paused or the link is cut (up to its
// deadlines), and carries what was sent meanwhile once the link is up; a cut refuses dials.
func TestFaultsDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	f := New()
	f.Bind(ln.Addr().String(), "master")
	dial := f.Dialer("slave", (&net.Dialer{}).DialContext)
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-accepted
	defer peer.Close()

	f.Pause("master")
	if _, err := peer.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while paused: %v, want a deadline error", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	f.Resume("master")
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("read after resuming: %q, %v", buf, err)
	}

	f.Cut("slave", "master")
	if _, err := peer.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read over a cut link: %v, want a deadline error", err)
	}
	if _, err := c.Write(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write over a cut link: %v, want a deadline error", err)
	}
	if _, err := dial(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, ErrLinkCut) {
		t.Fatalf("dial over a cut link: %v, want ErrLinkCut", err)
	}
	f.Heal("master", "slave")
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "more" {
		t.Fatalf("read after healing: %q, %v", buf, err)
	}
}
