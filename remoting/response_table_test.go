package remoting

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// Futures are reused, so an answer that loses the race with its requester's timeout must never
// reach the next request that reuses the future. Half the requests below give up at once (a
// cancelled context) while their answer is delivered from another goroutine: every outcome is
// either the request's own answer or the cancellation, never another request's answer.
func TestReusedFuturesNeverGetAnotherRequestsAnswer(t *testing.T) {
	table := newResponseTable()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer := func(req *Command) error {
				go table.complete(&Command{Opaque: req.Opaque, Flag: FlagResponse, Remark: itoa(int64(req.Opaque))})
				return nil
			}
			for i := range 2000 {
				ctx := context.Background()
				if i%2 == 1 {
					ctx = cancelled
				}
				req := NewRequest(SendMessage, nil, nil)
				resp, err := invokeSync(ctx, table, uint64(g), answer, req)
				switch {
				case err == nil && resp.Remark != itoa(int64(req.Opaque)):
					t.Errorf("request %d got the answer to %s", req.Opaque, resp.Remark)
					return
				case err != nil && !errors.Is(err, context.Canceled):
					t.Errorf("request %d: %v", req.Opaque, err)
					return
				case err != nil && ctx != cancelled:
					t.Errorf("request %d without a deadline failed: %v", req.Opaque, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A failed send is the requester's error unless the connection's failure reached the future
// first; either way an async request hears of its end exactly once.
func TestInvokeAsyncFinishesOnceWhenTheSendFails(t *testing.T) {
	table := newResponseTable()
	errWrite := errors.New("write failed")
	for _, closedFirst := range []bool{false, true} {
		var calls atomic.Int32
		send := func(*Command) error {
			if closedFirst {
				table.failOwner(7, ErrConnClosed)
			}
			return errWrite
		}
		err := invokeAsync(context.Background(), table, 7, send, NewRequest(SendMessage, nil, nil),
			func(_ *Command, err error) {
				calls.Add(1)
				if !errors.Is(err, ErrConnClosed) {
					t.Errorf("callback got %v, want ErrConnClosed", err)
				}
			})
		switch {
		case closedFirst && (err != nil || calls.Load() != 1):
			t.Errorf("connection failed first: invokeAsync %v, callback ran %d times; want nil and once", err, calls.Load())
		case !closedFirst && (!errors.Is(err, errWrite) || calls.Load() != 0):
			t.Errorf("write failed: invokeAsync %v, callback ran %d times; want the write error and never", err, calls.Load())
		}
		if len(table.m) != 0 {
			t.Errorf("%d futures left in the table", len(table.m))
		}
	}
}

// The pooled timer of a wait without deadline is stopped and reset between requests: a request
// after one whose timer was left running, and after one answered at once, still gets its answer.
func TestPooledFutureTimerStartsClean(t *testing.T) {
	table := newResponseTable()
	answer := func(req *Command) error {
		table.complete(&Command{Opaque: req.Opaque, Flag: FlagResponse})
		return nil
	}
	for range 100 {
		req := NewRequest(SendMessage, nil, nil)
		resp, err := invokeSync(context.Background(), table, 1, answer, req)
		if err != nil || resp.Opaque != req.Opaque {
			t.Fatalf("request %d: %v %+v", req.Opaque, err, resp)
		}
	}
}
