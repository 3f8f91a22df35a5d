package consumer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// lifecycleKinds are the two consumers, reduced to what the state machine acts on.
var lifecycleKinds = []struct {
	name string
	new  func(opts ...Option) (lifecycle, error)
}{
	{"push", func(opts ...Option) (lifecycle, error) {
		pc, err := NewPushConsumer(opts...)
		if err != nil {
			return nil, err
		}
		return pushLifecycle{pc}, nil
	}},
	{"pull", func(opts ...Option) (lifecycle, error) {
		c, err := NewPullConsumer(opts...)
		if err != nil {
			return nil, err
		}
		return pullLifecycle{c}, nil
	}},
}

type lifecycle interface {
	Subscribe(topic string) error
	Start() error
	Close() error
}

type pushLifecycle struct{ *PushConsumer }

func (c pushLifecycle) Subscribe(topic string) error {
	return c.PushConsumer.Subscribe(topic, "*", func(context.Context, []*Message) (ConsumeResult, error) {
		return ConsumeSuccess, nil
	})
}

type pullLifecycle struct{ *PullConsumer }

func (c pullLifecycle) Subscribe(topic string) error { return c.PullConsumer.Subscribe(topic, "*") }

// fakeOptions are a consumer's options against a fakeBroker in a synctest bubble.
func fakeOptions(t *testing.T, br remoting.Transport, extra ...Option) []Option {
	log := testLogger(t)
	return append([]Option{WithGroup("g"), WithLogger(&log), WithPullSuspend(time.Second),
		WithRebalanceInterval(time.Hour), WithPersistInterval(time.Hour),
		optionFunc(func(c *config) { c.inst = brokerInstance{fakeInstance{tr: br}} })}, extra...)
}

// fakeQueues are the two queues of topic "T" a brokerInstance routes, with stored offsets.
func fakeQueues() map[MessageQueue]int64 {
	return map[MessageQueue]int64{{Topic: "T", BrokerName: "b", QueueID: 0}: 0, {Topic: "T", BrokerName: "b", QueueID: 1}: 0}
}

// The state machine of RocketMQ's ServiceState: Start and Subscribe only while new; a second
// Start or a Subscribe once started is ErrStarted (RocketMQ would take the subscription; see
// docs/rocketmq-differences.md); anything after Close is ErrClosed; Close is idempotent. The
// bubble ends only once every goroutine the consumer started has exited.
func TestLifecycleStates(t *testing.T) {
	for _, kind := range lifecycleKinds {
		t.Run(kind.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := newFakeBroker(fakeQueues(), fakeInstance{}.ClientID())
				c, err := kind.new(fakeOptions(t, br)...)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(); !errors.Is(err, ErrNoSubscription) {
					t.Fatalf("Start without a subscription: %v, want ErrNoSubscription", err)
				}
				// Nothing was tried: the consumer is still new.
				if err := c.Subscribe("T"); err != nil {
					t.Fatal(err)
				}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				if err := c.Start(); !errors.Is(err, ErrStarted) {
					t.Errorf("second Start: %v, want ErrStarted", err)
				}
				if err := c.Subscribe("U"); !errors.Is(err, ErrStarted) {
					t.Errorf("Subscribe after Start: %v, want ErrStarted", err)
				}
				synctest.Wait()
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if err := c.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
				if err := c.Start(); !errors.Is(err, ErrClosed) {
					t.Errorf("Start after Close: %v, want ErrClosed", err)
				}
				if err := c.Subscribe("T"); !errors.Is(err, ErrClosed) {
					t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
				}
			})
		})
	}
}

// Close before Start closes an owned transport once and leaves a consumer that cannot start.
func TestLifecycleCloseBeforeStart(t *testing.T) {
	for _, kind := range lifecycleKinds {
		t.Run(kind.name, func(t *testing.T) {
			tr := &closeCounter{}
			c, err := kind.new(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithOwnedTransport(tr))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Subscribe("T"); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); !errors.Is(err, ErrClosed) {
				t.Errorf("Start after Close: %v, want ErrClosed", err)
			}
			c.Close()
			if tr.closed != 1 {
				t.Errorf("owned transport closed %d times, want 1", tr.closed)
			}
		})
	}
}

// unreachable is a transport that reaches no name server: a route query fails as a
// connection refused would.
type unreachable struct{ closeCounter }

var errRefused = errors.New("connection refused (test)")

func (r *unreachable) InvokeSync(_ context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.GetRouteInfoByTopic {
		return nil, errRefused
	}
	return remoting.NewResponse(remoting.SystemError, "unreachable"), nil
}

// A Start that fails leaves the consumer start-failed, as RocketMQ's START_FAILED: what it
// acquired is released (here the owned transport, through the client instance's last release),
// so a later Start or Subscribe fails with ErrStartFailed wrapping the first failure, and Close
// has nothing left to close.
func TestLifecycleStartFailedIsFinal(t *testing.T) {
	for _, kind := range lifecycleKinds {
		t.Run(kind.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &unreachable{}
				log := testLogger(t)
				c, err := kind.new(WithGroup("g"), WithNameServers("127.0.0.1:1"), WithOwnedTransport(tr),
					WithInstanceName("start-failed-"+kind.name), WithLogger(&log))
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Subscribe("T"); err != nil {
					t.Fatal(err)
				}
				first := c.Start()
				if !errors.Is(first, client.ErrNameServersUnreachable) || !strings.Contains(first.Error(), errRefused.Error()) {
					t.Fatalf("Start without a name server: %v, want ErrNameServersUnreachable naming the refusal", first)
				}
				if tr.closed != 1 {
					t.Errorf("owned transport closed %d times by the failed Start, want 1", tr.closed)
				}
				again := c.Start()
				if !errors.Is(again, ErrStartFailed) || !errors.Is(again, client.ErrNameServersUnreachable) {
					t.Errorf("Start after a failed Start: %v, want ErrStartFailed wrapping the first error", again)
				}
				if err := c.Subscribe("U"); !errors.Is(err, ErrStartFailed) {
					t.Errorf("Subscribe after a failed Start: %v, want ErrStartFailed", err)
				}
				if err := c.Close(); err != nil {
					t.Errorf("Close after a failed Start: %v", err)
				}
				if tr.closed != 1 {
					t.Errorf("owned transport closed %d times in all, want 1", tr.closed)
				}
			})
		})
	}
}

// A second consumer of a group in the same client instance fails to start with ErrGroupExists
// (RocketMQ: "The consumer group has been created before"), and the first goes on consuming.
func TestSecondConsumerOfGroupFails(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("dup", 1)
	tr := transportFor(t, n, "inproc")
	var got seen
	first := startConsumer(t, "dup", "*", got.recorder("first"), fastOptions(t, n, tr, "g-dup", "same")...)
	second, err := NewPushConsumer(fastOptions(t, n, tr, "g-dup", "same")...)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.Subscribe("dup", "*", got.recorder("second")); err != nil {
		t.Fatal(err)
	}
	if err := second.Start(); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("second consumer of the group: %v, want ErrGroupExists", err)
	}
	if err := second.Start(); !errors.Is(err, ErrStartFailed) || !errors.Is(err, ErrGroupExists) {
		t.Errorf("second Start of the refused consumer: %v, want ErrStartFailed wrapping ErrGroupExists", err)
	}
	second.Close()
	a.sendN("dup", 1, 3, "d")
	eventually(t, "the first consumer consumes what is sent after", func() bool { return got.count() == 3 })
	for _, s := range got.snapshot() {
		if s.who != "first" {
			t.Errorf("%s consumed by %s", s.body, s.who)
		}
	}
	if held := heldQueues(first, "dup"); len(held) != 1 {
		t.Errorf("first consumer holds %v of the topic", held)
	}
}

// Every option's bounds: RocketMQ's ranges from DefaultMQPushConsumerImpl.checkConfig where it
// has one, positive otherwise; each value just outside is refused naming the option, each
// bound itself is taken.
func TestConfigBounds(t *testing.T) {
	base := []Option{WithGroup("g"), WithNameServers("127.0.0.1:1")}
	cases := []struct {
		name   string
		ok     []Option
		bad    []Option
		errHas string
	}{
		{"pullBatchSize", []Option{WithPullBatchSize(1), WithPullBatchSize(1024)},
			[]Option{WithPullBatchSize(0), WithPullBatchSize(1025)}, "pull batch size"},
		{"consumeMessageBatchMaxSize", []Option{WithConsumeBatchSize(1), WithConsumeBatchSize(1024)},
			[]Option{WithConsumeBatchSize(0), WithConsumeBatchSize(1025)}, "consume batch size"},
		{"consumeThreadMin/Max", []Option{WithConsumeGoroutines(1), WithConsumeGoroutines(1000)},
			[]Option{WithConsumeGoroutines(0), WithConsumeGoroutines(1001)}, "consume goroutines"},
		{"pullThresholdForQueue", []Option{WithPullThresholds(1, 1<<20), WithPullThresholds(65535, 1<<20)},
			[]Option{WithPullThresholds(0, 1<<20), WithPullThresholds(65536, 1<<20)}, "pull threshold"},
		{"pullThresholdSizeForQueue", []Option{WithPullThresholds(10, 1), WithPullThresholds(10, 1024<<20)},
			[]Option{WithPullThresholds(10, 0), WithPullThresholds(10, 1024<<20+1)}, "pull threshold size"},
		{"consumeConcurrentlyMaxSpan", []Option{WithMaxSpan(1), WithMaxSpan(65535)},
			[]Option{WithMaxSpan(0), WithMaxSpan(65536)}, "max span"},
		{"pullInterval", []Option{WithPullInterval(0), WithPullInterval(65535 * time.Millisecond)},
			[]Option{WithPullInterval(-time.Millisecond), WithPullInterval(65536 * time.Millisecond)}, "pull interval"},
		{"suspend", []Option{WithPullSuspend(time.Millisecond)}, []Option{WithPullSuspend(0)}, "pull suspend"},
		{"timeout shorter than suspend", []Option{all(WithPullSuspend(2*time.Second), WithPullTimeout(2*time.Second))},
			[]Option{WithPullTimeout(time.Second), all(WithPullSuspend(40 * time.Second))}, "shorter than the pull suspend"},
		{"rebalance", []Option{WithRebalanceInterval(time.Millisecond)}, []Option{WithRebalanceInterval(0)}, "rebalance interval"},
		{"persist", []Option{WithPersistInterval(time.Millisecond)}, []Option{WithPersistInterval(-1)}, "persist interval"},
		{"consumeTimeout", []Option{WithConsumeTimeout(time.Millisecond)}, []Option{WithConsumeTimeout(0)}, "consume timeout"},
		{"lock", []Option{WithLockInterval(time.Millisecond)}, []Option{WithLockInterval(0)}, "lock interval"},
		{"suspendCurrentQueueTimeMillis", []Option{WithSuspendDelay(time.Millisecond)}, []Option{WithSuspendDelay(0)}, "suspend delay"},
		{"close", []Option{WithCloseTimeout(time.Millisecond)}, []Option{WithCloseTimeout(0)}, "close timeout"},
		{"group", []Option{WithGroup(strings.Repeat("g", 120))},
			[]Option{WithGroup(""), WithGroup("DEFAULT_CONSUMER"), WithGroup("a/b"), WithGroup(strings.Repeat("g", 121))}, "group"},
		{"namespace makes the group too long", []Option{all(WithNamespace("ns"), WithGroup(strings.Repeat("g", 117)))},
			[]Option{all(WithNamespace("ns"), WithGroup(strings.Repeat("g", 118)))}, "too long for a consumer group"},
		{"strategy", nil, []Option{WithStrategy(nil)}, "strategy"},
		{"hook", nil, []Option{WithConsumeHook(nil)}, "consume hook"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range c.ok {
				if _, err := newConfig(append(base, o)); err != nil {
					t.Errorf("refused a value in range: %v", err)
				}
			}
			for _, o := range c.bad {
				_, err := newConfig(append(base, o))
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Errorf("got %v, want an error about %q", err, c.errHas)
				}
			}
		})
	}
	if _, err := newConfig([]Option{WithGroup("g")}); err == nil || !strings.Contains(err.Error(), "name servers") {
		t.Errorf("no name servers: %v", err)
	}
	// Every problem is reported at once.
	_, err := newConfig(append(base, WithPullBatchSize(0), WithMaxSpan(0)))
	if err == nil || !strings.Contains(err.Error(), "pull batch size") || !strings.Contains(err.Error(), "max span") {
		t.Errorf("two bad options: %v", err)
	}
}

// all applies opts in order, as one option.
func all(opts ...Option) Option {
	return optionFunc(func(c *config) {
		for _, o := range opts {
			o.apply(c)
		}
	})
}

// The defaults are DefaultMQPushConsumer's: no subscription in pulls (postSubscriptionWhenPull
// false), a 15 s suspend inside a 30 s pull (BROKER_SUSPEND_MAX_TIME_MILLIS,
// CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND), no pull interval. The lite pull consumer sends its
// subscription with every pull, as RocketMQ's does.
func TestRocketMQDefaults(t *testing.T) {
	cfg, err := newConfig([]Option{WithGroup("g"), WithNameServers("127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.subscriptionInPull || cfg.pullSuspend != 15*time.Second || cfg.pullTimeout != 30*time.Second ||
		cfg.pullInterval != 0 || cfg.pullBatchSize != 32 || cfg.pullThresholdMsgs != 1000 ||
		cfg.pullThresholdBytes != 100<<20 || cfg.maxSpan != 2000 || cfg.consumeGoroutines != 20 ||
		cfg.consumeBatchSize != 1 || cfg.namespace != "" || len(cfg.hooks) != 0 {
		t.Errorf("defaults differ from RocketMQ's: %+v", cfg.pullerConfig)
	}
	lite, err := NewPullConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if !lite.p.cfg.subscriptionInPull {
		t.Error("the lite pull consumer does not send its subscription with pulls")
	}
}

// A selector of an unknown type, or an empty SQL92 expression, is refused at Subscribe
// (RocketMQ FilterAPI.build).
func TestSubscribeSelectorChecks(t *testing.T) {
	pc, err := NewPushConsumer(WithGroup("g"), WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	l := func(context.Context, []*Message) (ConsumeResult, error) { return ConsumeSuccess, nil }
	if err := pc.SubscribeSelector("T", MessageSelector{Type: "JSONPATH", Expression: "$.a"}, l); err == nil {
		t.Error("unknown expression type accepted")
	}
	if err := pc.SubscribeSelector("T", BySQL92("  "), l); err == nil {
		t.Error("empty SQL92 expression accepted")
	}
	if err := pc.SubscribeSelector("T", BySQL92("a > 1"), l); err != nil {
		t.Error(err)
	}
	if err := pc.SubscribeSelector("U", MessageSelector{Expression: "x"}, l); err != nil {
		t.Error(err)
	}
	want := []protocol.SubscriptionData{
		{Topic: "T", SubString: "a > 1", TagsSet: []string{}, CodeSet: protocol.TagCodes{}, ExpressionType: "SQL92"},
		{Topic: "U", SubString: "x", TagsSet: []string{"x"}, CodeSet: protocol.TagCodes{120}, ExpressionType: "TAG"},
	}
	got := pc.p.HeartbeatData().SubscriptionDataSet
	slices.SortFunc(got, func(a, b protocol.SubscriptionData) int { return strings.Compare(a.Topic, b.Topic) })
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(protocol.SubscriptionData{}, "SubVersion")); diff != "" {
		t.Errorf("heartbeat subscriptions (-want +got):\n%s", diff)
	}
}
