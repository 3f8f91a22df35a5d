package remoting

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// joinFaults makes tr node "client"'s transport under a fresh Faults, with n bound as "node".
func joinFaults(t *testing.T, tr Transport, n *testNode) *Faults {
	t.Helper()
	f := NewFaults()
	switch tr := tr.(type) {
	case *Client:
		tr.SetFaults(f, "client")
	case *InProcTransport:
		tr.SetFaults(f, "client")
	default:
		t.Fatalf("transport %T cannot join Faults", tr)
	}
	f.Bind(n.addr, "node")
	return f
}

func invokeWithin(tr Transport, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := tr.InvokeSync(ctx, addr, NewRequest(SendMessage, nil, []byte("x")))
	return err
}

// A cut fails new requests at once with ErrLinkCut and loses the answer of the one in
// flight, which times out; a heal brings the link back; other nodes' links are untouched.
func TestFaultsCutAndHeal(t *testing.T) {
	var held, arrived chan struct{} // new for each transport: setup runs first
	setup := func(d *Dispatcher) {
		held, arrived = make(chan struct{}), make(chan struct{}, 1)
		held, arrived := held, arrived
		ex := NewExecutor("test", 4, 64)
		d.Register(SendMessage, ProcessorFunc(echo), ex)
		d.Register(PullMessage, ProcessorFunc(func(ctx context.Context, _ Channel, _ *Command) (*Command, error) {
			arrived <- struct{}{}
			select {
			case <-held:
			case <-ctx.Done():
			}
			return NewResponse(Success, ""), nil
		}), ex)
	}
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		f := joinFaults(t, tr, n)
		if err := invokeWithin(tr, n.addr, 10*time.Second); err != nil {
			t.Fatalf("before the cut: %v", err)
		}
		inFlight := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := tr.InvokeSync(ctx, n.addr, NewRequest(PullMessage, nil, nil))
			inFlight <- err
		}()
		<-arrived

		f.Cut("client", "node")
		close(held) // the node answers now, over the cut link
		if err := <-inFlight; !errors.Is(err, ErrTimeout) {
			t.Fatalf("request in flight at the cut: %v, want ErrTimeout", err)
		}
		if err := invokeWithin(tr, n.addr, 10*time.Second); !errors.Is(err, ErrLinkCut) || !errors.Is(err, ErrConnClosed) {
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
	setup := func(d *Dispatcher) { d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("test", 4, 64)) }
	transports(t, setup, func(t *testing.T, tr Transport, n *testNode) {
		f := joinFaults(t, tr, n)
		for _, paused := range []string{"node", "client"} {
			f.Pause(paused)
			if err := invokeWithin(tr, n.addr, 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
				t.Fatalf("request with %s paused: %v, want ErrTimeout", paused, err)
			}
			got := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			err := tr.InvokeAsync(ctx, n.addr, NewRequest(SendMessage, nil, nil),
				func(_ *Command, err error) { got <- err })
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := <-got; !errors.Is(err, ErrTimeout) {
				t.Fatalf("async request with %s paused: %v, want ErrTimeout", paused, err)
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
	f := NewFaults()
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
