package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// scriptBroker is a fakeBroker that records every pull (header, when, and how long the
// consumer would wait for it) and every CHECK_CLIENT_CONFIG body, and lets a test script the
// answers to both.
type scriptBroker struct {
	*fakeBroker
	// answerPull answers a pull; nil long-polls as the fakeBroker does.
	answerPull func(ctx context.Context, h protocol.PullMessageRequestHeader, n int) (*remoting.Command, error)
	// checkAnswer answers CHECK_CLIENT_CONFIG; nil answers SUCCESS.
	checkAnswer *remoting.Command

	mu     sync.Mutex
	pulls  []seenPull
	checks []protocol.CheckClientRequestBody
}

type seenPull struct {
	h       protocol.PullMessageRequestHeader
	at      time.Time
	timeout time.Duration // the pull's deadline, from when it was sent
}

func newScriptBroker() *scriptBroker {
	return &scriptBroker{fakeBroker: newFakeBroker(fakeQueues(), fakeInstance{}.ClientID())}
}

func (s *scriptBroker) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.PullMessage:
		var h protocol.PullMessageRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return nil, err
		}
		now := time.Now()
		dl, _ := ctx.Deadline()
		s.mu.Lock()
		s.pulls = append(s.pulls, seenPull{h: h, at: now, timeout: dl.Sub(now)})
		n := 0
		for _, p := range s.pulls {
			if p.h.Topic == h.Topic && p.h.QueueID == h.QueueID {
				n++
			}
		}
		s.mu.Unlock()
		if s.answerPull != nil {
			return s.answerPull(ctx, h, n)
		}
	case remoting.CheckClientConfig:
		b, err := protocol.DecodeCheckClientRequestBody(req.Body)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.checks = append(s.checks, *b)
		s.mu.Unlock()
		if s.checkAnswer != nil {
			return s.checkAnswer, nil
		}
		return remoting.NewResponse(remoting.Success, ""), nil
	}
	return s.fakeBroker.InvokeSync(ctx, addr, req)
}

// pullsOf lists the pulls of queue id q of topic T (the brokerInstance routes the retry topic
// the same way).
func (s *scriptBroker) pullsOf(q int32) []seenPull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenPull
	for _, p := range s.pulls {
		if p.h.Topic == "T" && p.h.QueueID == q {
			out = append(out, p)
		}
	}
	return out
}

func (s *scriptBroker) checksSeen() []protocol.CheckClientRequestBody {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.checks)
}

// startFakePush starts a push consumer of sel on topic T against br; Close at cleanup (inside
// the bubble).
func startFakePush(t *testing.T, br *scriptBroker, sel MessageSelector, opts ...Option) (*PushConsumer, error) {
	t.Helper()
	pc, err := NewPushConsumer(fakeOptions(t, br, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	if err := pc.SubscribeSelector("T", sel, func(context.Context, []*Message) (ConsumeResult, error) {
		return ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	return pc, pc.Start()
}

// A pull waits for its answer CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND (30 s) in all, the broker's
// 15 s suspend included: a broker that never answers holds the queue 30 s, not 15 + 30.
func TestPullTimeoutIsRocketMQs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br := newScriptBroker()
		br.answerPull = func(ctx context.Context, _ protocol.PullMessageRequestHeader, _ int) (*remoting.Command, error) {
			<-ctx.Done() // a broker that died without answering
			return nil, ctx.Err()
		}
		// fakeOptions shortens the suspend; the defaults are what this test is about.
		if _, err := startFakePush(t, br, ByTag("*"), WithPullSuspend(DefaultPullSuspend)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		pulls := br.pullsOf(0)
		if len(pulls) < 2 {
			t.Fatalf("%d pulls in a minute", len(pulls))
		}
		for _, p := range pulls {
			if p.h.SuspendTimeoutMillis != 15000 || p.timeout != 30*time.Second {
				t.Errorf("pull suspended %d ms, waited for %v; want 15000 ms within 30 s", p.h.SuspendTimeoutMillis, p.timeout)
			}
		}
		// After a timeout the queue pauses pullTimeDelayMillsWhenException (1 s in RocketMQ
		// 4.9's push consumer) and pulls again.
		if gap := pulls[1].at.Sub(pulls[0].at); gap != 31*time.Second {
			t.Errorf("second pull %v after the first, want 30 s + 1 s", gap)
		}
	})
}

// pullInterval pauses a queue after each pull that brought messages, and only then: a pull
// answered PULL_NOT_FOUND is followed by the next at once, as in RocketMQ.
func TestPullInterval(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		gaps     []time.Duration
	}{
		{0, []time.Duration{0, 0, 0, time.Second}},
		{2 * time.Second, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, time.Second}},
	} {
		t.Run(c.interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newScriptBroker()
				long := br.fakeBroker
				br.answerPull = func(ctx context.Context, h protocol.PullMessageRequestHeader, n int) (*remoting.Command, error) {
					if h.Topic != "T" || h.QueueID != 0 || n > 3 { // three pulls of T's queue 0 find a message each
						return long.pull(ctx, pullRequest(h))
					}
					resp := remoting.NewResponse(remoting.Success, "")
					resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{
						NextBeginOffset: h.QueueOffset + 1, MaxOffset: h.QueueOffset + 1})
					resp.Body = record(t, testRecord("T", fmt.Sprint("m", n)), h.QueueOffset, 100*h.QueueOffset)
					return resp, nil
				}
				if _, err := startFakePush(t, br, ByTag("*"), WithPullInterval(c.interval)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Second)
				synctest.Wait()
				pulls := br.pullsOf(0)
				if len(pulls) < len(c.gaps)+1 {
					t.Fatalf("%d pulls", len(pulls))
				}
				var gaps []time.Duration
				for i := range c.gaps {
					gaps = append(gaps, pulls[i+1].at.Sub(pulls[i].at))
				}
				if diff := cmp.Diff(c.gaps, gaps); diff != "" {
					t.Errorf("gaps between pulls (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// pullRequest is h as a request again, for the fakeBroker's long poll.
func pullRequest(h protocol.PullMessageRequestHeader) *remoting.Command {
	return remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(&h), nil)
}

// A push consumer's pulls leave the subscription out and name its version, so the broker
// filters with what heartbeats registered (postSubscriptionWhenPull false);
// WithSubscriptionInPull puts it back; the lite pull consumer always sends it.
func TestPullCarriesSubscriptionAsRocketMQ(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		lite bool
		want bool
	}{
		{"push default", nil, false, false},
		{"push with subscription", []Option{WithSubscriptionInPull(true)}, false, true},
		{"lite pull", nil, true, true},
		{"lite pull told not to", []Option{WithSubscriptionInPull(false)}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newScriptBroker()
				var p *puller
				if c.lite {
					lc, err := NewPullConsumer(fakeOptions(t, br, c.opts...)...)
					if err != nil {
						t.Fatal(err)
					}
					defer lc.Close()
					if err := lc.Subscribe("T", "a || b"); err != nil {
						t.Fatal(err)
					}
					if err := lc.Start(); err != nil {
						t.Fatal(err)
					}
					p = lc.p
				} else {
					pc, err := startFakePush(t, br, ByTag("a || b"), c.opts...)
					if err != nil {
						t.Fatal(err)
					}
					p = pc.p
				}
				synctest.Wait()
				version := p.subscriptionOf("T").version
				pulls := br.pullsOf(0)
				if len(pulls) == 0 {
					t.Fatal("no pull")
				}
				h := pulls[0].h
				if h.HasSubscription() != c.want || (h.Subscription == "a || b") != c.want {
					t.Errorf("pull sysFlag %b, subscription %q; want the subscription sent: %v", h.SysFlag, h.Subscription, c.want)
				}
				if h.SubVersion != version || h.ExpressionType != "TAG" {
					t.Errorf("pull subVersion %d type %q, want %d TAG", h.SubVersion, h.ExpressionType, version)
				}
			})
		})
	}
}

// Start sends CHECK_CLIENT_CONFIG for every subscription that is not a tag expression (and for
// no other), and fails with the broker's refusal, leaving the consumer start-failed; an
// accepted SQL92 subscription is pulled with its type.
func TestSQL92SubscriptionCheckedAtStart(t *testing.T) {
	const refusal = "The broker does not support consumer to filter message by SQL92"
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := newScriptBroker()
			br.checkAnswer = remoting.NewResponse(remoting.SystemError, refusal)
			pc, err := startFakePush(t, br, BySQL92("a > 1"))
			var re *remoting.ResponseError
			if !errors.As(err, &re) || re.Code != remoting.SystemError || re.Remark != refusal {
				t.Fatalf("Start: %v, want the broker's SYSTEM_ERROR", err)
			}
			want := []protocol.CheckClientRequestBody{{ClientID: fakeInstance{}.ClientID(), Group: "g",
				SubscriptionData: protocol.SubscriptionData{Topic: "T", SubString: "a > 1", TagsSet: []string{},
					CodeSet: protocol.TagCodes{}, SubVersion: pc.p.subscriptionOf("T").version, ExpressionType: "SQL92"}}}
			if diff := cmp.Diff(want, br.checksSeen()); diff != "" {
				t.Errorf("CHECK_CLIENT_CONFIG bodies (-want +got):\n%s", diff)
			}
			if err := pc.Start(); !errors.Is(err, ErrStartFailed) {
				t.Errorf("Start again: %v, want ErrStartFailed", err)
			}
			synctest.Wait()
			if n := len(br.pullsOf(0)) + len(br.pullsOf(1)); n != 0 {
				t.Errorf("%d pulls by a consumer that failed to start", n)
			}
		})
	})
	t.Run("accepted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := newScriptBroker()
			if _, err := startFakePush(t, br, BySQL92("a > 1")); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if n := len(br.checksSeen()); n != 1 {
				t.Errorf("%d checks, want 1", n)
			}
			pulls := br.pullsOf(0)
			if len(pulls) == 0 || pulls[0].h.ExpressionType != "SQL92" {
				t.Fatalf("pulls %+v, want SQL92 ones", pulls)
			}
		})
	})
	t.Run("tags are not checked", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			br := newScriptBroker()
			br.checkAnswer = remoting.NewResponse(remoting.SystemError, refusal)
			if _, err := startFakePush(t, br, ByTag("a || b")); err != nil {
				t.Fatal(err)
			}
			if n := len(br.checksSeen()); n != 0 {
				t.Errorf("%d checks of a tag subscription", n)
			}
		})
	})
}

// Against a node, a SQL92 subscription delivers exactly the messages whose properties match
// (the broker filters), to the push and the lite pull consumer; one that does not compile fails
// Start with the broker's SUBSCRIPTION_PARSE_FAILED (CHECK_CLIENT_CONFIG).
func TestSQL92ByNode(t *testing.T) {
	for _, kind := range []string{"inproc", "tcp"} {
		t.Run(kind, func(t *testing.T) { testSQL92ByNode(t, kind) })
	}
}

func testSQL92ByNode(t *testing.T, kind string) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("sql", 1)
	tr := transportFor(t, n, kind)
	p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithOwnedTransport(n.NewTransport()),
		producer.WithGroup("pg-sql"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want []string
	for i := range 6 {
		m := producer.NewMessage("sql", []byte(fmt.Sprintf("m%d", i))).WithProperty("a", strconv.Itoa(i))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		if i > 1 && i != 4 {
			want = append(want, string(m.Body))
		}
	}
	const expr = "a > 1 AND a NOT IN ('4')"

	var got seen
	pc, err := NewPushConsumer(fastOptions(t, n, tr, "g-sql", "sql-push")...)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.SubscribeSelector("sql", BySQL92(expr), got.recorder("push")); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("push consumer Start: %v", err)
	}
	eventually(t, "the matching messages", func() bool { return got.count() >= len(want) })

	lc, err := NewPullConsumer(fastOptions(t, n, tr, "g-sql-lite", "sql-pull")...)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if err := lc.SubscribeSelector("sql", BySQL92(expr)); err != nil {
		t.Fatal(err)
	}
	if err := lc.Start(); err != nil {
		t.Fatalf("lite pull consumer Start: %v", err)
	}
	var polled []string
	eventually(t, "the polled messages", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		msgs, err := lc.Poll(ctx)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		for _, m := range msgs {
			polled = append(polled, string(m.Body))
		}
		return len(polled) >= len(want)
	})
	slices.Sort(polled)
	if fmt.Sprint(got.bodies()) != fmt.Sprint(want) || fmt.Sprint(polled) != fmt.Sprint(want) {
		t.Fatalf("push got %v, pull got %v, want exactly %v", got.bodies(), polled, want)
	}

	bad, err := NewPushConsumer(fastOptions(t, n, tr, "g-sql-bad", "sql-bad")...)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.SubscribeSelector("sql", BySQL92("a >"), got.recorder("bad")); err != nil {
		t.Fatal(err)
	}
	err = bad.Start()
	var re *remoting.ResponseError
	if !errors.As(err, &re) || re.Code != remoting.SubscriptionParseFailed {
		t.Errorf("Start with a selector that does not compile: %v, want SUBSCRIPTION_PARSE_FAILED", err)
	}
}

// A namespaced consumer meets a namespaced producer: brokers see "ns%topic" and the group
// "ns%group" (offsets, retry topic "%RETRY%ns%group"), listeners see the topic without the
// namespace, also for a redelivery; the lite pull consumer takes queues in either form.
func TestNamespace(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithOwnedTransport(n.NewTransport()),
		producer.WithGroup("pg"), producer.WithNamespace("ns"), producer.WithDefaultTopicQueueNums(1))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.SendSync(context.Background(), producer.NewMessage("T", []byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
		got.add("ns", msgs)
		if msgs[0].ReconsumeTimes == 0 {
			return ConsumeRetryLater, nil
		}
		return ConsumeSuccess, nil
	}
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "g", "ns"), WithNamespace("ns"))
	pc := startConsumer(t, "T", "*", listener, opts...)
	eventually(t, "the message and its redelivery", func() bool { return got.count() == 2 })
	for i, s := range got.snapshot() {
		if s.msg.Topic != "T" || s.body != "hello" || s.msg.ReconsumeTimes != int32(i) {
			t.Errorf("delivery %d: topic %q body %q reconsumed %d", i, s.msg.Topic, s.body, s.msg.ReconsumeTimes)
		}
	}
	if q := got.snapshot()[1].msg.Queue.Topic; q != "%RETRY%ns%g" {
		t.Errorf("redelivered from %q, want %%RETRY%%ns%%g", q)
	}
	mq := MessageQueue{Topic: "ns%T", BrokerName: "broker-a", QueueID: res.Queue.QueueID}
	eventually(t, "the offset stored under ns%g", func() bool { return a.brokerOffset("ns%g", mq) == 1 })
	if !slices.Contains(pc.Assignment(), mq) {
		t.Errorf("assignment %v lacks %v", pc.Assignment(), mq)
	}

	lc, err := NewPullConsumer(append(fastOptions(t, n, transportFor(t, n, "inproc"), "lite", "ns-lite"),
		WithNamespace("ns"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if err := lc.Assign(MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: res.Queue.QueueID}); err != nil {
		t.Fatal(err)
	}
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := lc.Poll(ctx)
	if err != nil || len(msgs) != 1 || msgs[0].Topic != "T" {
		t.Fatalf("Poll: %v %v", msgs, err)
	}
	if err := lc.Seek(MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: res.Queue.QueueID}, 0); err != nil {
		t.Errorf("Seek by the topic without the namespace: %v", err)
	}
}

// hookLog records hook and listener events in order.
type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (l *hookLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *hookLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// recordingHook logs its calls; panicky panics after logging ConsumeBefore.
type recordingHook struct {
	name    string
	log     *hookLog
	panicky bool
}

func (h recordingHook) ConsumeBefore(cc *ConsumeContext) {
	if cc.Props == nil {
		cc.Props = map[string]string{}
	}
	cc.Props[h.name] = "before"
	h.log.add(fmt.Sprintf("%s.before %s %d", h.name, cc.Group, len(cc.Messages)))
	if h.panicky {
		panic("hook bug")
	}
}

func (h recordingHook) ConsumeAfter(cc *ConsumeContext) {
	h.log.add(fmt.Sprintf("%s.after %s %v %v props=%s", h.name, cc.Result, cc.Success(), cc.Err != nil, cc.Props[h.name]))
}

// Consume hooks run around every listener call, in the order added, concurrent and orderly:
// ConsumeAfter sees the result, a failure included, and what ConsumeBefore left in Props; a
// panicking hook changes nothing for the listener; CONSUME_MESSAGE_DIRECTLY runs no hooks.
func TestConsumeHooks(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprint("orderly=", orderly), func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			topic, group := fmt.Sprint("hooks", orderly), fmt.Sprint("g-hooks", orderly)
			a.createTopic(topic, 1)
			var log hookLog
			var calls atomic.Int32
			listener := func(_ context.Context, msgs []*Message) (ConsumeResult, error) {
				log.add("listener")
				if calls.Add(1) == 1 {
					return SuspendCurrentQueueAMoment, errors.New("not yet")
				}
				return ConsumeSuccess, nil
			}
			opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), group, group),
				WithOrderly(orderly), WithSuspendDelay(10*time.Millisecond),
				WithConsumeHook(recordingHook{"h1", &log, false}), WithConsumeHook(recordingHook{"h2", &log, true}))
			pc := startConsumer(t, topic, "*", listener, opts...)
			a.sendN(topic, 1, 1, "m")
			mq := MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
			eventually(t, "the message consumed again and its offset committed", func() bool {
				off, ok := pc.p.store.read(mq)
				return ok && off == 1 && len(log.snapshot()) >= 10
			})
			call := func(result string, ok, failed bool) []string {
				return []string{"h1.before " + group + " 1", "h2.before " + group + " 1", "listener",
					fmt.Sprintf("h1.after %s %v %v props=before", result, ok, failed),
					fmt.Sprintf("h2.after %s %v %v props=before", result, ok, failed)}
			}
			want := append(call("SUSPEND_CURRENT_QUEUE_A_MOMENT", false, true), call("CONSUME_SUCCESS", true, false)...)
			if diff := cmp.Diff(want, log.snapshot()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			resp := pc.ConsumeMessageDirectly(record(t, testRecord(topic, "direct"), 5, 5))
			if resp.Code != remoting.Success {
				t.Fatalf("consume directly: %d %s", resp.Code, resp.Remark)
			}
			if got := log.snapshot(); len(got) != len(want)+1 || got[len(got)-1] != "listener" {
				t.Errorf("consume directly ran hooks: %v", got[len(want):])
			}
		})
	}
}
