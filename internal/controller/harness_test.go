package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/freeport"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Test periods: Raft's and the heartbeat's in milliseconds, so that elections of both kinds take
// a fraction of a second even under -race on a shared machine.
const (
	testBrokerHeartbeatTimeout = 300 * time.Millisecond
	testHeartbeatEvery         = 30 * time.Millisecond
	waitFor                    = 15 * time.Second // a deadline for polling, never an expectation
)

// testLogger logs warnings to the test. Raft's transport serves each accepted connection on a
// goroutine that Close does not wait for, and it logs when the peer hangs up: those lines are
// dropped once the test ends instead of reaching a finished test.
func testLogger(t *testing.T) *zerolog.Logger {
	w := &endingWriter{w: zerolog.NewTestWriter(t)}
	t.Cleanup(w.end)
	l := zerolog.New(w).Level(zerolog.WarnLevel)
	return &l
}

type endingWriter struct {
	mu    sync.Mutex
	ended bool
	w     zerolog.TestWriter
}

func (e *endingWriter) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return len(p), nil
	}
	return e.w.Write(p)
}

func (e *endingWriter) end() {
	e.mu.Lock()
	e.ended = true
	e.mu.Unlock()
}

// freeAddrs returns n loopback addresses that were free a moment ago: raft.NewTCPTransport binds
// an address it is given, and every peer must know every address before any starts.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	a, err := freeport.Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cluster is n controllers, each serving remoting on an in-process address "ctrl-<id>".
type cluster struct {
	t       *testing.T
	ids     []string
	peers   map[string]string
	dirs    map[string]string
	unclean bool
	tune    []func(*Options) // applied to every controller's options before New

	mu    sync.Mutex
	ctrls map[string]*Controller
	disps map[string]*remoting.Dispatcher
	stops map[string]context.CancelFunc
	runs  map[string]chan struct{}
}

func newCluster(t *testing.T, n int, onDisk, unclean bool, tune ...func(*Options)) *cluster {
	t.Helper()
	addrs := freeAddrs(t, n)
	c := &cluster{t: t, peers: map[string]string{}, dirs: map[string]string{}, unclean: unclean, tune: tune,
		ctrls: map[string]*Controller{}, disps: map[string]*remoting.Dispatcher{},
		stops: map[string]context.CancelFunc{}, runs: map[string]chan struct{}{}}
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		c.ids = append(c.ids, id)
		c.peers[id] = addrs[i]
		if onDisk {
			c.dirs[id] = t.TempDir()
		}
	}
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.kill(id)
		}
	})
	return c
}

func ctrlAddr(id string) string { return "ctrl-" + id }

func (c *cluster) start(id string) {
	c.t.Helper()
	opts := Options{
		ID: id, Peers: c.peers, RaftListen: c.peers[id], Advertise: ctrlAddr(id), Dir: c.dirs[id],
		ScanNotActiveBrokerInterval: 20 * time.Millisecond,
		BrokerHeartbeatTimeout:      testBrokerHeartbeatTimeout,
		ElectUncleanMaster:          c.unclean,
		ApplyTimeout:                2 * time.Second,
		HeartbeatTimeout:            100 * time.Millisecond,
		ElectionTimeout:             100 * time.Millisecond,
		LeaderLeaseTimeout:          50 * time.Millisecond,
		CommitTimeout:               5 * time.Millisecond,
		Logger:                      testLogger(c.t),
	}
	for _, f := range c.tune {
		f(&opts)
	}
	ctl, err := New(opts)
	if err != nil {
		c.t.Fatalf("start %s: %v", id, err)
	}
	d := remoting.NewDispatcher(testLogger(c.t))
	ctl.Register(d)
	d.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ctl.Run(ctx) }()
	c.mu.Lock()
	c.ctrls[id], c.disps[id], c.stops[id], c.runs[id] = ctl, d, cancel, done
	c.mu.Unlock()
}

// kill stops a controller as a crash would look to its peers: Raft and remoting go away.
func (c *cluster) kill(id string) {
	c.mu.Lock()
	ctl, d, stop, done := c.ctrls[id], c.disps[id], c.stops[id], c.runs[id]
	delete(c.ctrls, id)
	delete(c.disps, id)
	c.mu.Unlock()
	if ctl == nil {
		return
	}
	stop()
	<-done
	if err := ctl.Close(); err != nil {
		c.t.Errorf("close %s: %v", id, err)
	}
	d.Close()
}

func (c *cluster) dispatcher(addr string) *remoting.Dispatcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, d := range c.disps {
		if ctrlAddr(id) == addr {
			return d
		}
	}
	return nil
}

func (c *cluster) live() map[string]*Controller {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*Controller, len(c.ctrls))
	for id, ctl := range c.ctrls {
		out[id] = ctl
	}
	return out
}

// leader polls until exactly one live controller is the ready leader.
func (c *cluster) leader() (string, *Controller) {
	c.t.Helper()
	var id string
	var ctl *Controller
	poll(c.t, "a controller leader", func() bool {
		id, ctl = "", nil
		n := 0
		for lid, x := range c.live() {
			if x.IsLeader() {
				id, ctl = lid, x
				n++
			}
		}
		return n == 1
	})
	return id, ctl
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// broker is a fake broker in controller mode: it speaks the controller requests over an
// in-process remoting transport and heartbeats to every controller while alive.
type broker struct {
	t           *testing.T
	c           *cluster
	tr          *remoting.InProcTransport
	cluster     string
	name        string
	addr        string
	id          int64
	epoch       int32
	maxOffset   int64
	mu          sync.Mutex
	notified    []protocol.NotifyBrokerRoleChangedRequestHeader
	stopBeating context.CancelFunc
	beating     chan struct{}
}

func newBroker(t *testing.T, c *cluster, brokerName, addr string) *broker {
	b := &broker{t: t, c: c, cluster: "DefaultCluster", name: brokerName, addr: addr}
	b.tr = remoting.NewInProcTransport(c.dispatcher, nil, 10*time.Millisecond)
	b.tr.RegisterProcessor(remoting.NotifyBrokerRoleChanged, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		var h protocol.NotifyBrokerRoleChangedRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			t.Errorf("notification header: %v", err)
			return nil, nil
		}
		b.mu.Lock()
		b.notified = append(b.notified, h)
		b.mu.Unlock()
		return nil, nil
	}))
	t.Cleanup(func() {
		b.stopHeartbeats()
		b.tr.Close()
	})
	return b
}

// invoke sends a request to a controller: the leader, found as a broker finds it, through
// CONTROLLER_GET_METADATA_INFO on any live controller; CONTROLLER_NOT_LEADER sends it on.
func (b *broker) invoke(code int32, h remoting.Header, body []byte) *remoting.Command {
	b.t.Helper()
	var resp *remoting.Command
	poll(b.t, fmt.Sprintf("answer to %s from the leader", remoting.RequestCodeName(code)), func() bool {
		leader := b.leaderAddr()
		if leader == "" {
			return false
		}
		var ext map[string]string
		if h != nil {
			ext = remoting.EncodeHeader(h)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r, err := b.tr.InvokeSync(ctx, leader, remoting.NewRequest(code, ext, body))
		if err != nil || r.Code == remoting.ControllerNotLeader {
			return false
		}
		resp = r
		return true
	})
	return resp
}

func (b *broker) leaderAddr() string {
	for id := range b.c.live() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := b.tr.InvokeSync(ctx, ctrlAddr(id), remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		cancel()
		if err != nil || r.Code != remoting.Success {
			continue
		}
		var md protocol.GetMetaDataResponseHeader
		if md.Decode(r.ExtFields) == nil && md.ControllerLeaderAddress != "" {
			return md.ControllerLeaderAddress
		}
	}
	return ""
}

func mustSucceed(t *testing.T, what string, r *remoting.Command) {
	t.Helper()
	if r.Code != remoting.Success {
		t.Fatalf("%s: %s %q", what, remoting.ResponseCodeName(r.Code), r.Remark)
	}
}

// register is a RocketMQ 5 broker's start: GET_NEXT_BROKER_ID, APPLY_BROKER_ID,
// REGISTER_BROKER, heartbeats, and ELECT_MASTER when the group has no live master.
func (b *broker) register() protocol.RegisterBrokerToControllerResponseHeader {
	b.t.Helper()
	r := b.invoke(remoting.ControllerGetNextBrokerID, &protocol.GetNextBrokerIdRequestHeader{ClusterName: b.cluster, BrokerName: b.name}, nil)
	mustSucceed(b.t, "get next broker id", r)
	var next protocol.GetNextBrokerIdResponseHeader
	if err := next.Decode(r.ExtFields); err != nil {
		b.t.Fatal(err)
	}
	b.id = next.NextBrokerID
	mustSucceed(b.t, "apply broker id", b.invoke(remoting.ControllerApplyBrokerID, &protocol.ApplyBrokerIdRequestHeader{
		ClusterName: b.cluster, BrokerName: b.name, AppliedBrokerID: b.id, RegisterCheckCode: b.addr + ";1"}, nil))
	r = b.invoke(remoting.ControllerRegisterBroker, &protocol.RegisterBrokerToControllerRequestHeader{
		ClusterName: b.cluster, BrokerName: b.name, BrokerID: b.id, BrokerAddress: b.addr}, nil)
	mustSucceed(b.t, "register broker", r)
	var reg protocol.RegisterBrokerToControllerResponseHeader
	if err := reg.Decode(r.ExtFields); err != nil {
		b.t.Fatal(err)
	}
	b.startHeartbeats()
	if reg.MasterBrokerID == NoMaster {
		r := b.invoke(remoting.ControllerElectMaster, &protocol.ElectMasterRequestHeader{ClusterName: b.cluster, BrokerName: b.name, BrokerID: b.id}, nil)
		if r.Code != remoting.Success && r.Code != remoting.ControllerMasterStillExist {
			b.t.Fatalf("elect master: %s %q", remoting.ResponseCodeName(r.Code), r.Remark)
		}
	}
	return reg
}

// heartbeatOnce sends BROKER_HEARTBEAT to every live controller, as RocketMQ's brokers do.
func (b *broker) heartbeatOnce() {
	b.mu.Lock()
	h := protocol.BrokerHeartbeatRequestHeader{ClusterName: b.cluster, BrokerAddr: b.addr, BrokerName: b.name, BrokerID: b.id,
		Epoch: b.epoch, MaxOffset: b.maxOffset, ConfirmOffset: b.maxOffset,
		HeartbeatTimeoutMills: testBrokerHeartbeatTimeout.Milliseconds(), ElectionPriority: -1}
	b.mu.Unlock()
	for id := range b.c.live() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = b.tr.InvokeSync(ctx, ctrlAddr(id), remoting.NewRequest(remoting.BrokerHeartbeat, remoting.EncodeHeader(&h), nil))
		cancel()
	}
}

func (b *broker) startHeartbeats() {
	if b.beating != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopBeating, b.beating = cancel, make(chan struct{})
	b.heartbeatOnce()
	go func() {
		defer close(b.beating)
		tick := time.NewTicker(testHeartbeatEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				b.heartbeatOnce()
			}
		}
	}()
}

// stopHeartbeats is the broker's death as the controller sees it.
func (b *broker) stopHeartbeats() {
	if b.beating == nil {
		return
	}
	b.stopBeating()
	<-b.beating
	b.beating = nil
}

func (b *broker) setProgress(epoch int32, maxOffset int64) {
	b.mu.Lock()
	b.epoch, b.maxOffset = epoch, maxOffset
	b.mu.Unlock()
}

func (b *broker) notifications() []protocol.NotifyBrokerRoleChangedRequestHeader {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]protocol.NotifyBrokerRoleChangedRequestHeader(nil), b.notified...)
}

// replicaInfo asks the leader for the group's master and SyncStateSet (1004).
func (b *broker) replicaInfo() (protocol.GetReplicaInfoResponseHeader, protocol.SyncStateSet) {
	b.t.Helper()
	r := b.invoke(remoting.ControllerGetReplicaInfo, &protocol.GetReplicaInfoRequestHeader{BrokerName: b.name}, nil)
	mustSucceed(b.t, "get replica info", r)
	var h protocol.GetReplicaInfoResponseHeader
	if err := h.Decode(r.ExtFields); err != nil {
		b.t.Fatal(err)
	}
	set, err := protocol.DecodeSyncStateSet(r.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return h, set
}

// alter sends CONTROLLER_ALTER_SYNC_STATE_SET as broker b and returns the answer's code.
func (b *broker) alter(masterEpoch int32, set []int64, setEpoch int32) *remoting.Command {
	b.t.Helper()
	return b.invoke(remoting.ControllerAlterSyncStateSet,
		&protocol.AlterSyncStateSetRequestHeader{BrokerName: b.name, MasterBrokerID: b.id, MasterEpoch: masterEpoch},
		(&protocol.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: setEpoch}).Encode())
}
