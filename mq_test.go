package mq

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

func testOptions(t *testing.T) Options {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	return Options{Listen: "127.0.0.1:0", Logger: &l, DisableBroker: true, Store: config.Store{Dir: t.TempDir()}}
}

func registerBroker(t *testing.T, tr remoting.Transport, nsAddr, cluster, name, addr string, topics ...string) {
	t.Helper()
	table := map[string]route.TopicConfig{}
	for _, topic := range topics {
		table[topic] = route.TopicConfig{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	}
	req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{ClusterName: cluster, BrokerName: name,
		BrokerAddr: addr, HAServerAddr: addr, Body: route.RegisterBrokerBody{
			TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{TopicConfigTable: table}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, nsAddr, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := route.DecodeRegisterBrokerResult(resp); err != nil {
		t.Fatal(err)
	}
}

func queryRoute(t *testing.T, tr remoting.Transport, nsAddr, topic string) (*route.TopicRouteData, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, nsAddr, route.BuildGetRouteInfo(topic))
	if err != nil {
		t.Fatal(err)
	}
	return route.DecodeRouteInfoResponse(resp)
}

func TestNodeServesNameServiceOverTCPAndInProcess(t *testing.T) {
	n, err := StartNode(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Addr() == "" || strings.HasSuffix(n.Addr(), ":0") || n.NameServerAddr() != n.Addr() {
		t.Fatalf("addresses: %q %q", n.Addr(), n.NameServerAddr())
	}
	tcp := remoting.NewClient(remoting.ClientOptions{})
	defer tcp.Close()
	inproc := n.NewTransport()
	defer inproc.Close()

	registerBroker(t, tcp, n.Addr(), "c1", "broker-a", "127.0.0.1:10911", "T")
	for name, tr := range map[string]remoting.Transport{"tcp": tcp, "inproc": inproc} {
		rd, err := queryRoute(t, tr, n.Addr(), "T")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerAddrs[0] != "127.0.0.1:10911" {
			t.Fatalf("%s: route %+v", name, rd)
		}
		_, err = queryRoute(t, tr, n.Addr(), "nope")
		var re *remoting.ResponseError
		if !errors.As(err, &re) || re.Code != remoting.TopicNotExist {
			t.Fatalf("%s: unknown topic: %v", name, err)
		}
	}
}

func TestNodeSeparateListeners(t *testing.T) {
	opts := testOptions(t)
	opts.DisableBroker = false
	opts.NameServerListen, opts.BrokerListen = "127.0.0.1:0", "127.0.0.1:0"
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.NameServerAddr() == n.BrokerAddr() || n.BrokerAddr() == "" {
		t.Fatalf("name server %q, broker %q", n.NameServerAddr(), n.BrokerAddr())
	}
}

func TestNodeOptionsValidated(t *testing.T) {
	_, err := StartNode(Options{Listen: "nope", Broker: config.Broker{ID: -1}, Store: config.Store{FlushDiskType: "SOMETIMES"}})
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"Listen", "FlushDiskType", "Broker.ID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestNodeAddressInUse(t *testing.T) {
	a, err := StartNode(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	opts := testOptions(t)
	opts.Listen = a.Addr()
	if b, err := StartNode(opts); err == nil {
		b.Close()
		t.Fatal("second node bound a busy address")
	}
}

// Close is idempotent and leaves no goroutine of this module behind.
func TestNodeCloseLeavesNoGoroutines(t *testing.T) {
	n, err := StartNode(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := n.NewTransport()
	registerBroker(t, tr, n.Addr(), "c1", "b", "127.0.0.1:1", "T")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoModuleGoroutines(t)
}

// The dashboard samples the cluster in a goroutine of its own from the node's start (with
// HTTP.Listen); Close stops it with everything else.
func TestNodeCloseStopsDashboardSampling(t *testing.T) {
	opts := testOptions(t)
	opts.HTTP.Listen = "127.0.0.1:0"
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + n.HTTPAddr() + "/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("overview: %d", resp.StatusCode)
	}
	if !strings.Contains(moduleStacks(), "internal/dashboard.(*sampler).run") {
		t.Fatal("no sampling goroutine while the node runs")
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoModuleGoroutines(t)
}

// moduleStacks is the stacks of every goroutine.
func moduleStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// assertNoModuleGoroutines fails if a goroutine running this module's code (other than tests)
// is still alive shortly after everything was closed.
func assertNoModuleGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "github.com/mqgo/mq/") && !strings.Contains(g, "testing.tRunner") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines outlived Close:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A default node runs both roles: its broker registers with its own name service, so TBW102
// (auto-create) has a route pointing at the broker, and Close leaves nothing running.
func TestNodeBrokerRegistersWithItsNameService(t *testing.T) {
	opts := testOptions(t)
	opts.DisableBroker = false
	opts.Store.SegmentBytes = 1 << 20
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	if n.BrokerAddr() != n.Addr() || n.Broker() == nil {
		t.Fatalf("broker %q, node %q", n.BrokerAddr(), n.Addr())
	}
	tr := n.NewTransport()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rd, err := queryRoute(t, tr, n.Addr(), "TBW102")
		if err == nil {
			if got := rd.BrokerDatas[0].BrokerAddrs[0]; got != n.Addr() {
				t.Fatalf("TBW102 routes to %q, want %q", got, n.Addr())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for TBW102: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoModuleGoroutines(t)
}

// startWholeNode starts a node with name service and broker (1 MiB segments) until the test
// ends.
func startWholeNode(t *testing.T) *Node {
	t.Helper()
	opts := testOptions(t)
	opts.DisableBroker = false
	opts.Store.SegmentBytes = 1 << 20
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// startNodeAndProducer is startWholeNode plus a producer from the node.
func startNodeAndProducer(t *testing.T) (*Node, *producer.Producer) {
	t.Helper()
	n := startWholeNode(t)
	p, err := n.NewProducer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return n, p
}

// A producer from the node sends in-process to its broker.
func TestNodeNewProducer(t *testing.T) {
	n, p := startNodeAndProducer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, producer.NewMessage("NodeTopic", []byte("hi")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != producer.SendOK || res.Queue.BrokerName != DefaultBrokerName {
		t.Fatalf("result %+v", res)
	}
	// The ConsumeQueue unit is written by the dispatcher, just after the append.
	for n.Broker().Store().MaxOffsetInQueue("NodeTopic", int32(res.Queue.QueueID)) != res.QueueOffset+1 {
		if ctx.Err() != nil {
			t.Fatal("message never reached its queue")
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// A push consumer from the node receives, in-process, what a producer from the node sent.
func TestNodeNewPushConsumer(t *testing.T) {
	n, p := startNodeAndProducer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, producer.NewMessage("NodeConsume", []byte("hello"))); err != nil {
		t.Fatal(err)
	}
	c, err := n.NewPushConsumer(consumer.WithGroup("node-cg"), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	if err := c.Subscribe("NodeConsume", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			select {
			case got <- string(m.Body):
			default:
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-got:
		if body != "hello" {
			t.Fatalf("got %q", body)
		}
	case <-ctx.Done():
		t.Fatal("nothing consumed")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
