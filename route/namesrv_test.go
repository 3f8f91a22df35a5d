package route

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

var (
	v1 = DataVersion{Timestamp: 1700000000000, Counter: 1}
	v2 = DataVersion{Timestamp: 1700000000000, Counter: 2}

	brokerA0 = brokerSpec{cluster: "c1", name: "broker-a", addr: "10.0.0.1:10911", id: 0, version: v1,
		topics: []TopicConfig{topic("T1", 4, 6), topic("TBW102", 8, 7)}}
	brokerA1 = brokerSpec{cluster: "c1", name: "broker-a", addr: "10.0.0.2:10911", id: 1, version: v1,
		topics: []TopicConfig{topic("T1", 4, 6), topic("TBW102", 8, 7)}}
	brokerB0 = brokerSpec{cluster: "c2", name: "broker-b", addr: "10.0.0.3:10911", id: 0, version: v1,
		topics: []TopicConfig{topic("T1", 2, 6), topic("T2", 4, 6)}}
)

const (
	routeT1Both = `{"orderTopicConf":null,"queueDatas":[` +
		`{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSynFlag":0},` +
		`{"brokerName":"broker-b","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicSynFlag":0}],"brokerDatas":[` +
		`{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}},` +
		`{"cluster":"c2","brokerName":"broker-b","brokerAddrs":{"0":"10.0.0.3:10911"}}],"filterServerTable":{}}`
	routeT2 = `{"orderTopicConf":null,"queueDatas":[{"brokerName":"broker-b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSynFlag":0}],` +
		`"brokerDatas":[{"cluster":"c2","brokerName":"broker-b","brokerAddrs":{"0":"10.0.0.3:10911"}}],"filterServerTable":{}}`
	routeT1OnlyA = `{"orderTopicConf":null,"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSynFlag":0}],` +
		`"brokerDatas":[{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}],"filterServerTable":{}}`
	clusterInfoAll = `{"brokerAddrTable":{` +
		`"broker-a":{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}},` +
		`"broker-b":{"cluster":"c2","brokerName":"broker-b","brokerAddrs":{"0":"10.0.0.3:10911"}}},` +
		`"clusterAddrTable":{"c1":["broker-a"],"c2":["broker-b"]}}`
)

type cluster struct {
	ns               *NameServer
	clk              *fakeClock
	chA0, chA1, chB0 *fakeChannel
}

// startCluster registers broker-a (master + slave, cluster c1) and broker-b (master, cluster c2).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	ns, clk := newTestNameServer(t, Options{})
	c := &cluster{ns: ns, clk: clk, chA0: newFakeChannel("10.0.0.1:50001"),
		chA1: newFakeChannel("10.0.0.2:50002"), chB0: newFakeChannel("10.0.0.3:50003")}
	for _, r := range []*RegisterBrokerResult{
		register(t, ns, c.chA0, brokerA0), register(t, ns, c.chB0, brokerB0)} {
		if diff := cmp.Diff(&RegisterBrokerResult{}, r); diff != "" {
			t.Errorf("master registration result (-want +got):\n%s", diff)
		}
	}
	got := register(t, ns, c.chA1, brokerA1)
	want := &RegisterBrokerResult{MasterAddr: "10.0.0.1:10911", HAServerAddr: "10.0.0.1:10912"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slave registration result (-want +got):\n%s", diff)
	}
	return c
}

func TestRouteQueries(t *testing.T) {
	c := startCluster(t)
	ns := c.ns

	body := routeBody(t, ns, "T1", remoting.Success)
	if body != routeT1Both {
		t.Fatalf("route T1:\n got %s\nwant %s", body, routeT1Both)
	}
	decoded, err := DecodeTopicRouteData([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &TopicRouteData{
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
			{BrokerName: "broker-b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
		},
		BrokerDatas: []BrokerData{
			{Cluster: "c1", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}},
			{Cluster: "c2", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.3:10911"}},
		},
	}
	if diff := cmp.Diff(want, decoded); diff != "" {
		t.Errorf("decoded route (-want +got):\n%s", diff)
	}
	if got := routeBody(t, ns, "T2", remoting.Success); got != routeT2 {
		t.Errorf("route T2 (only broker datas of its broker names):\n got %s\nwant %s", got, routeT2)
	}

	t.Run("unknown topic", func(t *testing.T) {
		resp := call(t, ns, c.chA0, BuildGetRouteInfo("nope"))
		if resp.Code != remoting.TopicNotExist || resp.Remark != "No topic route info in name server for the topic: nope" {
			t.Errorf("got code %d remark %q", resp.Code, resp.Remark)
		}
		_, err := DecodeRouteInfoResponse(resp)
		var re *remoting.ResponseError
		if !errors.As(err, &re) || re.Code != remoting.TopicNotExist {
			t.Errorf("DecodeRouteInfoResponse = %v", err)
		}
	})

	t.Run("cluster info", func(t *testing.T) {
		resp := call(t, ns, c.chA0, BuildGetBrokerClusterInfo())
		if resp.Code != remoting.Success || string(resp.Body) != clusterInfoAll {
			t.Errorf("cluster info: code %d\n got %s\nwant %s", resp.Code, resp.Body, clusterInfoAll)
		}
	})

	t.Run("topic lists", func(t *testing.T) {
		resp := call(t, ns, c.chA0, BuildGetAllTopicList())
		if got, want := string(resp.Body), `{"topicList":["T1","T2","TBW102"]}`; got != want {
			t.Errorf("all topics = %s, want %s", got, want)
		}
		for cl, want := range map[string]string{"c1": `{"topicList":["T1","TBW102"]}`,
			"c2": `{"topicList":["T1","T2"]}`, "c9": `{"topicList":[]}`} {
			req := remoting.NewRequest(remoting.GetTopicsByCluster,
				remoting.EncodeHeader(&protocol.GetTopicsByClusterRequestHeader{Cluster: cl}), nil)
			if got := string(call(t, ns, c.chA0, req).Body); got != want {
				t.Errorf("topics of %s = %s, want %s", cl, got, want)
			}
		}
	})

	t.Run("delete topic", func(t *testing.T) {
		if resp := call(t, ns, c.chA0, BuildDeleteTopic("T2")); resp.Code != remoting.Success {
			t.Fatalf("delete: %d %s", resp.Code, resp.Remark)
		}
		routeBody(t, ns, "T2", remoting.TopicNotExist)
		routeBody(t, ns, "T1", remoting.Success)
	})
}

func TestRegistrationUpdates(t *testing.T) {
	c := startCluster(t)
	ns := c.ns

	// Same data version: only liveness is refreshed, topics are not re-read.
	same := brokerB0
	same.topics = []TopicConfig{topic("T1", 16, 6), topic("T3", 1, 6)}
	register(t, ns, c.chB0, same)
	routeBody(t, ns, "T3", remoting.TopicNotExist)
	if got := routeBody(t, ns, "T1", remoting.Success); got != routeT1Both {
		t.Errorf("route changed without a new data version:\n%s", got)
	}

	// New data version: topics updated and added; topics not reported are kept (RocketMQ 4.x).
	newer := same
	newer.version = v2
	register(t, ns, c.chB0, newer)
	r, ok := ns.TopicRoute("T1")
	if !ok || r.QueueDatas[1].ReadQueueNums != 16 {
		t.Errorf("T1 not updated: %+v", r)
	}
	routeBody(t, ns, "T3", remoting.Success)
	routeBody(t, ns, "T2", remoting.Success)

	// A slave's topics never touch the queue table.
	slave := brokerA1
	slave.version = v2
	slave.topics = []TopicConfig{topic("SLAVE_ONLY", 1, 6)}
	register(t, ns, c.chA1, slave)
	routeBody(t, ns, "SLAVE_ONLY", remoting.TopicNotExist)

	// A slave promoted to master at the same address loses its old id.
	promoted := brokerA1
	promoted.id = 0
	promoted.version = v2
	register(t, ns, c.chA1, promoted)
	ci := ns.ClusterInfo()
	if diff := cmp.Diff(map[int64]string{0: "10.0.0.2:10911"}, ci.BrokerAddrTable["broker-a"].BrokerAddrs); diff != "" {
		t.Errorf("broker-a addrs after promotion (-want +got):\n%s", diff)
	}
}

func TestUnregister(t *testing.T) {
	c := startCluster(t)
	ns := c.ns
	unreg := func(b brokerSpec) {
		t.Helper()
		resp := call(t, ns, c.chA0, BuildUnregisterBroker(b.cluster, b.name, b.addr, b.id))
		if resp.Code != remoting.Success {
			t.Fatalf("unregister: %d %s", resp.Code, resp.Remark)
		}
	}
	unreg(brokerA1)
	r, _ := ns.TopicRoute("T1")
	if diff := cmp.Diff(map[int64]string{0: "10.0.0.1:10911"}, r.BrokerDatas[0].BrokerAddrs); diff != "" {
		t.Errorf("broker-a addrs (-want +got):\n%s", diff)
	}
	// A stale unregister naming an id that now maps elsewhere removes nothing.
	stale := brokerA0
	stale.addr = "10.9.9.9:10911"
	unreg(stale)
	if _, ok := ns.TopicRoute("TBW102"); !ok {
		t.Fatal("stale unregister removed broker-a")
	}
	unreg(brokerA0)
	routeBody(t, ns, "TBW102", remoting.TopicNotExist)
	if got := routeBody(t, ns, "T1", remoting.Success); !strings.Contains(got, "broker-b") || strings.Contains(got, "broker-a") {
		t.Errorf("route T1 after broker-a left: %s", got)
	}
	if got, want := ns.ClusterInfo().ClusterAddrTable, map[string][]string{"c2": {"broker-b"}}; !cmp.Equal(want, got) {
		t.Errorf("clusters = %v, want %v", got, want)
	}
}

func TestChannelDestroyed(t *testing.T) {
	c := startCluster(t)
	ns := c.ns

	// An event for a connection nobody registered on changes nothing.
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnClose, Channel: newFakeChannel("client:9")})
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnClose, Channel: nil})
	// Connect events are ignored.
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnConnect, Channel: c.chB0})
	if got := string(call(t, ns, c.chA0, BuildGetBrokerClusterInfo()).Body); got != clusterInfoAll {
		t.Fatalf("cluster info changed: %s", got)
	}

	// broker-b's connection closes: its name, cluster and T2 go at once.
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnClose, Channel: c.chB0})
	routeBody(t, ns, "T2", remoting.TopicNotExist)
	if got := routeBody(t, ns, "T1", remoting.Success); got != routeT1OnlyA {
		t.Errorf("route T1:\n got %s\nwant %s", got, routeT1OnlyA)
	}

	// broker-a's master fails; the slave keeps the broker name and its queues readable.
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnException, Channel: c.chA0, Err: errors.New("reset")})
	r, ok := ns.TopicRoute("T1")
	if !ok {
		t.Fatal("T1 gone while broker-a's slave is alive")
	}
	if diff := cmp.Diff(map[int64]string{1: "10.0.0.2:10911"}, r.BrokerDatas[0].BrokerAddrs); diff != "" {
		t.Errorf("broker-a addrs (-want +got):\n%s", diff)
	}

	// The slave re-registers on a new connection; an event for its old one removes nothing.
	chA1b := newFakeChannel("10.0.0.2:50010")
	register(t, ns, chA1b, brokerA1)
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnIdle, Channel: c.chA1})
	if _, ok := ns.TopicRoute("T1"); !ok {
		t.Fatal("stale channel event removed the re-registered slave")
	}
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnIdle, Channel: chA1b})
	routeBody(t, ns, "T1", remoting.TopicNotExist)
	if got := string(call(t, ns, c.chA0, BuildGetBrokerClusterInfo()).Body); got != `{"brokerAddrTable":{},"clusterAddrTable":{}}` {
		t.Errorf("cluster info after all left: %s", got)
	}
}

func TestExpiryScan(t *testing.T) {
	c := startCluster(t)
	ns := c.ns

	c.clk.Advance(100 * time.Second)
	register(t, ns, c.chB0, brokerB0) // broker-b heartbeats, broker-a does not
	if n := ns.scanNotActiveBrokers(); n != 0 {
		t.Fatalf("expired %d brokers before the deadline", n)
	}
	c.clk.Advance(21 * time.Second) // broker-a silent 121 s, broker-b 21 s
	if n := ns.scanNotActiveBrokers(); n != 2 {
		t.Fatalf("expired %d brokers, want 2 (broker-a master and slave)", n)
	}
	if !c.chA0.Closed() || !c.chA1.Closed() || c.chB0.Closed() {
		t.Errorf("closed channels: a0 %v a1 %v b0 %v", c.chA0.Closed(), c.chA1.Closed(), c.chB0.Closed())
	}
	routeBody(t, ns, "TBW102", remoting.TopicNotExist)
	want := `{"brokerAddrTable":{"broker-b":{"cluster":"c2","brokerName":"broker-b","brokerAddrs":{"0":"10.0.0.3:10911"}}},` +
		`"clusterAddrTable":{"c2":["broker-b"]}}`
	if got := string(ns.ClusterInfo().Encode()); got != want {
		t.Errorf("cluster info:\n got %s\nwant %s", got, want)
	}
	// QUERY_DATA_VERSION with an unchanged version counts as a heartbeat.
	c.clk.Advance(100 * time.Second)
	req := remoting.NewRequest(remoting.QueryDataVersion, remoting.EncodeHeader(&protocol.QueryDataVersionRequestHeader{
		BrokerName: "broker-b", BrokerAddr: brokerB0.addr, ClusterName: "c2"}), []byte(`{"timestamp":1700000000000,"counter":1}`))
	resp := call(t, ns, c.chB0, req)
	if resp.Code != remoting.Success || resp.Ext("changed") != "false" || string(resp.Body) != `{"timestamp":1700000000000,"counter":1}` {
		t.Errorf("query data version: %d %v %s", resp.Code, resp.ExtFields, resp.Body)
	}
	c.clk.Advance(100 * time.Second)
	if n := ns.scanNotActiveBrokers(); n != 0 {
		t.Fatalf("broker-b expired despite QUERY_DATA_VERSION heartbeat")
	}
	req.Body = []byte(`{"timestamp":1700000000000,"counter":9}`)
	if resp := call(t, ns, c.chB0, req); resp.Ext("changed") != "true" {
		t.Errorf("changed version reported unchanged: %v", resp.ExtFields)
	}
}

// TestRunExpires runs Run's scan on synctest's fake clock with RocketMQ's periods (the
// defaults): a broker silent for exactly BROKER_CHANNEL_EXPIRED_TIME is still routed after the
// scan of that instant, since only a broker silent longer expires; the next scan removes its
// routes and closes its channel.
func TestRunExpires(t *testing.T) {
	const (
		scanInterval = 10 * time.Second  // scanNotActiveBroker period
		brokerExpiry = 120 * time.Second // BROKER_CHANNEL_EXPIRED_TIME
	)
	synctest.Test(t, func(t *testing.T) {
		ns := NewNameServer(Options{Logger: testLogger(t)})
		ch := newFakeChannel("10.0.0.3:50003")
		register(t, ns, ch, brokerB0)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ns.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		})

		time.Sleep(brokerExpiry)
		synctest.Wait() // the scan due at this instant has run
		if _, ok := ns.TopicRoute("T2"); !ok || ch.Closed() {
			t.Fatalf("broker-b silent for exactly %v: routed %v, channel closed %v; want routed, open",
				brokerExpiry, ok, ch.Closed())
		}
		time.Sleep(scanInterval - time.Nanosecond)
		synctest.Wait()
		if _, ok := ns.TopicRoute("T2"); !ok {
			t.Fatal("broker-b expired between two scans")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		// Routes go first (under the table lock), then the channel is closed.
		if _, ok := ns.TopicRoute("T2"); ok || !ch.Closed() {
			t.Fatalf("one scan after the expiry: routed %v, channel closed %v; want gone, closed", ok, ch.Closed())
		}
	})
}

func TestKVConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	ns, _ := newTestNameServer(t, Options{KVConfigPath: path})
	ch := newFakeChannel("admin:1")
	put := func(ns *NameServer, namespace, key, value string) *remoting.Command {
		return call(t, ns, ch, remoting.NewRequest(remoting.PutKVConfig, remoting.EncodeHeader(
			&protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}), nil))
	}
	get := func(ns *NameServer, namespace, key string) *remoting.Command {
		return call(t, ns, ch, remoting.NewRequest(remoting.GetKVConfig, remoting.EncodeHeader(
			&protocol.GetKVConfigRequestHeader{Namespace: namespace, Key: key}), nil))
	}
	list := func(ns *NameServer, namespace string) *remoting.Command {
		return call(t, ns, ch, remoting.NewRequest(remoting.GetKVListByNamespace, remoting.EncodeHeader(
			&protocol.GetKVListByNamespaceRequestHeader{Namespace: namespace}), nil))
	}

	if resp := get(ns, "ns", "k"); resp.Code != remoting.QueryNotFound || resp.Remark != "No config item, Namespace: ns Key: k" {
		t.Errorf("get missing: %d %q", resp.Code, resp.Remark)
	}
	if resp := list(ns, "ns"); resp.Code != remoting.QueryNotFound {
		t.Errorf("list missing: %d", resp.Code)
	}
	for _, kv := range [][3]string{{"ns", "k", "v"}, {"ns", "k2", "v2"}, {"other", "x", "y"}} {
		if resp := put(ns, kv[0], kv[1], kv[2]); resp.Code != remoting.Success {
			t.Fatalf("put: %d %s", resp.Code, resp.Remark)
		}
	}
	if resp := get(ns, "ns", "k"); resp.Code != remoting.Success || resp.Ext("value") != "v" {
		t.Errorf("get: %d %v", resp.Code, resp.ExtFields)
	}
	if resp := list(ns, "ns"); string(resp.Body) != `{"table":{"k":"v","k2":"v2"}}` {
		t.Errorf("list: %d %s", resp.Code, resp.Body)
	}
	del := remoting.NewRequest(remoting.DeleteKVConfig, remoting.EncodeHeader(
		&protocol.DeleteKVConfigRequestHeader{Namespace: "ns", Key: "k"}), nil)
	if resp := call(t, ns, ch, del); resp.Code != remoting.Success {
		t.Fatalf("delete: %d", resp.Code)
	}
	if resp := get(ns, "ns", "k"); resp.Code != remoting.QueryNotFound {
		t.Errorf("get after delete: %d", resp.Code)
	}

	// A second name server reads the persisted file.
	ns2, _ := newTestNameServer(t, Options{KVConfigPath: path})
	if err := ns2.LoadKVConfig(); err != nil {
		t.Fatal(err)
	}
	if resp := list(ns2, "ns"); string(resp.Body) != `{"table":{"k2":"v2"}}` {
		t.Errorf("reloaded list: %d %s", resp.Code, resp.Body)
	}
	if resp := get(ns2, "other", "x"); resp.Ext("value") != "y" {
		t.Errorf("reloaded get: %v", resp.ExtFields)
	}
	// A missing file is an empty config; a corrupt one is an error.
	if err := NewNameServer(Options{KVConfigPath: filepath.Join(t.TempDir(), "none.json")}).LoadKVConfig(); err != nil {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := writeFileAtomic(bad, []byte("{")); err != nil {
		t.Fatal(err)
	}
	if err := NewNameServer(Options{KVConfigPath: bad}).LoadKVConfig(); !errors.Is(err, ErrMalformed) {
		t.Errorf("corrupt file: %v", err)
	}

	// ORDER_TOPIC_CONFIG: validated, shown in routes and in registration answers.
	if resp := put(ns, NamespaceOrderTopicConfig, "T1", "broker-a:4;"); resp.Code != remoting.SystemError ||
		!strings.Contains(resp.Remark, "<value>") {
		t.Errorf("malformed order conf accepted: %d %q", resp.Code, resp.Remark)
	}
	put(ns, NamespaceOrderTopicConfig, "T1", "broker-a:4")
	res := register(t, ns, newFakeChannel("10.0.0.1:50001"), brokerA0)
	if diff := cmp.Diff(map[string]string{"T1": "broker-a:4"}, res.KVTable); diff != "" {
		t.Errorf("registration kv table (-want +got):\n%s", diff)
	}
	if got := routeBody(t, ns, "T1", remoting.Success); !strings.HasPrefix(got, `{"orderTopicConf":"broker-a:4","queueDatas":[`) {
		t.Errorf("route with order conf: %s", got)
	}
	// A malformed value that reached the store (e.g. an edited file) is left out of routes.
	ns.kv.put(NamespaceOrderTopicConfig, "T1", "broker-a")
	if got := routeBody(t, ns, "T1", remoting.Success); !strings.HasPrefix(got, `{"orderTopicConf":null,`) {
		t.Errorf("route with malformed order conf: %s", got)
	}
}

func TestCompressedRegistration(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	b := brokerA0
	b.compress = true
	register(t, ns, newFakeChannel("10.0.0.1:50001"), b)
	body := routeBody(t, ns, "TBW102", remoting.Success)
	want := `{"orderTopicConf":null,"queueDatas":[{"brokerName":"broker-a","readQueueNums":8,"writeQueueNums":8,"perm":7,"topicSynFlag":0}],` +
		`"brokerDatas":[{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911"}}],"filterServerTable":{}}`
	if body != want {
		t.Errorf("route:\n got %s\nwant %s", body, want)
	}
}

func TestRegisterTopic(t *testing.T) {
	c := startCluster(t)
	body := (&TopicRouteData{QueueDatas: []QueueData{{BrokerName: "broker-b", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6}}}).Encode()
	req := remoting.NewRequest(remoting.RegisterTopicInNamesrv,
		remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: "NEW"}), body)
	if resp := call(t, c.ns, c.chA0, req); resp.Code != remoting.Success {
		t.Fatalf("register topic: %d %s", resp.Code, resp.Remark)
	}
	r, ok := c.ns.TopicRoute("NEW")
	if !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].ReadQueueNums != 3 {
		t.Errorf("NEW route: %+v", r)
	}
	bad := (&TopicRouteData{QueueDatas: []QueueData{{BrokerName: "broker-z", ReadQueueNums: 1}}}).Encode()
	req = remoting.NewRequest(remoting.RegisterTopicInNamesrv,
		remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: "NEW2"}), bad)
	if resp := call(t, c.ns, c.chA0, req); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "broker-z") {
		t.Errorf("unknown broker accepted: %d %q", resp.Code, resp.Remark)
	}
	routeBody(t, c.ns, "NEW2", remoting.TopicNotExist)
}

func TestBadRequests(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	ch := newFakeChannel("bad:1")
	good := brokerA0.request()
	withExt := func(code int32, ext map[string]string, body []byte) *remoting.Command {
		return remoting.NewRequest(code, ext, body)
	}
	drop := func(key string) map[string]string {
		ext := make(map[string]string)
		for k, v := range good.ExtFields {
			if k != key {
				ext[k] = v
			}
		}
		return ext
	}
	set := func(key, value string) map[string]string {
		ext := drop(key)
		ext[key] = value
		return ext
	}
	cases := []struct {
		name   string
		req    *remoting.Command
		remark string // substring
	}{
		{"route without topic", withExt(remoting.GetRouteInfoByTopic, nil, nil), "<topic>"},
		{"register without brokerAddr", withExt(remoting.RegisterBroker, drop("brokerAddr"), good.Body), "<brokerAddr>"},
		{"register without brokerName", withExt(remoting.RegisterBroker, drop("brokerName"), good.Body), "<brokerName>"},
		{"register without clusterName", withExt(remoting.RegisterBroker, drop("clusterName"), good.Body), "<clusterName>"},
		{"register bad brokerId", withExt(remoting.RegisterBroker, set("brokerId", "one"), good.Body), "<brokerId>"},
		{"register negative brokerId", withExt(remoting.RegisterBroker, set("brokerId", "-1"), good.Body), "<brokerId>"},
		{"register crc mismatch", withExt(remoting.RegisterBroker, good.ExtFields, append([]byte{' '}, good.Body...)), "crc32 not match"},
		{"register malformed json", withExt(remoting.RegisterBroker, set("bodyCrc32", "0"), []byte(`{"topicConfigSerializeWrapper":`)),
			"malformed body: register broker body"},
		{"register body not compressed", withExt(remoting.RegisterBroker, set("compressed", "true"), good.Body),
			"malformed body: compressed register broker body"},
		{"unregister without brokerId", withExt(remoting.UnregisterBroker,
			map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c"}, nil), "<brokerId>"},
		{"delete topic without topic", withExt(remoting.DeleteTopicInNamesrv, map[string]string{}, nil), "<topic>"},
		{"topics by cluster without cluster", withExt(remoting.GetTopicsByCluster, nil, nil), "<cluster>"},
		{"put kv without key", withExt(remoting.PutKVConfig, map[string]string{"namespace": "n", "value": "v"}, nil), "<key>"},
		{"get kv without namespace", withExt(remoting.GetKVConfig, map[string]string{"key": "k"}, nil), "<namespace>"},
		{"delete kv without key", withExt(remoting.DeleteKVConfig, map[string]string{"namespace": "n"}, nil), "<key>"},
		{"kv list without namespace", withExt(remoting.GetKVListByNamespace, nil, nil), "<namespace>"},
		{"register topic malformed body", withExt(remoting.RegisterTopicInNamesrv, map[string]string{"topic": "T"}, []byte("[")),
			"malformed body: topic route data"},
		{"query data version malformed body", withExt(remoting.QueryDataVersion,
			map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "brokerId": "0"}, []byte("x")),
			"malformed body: data version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := call(t, ns, ch, c.req)
			if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.remark) {
				t.Errorf("got code %d remark %q, want SYSTEM_ERROR with %q", resp.Code, resp.Remark, c.remark)
			}
		})
	}
	if got := ns.table.liveBrokers(); len(got) != 0 {
		t.Errorf("bad requests registered brokers: %v", got)
	}
}

// TestThroughDispatcher runs requests and connection events through a real remoting.Dispatcher,
// in a synctest bubble: the dispatcher is all goroutines and channels, so synctest.Wait tells
// when a fired event has been handled, with no polling.
func TestThroughDispatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ns, _ := newTestNameServer(t, Options{})
		d := remoting.NewDispatcher(testLogger(t))
		ns.Register(d, remoting.NewExecutor("namesrv", 2, 64))
		d.Start()
		t.Cleanup(d.Close)

		ch := newFakeChannel("10.0.0.3:50003")
		req := brokerB0.request()
		d.Dispatch(ch, req)
		if resp := ch.response(t, req.Opaque); resp.Code != remoting.Success || !resp.IsResponse() {
			t.Fatalf("register: %d %s", resp.Code, resp.Remark)
		}
		req = BuildGetRouteInfo("T2")
		d.Dispatch(ch, req)
		if resp := ch.response(t, req.Opaque); string(resp.Body) != routeT2 {
			t.Fatalf("route: %d %s", resp.Code, resp.Body)
		}
		req = remoting.NewRequest(remoting.GetRouteInfoByTopic, nil, nil)
		d.Dispatch(ch, req)
		if resp := ch.response(t, req.Opaque); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "<topic>") {
			t.Fatalf("missing topic: %d %q", resp.Code, resp.Remark)
		}
		d.FireEvent(remoting.ConnEvent{Type: remoting.ConnClose, Channel: ch})
		synctest.Wait() // the event goroutine has run the listeners and is idle again
		if _, ok := ns.TopicRoute("T2"); ok {
			t.Fatal("routes of the closed broker still there once the close event was handled")
		}
	})
}

// TestSharedChannel: brokers of one process may register over one shared connection (an
// in-process transport). Its close removes them all; the expiry of one does not close the
// connection the other still uses.
func TestSharedChannel(t *testing.T) {
	ns, clk := newTestNameServer(t, Options{})
	shared := newFakeChannel("10.0.0.9:50000")
	register(t, ns, shared, brokerA0)
	register(t, ns, shared, brokerB0)

	clk.Advance(100 * time.Second)
	register(t, ns, shared, brokerB0)
	clk.Advance(30 * time.Second)
	if n := ns.scanNotActiveBrokers(); n != 1 {
		t.Fatalf("expired %d brokers, want 1", n)
	}
	if shared.Closed() {
		t.Fatal("expiring broker-a closed the connection broker-b still uses")
	}
	register(t, ns, shared, brokerA0)
	ns.OnConnEvent(remoting.ConnEvent{Type: remoting.ConnClose, Channel: shared})
	if got := ns.table.liveBrokers(); len(got) != 0 {
		t.Errorf("brokers left after their shared connection closed: %v", got)
	}
	if got := ns.Topics(); len(got) != 0 {
		t.Errorf("topics left: %v", got)
	}
}
