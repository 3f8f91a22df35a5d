package ha_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/internal/memnet"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// soloController starts one controller (Raft over an in-memory network) whose remoting
// processors serve addr through the returned transport, and waits until it leads.
func soloController(t *testing.T, addr string) (*controller.Controller, remoting.Transport) {
	t.Helper()
	net := memnet.New()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	const raftAddr = "10.9.0.1:9000"
	ctl, err := controller.New(controller.Options{ID: "c0", Peers: map[string]string{"c0": raftAddr},
		RaftListen: raftAddr, Advertise: addr, Listen: net.Listen, Dial: net.DialTimeout,
		// No scan during the test: the election is the broker's to ask for.
		ScanNotActiveBrokerInterval: time.Hour,
		HeartbeatTimeout:            50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond,
		LeaderLeaseTimeout: 25 * time.Millisecond, CommitTimeout: 5 * time.Millisecond, Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	d := remoting.NewDispatcher(&l)
	ctl.Register(d)
	d.Start()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ctl.Run(ctx) }()
	tr := remoting.NewInProcTransport(func(a string) *remoting.Dispatcher {
		if a == addr {
			return d
		}
		return nil
	}, nil, 0)
	t.Cleanup(func() {
		tr.Close()
		cancel()
		<-ran
		if err := ctl.Close(); err != nil {
			t.Errorf("close the controller: %v", err)
		}
		d.Close()
	})
	for deadline := time.Now().Add(15 * time.Second); !ctl.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not become the ready leader")
		}
	}
	return ctl, tr
}

// brokerlessNode is a node whose broker did not come back from a role change (its restart
// failed): no broker runs until the replicas manager restarts it.
type brokerlessNode struct {
	t      *testing.T
	dir    string
	tb     *brokertest.Broker
	edited broker.Options
}

func (n *brokerlessNode) Broker() *broker.Broker {
	if n.tb == nil {
		return nil
	}
	return n.tb.Broker
}

func (n *brokerlessNode) RestartBroker(edit func(*broker.Options)) error {
	n.tb = brokertest.StartIn(n.t, n.dir, brokertest.Config{Attach: attach, Mutate: func(o *broker.Options) {
		edit(o)
		n.edited = *o
	}})
	return nil
}

// A node left without a broker by a failed role change, the only member of its group's
// SyncStateSet, gets the group's master back once the controllers name none: it heartbeats
// before it asks to be elected, since the controllers elect only brokers they hear from and
// its run loop's heartbeats stopped with its broker. It used to ask without one, and every
// election was refused for want of a live member, for good (internal/sim, seed 453: the
// elected master's restart failed on a failing disk; no master until the end of the run).
func TestBrokerlessMemberOfTheSyncStateSetIsElectedAgain(t *testing.T) {
	const ctrlAddr, brokerAddr = "10.9.0.1:9876", "10.0.0.1:10911"
	ctl, tr := soloController(t, ctrlAddr)

	// Broker 1 is the group's first master, its SyncStateSet {1}; then it goes silent and the
	// controllers' own trigger finds nobody to replace it: the group has no master.
	if err := ctl.ApplyBrokerID("c", "b", 1, brokerAddr+";1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.RegisterBroker("c", "b", 1, brokerAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.ElectMaster("c", "b", 1, false); err != nil {
		t.Fatalf("first election: %v", err)
	}
	var ce *controller.Error
	if _, err := ctl.ElectMaster("c", "b", controller.NoMaster, false); !errors.As(err, &ce) || ce.Code != remoting.ControllerMasterNotAvailable {
		t.Fatalf("election with the master silent: %v, want CONTROLLER_MASTER_NOT_AVAILABLE", err)
	}
	before, err := ctl.GetReplicaInfo("b")
	if err != nil || before.MasterID != controller.NoMaster || len(before.SyncStateSet) != 1 || before.SyncStateSet[0] != 1 {
		t.Fatalf("group before: %+v, %v; want no master and SyncStateSet [1]", before, err)
	}

	node := &brokerlessNode{t: t, dir: t.TempDir()}
	r := ha.NewReplicas(ha.ReplicasOptions{ClusterName: "c", BrokerName: "b", BrokerID: 1, StoreDir: node.dir,
		ControllerAddrs: []string{ctrlAddr}}, tr, brokerAddr, node)
	r.SyncReplicaInfo(t.Context())

	after, err := ctl.GetReplicaInfo("b")
	if err != nil || after.MasterID != 1 || after.MasterEpoch <= before.MasterEpoch {
		t.Fatalf("group after the broker's look: %+v, %v; want broker 1 master of an epoch after %d", after, err, before.MasterEpoch)
	}
	if node.tb == nil {
		t.Fatal("the elected broker was not restarted")
	}
	if node.edited.Broker.Role == storage.Slave || node.edited.MasterEpoch != after.MasterEpoch {
		t.Fatalf("restarted as %v of epoch %d; want master of epoch %d", node.edited.Broker.Role, node.edited.MasterEpoch, after.MasterEpoch)
	}
}
