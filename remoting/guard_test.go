package remoting

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestGuardOncePerRequest: a request a default processor holds and hands on with
// DispatchAdmitted meets the guard once, not again at its own processor, while Dispatch runs
// it again; a refused one never reaches a processor.
func TestGuardOncePerRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hand   func(d *Dispatcher, ch Channel, req *Command)
		checks int32
	}{
		{"DispatchAdmitted", (*Dispatcher).DispatchAdmitted, 1},
		{"Dispatch", (*Dispatcher).Dispatch, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDispatcher(testLogger(t))
			var checks, served atomic.Int32
			d.SetGuard(func(_ Channel, req *Command) *Command {
				checks.Add(1)
				if req.ExtFields["pass"] != "yes" {
					return NewResponse(NoPermission, "refused")
				}
				return nil
			})
			late := make(chan struct{})
			d.RegisterDefault(ProcessorFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
				<-late // the code's processor appears meanwhile, as a broker's at start
				tc.hand(d, ch, req)
				return nil, nil
			}), NewExecutor("default", 1, 10))
			n := startNode(t, d, ServerOptions{})
			c := NewClient(ClientOptions{})
			defer c.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			answer := make(chan *Command, 1)
			go func() {
				resp, err := c.InvokeSync(ctx, n.addr, NewRequest(PullMessage, map[string]string{"pass": "yes"}, nil))
				if err != nil {
					t.Error(err)
				}
				answer <- resp
			}()
			for checks.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			d.Register(PullMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
				served.Add(1)
				return NewResponse(Success, ""), nil
			}), NewExecutor("pull", 1, 10))
			close(late)
			if resp := <-answer; resp == nil || resp.Code != Success {
				t.Fatalf("answer %+v", resp)
			}
			if got := checks.Load(); got != tc.checks {
				t.Fatalf("guard ran %d times, want %d", got, tc.checks)
			}
			resp, err := c.InvokeSync(ctx, n.addr, NewRequest(PullMessage, nil, nil))
			if err != nil || resp.Code != NoPermission {
				t.Fatalf("unguarded request: %+v, %v", resp, err)
			}
			if served.Load() != 1 {
				t.Fatalf("processor served %d requests, want 1", served.Load())
			}
		})
	}
}
