package remoting

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestInProcTimeoutsOnTheFakeClock pins down when an unanswered request fails, on synctest's
// fake clock with the defaults (DefaultInvokeTimeout, a response-table scan every second): a
// sync request at its deadline to the nanosecond, an async one at the first scan after its
// deadline and not before; a prompt request beside the stuck ones is answered without any time
// passing, and answers that come after the timeouts are dropped, not delivered a second time.
// The in-process transport is goroutines and channels only, so it runs in a bubble; over TCP
// the same paths are covered by TestTimeoutsFailTheRightRequests on the wall clock.
func TestInProcTimeoutsOnTheFakeClock(t *testing.T) {
	const scanInterval = time.Second // NewInProcTransport's default
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		answerLate := sync.OnceFunc(func() { close(release) })
		d := NewDispatcher(testLogger(t))
		ex := NewExecutor("t", 4, 16)
		d.Register(SendMessage, ProcessorFunc(echo), ex)
		d.Register(PullMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
			<-release
			return NewResponse(Success, "late"), nil
		}), ex)
		d.Start()
		t.Cleanup(d.Close)
		tr := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 0)
		t.Cleanup(func() { tr.Close() })
		t.Cleanup(answerLate) // first: the executor waits for its workers
		start := time.Now()

		if _, err := tr.InvokeSync(context.Background(), "node", NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("sync without a deadline: %v, want ErrTimeout", err)
		}
		if got := time.Since(start); got != DefaultInvokeTimeout {
			t.Fatalf("sync without a deadline failed after %v, want DefaultInvokeTimeout %v", got, DefaultInvokeTimeout)
		}

		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		sent := time.Now()
		if _, err := tr.InvokeSync(short, "node", NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("sync with a 50ms deadline: %v, want ErrTimeout", err)
		}
		if got := time.Since(sent); got != 50*time.Millisecond {
			t.Fatalf("sync with a 50ms deadline failed after %v", got)
		}

		var calls atomic.Int32
		var failedAt time.Time
		asyncErr := make(chan error, 2)
		deadline := time.Now().Add(DefaultInvokeTimeout)
		if err := tr.InvokeAsync(context.Background(), "node", NewRequest(PullMessage, nil, nil), func(_ *Command, err error) {
			calls.Add(1)
			failedAt = time.Now()
			asyncErr <- err
		}); err != nil {
			t.Fatal(err)
		}
		firstScanAfter := start.Add((deadline.Sub(start)/scanInterval + 1) * scanInterval)

		prompt := time.Now()
		if resp, err := tr.InvokeSync(context.Background(), "node", NewRequest(SendMessage, nil, nil)); err != nil || resp.Code != Success {
			t.Fatalf("a prompt request beside the stuck ones: %v %+v", err, resp)
		}
		if got := time.Since(prompt); got != 0 {
			t.Fatalf("a prompt request took %v of fake time", got)
		}

		time.Sleep(time.Until(firstScanAfter) - time.Nanosecond)
		synctest.Wait()
		if n := calls.Load(); n != 0 {
			t.Fatalf("async request failed before the first scan after its deadline (+%v)", firstScanAfter.Sub(start))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait() // the scan due now has run
		select {
		case err := <-asyncErr:
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("async: %v, want ErrTimeout", err)
			}
		default:
			t.Fatalf("async request still pending at the first scan after its deadline (+%v)", firstScanAfter.Sub(start))
		}
		if !failedAt.Equal(firstScanAfter) {
			t.Fatalf("async request failed at +%v, want the first scan after its deadline, +%v",
				failedAt.Sub(start), firstScanAfter.Sub(start))
		}

		answerLate()
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("async callback ran %d times once the late answers came", n)
		}
	})
}
