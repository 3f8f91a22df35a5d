package remoting

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// hookRecorder counts OnReconnect calls and hands each address on.
type hookRecorder struct {
	calls atomic.Int32
	addrs chan string
}

func newHookRecorder() *hookRecorder { return &hookRecorder{addrs: make(chan string, 16)} }

func (h *hookRecorder) hook(addr string) {
	h.calls.Add(1)
	h.addrs <- addr
}

// next waits for the next call's address.
func (h *hookRecorder) next(t *testing.T) string {
	t.Helper()
	select {
	case a := <-h.addrs:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnect reported")
		return ""
	}
}

func invokeEcho(t *testing.T, tr Transport, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, addr, NewRequest(10, nil, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("echo: %+v %v", resp, err)
	}
}

// The first connection to an address is not a reconnect; a new one after it broke is, once per
// new connection, over TCP and in-process alike; a removed hook hears nothing more.
func TestReconnectReported(t *testing.T) {
	transports(t, func(d *Dispatcher) { d.Register(10, ProcessorFunc(echo), NewExecutor("echo", 1, 8)) },
		func(t *testing.T, tr Transport, n *testNode) {
			rn, ok := tr.(ReconnectNotifier)
			if !ok {
				t.Fatalf("%T does not report reconnects", tr)
			}
			removed, kept := newHookRecorder(), newHookRecorder()
			remove := rn.OnReconnect(removed.hook)
			rn.OnReconnect(kept.hook)
			invokeEcho(t, tr, n.addr)
			invokeEcho(t, tr, n.addr)
			if c := kept.calls.Load(); c != 0 {
				t.Fatalf("%d reconnects reported for the first connection", c)
			}

			tr.(interface{ CloseConn(string) }).CloseConn(n.addr)
			invokeEcho(t, tr, n.addr)
			if a := kept.next(t); a != n.addr {
				t.Fatalf("reconnect reported for %q, want %q", a, n.addr)
			}
			if a := removed.next(t); a != n.addr {
				t.Fatalf("reconnect reported for %q, want %q", a, n.addr)
			}

			remove()
			tr.(interface{ CloseConn(string) }).CloseConn(n.addr)
			invokeEcho(t, tr, n.addr)
			kept.next(t)
			if c := removed.calls.Load(); c != 1 {
				t.Fatalf("removed hook called %d times, want 1 (before its removal)", c)
			}
			if c := kept.calls.Load(); c != 2 {
				t.Fatalf("hook called %d times for two reconnects", c)
			}
		})
}

// A local node that closes and starts again at the same address is a reconnect for the
// in-process transport, and a reconnect over its TCP fallback reaches the same hook.
func TestInProcReconnectAfterNodeRestart(t *testing.T) {
	newNode := func() *Dispatcher {
		d := NewDispatcher(testLogger(t))
		d.Register(10, ProcessorFunc(echo), NewExecutor("echo", 1, 8))
		d.Start()
		return d
	}
	var local atomic.Pointer[Dispatcher]
	local.Store(newNode())
	remote := startNode(t, newNode(), ServerOptions{})
	fallback := NewClient(ClientOptions{Logger: testLogger(t)})
	tr := NewInProcTransport(func(addr string) *Dispatcher {
		if addr == "local:1" {
			return local.Load()
		}
		return nil
	}, fallback, 0)
	defer tr.Close()
	rec := newHookRecorder()
	tr.OnReconnect(rec.hook)

	invokeEcho(t, tr, "local:1")
	local.Load().Close()
	local.Store(newNode())
	defer local.Load().Close()
	invokeEcho(t, tr, "local:1")
	if a := rec.next(t); a != "local:1" {
		t.Fatalf("reconnect reported for %q, want local:1", a)
	}

	invokeEcho(t, tr, remote.addr)
	fallback.CloseConn(remote.addr)
	invokeEcho(t, tr, remote.addr)
	if a := rec.next(t); a != remote.addr {
		t.Fatalf("reconnect reported for %q, want %q", a, remote.addr)
	}
	if c := rec.calls.Load(); c != 2 {
		t.Fatalf("%d reconnects reported, want 2", c)
	}
}
