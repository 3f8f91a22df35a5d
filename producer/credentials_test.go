package producer_test

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/services"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// The account the clients sign with; plain_acl.yml's example account.
var aclAccount = remoting.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}

// signatureGuard is a broker's ACL reduced to its signature check: it records every request's
// code and refuses those aclAccount did not sign, so a request that went out unsigned fails
// its client too.
type signatureGuard struct {
	mu       sync.Mutex
	codes    map[int32]int
	unsigned []int32
}

func (g *signatureGuard) check(_ remoting.Channel, req *remoting.Command) *remoting.Command {
	signed := req.Ext(remoting.ExtAccessKey) == aclAccount.AccessKey &&
		remoting.SignatureEqual(req.Ext(remoting.ExtSignature), remoting.RequestSignature([]byte(aclAccount.SecretKey), req))
	g.mu.Lock()
	defer g.mu.Unlock()
	g.codes[req.Code]++
	if !signed {
		g.unsigned = append(g.unsigned, req.Code)
		return remoting.NewResponse(remoting.NoPermission, "not signed by "+aclAccount.AccessKey)
	}
	return nil
}

// seen returns the codes of the requests that arrived and of those that were not signed.
func (g *signatureGuard) seen() (codes map[int32]int, unsigned []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	codes = make(map[int32]int, len(g.codes))
	for c, n := range g.codes {
		codes[c] = n
	}
	return codes, slices.Clone(g.unsigned)
}

// aclNode is a name service and a broker on one listener, wired from their parts as
// internal/node wires them, with the guard in front of every processor. mq.Node has no hook to
// put a guard of a test's own on its dispatcher, so the parts are put together here.
type aclNode struct {
	addr  string
	d     *remoting.Dispatcher
	ns    *route.NameServer
	guard *signatureGuard
}

func startACLNode(t *testing.T) *aclNode {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n := &aclNode{d: remoting.NewDispatcher(&l), ns: route.NewNameServer(route.Options{Logger: &l}),
		guard: &signatureGuard{codes: make(map[int32]int)}}
	n.d.SetGuard(n.guard.check)
	n.ns.Register(n.d, remoting.NewExecutor("namesrv", 2, 1024))
	n.d.Start()
	srv := remoting.NewServer(n.d, remoting.ServerOptions{Addr: "127.0.0.1:0", Logger: &l})
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(ctx) })
	<-srv.Ready()
	if n.addr = srv.Addr(); n.addr == "" {
		cancel()
		t.Fatalf("listener: %v", g.Wait())
	}
	g.Go(func() error { return n.ns.Run(ctx) })
	// The broker reaches the name service as a node's own broker does: in-process and trusted,
	// so its registrations pass the guard and only the clients' requests are checked.
	self := remoting.NewInProcTransport(n.resolve, nil, 0)
	self.Trust()
	levels := make([]time.Duration, 18)
	for i := range levels {
		levels[i] = 20 * time.Millisecond
	}
	b, err := broker.New(broker.Options{BrokerAddr: n.addr, NameServers: []string{n.addr}, Transport: self,
		Store: storage.Options{Dir: t.TempDir(), SegmentBytes: 4 << 20}, HA: config.HA{Listen: "127.0.0.1:0"},
		Timers: config.Timers{DelayLevels: levels}, Logger: &l})
	if err == nil {
		err = services.Attach(b, services.Deps{})
	}
	if err != nil {
		cancel()
		t.Fatal(errors.Join(err, g.Wait()))
	}
	b.Register(n.d)
	g.Go(func() error { return b.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("node: %v", err)
		}
		n.d.Close()
		self.Close()
		if err := b.Close(); err != nil {
			t.Errorf("broker close: %v", err)
		}
	})
	select {
	case <-b.Ready():
	case <-ctx.Done():
		t.Fatalf("broker: %v", g.Wait())
	}
	return n
}

func (n *aclNode) resolve(addr string) *remoting.Dispatcher {
	if addr == n.addr {
		return n.d
	}
	return nil
}

// transport is how a client of kind reaches the node: in-process, or nil for the client
// instance's own TCP client.
func (n *aclNode) transport(kind string) remoting.Transport {
	if kind == "tcp" {
		return nil
	}
	return remoting.NewInProcTransport(n.resolve, nil, 0)
}

// createTopic creates topic with a signed UPDATE_AND_CREATE_TOPIC, as an admin tool with the
// account would, and waits until the name service routes it.
func (n *aclNode) createTopic(t *testing.T, topic string, queues int32) {
	t.Helper()
	tr := remoting.NewClient(remoting.ClientOptions{})
	defer tr.Close()
	h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	req := remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)
	aclAccount.Sign(req)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, n.addr, req)
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, ok := n.ns.TopicRoute(topic); ok && len(r.QueueDatas) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route of %s after 10 s", topic)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collector gathers the bodies a listener consumed.
type collector struct {
	mu     sync.Mutex
	bodies map[string]bool
	all    chan struct{} // closed once every wanted body arrived
	want   []string
}

func newCollector(want ...string) *collector {
	return &collector{bodies: map[string]bool{}, all: make(chan struct{}), want: want}
}

func (c *collector) add(body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == len(c.want) {
		return
	}
	c.bodies[body] = true
	for _, w := range c.want {
		if !c.bodies[w] {
			return
		}
	}
	close(c.all)
}

func (c *collector) wait(t *testing.T, who string) {
	t.Helper()
	// A bound so that a lost message fails the test instead of hanging it; not a speed limit.
	select {
	case <-c.all:
	case <-time.After(time.Minute):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("%s consumed %v of %v", who, c.bodies, c.want)
	}
}

// TestCredentialsSignEveryRequest: a producer (sync, async, one-way and batch sends) and two
// clustering push consumers (concurrent, which sends a message back once, and orderly, which
// locks its queues) with WithCredentials, in-process and over TCP, against a broker that checks
// every request's signature: every request arrives signed by the account, and every message
// is consumed by both.
func TestCredentialsSignEveryRequest(t *testing.T) {
	bodies := []string{"sync", "async", "oneway", "batch-1", "batch-2"}
	for _, kind := range []string{"inproc", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			n := startACLNode(t)
			const topic = "Signed"
			n.createTopic(t, topic, 2)
			consumerOpts := func(group string) []consumer.Option {
				opts := []consumer.Option{consumer.WithNameServers(n.addr), consumer.WithGroup(group),
					consumer.WithInstanceName(group + "-" + kind), consumer.WithCredentials(aclAccount),
					consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
					consumer.WithRebalanceInterval(100 * time.Millisecond), consumer.WithPersistInterval(100 * time.Millisecond),
					consumer.WithPollNameServerInterval(100 * time.Millisecond), consumer.WithHeartbeatInterval(200 * time.Millisecond),
					consumer.WithPullSuspend(time.Second), consumer.WithPullTimeout(2 * time.Second)}
				if tr := n.transport(kind); tr != nil {
					opts = append(opts, consumer.WithOwnedTransport(tr))
				}
				return opts
			}

			concurrent, err := consumer.NewPushConsumer(consumerOpts("signed-cg")...)
			if err != nil {
				t.Fatal(err)
			}
			defer concurrent.Close()
			gotConcurrent := newCollector(bodies...)
			var sentBack sync.Once
			err = concurrent.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				retry := false
				for _, m := range msgs {
					if string(m.Body) == "sync" {
						sentBack.Do(func() { retry = true })
					}
				}
				if retry {
					return consumer.ConsumeRetryLater, nil
				}
				for _, m := range msgs {
					gotConcurrent.add(string(m.Body))
				}
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			orderly, err := consumer.NewPushConsumer(append(consumerOpts("signed-orderly-cg"), consumer.WithOrderly(true))...)
			if err != nil {
				t.Fatal(err)
			}
			defer orderly.Close()
			gotOrderly := newCollector(bodies...)
			err = orderly.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					gotOrderly.add(string(m.Body))
				}
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []*consumer.PushConsumer{concurrent, orderly} {
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
			}

			popts := []producer.Option{producer.WithNameServers(n.addr), producer.WithGroup("signed-pg"),
				producer.WithInstanceName("signed-p-" + kind), producer.WithCredentials(aclAccount)}
			if tr := n.transport(kind); tr != nil {
				popts = append(popts, producer.WithOwnedTransport(tr))
			}
			p, err := producer.New(popts...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("sync"))); err != nil {
				t.Fatalf("sync send: %v", err)
			}
			asyncDone := make(chan error, 1)
			if err := p.SendAsync(ctx, producer.NewMessage(topic, []byte("async")), func(_ *producer.SendResult, err error) {
				asyncDone <- err
			}); err != nil {
				t.Fatalf("async send: %v", err)
			}
			if err := <-asyncDone; err != nil {
				t.Fatalf("async send: %v", err)
			}
			if err := p.SendOneway(ctx, producer.NewMessage(topic, []byte("oneway"))); err != nil {
				t.Fatalf("one-way send: %v", err)
			}
			if _, err := p.SendBatch(ctx, producer.NewMessage(topic, []byte("batch-1")),
				producer.NewMessage(topic, []byte("batch-2"))); err != nil {
				t.Fatalf("batch send: %v", err)
			}

			gotConcurrent.wait(t, "the concurrent consumer")
			gotOrderly.wait(t, "the orderly consumer")
			for _, c := range []interface{ Close() error }{p, concurrent, orderly} {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			codes, unsigned := n.guard.seen()
			if len(unsigned) > 0 {
				t.Errorf("requests of codes %v arrived without the account's signature", unsigned)
			}
			for _, code := range []int32{remoting.UpdateAndCreateTopic, remoting.GetRouteInfoByTopic, remoting.HeartBeat,
				remoting.SendMessageV2, remoting.SendBatchMessage, remoting.PullMessage, remoting.QueryConsumerOffset,
				remoting.UpdateConsumerOffset, remoting.GetConsumerListByGroup, remoting.ConsumerSendMsgBack,
				remoting.LockBatchMQ, remoting.UnlockBatchMQ, remoting.UnregisterClient} {
				if codes[code] == 0 {
					t.Errorf("no request of code %d reached the broker (seen %v)", code, codes)
				}
			}
		})
	}
}

// TestUnsignedRequestsAreRefused: without credentials the same producer's first request is
// refused by the guard, so the guard above would notice a request that left unsigned.
func TestUnsignedRequestsAreRefused(t *testing.T) {
	n := startACLNode(t)
	p, err := producer.New(producer.WithNameServers(n.addr), producer.WithInstanceName("unsigned"),
		producer.WithRetryUnreachableUntilTimeout(false))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.SendSync(context.Background(), producer.NewMessage("Unsigned", []byte("x"))); err == nil {
		t.Fatal("an unsigned send was stored")
	}
	if _, unsigned := n.guard.seen(); !slices.Contains(unsigned, remoting.GetRouteInfoByTopic) {
		t.Fatalf("the guard saw unsigned codes %v, want the route query among them", unsigned)
	}
}

// TestWithTLSRefusedWithATransport: a given transport dials as it was built to, so WithTLS
// beside it is an option error (and the owned transport is closed), while WithCredentials
// beside it is fine.
func TestWithTLSRefusedWithATransport(t *testing.T) {
	tr := &closeCounter{}
	_, err := producer.New(producer.WithNameServers("127.0.0.1:9876"), producer.WithOwnedTransport(tr),
		producer.WithTLS(&tls.Config{}))
	if !errors.Is(err, producer.ErrInvalidOption) {
		t.Fatalf("WithTLS with WithOwnedTransport: %v, want ErrInvalidOption", err)
	}
	if tr.closed != 1 {
		t.Fatalf("the owned transport was closed %d times, want once", tr.closed)
	}
	p, err := producer.New(producer.WithNameServers("127.0.0.1:9876"), producer.WithTransport(&closeCounter{}),
		producer.WithCredentials(aclAccount), producer.WithInstanceName("signed-given-transport"))
	if err != nil {
		t.Fatalf("WithCredentials with WithTransport: %v", err)
	}
	p.Close()
}

// closeCounter is a transport that is never used, only closed.
type closeCounter struct {
	remoting.Transport
	closed int
}

func (c *closeCounter) RegisterProcessor(int32, remoting.Processor) {}
func (c *closeCounter) Close() error                                { c.closed++; return nil }
