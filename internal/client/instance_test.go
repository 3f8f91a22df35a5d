package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

func startNode(t *testing.T, opts mq.Options) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	opts.Store.Dir = t.TempDir()
	opts.Store.SegmentBytes = 4 << 20
	opts.Logger = &l
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

type fakeConsumer struct {
	group      string
	rebalances atomic.Int32
}

func (f *fakeConsumer) HeartbeatData() protocol.ConsumerData {
	return protocol.ConsumerData{GroupName: f.group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.Clustering, ConsumeFromWhere: protocol.ConsumeFromFirstOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*", TagsSet: []string{},
			CodeSet: protocol.TagCodes{}, SubVersion: time.Now().UnixNano(), ExpressionType: "TAG"}}}
}
func (f *fakeConsumer) SubscribedTopics() []string { return []string{"T"} }
func (f *fakeConsumer) Rebalance()                 { f.rebalances.Add(1) }
func (f *fakeConsumer) ConsumeMessageDirectly([]byte) *remoting.Command {
	return remoting.NewResponse(remoting.Success, "")
}

// waitFor polls cond on the wall clock: these tests run real nodes on loopback sockets, which
// cannot run in a synctest bubble, and what they wait for (a broker's registration with the
// name server, a broker-initiated request) has no signal on this side. The loops' periods are
// pinned on the fake clock in loops_test.go.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func consumerIDs(t *testing.T, tr remoting.Transport, addr, group string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, addr, remoting.NewRequest(remoting.GetConsumerListByGroup,
		remoting.EncodeHeader(&protocol.ConsumerGroupHeader{ConsumerGroup: group}), nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success {
		return nil
	}
	var body protocol.GetConsumerListByGroupResponseBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.ConsumerIDList
}

func TestInstanceSharedPerKey(t *testing.T) {
	n := startNode(t, mq.Options{})
	tr := n.NewTransport()
	defer tr.Close()
	a, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, Transport: tr, InstanceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, Transport: tr, InstanceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, InstanceName: "x"}) // TCP
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a == c {
		t.Fatalf("same key must share, another transport must not: a=%p b=%p c=%p", a, b, c)
	}
	if a.ClientID() != client.LocalIPv4()+"@x" {
		t.Fatalf("client id %q", a.ClientID())
	}
	for _, i := range []*client.Instance{a, b, c} {
		if err := i.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// A released instance is gone: the next Acquire builds a new one.
	d, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, Transport: tr, InstanceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if d == a {
		t.Fatal("released instance reused")
	}
}

func TestInstanceRoutesAndCacheWhenNameServerDown(t *testing.T) {
	ns := startNode(t, mq.Options{DisableBroker: true})
	b := startNode(t, mq.Options{
		DisableNameServer: true,
		NameServers:       []string{ns.Addr()},
		Periods:           config.Periods{RegisterNameServerPeriod: 100 * time.Millisecond},
	})
	for _, transport := range []string{"inproc", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			opts := client.Options{NameServers: []string{ns.Addr()}, InstanceName: "routes-" + transport,
				PollNameServerInterval: 50 * time.Millisecond}
			if transport == "inproc" {
				tr := ns.NewTransport()
				defer tr.Close()
				opts.Transport = tr
			}
			i, err := client.Acquire(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer i.Release()
			ctx := context.Background()
			_, err = i.TopicRoute(ctx, "NoSuchTopic")
			var re *remoting.ResponseError
			if !errors.As(err, &re) || re.Code != remoting.TopicNotExist {
				t.Fatalf("missing topic: %v", err)
			}
			var r any
			waitFor(t, "TBW102 route", func() bool {
				rt, err := i.TopicRoute(ctx, "TBW102")
				r = rt
				return err == nil
			})
			_ = r
			if got := i.MasterAddr(mq.DefaultBrokerName); got != b.BrokerAddr() {
				t.Fatalf("master of broker-a = %q, want %q", got, b.BrokerAddr())
			}
			if got := i.AnyBrokerAddrOfTopic("TBW102"); got != b.BrokerAddr() {
				t.Fatalf("any broker = %q", got)
			}
		})
	}
	ns.Close()
	i, err := client.Acquire(client.Options{NameServers: []string{ns.Addr()}, InstanceName: "down",
		PollNameServerInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Release()
	_, err = i.TopicRoute(context.Background(), "TBW102")
	if !errors.Is(err, client.ErrNameServersUnreachable) {
		t.Fatalf("every name server down: %v", err)
	}
}

func TestInstanceHeartbeatUnregisterAndNotify(t *testing.T) {
	n := startNode(t, mq.Options{})
	tr := n.NewTransport()
	defer tr.Close()
	ctx := context.Background()
	newInst := func(name string) *client.Instance {
		i, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, Transport: tr, InstanceName: name,
			HeartbeatBrokerInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "TBW102 route", func() bool { _, err := i.TopicRoute(ctx, "TBW102"); return err == nil })
		return i
	}
	a := newInst("hb-a")
	defer a.Release()
	ca := &fakeConsumer{group: "g"}
	if err := a.RegisterConsumer("g", ca); err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterConsumer("g", &fakeConsumer{group: "g"}); !errors.Is(err, client.ErrConsumerGroupRegistered) {
		t.Fatalf("second consumer of one group: %v, want ErrConsumerGroupRegistered", err)
	}
	a.SendHeartbeatToAllBrokers(ctx)
	if ids := consumerIDs(t, tr, n.BrokerAddr(), "g"); len(ids) != 1 || ids[0] != a.ClientID() {
		t.Fatalf("consumer ids %v", ids)
	}
	// A second client in the group: the broker tells the first to rebalance.
	tr2 := n.NewTransport()
	defer tr2.Close()
	b, err := client.Acquire(client.Options{NameServers: []string{n.Addr()}, Transport: tr2, InstanceName: "hb-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	waitFor(t, "TBW102 route", func() bool { _, err := b.TopicRoute(ctx, "TBW102"); return err == nil })
	if err := b.RegisterConsumer("g", &fakeConsumer{group: "g"}); err != nil {
		t.Fatal(err)
	}
	b.SendHeartbeatToAllBrokers(ctx)
	waitFor(t, "rebalance on NOTIFY_CONSUMER_IDS_CHANGED", func() bool { return ca.rebalances.Load() > 0 })
	b.UnregisterConsumer("g")
	if ids := consumerIDs(t, tr, n.BrokerAddr(), "g"); len(ids) != 1 {
		t.Fatalf("after unregister: %v", ids)
	}
}
