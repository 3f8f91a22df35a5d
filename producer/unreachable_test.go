package producer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

// Sends whose brokers are away (unreachable.go), on the scripted transport of pipeline_test.go
// in a synctest bubble: the bubble's clock moves only while every goroutine waits, so the
// instants of attempts are exact and a send that waits out its 3 s costs no real time.

// errDialRefused is what the TCP client returns when nothing listens at the broker's address.
var errDialRefused = fmt.Errorf("remoting: connect broker:10911: %w",
	&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})

// timedNet wraps a scripted answer and records when, since the bubble's start, each attempt
// came.
type timedNet struct {
	start  time.Time
	answer func(at time.Duration, addr string) fakeAnswer

	mu  sync.Mutex
	ats []time.Duration
}

func newTimedNet(answer func(at time.Duration, addr string) fakeAnswer) (*timedNet, *fakeNet) {
	tn := &timedNet{start: time.Now(), answer: answer}
	return tn, &fakeNet{attempt: func(_ int, addr string) fakeAnswer {
		at := time.Since(tn.start)
		tn.mu.Lock()
		tn.ats = append(tn.ats, at)
		tn.mu.Unlock()
		return tn.answer(at, addr)
	}}
}

func (tn *timedNet) times() []time.Duration {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return append([]time.Duration(nil), tn.ats...)
}

// exactPauses makes every pause its backoff's upper bound, so the schedule is known.
var exactPauses = optionFunc(func(c *config) { c.jitter = func(d time.Duration) time.Duration { return d } })

// pairs lists each instant twice (ms): one attempt per broker of the two of fakeNet's route.
func pairs(ms ...int) []time.Duration {
	var out []time.Duration
	for _, m := range ms {
		out = append(out, time.Duration(m)*time.Millisecond, time.Duration(m)*time.Millisecond)
	}
	return out
}

// TestUnreachableBackoffSchedule: with both brokers refusing connections a send tries both at
// once, then pauses 50, 100, 200, 400 ms and 500 ms from then on, trying both after each
// pause, and stops with the timeout as its cause; the last pause is cut so the last round
// starts 50 ms before the 3 s deadline. Without the option RocketMQ's count ends it at once;
// a one-way send is sent once either way.
func TestUnreachableBackoffSchedule(t *testing.T) {
	schedule := pairs(0, 50, 150, 350, 750, 1250, 1750, 2250, 2750, 2950)
	for _, c := range []struct {
		name   string
		driver int // index in drivers
		opts   []Option
		want   []time.Duration
	}{
		{"sync", 0, nil, schedule},
		{"async", 2, nil, schedule},
		{"oneway", 1, nil, []time.Duration{0}},
		{"sync without the wait", 0, []Option{WithRetryUnreachableUntilTimeout(false)}, []time.Duration{0, 0, 0}},
		{"async without the wait", 2, []Option{WithRetryUnreachableUntilTimeout(false)}, []time.Duration{0, 0, 0}},
		{"sync with a 1 s context", 0, []Option{}, pairs(0, 50, 150, 350, 750, 950)},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tn, f := newTimedNet(func(time.Duration, string) fakeAnswer { return fakeAnswer{err: errDialRefused} })
				p := fakeProducer(t, f, append([]Option{exactPauses}, c.opts...)...)
				defer p.Close()
				msg := NewMessage("T", []byte("x"))
				var err error
				if c.name == "sync with a 1 s context" {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_, err = p.SendSync(ctx, msg)
					cancel()
				} else {
					_, err = drivers[c.driver].send(t, p, msg)
				}
				if diff := cmp.Diff(c.want, tn.times()); diff != "" {
					t.Fatalf("attempt instants (-want +got):\n%s", diff)
				}
				var se *SendError
				if !errors.As(err, &se) || !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("error %v, want a *SendError of refused connections", err)
				}
				waited := len(c.want) > 3
				if waited && (!errors.Is(err, remoting.ErrTimeout) || !se.AllBrokersFailed) {
					t.Fatalf("error %v, want the spent timeout as cause and every broker failed", err)
				}
			})
		})
	}
}

// TestUnreachableBrokerComesBack: brokers away until 1.2 s, then storing: the send succeeds
// at the first attempt after their return, with every attempt counted. A send to a queue the
// caller chose waits for that queue's broker and never leaves the queue.
func TestUnreachableBrokerComesBack(t *testing.T) {
	const back = 1200 * time.Millisecond
	chosen := MessageQueue{Topic: "T", BrokerName: "broker-b", QueueID: 1}
	strict := SelectorFunc(func(qs []MessageQueue, _ *Message, _ any) MessageQueue { return chosen })
	for _, c := range []struct {
		name string
		send func(t *testing.T, p *Producer, msg *Message) (*SendResult, error)
		want []time.Duration
	}{
		{"sync", drivers[0].send, pairs(0, 50, 150, 350, 750, 1250)[:11]},
		{"async", drivers[2].send, pairs(0, 50, 150, 350, 750, 1250)[:11]},
		{"ordered", func(_ *testing.T, p *Producer, msg *Message) (*SendResult, error) {
			return p.SendOrdered(context.Background(), msg, strict, nil, StrictOrder)
		}, ms(0, 50, 150, 350, 750, 1250)},
		{"to queue", func(_ *testing.T, p *Producer, msg *Message) (*SendResult, error) {
			return p.SendToQueue(context.Background(), msg, chosen)
		}, ms(0, 50, 150, 350, 750, 1250)},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tn, f := newTimedNet(func(at time.Duration, _ string) fakeAnswer {
					if at < back {
						return fakeAnswer{err: errDialRefused}
					}
					return fakeAnswer{}
				})
				p := fakeProducer(t, f, exactPauses)
				defer p.Close()
				res, err := c.send(t, p, NewMessage("T", []byte("x")))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, tn.times()); diff != "" {
					t.Fatalf("attempt instants (-want +got):\n%s", diff)
				}
				if res.Attempts != len(c.want) {
					t.Fatalf("result counts %d attempts, want %d", res.Attempts, len(c.want))
				}
				if c.name == "ordered" || c.name == "to queue" {
					for i, b := range f.brokers() {
						if b != chosen.BrokerName {
							t.Fatalf("attempt %d went to %s, off the chosen queue", i+1, b)
						}
					}
				}
			})
		})
	}
}

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, m := range v {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

// TestBrokerErrorCodeNotWaitedFor: a broker that answers with an error code is there: no
// pause, RocketMQ's count (sync 1 + retries; async no retry of an answer). With one broker
// away and the other answering SYSTEM_ERROR, not every broker is away, so the send never
// pauses and the answers end it by the count; the refused attempts do not use it up.
func TestBrokerErrorCodeNotWaitedFor(t *testing.T) {
	systemError := func(time.Duration, string) fakeAnswer { return fakeAnswer{code: remoting.SystemError} }
	aAwayBErrs := func(_ time.Duration, addr string) fakeAnswer {
		if addr[:len("broker-a")] == "broker-a" {
			return fakeAnswer{err: errDialRefused}
		}
		return fakeAnswer{code: remoting.SystemError}
	}
	for _, c := range []struct {
		name   string
		driver int
		answer func(time.Duration, string) fakeAnswer
		want   []string
	}{
		{"sync, every broker errs", 0, systemError, []string{"broker-a", "broker-b", "broker-a"}},
		{"async, every broker errs", 2, systemError, []string{"broker-a"}},
		{"sync, one away, one errs", 0, aAwayBErrs, []string{"broker-a", "broker-b", "broker-a", "broker-b"}},
		{"async, one away, one errs", 2, aAwayBErrs, []string{"broker-a", "broker-b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tn, f := newTimedNet(c.answer)
				p := fakeProducer(t, f, exactPauses)
				defer p.Close()
				_, err := drivers[c.driver].send(t, p, NewMessage("T", []byte("x")))
				var re *remoting.ResponseError
				if !errors.As(err, &re) || re.Code != remoting.SystemError {
					t.Fatalf("error %v, want SYSTEM_ERROR", err)
				}
				if diff := cmp.Diff(c.want, f.brokers()); diff != "" {
					t.Fatalf("brokers tried (-want +got):\n%s", diff)
				}
				for _, at := range tn.times() {
					if at != 0 {
						t.Fatalf("an attempt waited %v for a broker that answered", at)
					}
				}
			})
		})
	}
}

// TestRetriesCountFreshAfterPause: brokers away until 1 s, then one SYSTEM_ERROR, then
// storing. The refused rounds used more than 1 + retries attempts; the pause started a new
// round, so the SYSTEM_ERROR is retried as in any send.
func TestRetriesCountFreshAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var once sync.Once
		tn, f := newTimedNet(func(at time.Duration, _ string) fakeAnswer {
			if at < time.Second {
				return fakeAnswer{err: errDialRefused}
			}
			code := remoting.Success
			once.Do(func() { code = remoting.SystemError })
			return fakeAnswer{code: code}
		})
		p := fakeProducer(t, f, exactPauses)
		defer p.Close()
		res, err := p.SendSync(context.Background(), NewMessage("T", []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		want := append(pairs(0, 50, 150, 350, 750), ms(1250, 1250)...)
		if diff := cmp.Diff(want, tn.times()); diff != "" {
			t.Fatalf("attempt instants (-want +got):\n%s", diff)
		}
		if res.Attempts != len(want) {
			t.Fatalf("result counts %d attempts, want %d", res.Attempts, len(want))
		}
	})
}

// TestCloseEndsTheWait: Close does not wait for a broker to come back. A sync send pausing
// for one fails at once with ErrClosed; an async one when its pause ends. A cancelled context
// ends a sync send's pause too.
func TestCloseEndsTheWait(t *testing.T) {
	const stopAt = 400 * time.Millisecond // inside the 400 ms pause from 350 ms
	for _, c := range []struct {
		name    string
		cancel  bool
		async   bool
		endedAt time.Duration
		want    error
	}{
		{"sync, close", false, false, stopAt, ErrClosed},
		{"sync, cancel", true, false, stopAt, context.Canceled},
		{"async, close", false, true, 750 * time.Millisecond, ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tn, f := newTimedNet(func(time.Duration, string) fakeAnswer { return fakeAnswer{err: errDialRefused} })
				p := fakeProducer(t, f, exactPauses)
				defer p.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				type ended struct {
					at  time.Duration
					err error
				}
				done := make(chan ended, 1)
				end := func(_ *SendResult, err error) { done <- ended{time.Since(tn.start), err} }
				if c.async {
					if err := p.SendAsync(ctx, NewMessage("T", []byte("x")), end); err != nil {
						t.Fatal(err)
					}
				} else {
					go func() { end(p.SendSync(ctx, NewMessage("T", []byte("x")))) }()
				}
				time.Sleep(stopAt)
				if c.cancel {
					cancel()
				} else if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				e := <-done
				if e.at != c.endedAt || !errors.Is(e.err, c.want) {
					t.Fatalf("send ended at %v with %v, want at %v with %v", e.at, e.err, c.endedAt, c.want)
				}
				if diff := cmp.Diff(pairs(0, 50, 150, 350), tn.times()); diff != "" {
					t.Fatalf("attempt instants (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestUnreachableErrors: which failures mean the broker could not be reached, including the
// error the real TCP client returns for an address nobody listens on.
func TestUnreachableErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	_, realRefused := c.InvokeSync(context.Background(), closedAddr, remoting.NewRequest(remoting.SendMessageV2, nil, nil))
	for _, e := range []struct {
		err  error
		want bool
	}{
		{realRefused, true},
		{errDialRefused, true},
		{fmt.Errorf("x: %w", remoting.ErrConnClosed), true},
		{fmt.Errorf("%w: 127.0.0.1:1", remoting.ErrNoRoute), true},
		{fmt.Errorf("%w: no master address known for broker b", ErrNoRoute), true},
		{remoting.ErrTimeout, false},
		{remoting.ErrClosed, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{&remoting.ResponseError{Code: remoting.ServiceNotAvailable}, false},
		{&remoting.ResponseError{Code: remoting.SystemError}, false},
	} {
		if got := unreachable(e.err); got != e.want {
			t.Errorf("unreachable(%v) = %v, want %v", e.err, got, e.want)
		}
	}
}

// TestUnreachableBackoffBounds: the pauses before jitter, and the jitter's range.
func TestUnreachableBackoffBounds(t *testing.T) {
	var got []time.Duration
	for k := range 7 {
		got = append(got, unreachableBackoff(k))
	}
	if diff := cmp.Diff(ms(50, 100, 200, 400, 500, 500, 500), got); diff != "" {
		t.Fatalf("backoff (-want +got):\n%s", diff)
	}
	for _, d := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond} {
		seen := map[bool]bool{}
		for range 1000 {
			j := halfJitter(d)
			if j < d/2 || j > d {
				t.Fatalf("halfJitter(%v) = %v, outside [%v, %v]", d, j, d/2, d)
			}
			seen[j < d*3/4] = true
		}
		if len(seen) != 2 {
			t.Fatalf("halfJitter(%v) never spread over its range", d)
		}
	}
}

// TestCloseTimeoutLeavesNoGoroutine: a Close that gives up on a send still in flight after its
// close timeout returns without leaving a goroutine of its own behind (it used to start one to
// wait for the sends, which lived until the last send ended).
func TestCloseTimeoutLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, f := newTimedNet(func(time.Duration, string) fakeAnswer { return fakeAnswer{hang: true} })
		p := fakeProducer(t, f, WithCloseTimeout(time.Second), WithSendTimeout(time.Minute))
		ended := make(chan error, 1)
		go func() {
			_, err := p.SendSync(context.Background(), NewMessage("T", []byte("x")))
			ended <- err
		}()
		synctest.Wait() // the send hangs in the transport
		start := time.Now()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("Close waited %v for the send in flight, want the close timeout 1s", waited)
		}
		buf := make([]byte, 1<<20)
		if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "(*Producer).Close") {
			t.Fatalf("a goroutine of Close outlives it:\n%s", stacks)
		}
		<-ended // the send ends at its own timeout, so the bubble can end
	})
}
