package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// startNode starts a node on a free port and an Admin reaching it over TCP; both close at
// cleanup.
func startNode(t *testing.T) (*mq.Node, *admin.Admin) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	a, err := admin.New(admin.Options{NameServers: []string{n.Addr()}, Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return n, a
}

// counter counts deliveries by body.
type counter struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *counter) count(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[body]
}

// startConsumer starts a push consumer of topic in group over TCP, from the first offset.
func startConsumer(t *testing.T, n *mq.Node, topic, group string) *counter {
	t.Helper()
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(n.Addr()), consumer.WithGroup(group),
		consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_")),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cnt := &counter{seen: map[string]int{}}
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		cnt.mu.Lock()
		for _, m := range msgs {
			cnt.seen[string(m.Body)]++
		}
		cnt.mu.Unlock()
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return cnt
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sendKeyed(t *testing.T, n *mq.Node, topic string, count int) []*producer.SendResult {
	t.Helper()
	p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithGroup("admin-test-producer"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out []*producer.SendResult
	for i := range count {
		res, err := p.SendSync(context.Background(),
			producer.NewMessage(topic, fmt.Appendf(nil, "m%d", i)).WithKeys(fmt.Sprintf("k%d", i), "shared"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

func TestTopicsAndMessages(t *testing.T) {
	n, a := startNode(t)
	ctx := context.Background()
	if err := a.CreateTopicInCluster(ctx, mq.DefaultClusterName, admin.TopicConfig{Topic: "AdminT", ReadQueueNums: 2, WriteQueueNums: 2}); err != nil {
		t.Fatal(err)
	}
	topics, err := a.TopicList(ctx)
	if err != nil || !slices.Contains(topics, "AdminT") || !slices.IsSorted(topics) {
		t.Fatalf("topic list %v, %v", topics, err)
	}
	r, err := a.TopicRoute(ctx, "AdminT")
	if err != nil || len(r.QueueDatas) != 1 || r.QueueDatas[0].WriteQueueNums != 2 || r.BrokerDatas[0].MasterAddr() != n.BrokerAddr() {
		t.Fatalf("route %+v, %v", r, err)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil || len(ci.ClusterAddrTable[mq.DefaultClusterName]) != 1 {
		t.Fatalf("cluster info %+v, %v", ci, err)
	}
	info, err := a.BrokerRuntimeInfo(ctx, n.BrokerAddr())
	if err != nil || len(info) == 0 {
		t.Fatalf("runtime info %v, %v", info, err)
	}

	sent := sendKeyed(t, n, "AdminT", 4)
	stats, err := a.TopicStats(ctx, "AdminT")
	if err != nil || len(stats) != 2 {
		t.Fatalf("topic stats %v, %v", stats, err)
	}
	var total int64
	for _, o := range stats {
		total += o.MaxOffset - o.MinOffset
		if o.MaxOffset > 0 && o.LastUpdate.IsZero() {
			t.Errorf("queue with messages has no last update: %+v", o)
		}
	}
	if total != 4 {
		t.Errorf("topic stats count %d messages, want 4", total)
	}

	byKey, err := a.QueryMessageByKey(ctx, "AdminT", "k2", 0, time.Time{}, time.Time{})
	if err != nil || len(byKey) != 1 || string(byKey[0].Body) != "m2" {
		t.Fatalf("query by key k2: %v, %v", byKey, err)
	}
	shared, err := a.QueryMessageByKey(ctx, "AdminT", "shared", 3, time.Time{}, time.Now().Add(time.Minute))
	if err != nil || len(shared) != 3 {
		t.Fatalf("query by shared key, max 3: %d messages, %v", len(shared), err)
	}
	byID, err := a.QueryMessageByID(ctx, sent[1].OffsetMsgID)
	if err != nil || string(byID.Body) != "m1" || byID.Queue.BrokerName != mq.DefaultBrokerName {
		t.Fatalf("query by offset id: %v, %v", byID, err)
	}
	byUniq, err := a.QueryMessageByUniqueKey(ctx, "AdminT", sent[3].MsgID)
	if err != nil || string(byUniq.Body) != "m3" {
		t.Fatalf("query by unique key: %v, %v", byUniq, err)
	}
	byOffset, err := a.QueryMessageByOffset(ctx, sent[0].Queue, sent[0].QueueOffset)
	if err != nil || string(byOffset.Body) != "m0" {
		t.Fatalf("query by offset: %v, %v", byOffset, err)
	}
	if _, err := a.QueryMessageByOffset(ctx, sent[0].Queue, 1000); !errors.Is(err, admin.ErrMessageNotFound) {
		t.Errorf("query past the end: %v, want ErrMessageNotFound", err)
	}
	if _, err := a.QueryMessageByID(ctx, "not-an-id"); err == nil {
		t.Error("malformed message id accepted")
	}

	if err := a.DeleteTopic(ctx, mq.DefaultClusterName, "AdminT"); err != nil {
		t.Fatal(err)
	}
	_, err = a.TopicRoute(ctx, "AdminT")
	var rerr *remoting.ResponseError
	if !errors.As(err, &rerr) || rerr.Code != remoting.TopicNotExist || !strings.Contains(err.Error(), "admin: topic route of AdminT") {
		t.Errorf("route of deleted topic: %v", err)
	}
}

func TestConsumerGroupProgressAndReset(t *testing.T) {
	n, a := startNode(t)
	ctx := context.Background()
	if err := a.CreateTopic(ctx, n.BrokerAddr(), admin.TopicConfig{Topic: "ResetT", ReadQueueNums: 2, WriteQueueNums: 2}); err != nil {
		t.Fatal(err)
	}
	sendKeyed(t, n, "ResetT", 4)
	cnt := startConsumer(t, n, "ResetT", "resetG")
	eventually(t, "lag 0", func() bool {
		s, err := a.ConsumeStats(ctx, "resetG", "ResetT")
		return err == nil && len(s.Offsets) == 2 && s.Diff() == 0
	})
	groups, err := a.ConsumerGroups(ctx)
	if err != nil || !slices.Contains(groups, "resetG") {
		t.Fatalf("groups %v, %v", groups, err)
	}
	cc, err := a.ConsumerConnection(ctx, "resetG")
	if err != nil || len(cc.Connections) != 1 || cc.Connections[0].Language != "GO" || cc.MessageModel != "CLUSTERING" ||
		!slices.ContainsFunc(cc.Subscriptions, func(s admin.Subscription) bool { return s.Topic == "ResetT" && s.Expression == "*" }) {
		t.Fatalf("consumer connection %+v, %v", cc, err)
	}

	table, err := a.ResetOffsetByTime(ctx, "resetG", "ResetT", time.UnixMilli(0), true)
	if err != nil || len(table) != 2 {
		t.Fatalf("reset: %v, %v", table, err)
	}
	for mq, off := range table {
		if off != 0 {
			t.Errorf("%s reset to %d, want 0", mq, off)
		}
	}
	eventually(t, "re-consumption after the reset", func() bool {
		for i := range 4 {
			if cnt.count(fmt.Sprintf("m%d", i)) < 2 {
				return false
			}
		}
		return true
	})

	// A group nobody consumes for is reset by committing its offsets.
	if _, err := a.ConsumerConnection(ctx, "nobodyG"); err == nil {
		t.Error("connection of a group without retry topic")
	}
}

func TestResetWithNobodyOnlineCommitsOffsets(t *testing.T) {
	n, a := startNode(t)
	ctx := context.Background()
	if err := a.CreateTopic(ctx, n.BrokerAddr(), admin.TopicConfig{Topic: "OffT", ReadQueueNums: 1, WriteQueueNums: 1}); err != nil {
		t.Fatal(err)
	}
	sendKeyed(t, n, "OffT", 3)
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(n.Addr()), consumer.WithGroup("offG"),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("OffT", "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "lag 0", func() bool {
		s, err := a.ConsumeStats(ctx, "offG", "OffT")
		return err == nil && len(s.Offsets) == 1 && s.Diff() == 0
	})
	c.Close() // commits and unregisters: nobody is online
	if _, err := a.ConsumerConnection(ctx, "offG"); err == nil {
		t.Fatal("connection of a closed consumer's group")
	}
	table, err := a.ResetOffsetByTime(ctx, "offG", "OffT", time.UnixMilli(0), true)
	if err != nil || len(table) != 1 {
		t.Fatalf("reset: %v, %v", table, err)
	}
	s, err := a.ConsumeStats(ctx, "offG", "OffT")
	if err != nil || s.Diff() != 3 {
		t.Fatalf("after the reset: %+v, %v; want lag 3", s, err)
	}
}

func TestSubscriptionGroups(t *testing.T) {
	n, a := startNode(t)
	ctx := context.Background()
	cfg := admin.NewSubscriptionGroupConfig("subG")
	cfg.RetryMaxTimes = 3
	if err := a.CreateSubscriptionGroup(ctx, n.BrokerAddr(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteSubscriptionGroup(ctx, n.BrokerAddr(), "subG"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateSubscriptionGroup(ctx, n.BrokerAddr(), admin.SubscriptionGroupConfig{}); err == nil {
		t.Error("group without a name accepted")
	}
}

func TestUnreachableNameServerAndCredentials(t *testing.T) {
	if _, err := admin.New(admin.Options{}); !errors.Is(err, admin.ErrNoNameServer) {
		t.Errorf("New without name servers: %v", err)
	}
	a, err := admin.New(admin.Options{NameServers: []string{"127.0.0.1:1"}, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.TopicList(context.Background()); err == nil || !strings.Contains(err.Error(), "admin: topic list") {
		t.Errorf("unreachable name server: %v", err)
	}
}

func TestCredentialsSignRequests(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	creds := remoting.Credentials{AccessKey: "adminKey", SecretKey: "adminSecret12"}
	n, err := mq.StartNode(mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir()},
		Security: config.Security{ACL: &mq.ACLConfig{Accounts: []mq.ACLAccount{{AccessKey: creds.AccessKey, SecretKey: creds.SecretKey, Admin: true}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	cfg := admin.TopicConfig{Topic: "AclT", ReadQueueNums: 1, WriteQueueNums: 1}
	for _, c := range []struct {
		creds remoting.Credentials
		ok    bool
	}{{remoting.Credentials{}, false}, {remoting.Credentials{AccessKey: creds.AccessKey, SecretKey: "wrong-secret"}, false}, {creds, true}} {
		a, err := admin.New(admin.Options{NameServers: []string{n.Addr()}, Credentials: c.creds})
		if err != nil {
			t.Fatal(err)
		}
		err = a.CreateTopic(ctx, n.BrokerAddr(), cfg)
		a.Close()
		var rerr *remoting.ResponseError
		switch {
		case c.ok && err != nil:
			t.Errorf("signed with the account: %v", err)
		case !c.ok && (!errors.As(err, &rerr) || rerr.Code != remoting.NoPermission):
			t.Errorf("access key %q: %v, want NO_PERMISSION", c.creds.AccessKey, err)
		}
	}
}
