package node

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

const (
	testClusterSecret  = "cluster-secret-of-the-test"
	wrongClusterSecret = "not-the-cluster-secret-at-all"
)

// overTCP spells a local node's address so that nodes of this process reach it over TCP, as
// processes of a deployment do: the in-process table knows it as 127.0.0.1:port only.
func overTCP(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("localhost", port)
}

// tcpClient is a TCP client that proves its requests with secret unless it is empty, open
// until the test ends: a name service forgets what a broker registered once the connection it
// registered on closes, so a registration is only seen while its connection lives.
func tcpClient(t *testing.T, secret string) *remoting.Client {
	t.Helper()
	var hooks []remoting.RPCHook
	if secret != "" {
		hooks = append(hooks, clusterauth.NewProver(secret).Hook())
	}
	c := remoting.NewClient(remoting.ClientOptions{Hooks: hooks})
	t.Cleanup(func() { c.Close() })
	return c
}

func tcpInvoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("request %d to %s: %v", req.Code, addr, err)
	}
	return resp
}

func TestClusterSecretTooShort(t *testing.T) {
	o := haOpts(t, "")
	o.Security.ClusterSecret = "short"
	_, err := Start(o)
	if err == nil || !strings.Contains(err.Error(), "ClusterSecret has 5 bytes, want none or at least 16") {
		t.Fatalf("Start with a 5-byte secret: %v", err)
	}
	if strings.Contains(err.Error(), "short") {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

// A broker in controller mode joins its group and registers its routes over TCP with the
// cluster secret; a stranger's controller and registration requests are refused, and a broker
// with another secret never joins.
func TestClusterSecretOverTCP(t *testing.T) {
	co := controllerOpts(t)
	co.Security.ClusterSecret = testClusterSecret
	ctl := startNode(t, co)
	ns := overTCP(t, ctl.NameServerAddr())

	bo := replicatedOpts(t, ctl, t.TempDir())
	bo.NameServers, bo.ControllerMode.Addrs = []string{ns}, []string{ns}
	bo.Security.ClusterSecret = testClusterSecret
	b := startNode(t, bo)
	if !b.Broker().IsMaster() {
		t.Fatal("the group's only broker is not its master")
	}
	eventually(t, "the broker's route registered over TCP", func() bool {
		_, ok := ctl.NameServer().TopicRoute("TBW102")
		return ok
	})

	// A stranger: each request refused with NO_PERMISSION, whether unproven or proven with
	// another secret, and nothing changes.
	g, _ := groupOf(ctl)
	hb := func() *remoting.Command {
		return remoting.NewRequest(remoting.BrokerHeartbeat, remoting.EncodeHeader(&protocol.BrokerHeartbeatRequestHeader{
			ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "10.9.9.9:10911", BrokerID: 9,
			Epoch: 99, MaxOffset: 1 << 50, ConfirmOffset: 1 << 50, HeartbeatTimeoutMills: -1, ElectionPriority: -1}), nil)
	}
	elect := func() *remoting.Command {
		return remoting.NewRequest(remoting.ControllerElectMaster, remoting.EncodeHeader(&protocol.ElectMasterRequestHeader{
			ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 9, DesignateElect: true}), nil)
	}
	register := func() *remoting.Command {
		return route.BuildRegisterBroker(&route.RegisterBrokerRequest{ClusterName: "DefaultCluster",
			BrokerName: "broker-evil", BrokerAddr: "10.9.9.9:10911", BrokerID: 0,
			Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
				TopicConfigTable: map[string]route.TopicConfig{"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}}}}})
	}
	clients := map[string]*remoting.Client{"": tcpClient(t, ""), wrongClusterSecret: tcpClient(t, wrongClusterSecret),
		testClusterSecret: tcpClient(t, testClusterSecret)}
	for _, secret := range []string{"", wrongClusterSecret} {
		for _, req := range []*remoting.Command{hb(), elect(), register(), route.BuildDeleteTopic("TBW102"),
			remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)} {
			addr := ctl.NameServerAddr()
			if req.Code == remoting.GetBrokerEpochCache {
				addr = b.BrokerAddr()
			}
			resp := tcpInvoke(t, clients[secret], addr, req)
			if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "cluster secret could not be verified") {
				t.Errorf("code %d with secret %q: %s %q", req.Code, secret, remoting.ResponseCodeName(resp.Code), resp.Remark)
			}
		}
	}
	if after, _ := groupOf(ctl); after.MasterEpoch != g.MasterEpoch || !b.Broker().IsMaster() {
		t.Fatalf("the group changed: epoch %d -> %d, master %v", g.MasterEpoch, after.MasterEpoch, b.Broker().IsMaster())
	}
	r, ok := ctl.NameServer().TopicRoute("TBW102")
	if !ok || len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerName != "broker-a" {
		t.Fatalf("route of TBW102 after the attacks: %+v", r)
	}
	// The same requests proven with the secret are served (an operator's tools).
	if resp := tcpInvoke(t, clients[testClusterSecret], b.BrokerAddr(), remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)); resp.Code != remoting.Success {
		t.Fatalf("epoch cache with the secret: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if resp := tcpInvoke(t, clients[testClusterSecret], ctl.NameServerAddr(), remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil)); resp.Code != remoting.Success {
		t.Fatalf("controller metadata with the secret: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}

	// A broker with another secret cannot join: its requests are refused, and it says why.
	wo := replicatedOpts(t, ctl, t.TempDir())
	wo.Broker.Name = "broker-b"
	wo.NameServers, wo.ControllerMode.Addrs = []string{ns}, []string{ns}
	wo.Security.ClusterSecret = wrongClusterSecret
	wo.StartTimeout = 2 * time.Second
	if n, err := Start(wo); err == nil {
		n.Close()
		t.Fatal("a broker with another secret joined")
	} else if !strings.Contains(err.Error(), "cluster secret could not be verified") {
		t.Fatalf("a broker with another secret: %v", err)
	}
}

// controllerOpts are controllerNode's options, to be changed before it starts.
func controllerOpts(t *testing.T) Options {
	o := haOpts(t, "")
	o.DisableBroker = true
	raft := freeAddr(t)
	o.Controller.ID, o.Controller.Peers, o.Controller.RaftListen = "n0", map[string]string{"n0": raft}, raft
	o.Controller.Impl = optional.NewController(controller.Factory{})
	o.Controller.ScanInterval = 50 * time.Millisecond
	o.Controller.BrokerHeartbeatTimeout = time.Second
	o.Controller.RaftTimeout = 100 * time.Millisecond
	o.Periods.ScanNotActiveBrokerInterval = 100 * time.Millisecond
	o.Periods.BrokerChannelExpiredTime = time.Second
	return o
}

// Without the secret, a name service takes registrations from anyone, as RocketMQ's does.
func TestNoClusterSecretIsRocketMQ(t *testing.T) {
	n := startNode(t, haOpts(t, ""))
	resp := tcpInvoke(t, tcpClient(t, ""), n.NameServerAddr(), route.BuildRegisterBroker(&route.RegisterBrokerRequest{
		ClusterName: "DefaultCluster", BrokerName: "broker-x", BrokerAddr: "10.9.9.9:10911",
		Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{"Elsewhere": {TopicName: "Elsewhere", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}}}))
	if resp.Code != remoting.Success {
		t.Fatalf("registration without a secret: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if _, ok := n.NameServer().TopicRoute("Elsewhere"); !ok {
		t.Fatal("no route for the registered topic")
	}
}

// A broker in controller mode cuts its store only to follow the master the controller leader
// names: a NOTIFY_BROKER_ROLE_CHANGED naming another master at a later epoch (any peer the
// broker is connected to could send one) changes nothing, and the master it names is never
// asked for its epochs, the step before a cut.
func TestForgedRoleChangeDoesNotCutTheStore(t *testing.T) {
	var asked atomic.Int32
	fake := remoting.NewDispatcher(nil)
	fake.Register(remoting.GetBrokerEpochCache, remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		asked.Add(1)
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = []byte(`{"epochList":[{"epoch":99,"startOffset":0,"endOffset":0}],"maxOffset":0}`)
		return resp, nil
	}), remoting.NewExecutor("fake", 1, 10))
	fake.Start()
	srv := remoting.NewServer(fake, remoting.ServerOptions{Addr: "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		fake.Close()
	})
	<-srv.Ready()

	ctl := controllerNode(t)
	b := startNode(t, replicatedOpts(t, ctl, t.TempDir()))
	for i := range 5 {
		if resp := send(t, b, b.BrokerAddr(), "ForgedT", 0, "m"); resp.Code != remoting.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	end := b.Broker().Store().MaxPhyOffset()
	g, _ := groupOf(ctl)
	forged := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, remoting.EncodeHeader(&protocol.NotifyBrokerRoleChangedRequestHeader{
		MasterAddress: srv.Addr(), MasterEpoch: g.MasterEpoch + 10, SyncStateSetEpoch: 10, MasterBrokerID: 9}), nil)
	forged.Flag |= remoting.FlagOneway
	for range 3 {
		if _, err := b.replicas.OnNotify(context.Background(), nil, forged); err != nil {
			t.Fatal(err)
		}
		// Each notification makes the broker ask the leader; give it several rounds.
		time.Sleep(3 * b.opts.ControllerMode.SyncBrokerMetadataPeriod)
	}
	if !b.Broker().IsMaster() {
		t.Fatal("the broker stopped being master")
	}
	if got := b.Broker().Store().MaxPhyOffset(); got != end {
		t.Fatalf("CommitLog end %d, was %d", got, end)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the forged master was asked for its epochs %d times", n)
	}
	if after, _ := groupOf(ctl); after.MasterEpoch != g.MasterEpoch {
		t.Fatalf("epoch %d, was %d", after.MasterEpoch, g.MasterEpoch)
	}
}

// A master and its slave that share only the cluster secret: the slave registers over TCP
// with the proof, replicates through the HA handshake keyed by the same secret, and copies
// the master's topics.
func TestClusterSecretMasterSlave(t *testing.T) {
	mo := haOpts(t, storage.AsyncMaster)
	mo.Security.ClusterSecret = testClusterSecret
	m := startNode(t, mo)
	s := startSlave(t, m, func(o *Options) {
		o.NameServers = []string{overTCP(t, m.NameServerAddr())}
		o.Security.ClusterSecret = testClusterSecret
	})
	for i := range 10 {
		if resp := send(t, m, m.BrokerAddr(), "SecretHA", 0, fmt.Sprint("m-", i)); resp.Code != remoting.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	mst, sst := m.Broker().Store(), s.Broker().Store()
	eventually(t, "the slave to catch up", func() bool { return sst.MaxPhyOffset() == mst.MaxPhyOffset() })
	equalCommitLogs(t, mst, sst)
	eventually(t, "the slave to copy topic SecretHA", func() bool {
		topics := invoke(t, s, s.BrokerAddr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		return topics.Code == remoting.Success && bytes.Contains(topics.Body, []byte(`"SecretHA"`))
	})
	r, ok := m.NameServer().TopicRoute("SecretHA")
	if !ok || len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs[1] != s.BrokerAddr() {
		t.Fatalf("route of SecretHA does not name the slave: %+v", r)
	}
}

// Replication takes the cluster secret unless HASecret says otherwise.
func TestHASecretDefaultsToClusterSecret(t *testing.T) {
	for _, tc := range []struct{ ha, cluster, want string }{
		{"", "", ""},
		{"", testClusterSecret, testClusterSecret},
		{"ha-secret-of-sixteen", testClusterSecret, "ha-secret-of-sixteen"},
	} {
		o := Options{Options: config.Options{Listen: "127.0.0.1:10911", HA: config.HA{Secret: tc.ha}, Security: config.Security{ClusterSecret: tc.cluster}}}
		ha, err := o.haOptions("127.0.0.1:10911")
		if err != nil {
			t.Fatal(err)
		}
		if ha.Secret != tc.want {
			t.Errorf("HASecret %q, ClusterSecret %q: replication's secret %q, want %q", tc.ha, tc.cluster, ha.Secret, tc.want)
		}
	}
}
