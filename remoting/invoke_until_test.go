package remoting

import (
	"context"
	"errors"
	"testing"
	"time"
)

// plainTransport hides every method of the Transport it holds but Transport's own, as a
// wrapper does.
type plainTransport struct{ Transport }

// A request bounded by InvokeSyncUntil or InvokeAsyncUntil fails with ErrTimeout at that bound
// (an async one by the response table's scan), whether the transport keeps it (Client,
// InProcTransport) or a derived context does (any other), and whether or not the caller's
// context has a later deadline; a sooner context deadline wins, and an answered request gets
// its answer.
func TestInvokeSyncUntil(t *testing.T) {
	testInvokeUntil(t, func(ctx context.Context, tr Transport, addr string, req *Command, until time.Time) (*Command, error) {
		return InvokeSyncUntil(ctx, tr, addr, req, until)
	})
}

func TestInvokeAsyncUntil(t *testing.T) {
	testInvokeUntil(t, func(ctx context.Context, tr Transport, addr string, req *Command, until time.Time) (*Command, error) {
		type outcome struct {
			resp *Command
			err  error
		}
		done := make(chan outcome, 1)
		if err := InvokeAsyncUntil(ctx, tr, addr, req, until, func(resp *Command, err error) {
			done <- outcome{resp, err}
		}); err != nil {
			return nil, err
		}
		o := <-done
		return o.resp, o.err
	})
}

type invokeUntilFunc func(ctx context.Context, tr Transport, addr string, req *Command, until time.Time) (*Command, error)

func testInvokeUntil(t *testing.T, invoke invokeUntilFunc) {
	d := NewDispatcher(testLogger(t))
	// Never answers: only a bound ends the wait.
	d.Register(PullMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
		return nil, nil
	}), NewExecutor("pull", 1, 1000))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("send", 1, 1000))
	n := startNode(t, d, ServerOptions{})
	// A short scan: the async bound is kept by it.
	c := NewClient(ClientOptions{Logger: testLogger(t), ScanInterval: 10 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	inproc := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 10*time.Millisecond)
	t.Cleanup(func() { inproc.Close() })

	for _, tc := range []struct {
		name string
		tr   Transport
		addr string
	}{{"tcp", c, n.addr}, {"inproc", inproc, "local"}, {"wrapped", plainTransport{c}, n.addr}} {
		t.Run(tc.name, func(t *testing.T) {
			call := func(ctx context.Context, code int32, until time.Time) (*Command, error) {
				type outcome struct {
					resp *Command
					err  error
				}
				done := make(chan outcome, 1)
				go func() {
					resp, err := invoke(ctx, tc.tr, tc.addr, NewRequest(code, nil, []byte("x")), until)
					done <- outcome{resp, err}
				}()
				select {
				case o := <-done:
					return o.resp, o.err
				case <-time.After(20 * time.Second):
					t.Fatal("the request outlived its bound")
					return nil, nil
				}
			}
			far, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for _, ctx := range []context.Context{context.Background(), far} {
				if _, err := call(ctx, PullMessage, time.Now().Add(50*time.Millisecond)); !errors.Is(err, ErrTimeout) {
					t.Fatalf("past until: %v, want ErrTimeout", err)
				}
			}
			soon, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := call(soon, PullMessage, time.Now().Add(time.Hour)); !errors.Is(err, ErrTimeout) {
				t.Fatalf("past the context's deadline: %v, want ErrTimeout", err)
			}
			// The pooled future and its timer serve the next request: an answer still arrives,
			// and a zero until leaves the context's bound alone.
			for _, until := range []time.Time{time.Now().Add(time.Hour), {}} {
				resp, err := call(context.Background(), SendMessage, until)
				if err != nil || string(resp.Body) != "x" {
					t.Fatalf("answered request: %v, %v", resp, err)
				}
			}
		})
	}
}
