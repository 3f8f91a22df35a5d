package producer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// TestRequestHeaderIsTheOfficialClients checks step 4 against the header rocketmq-client-go v2
// writes (internal/request.go, SendMessageRequestV2Header.Encode) for the same values, key by
// key, except "l" (maxReconsumeTimes): Java producers leave it out, and so do we.
func TestRequestHeaderIsTheOfficialClients(t *testing.T) {
	big := make([]byte, DefaultCompressOver)
	for _, c := range []struct {
		name      string
		namespace string
		encode    func(p *Producer) encoded
		code      int32
		want      map[string]string // without "g" (bornTimestamp)
	}{
		{"single", "", func(p *Producer) encoded {
			return p.encode(NewMessage("T", []byte("body")).WithTags("TagA").WithProperty(message.PropertyUniqKey, "ID1"))
		}, remoting.SendMessageV2, map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0",
			"h": "0", "i": "UNIQ_KEY\x01ID1\x02TAGS\x01TagA\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a"}},
		{"compressed, flag, namespace", "ns", func(p *Producer) encoded {
			m := NewMessage("T", big).WithProperty(message.PropertyUniqKey, "ID2")
			m.Flag = 7
			return p.encode(m)
		}, remoting.SendMessageV2, map[string]string{"a": "ns%pg", "b": "ns%T", "c": "TBW102", "d": "4", "e": "3", "f": "1",
			"h": "7", "i": "UNIQ_KEY\x01ID2\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a"}},
		{"batch", "", func(p *Producer) encoded {
			return p.encodeBatch([]*Message{NewMessage("T", []byte("x")), NewMessage("T", []byte("y"))})
		}, remoting.SendBatchMessage, map[string]string{"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0",
			"h": "0", "i": "", "j": "0", "k": "false", "m": "true", "n": "broker-a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testProducer(newFakeClock(), true)
			p.cfg.namespace = c.namespace
			p.wireGroup = p.wireTopic("pg")
			s := &send{p: p, wireTopic: p.wireTopic("T"), msg: c.encode(p)}
			before := time.Now().UnixMilli()
			req := s.request(MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3})
			after := time.Now().UnixMilli()
			if req.Code != c.code || req.Serialize != remoting.SerializeRocketMQ {
				t.Fatalf("code %d serialize %d, want %d with the binary header", req.Code, req.Serialize, c.code)
			}
			ext := maps.Clone(req.ExtFields)
			born, err := strconv.ParseInt(ext["g"], 10, 64)
			if err != nil || born < before || born > after {
				t.Fatalf("bornTimestamp %q outside [%d, %d]", ext["g"], before, after)
			}
			delete(ext, "g")
			if diff := cmp.Diff(c.want, ext); diff != "" {
				t.Fatalf("header (-official client +ours):\n%s", diff)
			}
			if string(req.Body) != string(s.msg.body) {
				t.Fatal("body is not the encoded body")
			}
		})
	}
}

// Retry policy: sync, oneway and async sends go through the same next/succeeded/failed, so the
// same broker behaviour must give the same attempts, isolation and error in all three, except
// where RocketMQ 4.9's rules differ: one attempt for a one-way send, and async retries only for
// requests that got no answer. The
// transport is in memory and the tests run in a synctest bubble, so a send that waits out its
// timeout takes no real time.

// fakeNet is a transport to one name server and two brokers, broker-a and broker-b, each with
// two queues. Route, heartbeat and unregister requests succeed; each send attempt gets what
// attempt returns for its number (0-based) and address.
type fakeNet struct {
	attempt func(n int, addr string) fakeAnswer

	mu    sync.Mutex
	sends []string // the broker address of each send attempt
}

// fakeAnswer is how a broker meets an attempt: stored (zero value), a response error, a
// transport error, or no answer before the deadline.
type fakeAnswer struct {
	code int32
	err  error
	hang bool
}

func (f *fakeNet) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.GetRouteInfoByTopic:
		r := &route.TopicRouteData{}
		for _, b := range []string{"broker-a", "broker-b"} {
			r.QueueDatas = append(r.QueueDatas, route.QueueData{BrokerName: b, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
			r.BrokerDatas = append(r.BrokerDatas, route.BrokerData{BrokerName: b, BrokerAddrs: map[int64]string{0: b + ":10911"}})
		}
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = r.Encode()
		return resp, nil
	case remoting.SendMessageV2, remoting.SendBatchMessage:
		return f.answer(ctx, addr, req)
	}
	return remoting.NewResponse(remoting.Success, ""), nil
}

func (f *fakeNet) answer(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	f.mu.Lock()
	n := len(f.sends)
	f.sends = append(f.sends, addr)
	f.mu.Unlock()
	a := f.attempt(n, addr)
	switch {
	case a.hang:
		<-ctx.Done()
		return nil, remoting.ErrTimeout
	case a.err != nil:
		return nil, a.err
	case a.code != remoting.Success:
		return remoting.NewResponse(a.code, "scripted"), nil
	}
	var h protocol.SendMessageRequestHeaderV2
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.SendMessageResponseHeader{MsgID: "OFFSET", QueueID: h.QueueID,
		QueueOffset: int64(n)})
	return resp, nil
}

func (f *fakeNet) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	go func() { cb(f.InvokeSync(ctx, addr, req)) }()
	return nil
}

func (f *fakeNet) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	_, err := f.answer(ctx, addr, req)
	return err
}

func (f *fakeNet) RegisterProcessor(int32, remoting.Processor) {}
func (f *fakeNet) Close() error                                { return nil }

func (f *fakeNet) brokers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.sends))
	for i, a := range f.sends {
		out[i] = a[:len("broker-x")]
	}
	return out
}

// drivers are the three ways to wait for a send, as functions of the same shape; oneway has
// no result. Each runs on the bubble's root goroutine.
var drivers = []struct {
	name string
	send func(t *testing.T, p *Producer, msg *Message) (*SendResult, error)
}{
	{"sync", func(_ *testing.T, p *Producer, msg *Message) (*SendResult, error) {
		return p.SendSync(context.Background(), msg)
	}},
	{"oneway", func(_ *testing.T, p *Producer, msg *Message) (*SendResult, error) {
		return nil, p.SendOneway(context.Background(), msg)
	}},
	{"async", func(t *testing.T, p *Producer, msg *Message) (*SendResult, error) {
		type outcome struct {
			res *SendResult
			err error
		}
		done := make(chan outcome, 2)
		cb := func(res *SendResult, err error) { done <- outcome{res, err} }
		if err := p.SendAsync(context.Background(), msg, cb); err != nil {
			return nil, err
		}
		o := <-done
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("the callback ran twice")
		}
		return o.res, o.err
	}},
}

// fakeProducer is a producer over f. Each gets its own client instance (the transport is part
// of the instance's key), so no route or fault state leaks between tests. Its round robin
// starts at 0, so the first attempt goes to broker-a (queue 1) and the order of attempts is
// known.
func fakeProducer(t *testing.T, f *fakeNet, opts ...Option) *Producer {
	t.Helper()
	opts = append([]Option{WithNameServers("ns:9876"), WithTransport(f), WithInstanceName("pipeline"),
		optionFunc(func(c *config) { c.queueStart = func() uint32 { return 0 } })}, opts...)
	p, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// outcome is what a scripted send must end in.
type outcome struct {
	attempts []string // brokers tried, in order (round robin starts on broker-a)
	stored   bool
	isolated bool  // broker-a, tried first, is isolated afterwards
	errIs    error // the send's error wraps it
	code     int32 // or a *remoting.ResponseError with this code
	allFail  bool
	timedOut bool // SendError.Cause is the spent send timeout
}

func TestRetryPolicySyncOnewayAsync(t *testing.T) {
	transportErr := fmt.Errorf("dial: %w", remoting.ErrConnClosed)
	firstFails := func(a fakeAnswer) func(int, string) fakeAnswer {
		return func(n int, _ string) fakeAnswer {
			if n == 0 {
				return a
			}
			return fakeAnswer{}
		}
	}
	allFail := func(int, string) fakeAnswer { return fakeAnswer{err: transportErr} }
	for _, c := range []struct {
		name     string
		answered bool // the scenario needs the broker's answer, which a oneway send never reads
		fault    bool // WithLatencyFaultTolerance(true)
		// noWait is WithRetryUnreachableUntilTimeout(false), for scenarios of RocketMQ's
		// count where every broker is unreachable (unreachable_test.go has the wait).
		noWait  bool
		attempt func(n int, addr string) fakeAnswer
		want    outcome
		// by overrides want for the drivers whose RocketMQ rule differs: a one-way send is
		// sent once, an async send is retried only when no answer came.
		by map[string]outcome
	}{
		{name: "a transport error moves to the other broker, once for oneway",
			attempt: firstFails(fakeAnswer{err: transportErr}),
			want:    outcome{attempts: []string{"broker-a", "broker-b"}, stored: true},
			by:      map[string]outcome{"oneway": {attempts: []string{"broker-a"}, errIs: remoting.ErrConnClosed}}},
		{name: "with fault tolerance a transport error also isolates the broker", fault: true,
			attempt: firstFails(fakeAnswer{err: transportErr}),
			want:    outcome{attempts: []string{"broker-a", "broker-b"}, stored: true, isolated: true},
			by: map[string]outcome{"oneway": {attempts: []string{"broker-a"}, isolated: true,
				errIs: remoting.ErrConnClosed}}},
		{name: "a retryable code moves a sync send to the other broker, not an async one", answered: true,
			attempt: firstFails(fakeAnswer{code: remoting.SystemError}),
			want:    outcome{attempts: []string{"broker-a", "broker-b"}, stored: true},
			by:      map[string]outcome{"async": {attempts: []string{"broker-a"}, code: remoting.SystemError}}},
		{name: "a refused message is neither retried nor held against the broker", answered: true, fault: true,
			attempt: firstFails(fakeAnswer{code: remoting.MessageIllegal}),
			want:    outcome{attempts: []string{"broker-a"}, code: remoting.MessageIllegal}},
		{name: "a closed transport is neither retried nor held against the broker", fault: true,
			attempt: firstFails(fakeAnswer{err: remoting.ErrClosed}),
			want:    outcome{attempts: []string{"broker-a"}, errIs: remoting.ErrClosed}},
		{name: "every attempt fails, each retry avoiding the broker just tried", noWait: true,
			attempt: allFail,
			// The third attempt avoids only broker-b, the last to fail, and the round robin
			// takes broker-a's next queue (RocketMQ's lastBrokerName).
			want: outcome{attempts: []string{"broker-a", "broker-b", "broker-a"}, errIs: remoting.ErrConnClosed,
				allFail: true},
			by: map[string]outcome{"oneway": {attempts: []string{"broker-a"}, errIs: remoting.ErrConnClosed}}},
		{name: "every attempt fails with fault tolerance", fault: true, noWait: true,
			attempt: allFail,
			// Both brokers are isolated until the same instant (the bubble's clock stands still),
			// so the third attempt takes the one not tried last.
			want: outcome{attempts: []string{"broker-a", "broker-b", "broker-a"}, isolated: true,
				errIs: remoting.ErrConnClosed, allFail: true},
			by: map[string]outcome{"oneway": {attempts: []string{"broker-a"}, isolated: true,
				errIs: remoting.ErrConnClosed}}},
		{name: "the send timeout ends the retries", attempt: firstFails(fakeAnswer{hang: true}),
			want: outcome{attempts: []string{"broker-a"}, errIs: remoting.ErrTimeout, timedOut: true},
			// A one-way send has no retry to stop: its one attempt's error is the send's.
			by: map[string]outcome{"oneway": {attempts: []string{"broker-a"}, errIs: remoting.ErrTimeout}}},
	} {
		for _, d := range drivers {
			if c.answered && d.name == "oneway" {
				continue
			}
			want, ok := c.by[d.name]
			if !ok {
				want = c.want
			}
			t.Run(c.name+"/"+d.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := &fakeNet{attempt: c.attempt}
					p := fakeProducer(t, f, WithLatencyFaultTolerance(c.fault), WithRetryUnreachableUntilTimeout(!c.noWait))
					defer p.Close()
					res, err := d.send(t, p, NewMessage("T", []byte("x")))
					checkOutcome(t, p, f, want, res, err)
				})
			})
		}
	}
}

// checkOutcome compares what a send did (its result or error, the attempts f saw and
// broker-a's isolation) with want.
func checkOutcome(t *testing.T, p *Producer, f *fakeNet, want outcome, res *SendResult, err error) {
	t.Helper()
	if diff := cmp.Diff(want.attempts, f.brokers()); diff != "" {
		t.Fatalf("brokers tried (-want +got):\n%s", diff)
	}
	if got := !p.fault.available("broker-a"); got != want.isolated {
		t.Fatalf("broker-a isolated = %v, want %v", got, want.isolated)
	}
	last := want.attempts[len(want.attempts)-1]
	if want.stored {
		if err != nil {
			t.Fatal(err)
		}
		if res != nil && (res.Attempts != len(want.attempts) || res.Queue.BrokerName != last) {
			t.Fatalf("result %v, want %d attempts ending on %s", res, len(want.attempts), last)
		}
		return
	}
	var se *SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a *SendError", err)
	}
	var re *remoting.ResponseError
	if want.errIs != nil && !errors.Is(err, want.errIs) || want.code != 0 && (!errors.As(err, &re) || re.Code != want.code) {
		t.Fatalf("error %v, want one wrapping %v or code %d", err, want.errIs, want.code)
	}
	if len(se.Attempts) != len(want.attempts) || se.AllBrokersFailed != want.allFail || (se.Cause != nil) != want.timedOut {
		t.Fatalf("SendError %+v: want %d attempts, all failed %v, timed out %v",
			se, len(want.attempts), want.allFail, want.timedOut)
	}
}

// TestFaultToleranceOffByDefault: with the default options (RocketMQ's sendLatencyFaultEnable
// false) a broker that failed is avoided by the same send's retry only; the next sends go
// round robin over it again. With fault tolerance on it stays out.
func TestFaultToleranceOffByDefault(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		want []string
	}{
		// The round robin runs a1 (fails), b0 (the retry), b1, a0.
		{"default", nil, []string{"broker-a", "broker-b", "broker-b", "broker-a"}},
		{"on", []Option{WithLatencyFaultTolerance(true)}, []string{"broker-a", "broker-b", "broker-b", "broker-b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeNet{attempt: func(n int, _ string) fakeAnswer {
					if n == 0 {
						return fakeAnswer{err: remoting.ErrConnClosed}
					}
					return fakeAnswer{}
				}}
				p := fakeProducer(t, f, c.opts...)
				defer p.Close()
				for i := range 3 {
					res, err := p.SendSync(context.Background(), NewMessage("T", []byte("x")))
					if err != nil {
						t.Fatal(err)
					}
					if want := 1 + btoi(i == 0); res.Attempts != want {
						t.Fatalf("send %d took %d attempts, want %d", i, res.Attempts, want)
					}
				}
				if diff := cmp.Diff(c.want, f.brokers()); diff != "" {
					t.Fatalf("brokers tried (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestAsyncRetriesCountedApart: async sends have their own retry count
// (retryTimesWhenSendAsyncFailed), independent of the sync one. Every broker is unreachable,
// so the count decides only without the wait for an unreachable broker.
func TestAsyncRetriesCountedApart(t *testing.T) {
	for _, c := range []struct {
		driver int // index in drivers
		want   outcome
	}{
		{0, outcome{attempts: []string{"broker-a"}, errIs: remoting.ErrConnClosed}},
		{2, outcome{attempts: []string{"broker-a", "broker-b"}, errIs: remoting.ErrConnClosed, allFail: true}},
	} {
		d := drivers[c.driver]
		t.Run(d.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeNet{attempt: func(int, string) fakeAnswer { return fakeAnswer{err: remoting.ErrConnClosed} }}
				p := fakeProducer(t, f, WithRetries(0), WithAsyncRetries(1), WithRetryUnreachableUntilTimeout(false))
				defer p.Close()
				res, err := d.send(t, p, NewMessage("T", []byte("x")))
				checkOutcome(t, p, f, c.want, res, err)
			})
		})
	}
}

// TestSlowSelectorSendsNothing: a selector that returns after the send timeout fails the send
// with a timeout and no request reaches a broker (RocketMQ's sendSelectImpl check); one that
// returns in time sends.
func TestSlowSelectorSendsNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		took time.Duration
		sent int
	}{
		{"in time", DefaultSendTimeout - time.Millisecond, 1},
		{"too slow", DefaultSendTimeout, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeNet{attempt: func(int, string) fakeAnswer { return fakeAnswer{} }}
				p := fakeProducer(t, f)
				defer p.Close()
				slow := SelectorFunc(func(qs []MessageQueue, _ *Message, _ any) MessageQueue {
					time.Sleep(c.took)
					return qs[0]
				})
				_, err := p.SendOrdered(context.Background(), NewMessage("T", []byte("x")), slow, nil, StrictOrder)
				if got := len(f.brokers()); got != c.sent {
					t.Fatalf("%d requests reached a broker, want %d", got, c.sent)
				}
				if c.sent == 0 && !errors.Is(err, remoting.ErrTimeout) || c.sent == 1 && err != nil {
					t.Fatalf("selector took %v: error %v", c.took, err)
				}
			})
		})
	}
}

// TestIsolationWindowAfterAFailedSend: with fault tolerance on, a failed attempt keeps its
// broker out of the round robin for RocketMQ's 600 s, then lets it back.
func TestIsolationWindowAfterAFailedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNet{attempt: func(n int, _ string) fakeAnswer {
			if n == 0 {
				return fakeAnswer{err: remoting.ErrConnClosed}
			}
			return fakeAnswer{}
		}}
		p := fakeProducer(t, f, WithLatencyFaultTolerance(true))
		defer p.Close()
		ctx := context.Background()
		send := func() string {
			res, err := p.SendSync(ctx, NewMessage("T", []byte("x")))
			if err != nil {
				t.Fatal(err)
			}
			return res.Queue.BrokerName
		}
		send() // broker-a fails, broker-b stores
		for range 4 {
			if b := send(); b != "broker-b" {
				t.Fatalf("sent to %s while broker-a is isolated", b)
			}
		}
		time.Sleep(599 * time.Second)
		if p.fault.available("broker-a") {
			t.Fatal("broker-a back before 600 s")
		}
		time.Sleep(time.Second)
		seen := map[string]bool{}
		for range 4 {
			seen[send()] = true
		}
		if !seen["broker-a"] {
			t.Fatalf("broker-a not used again after its isolation: %v", seen)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
