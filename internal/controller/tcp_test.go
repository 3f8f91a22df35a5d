package controller

import (
	"context"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestOverTCP runs a failover with the brokers on real remoting connections: heartbeats and
// requests over TCP, and the role change notification back over the connection the heartbeats
// came on.
func TestOverTCP(t *testing.T) {
	raftAddr := freeAddrs(t, 1)[0]
	d := remoting.NewDispatcher(testLogger(t))
	d.Start()
	srv := remoting.NewServer(d, remoting.ServerOptions{Addr: "127.0.0.1:0", Logger: testLogger(t)})
	srvCtx, stopSrv := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(srvCtx) }()
	<-srv.Ready()
	addr := srv.Addr()
	if addr == "" {
		stopSrv()
		t.Fatalf("server did not start: %v", <-srvDone)
	}
	ctl, err := New(Options{ID: "n0", Peers: map[string]string{"n0": raftAddr}, RaftListen: raftAddr, Advertise: addr,
		ScanNotActiveBrokerInterval: 20 * time.Millisecond, BrokerHeartbeatTimeout: testBrokerHeartbeatTimeout,
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
		LeaderLeaseTimeout: 50 * time.Millisecond, CommitTimeout: 5 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctl.Register(d)
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = ctl.Run(runCtx) }()
	t.Cleanup(func() {
		stopRun()
		<-runDone
		if err := ctl.Close(); err != nil {
			t.Error(err)
		}
		stopSrv()
		if err := <-srvDone; err != nil {
			t.Error(err)
		}
		d.Close()
	})
	poll(t, "leader", ctl.IsLeader)

	notified := make(chan protocol.NotifyBrokerRoleChangedRequestHeader, 4)
	clients := make([]*remoting.Client, 2)
	for i := range clients {
		cl := remoting.NewClient(remoting.ClientOptions{Logger: testLogger(t)})
		t.Cleanup(func() { cl.Close() })
		clients[i] = cl
	}
	clients[1].RegisterProcessor(remoting.NotifyBrokerRoleChanged, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		var h protocol.NotifyBrokerRoleChangedRequestHeader
		if err := h.Decode(req.ExtFields); err == nil {
			notified <- h
		}
		return nil, nil
	}))
	call := func(cl *remoting.Client, code int32, h remoting.Header) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := cl.InvokeSync(ctx, addr, remoting.NewRequest(code, remoting.EncodeHeader(h), nil))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	brokerAddrs := []string{"10.0.0.1:10911", "10.0.0.2:10911"}
	heartbeat := func(i int) {
		r := call(clients[i], remoting.BrokerHeartbeat, &protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerName: "b",
			BrokerAddr: brokerAddrs[i], BrokerID: int64(i + 1), Epoch: 1, MaxOffset: 10, ConfirmOffset: 10,
			HeartbeatTimeoutMills: testBrokerHeartbeatTimeout.Milliseconds(), ElectionPriority: -1})
		mustSucceed(t, "heartbeat", r)
	}
	for i := range clients {
		mustSucceed(t, "apply id", call(clients[i], remoting.ControllerApplyBrokerID, &protocol.ApplyBrokerIdRequestHeader{
			ClusterName: "c", BrokerName: "b", AppliedBrokerID: int64(i + 1), RegisterCheckCode: brokerAddrs[i] + ";1"}))
		heartbeat(i)
	}
	mustSucceed(t, "first election", call(clients[0], remoting.ControllerElectMaster, &protocol.ElectMasterRequestHeader{ClusterName: "c", BrokerName: "b", BrokerID: 1}))
	if _, err := ctl.AlterSyncStateSet("b", 1, 1, protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}

	// Broker 1 stops; broker 2 goes on heartbeating until it hears it is master.
	deadline := time.Now().Add(waitFor)
	for {
		heartbeat(1)
		select {
		case n := <-notified:
			if n.MasterEpoch == 1 {
				continue // the first election's, told to every live broker of the group
			}
			if n.MasterBrokerID != 2 || n.MasterEpoch != 2 || n.MasterAddress != brokerAddrs[1] {
				t.Fatalf("notified %+v, want broker 2 master at epoch 2", n)
			}
			return
		case <-time.After(testHeartbeatEvery):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no role change notification within %v", waitFor)
		}
	}
}
