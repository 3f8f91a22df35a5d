package mq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/controller"
	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The cluster suite (issue 25): attacks on the traffic between the processes of one
// deployment — a broker's registration with the name service, the controller's codes, a
// master's epochs — against a name service that runs a controller and a broker in controller
// mode of it, in-process and as two mqnode processes. The broker reaches its controller (and
// name service) through a recording proxy, so its traffic crosses TCP in both modes and the
// suite holds frames it really sent, to replay. Every row checks that the broker stays its
// group's master at the same epoch, that its CommitLog is not cut, that the routes still name
// it, and that an honest producer and consumer keep working.

const (
	hsClusterSecret = "hostile-suite-cluster-secret"
	hsWrongSecret   = "not-the-deployment-cluster-secret"
	hsBrokerName    = "broker-a" // the broker's default name
	hsClusterName   = "DefaultCluster"
	hsFakeBrokerID  = 9
	hsAdminAK       = "hostile-admin"
	hsAdminSK       = "hostile-admin-secret"
	hsPubOnlyAK     = "hostile-pub-only"
	hsPubOnlySK     = "hostile-pub-secret"
)

// hsACL has an admin account, for the broker, and an account that may only publish, for the
// attacker.
const hsACL = `accounts:
  - accessKey: ` + hsAdminAK + `
    secretKey: ` + hsAdminSK + `
    admin: true
  - accessKey: ` + hsPubOnlyAK + `
    secretKey: ` + hsPubOnlySK + `
    defaultTopicPerm: PUB
    defaultGroupPerm: DENY
`

// hsClusterConfig is what a node of the cluster suite adds to hsNodeConfig.
type hsClusterConfig struct {
	secret    string // ClusterSecret / $MQ_CLUSTER_SECRET
	aclFile   string // ACLFile / -acl
	accessKey string // Credentials (with secretKey) / -access-key and $MQ_SECRET_KEY
	secretKey string
	// raft: run the name service and controller n0 with its Raft here, and no broker.
	raft string
	// controller: run a broker in controller mode of the controller at this address, which is
	// also its name server, and no name service.
	controller string
}

// Test periods of controller mode, each well below RocketMQ's.
const (
	hsCtlScan         = 50 * time.Millisecond
	hsCtlHBTimeout    = 2 * time.Second
	hsBrokerHeartbeat = 100 * time.Millisecond
	hsSyncMetadata    = 200 * time.Millisecond
)

func (c hsClusterConfig) options(o *mq.Options) {
	// Only what is set: the rows of other suites give ACL through hsNodeConfig.
	if c.secret != "" {
		o.Security.ClusterSecret = c.secret
	}
	if c.aclFile != "" {
		o.Security.ACLFile = aclfile.Watch(c.aclFile)
	}
	if c.accessKey != "" {
		o.Security.Credentials = mq.Credentials{AccessKey: c.accessKey, SecretKey: c.secretKey}
	}
	if c.raft != "" {
		o.DisableBroker = true
		o.Controller.ID, o.Controller.Peers, o.Controller.RaftListen = "n0", map[string]string{"n0": c.raft}, c.raft
		o.Controller.Impl = controller.Raft()
		o.Controller.ScanInterval, o.Controller.BrokerHeartbeatTimeout = hsCtlScan, hsCtlHBTimeout
		o.Controller.RaftTimeout = 100 * time.Millisecond
	}
	if c.controller != "" {
		o.DisableNameServer = true
		o.NameServers, o.ControllerMode.Addrs = []string{c.controller}, []string{c.controller}
		o.ControllerMode.HeartbeatInterval, o.ControllerMode.SyncBrokerMetadataPeriod = hsBrokerHeartbeat, hsSyncMetadata
		o.ControllerMode.CheckSyncStateSetPeriod = hsSyncMetadata
	}
}

func (c hsClusterConfig) args() []string {
	var args []string
	if c.aclFile != "" {
		args = append(args, "-acl", c.aclFile)
	}
	if c.accessKey != "" {
		args = append(args, "-access-key", c.accessKey)
	}
	if c.raft != "" {
		args = append(args, "-no-broker", "-controller-id", "n0", "-controller-listen", c.raft,
			"-controller-peers", "n0="+c.raft, "-controller-scan-interval", hsCtlScan.String(),
			"-controller-heartbeat-timeout", hsCtlHBTimeout.String())
	}
	if c.controller != "" {
		args = append(args, "-no-namesrv", "-namesrv", c.controller, "-controller", c.controller,
			"-broker-heartbeat-interval", hsBrokerHeartbeat.String(), "-sync-broker-metadata-period", hsSyncMetadata.String(),
			"-check-sync-state-set-period", hsSyncMetadata.String())
	}
	return args
}

// env passes the secrets through the child's environment, as operators should (ps shows
// flags); set even when empty, so the test process's own environment never leaks in.
func (c hsClusterConfig) env() []string {
	return []string{"MQ_CLUSTER_SECRET=" + c.secret, "MQ_SECRET_KEY=" + c.secretKey}
}

// hsCluster is one deployment of the suite: the controller node, the broker behind the proxy,
// the honest clients, and a client that proves itself as the deployment's operator would.
type hsCluster struct {
	env    *hsEnv
	ctl    *hsNode
	broker *hsNode
	proxy  *hsProxy
	honest *hsHonest
	// operator asks the controller and the broker what they hold, as an operator with the
	// secret (or, with ACL alone, an admin account) may.
	operator *remoting.Client
	// refusal is a part of the remark every refused attack must carry.
	refusal string
	// epochGuarded: the broker refuses GET_BROKER_EPOCH_CACHE too (it has the secret; the
	// suite gives ACL to the controller node only).
	epochGuarded bool
	// master is the group's state before the attacks.
	master hsGroupState
}

// hsGroupState is the controller's view of the group and where the master's CommitLog ends.
type hsGroupState struct {
	id     int64
	addr   string
	epoch  int32
	set    []int64
	logEnd int64
}

func TestHostileCluster(t *testing.T) {
	for _, mode := range []string{"inproc", "binary"} {
		t.Run(mode, func(t *testing.T) {
			e := &hsEnv{mode: mode}
			if mode == "binary" {
				e.bin = filepath.Join(t.TempDir(), "mqnode")
				if out, err := exec.Command("go", "build", "-o", e.bin, "./examples/mqnode").CombinedOutput(); err != nil {
					t.Fatalf("build mqnode: %v\n%s", err, out)
				}
			}
			t.Run("secret", func(t *testing.T) {
				c := hsStartCluster(t, e, hsClusterConfig{secret: hsClusterSecret}, "cluster secret could not be verified")
				c.row(t, "1a-takeover-unproven", func(t *testing.T) { c.takeover(t, nil) })
				c.row(t, "1b-takeover-wrong-secret", func(t *testing.T) {
					c.takeover(t, []remoting.RPCHook{clusterauth.NewProver(hsWrongSecret).Hook()})
				})
				c.row(t, "8a-routes-unproven", func(t *testing.T) { c.routes(t, nil) })
				c.row(t, "8b-routes-wrong-secret", func(t *testing.T) {
					c.routes(t, []remoting.RPCHook{clusterauth.NewProver(hsWrongSecret).Hook()})
				})
				c.row(t, "9-replayed-frames", c.replays)
				c.row(t, "10-replication-without-secret", c.replication)
			})
			t.Run("secret+acl", func(t *testing.T) {
				acl := hsWriteACL(t)
				c := hsStartCluster(t, e, hsClusterConfig{secret: hsClusterSecret, aclFile: acl,
					accessKey: hsAdminAK, secretKey: hsAdminSK}, "cluster secret could not be verified")
				c.row(t, "1c-takeover-pub-only-account", func(t *testing.T) {
					c.takeover(t, []remoting.RPCHook{remoting.SigningHook(remoting.Credentials{AccessKey: hsPubOnlyAK, SecretKey: hsPubOnlySK})})
				})
				c.row(t, "8c-routes-pub-only-account", func(t *testing.T) {
					c.routes(t, []remoting.RPCHook{remoting.SigningHook(remoting.Credentials{AccessKey: hsPubOnlyAK, SecretKey: hsPubOnlySK})})
				})
			})
			// ACL alone: the controller's codes are admin-only, as registration is.
			t.Run("acl", func(t *testing.T) {
				acl := hsWriteACL(t)
				c := hsStartCluster(t, e, hsClusterConfig{aclFile: acl, accessKey: hsAdminAK, secretKey: hsAdminSK}, "needs admin")
				c.row(t, "1d-takeover-pub-only-account-no-secret", func(t *testing.T) {
					c.takeover(t, []remoting.RPCHook{remoting.SigningHook(remoting.Credentials{AccessKey: hsPubOnlyAK, SecretKey: hsPubOnlySK})})
				})
			})
			// Without a secret or ACL the deployment speaks RocketMQ's protocol, which trusts
			// whoever reaches the ports.
			t.Run("rocketmq-compatible", func(t *testing.T) {
				c := hsStartCluster(t, e, hsClusterConfig{}, "")
				c.row(t, "anonymous-registration-accepted", c.compatible)
			})
		})
	}
}

func hsWriteACL(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(hsACL), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hsStartCluster starts the controller node and the broker behind a proxy, waits until the
// broker is master and its routes are known, and starts the honest clients.
func hsStartCluster(t *testing.T, e *hsEnv, cfg hsClusterConfig, refusal string) *hsCluster {
	t.Helper()
	c := &hsCluster{env: e, refusal: refusal, epochGuarded: cfg.secret != ""}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raft := ln.Addr().String()
	ln.Close()
	ctlCfg := cfg
	ctlCfg.raft, ctlCfg.accessKey, ctlCfg.secretKey = raft, "", ""
	c.ctl = e.start(t, hsNodeConfig{cluster: ctlCfg})
	c.proxy = hsStartProxy(t, c.ctl.addr)
	brokerCfg := cfg
	brokerCfg.aclFile, brokerCfg.controller = "", c.proxy.addr
	c.broker = e.start(t, hsNodeConfig{cluster: brokerCfg})

	var hooks []remoting.RPCHook
	if cfg.secret != "" {
		hooks = append(hooks, clusterauth.NewProver(cfg.secret).Hook())
	}
	if cfg.aclFile != "" {
		hooks = append(hooks, remoting.SigningHook(remoting.Credentials{AccessKey: hsAdminAK, SecretKey: hsAdminSK}))
	}
	c.operator = remoting.NewClient(remoting.ClientOptions{Hooks: hooks})
	t.Cleanup(func() { c.operator.Close() })

	c.honest = hsStartHonest(t, c.ctl.addr)
	c.honest.roundTrip(t, "warm-up")
	c.master = c.group(t)
	if c.master.addr != c.broker.addr {
		t.Fatalf("the group's master is %d at %s, not the broker at %s", c.master.id, c.master.addr, c.broker.addr)
	}
	c.ctl.snapshotStore(t)
	c.broker.snapshotStore(t)
	return c
}

// row runs one attack with the checks every row of the suite shares.
func (c *hsCluster) row(t *testing.T, name string, attack func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		attack(t)
		c.honest.roundTrip(t, name+" (after)")
		for _, n := range []*hsNode{c.ctl, c.broker} {
			n.checkAlive(t)
			n.checkStore(t)
		}
		now := c.group(t)
		if now.id != c.master.id || now.addr != c.master.addr || now.epoch != c.master.epoch {
			t.Errorf("the group's master is %d at %s, epoch %d; was %d at %s, epoch %d",
				now.id, now.addr, now.epoch, c.master.id, c.master.addr, c.master.epoch)
		}
		if slices.Contains(now.set, hsFakeBrokerID) {
			t.Errorf("the fake broker %d is in the SyncStateSet %v", hsFakeBrokerID, now.set)
		}
		if now.logEnd < c.master.logEnd {
			t.Errorf("the master's CommitLog was cut from %d to %d", c.master.logEnd, now.logEnd)
		}
		c.master.logEnd = now.logEnd
		c.checkRoute(t)
	})
}

// group asks the controller, as the operator, for the group's master, and the broker where
// its CommitLog ends.
func (c *hsCluster) group(t *testing.T) hsGroupState {
	t.Helper()
	var st hsGroupState
	resp := hsInvoke(t, c.operator, c.ctl.addr, remoting.NewRequest(remoting.ControllerGetReplicaInfo,
		remoting.EncodeHeader(&protocol.GetReplicaInfoRequestHeader{BrokerName: hsBrokerName}), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("replica info: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	var h protocol.GetReplicaInfoResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	st.id, st.addr, st.epoch, st.set = h.MasterBrokerID, h.MasterAddress, h.MasterEpoch, set.SyncStateSet
	rt := hsInvoke(t, c.operator, c.broker.addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	var info struct {
		Table map[string]string `json:"table"`
	}
	if rt.Code != remoting.Success || json.Unmarshal(rt.Body, &info) != nil {
		t.Fatalf("broker runtime info: %s %q", remoting.ResponseCodeName(rt.Code), rt.Remark)
	}
	if st.logEnd, err = strconv.ParseInt(info.Table["commitLogMaxOffset"], 10, 64); err != nil {
		t.Fatalf("commitLogMaxOffset %q: %v", info.Table["commitLogMaxOffset"], err)
	}
	return st
}

// checkRoute: the honest topic's route names the broker, and only it.
func (c *hsCluster) checkRoute(t *testing.T) {
	t.Helper()
	cl := hsClient(t)
	resp := hsInvoke(t, cl, c.ctl.addr, route.BuildGetRouteInfo(hsHonestTopic))
	if resp.Code != remoting.Success {
		t.Errorf("route of %s: %s %q", hsHonestTopic, remoting.ResponseCodeName(resp.Code), resp.Remark)
		return
	}
	r, err := route.DecodeTopicRouteData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerName != hsBrokerName || r.BrokerDatas[0].MasterAddr() != c.broker.addr {
		t.Errorf("route of %s names %+v, want %s at %s only", hsHonestTopic, r.BrokerDatas, hsBrokerName, c.broker.addr)
	}
}

// refused fails unless resp is NO_PERMISSION with the scenario's remark.
func (c *hsCluster) refused(t *testing.T, what string, resp *remoting.Command) {
	t.Helper()
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, c.refusal) {
		t.Errorf("%s: %s %q, want NO_PERMISSION saying %q", what, remoting.ResponseCodeName(resp.Code), resp.Remark, c.refusal)
	}
}

// takeover is attack 1: a fake broker of the group asks for an id, registers, heartbeats every
// 300 ms with a log far ahead of the master's, proposes itself into the SyncStateSet, has
// itself elected, and has the live group's data cleaned, on its own connection with hooks.
// Every request is refused.
func (c *hsCluster) takeover(t *testing.T, hooks []remoting.RPCHook) {
	cl := remoting.NewClient(remoting.ClientOptions{Hooks: hooks})
	defer cl.Close()
	fakeAddr := "127.0.0.1:1"
	heartbeat := func() *remoting.Command {
		return remoting.NewRequest(remoting.BrokerHeartbeat, remoting.EncodeHeader(&protocol.BrokerHeartbeatRequestHeader{
			ClusterName: hsClusterName, BrokerAddr: fakeAddr, BrokerName: hsBrokerName, BrokerID: hsFakeBrokerID,
			Epoch: c.master.epoch + 100, MaxOffset: 1 << 60, ConfirmOffset: 1 << 60, HeartbeatTimeoutMills: -1,
			ElectionPriority: 0}), nil)
	}
	// The one-way heartbeats go on for the whole row, as an attacker's would.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
			_ = cl.InvokeOneway(ctx, c.ctl.addr, heartbeat())
			cancel()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	for _, step := range []struct {
		what string
		req  *remoting.Command
	}{
		{"GET_NEXT_BROKER_ID", remoting.NewRequest(remoting.ControllerGetNextBrokerID, remoting.EncodeHeader(
			&protocol.GetNextBrokerIdRequestHeader{ClusterName: hsClusterName, BrokerName: hsBrokerName}), nil)},
		{"APPLY_BROKER_ID", remoting.NewRequest(remoting.ControllerApplyBrokerID, remoting.EncodeHeader(
			&protocol.ApplyBrokerIdRequestHeader{ClusterName: hsClusterName, BrokerName: hsBrokerName,
				AppliedBrokerID: hsFakeBrokerID, RegisterCheckCode: fakeAddr + ";1"}), nil)},
		{"REGISTER_BROKER_TO_CONTROLLER", remoting.NewRequest(remoting.ControllerRegisterBroker, remoting.EncodeHeader(
			&protocol.RegisterBrokerToControllerRequestHeader{ClusterName: hsClusterName, BrokerName: hsBrokerName,
				BrokerID: hsFakeBrokerID, BrokerAddress: fakeAddr, InvokeTime: time.Now().UnixMilli()}), nil)},
		// The heartbeat again, answered this time, to see its refusal.
		{"BROKER_HEARTBEAT", heartbeat()},
		{"ALTER_SYNC_STATE_SET", remoting.NewRequest(remoting.ControllerAlterSyncStateSet, remoting.EncodeHeader(
			&protocol.AlterSyncStateSetRequestHeader{BrokerName: hsBrokerName, MasterBrokerID: c.master.id,
				MasterEpoch: c.master.epoch, InvokeTime: time.Now().UnixMilli()}),
			(&protocol.SyncStateSet{SyncStateSet: []int64{c.master.id, hsFakeBrokerID}, SyncStateSetEpoch: 1}).Encode())},
		{"ELECT_MASTER", remoting.NewRequest(remoting.ControllerElectMaster, remoting.EncodeHeader(
			&protocol.ElectMasterRequestHeader{ClusterName: hsClusterName, BrokerName: hsBrokerName,
				BrokerID: hsFakeBrokerID, DesignateElect: true, InvokeTime: time.Now().UnixMilli()}), nil)},
		{"CLEAN_BROKER_DATA", remoting.NewRequest(remoting.CleanBrokerData, remoting.EncodeHeader(
			&protocol.CleanControllerBrokerDataRequestHeader{ClusterName: hsClusterName, BrokerName: hsBrokerName,
				IsCleanLivingBroker: true}), nil)},
		// What the real master would do next on the fake's word: ask the fake for its epochs.
		// The attacker asks the real broker for its own, to learn where to cut it.
		{"GET_BROKER_EPOCH_CACHE", remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)},
	} {
		addr := c.ctl.addr
		if step.req.Code == remoting.GetBrokerEpochCache {
			if !c.epochGuarded {
				continue
			}
			addr = c.broker.addr
		}
		c.refused(t, step.what, hsInvoke(t, cl, addr, step.req))
		c.honest.roundTrip(t, step.what+" (during)")
	}
	// Long enough for several of the broker's heartbeats and metadata syncs, and for the
	// controller's scan, while the fake keeps heartbeating.
	time.Sleep(5 * hsSyncMetadata)
}

// routes is attack 8: an anonymous broker registration pointing the honest topic at another
// address, the real broker's unregistration and the topic's deletion from the name service,
// on one connection kept open while the routes are checked (a name service forgets what was
// registered on a connection once it closes).
func (c *hsCluster) routes(t *testing.T, hooks []remoting.RPCHook) {
	cl := remoting.NewClient(remoting.ClientOptions{Hooks: hooks})
	defer cl.Close()
	table := map[string]route.TopicConfig{hsHonestTopic: {TopicName: hsHonestTopic, ReadQueueNums: 8, WriteQueueNums: 8,
		Perm: route.PermReadWrite}}
	for _, reg := range []*route.RegisterBrokerRequest{
		{ClusterName: hsClusterName, BrokerName: "broker-evil", BrokerAddr: "127.0.0.1:1", HAServerAddr: "127.0.0.1:2"},
		{ClusterName: hsClusterName, BrokerName: hsBrokerName, BrokerAddr: "127.0.0.1:1", HAServerAddr: "127.0.0.1:2"},
	} {
		reg.Body = route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{TopicConfigTable: table}}
		c.refused(t, "REGISTER_BROKER as "+reg.BrokerName, hsInvoke(t, cl, c.ctl.addr, route.BuildRegisterBroker(reg)))
		c.checkRoute(t)
	}
	c.refused(t, "UNREGISTER_BROKER", hsInvoke(t, cl, c.ctl.addr,
		route.BuildUnregisterBroker(hsClusterName, hsBrokerName, c.broker.addr, 0)))
	c.checkRoute(t)
	c.refused(t, "DELETE_TOPIC_IN_NAMESRV", hsInvoke(t, cl, c.ctl.addr, route.BuildDeleteTopic(hsHonestTopic)))
	c.checkRoute(t)
	c.honest.roundTrip(t, "routes (during)")
}

// replays: frames the broker really sent, carrying valid proofs, sent again by a stranger:
// its registration byte for byte, its one-way heartbeat made two-way (the flag is not
// proven), and both under another code. Every one is refused.
func (c *hsCluster) replays(t *testing.T) {
	reg := c.proxy.captured(t, remoting.RegisterBroker)
	hb := c.proxy.captured(t, remoting.BrokerHeartbeat)
	conn := hsDial(t, c.ctl.addr, 0)
	defer conn.close()

	resp := conn.rawInvoke(t, reg.raw, reg.cmd.Opaque)
	c.refused(t, "REGISTER_BROKER replayed", resp)
	if !strings.Contains(resp.Remark, clusterauth.ErrReplayed.Error()) {
		t.Errorf("REGISTER_BROKER replayed: remark %q does not say it was replayed", resp.Remark)
	}
	c.checkRoute(t)

	twoWay := *hb.cmd
	twoWay.Flag &^= remoting.FlagOneway
	resp = conn.rawInvoke(t, remoting.AppendFrame(nil, &twoWay), twoWay.Opaque)
	c.refused(t, "BROKER_HEARTBEAT replayed", resp)
	if !strings.Contains(resp.Remark, clusterauth.ErrReplayed.Error()) {
		t.Errorf("BROKER_HEARTBEAT replayed: remark %q does not say it was replayed", resp.Remark)
	}

	for _, code := range []int32{remoting.ControllerElectMaster, remoting.CleanBrokerData, remoting.UnregisterBroker} {
		for _, frame := range []hsFrame{reg, hb} {
			other := *frame.cmd
			other.Code = code
			other.Flag &^= remoting.FlagOneway
			other.Opaque = remoting.NextOpaque()
			resp := conn.rawInvoke(t, remoting.AppendFrame(nil, &other), other.Opaque)
			what := fmt.Sprintf("code %d replayed as %d", frame.cmd.Code, code)
			c.refused(t, what, resp)
			if !strings.Contains(resp.Remark, clusterauth.ErrMismatch.Error()) {
				t.Errorf("%s: remark %q does not say the proof does not match", what, resp.Remark)
			}
		}
	}
	conn.close() // were the registration accepted, closing its connection would drop the routes
	time.Sleep(5 * hsSyncMetadata)
}

// replication: the master's HA port, which takes the cluster secret when no HA secret is
// given, streams nothing to a peer that cannot prove it.
func (c *hsCluster) replication(t *testing.T) {
	if c.broker.haAddr == "" {
		t.Fatal("the master advertised no HA address")
	}
	marker := fmt.Appendf(nil, "commitlog-marker-%d", time.Now().UnixNano())
	if resp := hsInvoke(t, hsClient(t), c.broker.addr, hsSendRequest("HostileClusterHA", 0, marker)); resp.Code != remoting.Success {
		t.Fatalf("send: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	peer, err := net.DialTimeout("tcp", c.broker.haAddr, hsTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	// A slave without the secret, as controller mode's HA protocol has it: its identity
	// ("MQID", broker id 2), then reports that its log ends at 0, 64 bytes in all: as long as
	// the handshake's answer, so a master that checks one drops the peer at once.
	hello := append([]byte("MQID"), 0, 0, 0, 0, 0, 0, 0, 2)
	hello = append(hello, make([]byte, 64-len(hello))...)
	if _, err := peer.Write(hello); err != nil {
		t.Logf("write identity and report: %v", err)
	}
	// Read until the master hangs up, or the marker shows (a master without the secret
	// streams its CommitLog from 0 at once), or a generous while passes.
	_ = peer.SetReadDeadline(time.Now().Add(hsTimeout / 3))
	var got []byte
	buf := make([]byte, 64<<10)
	for len(got) < 4<<20 && !bytes.Contains(got, marker) {
		n, err := peer.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if bytes.Contains(got, marker) {
		t.Errorf("a peer without the cluster secret received CommitLog bytes (%d bytes, the stored message among them)", len(got))
	}
}

// compatible: with neither secret nor ACL, the name service takes a stranger's registration
// and the controller answers a stranger, as RocketMQ's do.
func (c *hsCluster) compatible(t *testing.T) {
	cl := hsClient(t)
	resp := hsInvoke(t, cl, c.ctl.addr, route.BuildRegisterBroker(&route.RegisterBrokerRequest{
		ClusterName: "HostileCompat", BrokerName: "broker-compat", BrokerAddr: "127.0.0.1:1",
		Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{"HostileCompat": {TopicName: "HostileCompat", ReadQueueNums: 1,
				WriteQueueNums: 1, Perm: route.PermReadWrite}}}}}))
	if resp.Code != remoting.Success {
		t.Fatalf("anonymous registration: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if resp := hsInvoke(t, cl, c.ctl.addr, route.BuildGetRouteInfo("HostileCompat")); resp.Code != remoting.Success {
		t.Errorf("route of the anonymous registration: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if resp := hsInvoke(t, cl, c.ctl.addr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil)); resp.Code != remoting.Success {
		t.Errorf("anonymous controller metadata: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if resp := hsInvoke(t, cl, c.broker.addr, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)); resp.Code != remoting.Success {
		t.Errorf("anonymous epoch cache: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}

// rawInvoke writes frame as it is and returns the answer with opaque.
func (c *hsConn) rawInvoke(t *testing.T, frame []byte, opaque int32) *remoting.Command {
	t.Helper()
	if err := c.write(frame); err != nil {
		t.Fatalf("write: %v", err)
	}
	for {
		resp, err := c.read(hsTimeout)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if resp.IsResponse() && resp.Opaque == opaque {
			return resp
		}
	}
}

// hsFrame is one request the proxy saw, as sent and decoded.
type hsFrame struct {
	raw []byte
	cmd *remoting.Command
}

// hsProxy forwards TCP connections to one address and keeps the last request frames of each
// code that clients sent through it.
type hsProxy struct {
	addr   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	frames map[int32]hsFrame
	seen   chan struct{} // closed and replaced when a frame is kept
}

func hsStartProxy(t *testing.T, target string) *hsProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &hsProxy{addr: ln.Addr().String(), target: target, ln: ln, frames: map[int32]hsFrame{}, seen: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *hsProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.forward(in, out)
			out.Close()
		}()
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 {
					if _, werr := in.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			in.Close()
		}()
	}
}

// forward copies the client's bytes to the target unchanged, keeping each whole request frame.
func (p *hsProxy) forward(in, out net.Conn) {
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return
			}
			pending = append(pending, buf[:n]...)
			for {
				frame, used, serr := remoting.SplitFrame(pending, remoting.DefaultMaxFrameBytes)
				if serr != nil || used == 0 {
					break
				}
				raw := bytes.Clone(pending[:used])
				if cmd, derr := remoting.DecodeFrame(bytes.Clone(frame)); derr == nil && !cmd.IsResponse() {
					p.keep(hsFrame{raw: raw, cmd: cmd})
				}
				pending = pending[used:]
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *hsProxy) keep(f hsFrame) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frames[f.cmd.Code] = f
	close(p.seen)
	p.seen = make(chan struct{})
}

// captured returns the last request with code the proxy forwarded, waiting for one.
func (p *hsProxy) captured(t *testing.T, code int32) hsFrame {
	t.Helper()
	timeout := time.After(hsTimeout)
	for {
		p.mu.Lock()
		f, ok := p.frames[code]
		seen := p.seen
		p.mu.Unlock()
		if ok {
			return f
		}
		select {
		case <-seen:
		case <-timeout:
			t.Fatalf("the proxy saw no request with code %d", code)
		}
	}
}

func (p *hsProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
