package ha_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// controllerMaster starts, on dir, a controller-mode master: replica id, master of epoch.
func controllerMaster(t *testing.T, dir string, id int64, epoch int32) *brokertest.Broker {
	t.Helper()
	return brokertest.StartIn(t, dir, brokertest.Config{Attach: attach, Mutate: func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.MasterEpoch = true, id, epoch
	}})
}

// demotedNode is the node a Replicas drives here: its RestartBroker stores one more message on
// the running broker first, as a demoted master takes sends until its broker stops, then
// starts the broker again on its store with the edited options.
type demotedNode struct {
	t      *testing.T
	tb     *brokertest.Broker
	edited broker.Options
}

func (n *demotedNode) Broker() *broker.Broker { return n.tb.Broker }

func (n *demotedNode) RestartBroker(edit func(*broker.Options)) error {
	if resp := syncSend(n.t, n.tb, "stored after the histories were compared"); resp.Code != remoting.Success {
		return fmt.Errorf("send before the restart: %d %s", resp.Code, resp.Remark)
	}
	n.tb.Stop(n.t)
	n.tb = brokertest.StartIn(n.t, n.tb.Dir, brokertest.Config{Attach: attach, Mutate: func(o *broker.Options) {
		edit(o)
		n.edited = *o
	}})
	return nil
}

// A master of epoch 1 that the controllers replaced (broker 2 is master of epoch 2, its log
// parting from the old master's where epoch 2 starts) follows it: its store is cut at that
// point, including what it stored after it compared the two histories and before its broker
// stopped. The kill loops (examples/mqnode TestBinaryKillLoop, controller mode) found such a
// message kept: the old master's log no longer a prefix of the new master's, and the new
// master's bytes appended to it mid-record.
func TestDemotedMasterCutsWhatItStoredDuringTheChange(t *testing.T) {
	// The new master: three messages in epoch 1, then epoch 2 from their end.
	mdir := t.TempDir()
	m := controllerMaster(t, mdir, 2, 1)
	for i := range 3 {
		if resp := syncSend(t, m, fmt.Sprint("m-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	m.Stop(t)
	m = controllerMaster(t, mdir, 2, 2)
	point := m.Store().MaxPhyOffset()
	if want := []storage.EpochEntry{{Epoch: 1}, {Epoch: 2, StartOffset: point}}; !slices.Equal(m.Store().Epochs(), want) {
		t.Fatalf("new master's epochs %v, want %v", m.Store().Epochs(), want)
	}

	// The old master holds the same three messages in epoch 1: the histories part at their
	// end, which is also its end when it compares them.
	old := controllerMaster(t, t.TempDir(), 1, 1)
	for i := range 3 {
		if resp := syncSend(t, old, fmt.Sprint("m-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	if end := old.Store().MaxPhyOffset(); end != point {
		t.Fatalf("old master's log ends at %d, the new master's epoch 2 starts at %d", end, point)
	}
	n := &demotedNode{t: t, tb: old}
	r := ha.NewReplicas(ha.ReplicasOptions{BrokerID: 1}, m.TCP, old.Addr, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ChangeRole(ctx, 2, m.Addr, 2); err != nil {
		t.Fatal(err)
	}
	if !n.edited.Store.Truncate || n.edited.Store.TruncateTo != point {
		t.Fatalf("restarted with Truncate %v TruncateTo %d, want a cut at %d", n.edited.Store.Truncate, n.edited.Store.TruncateTo, point)
	}
	if n.tb.Broker.Role() != storage.Slave {
		t.Fatalf("restarted as %s", n.tb.Broker.Role())
	}
	if end := n.tb.Store().MaxPhyOffset(); end != point {
		t.Fatalf("the old master's log ends at %d after the change, want the cut at %d", end, point)
	}
}

// restartNode is the node a Replicas drives here: its RestartBroker starts the broker again on
// its store with the edited options.
type restartNode struct {
	t  *testing.T
	tb *brokertest.Broker
}

func (n *restartNode) Broker() *broker.Broker { return n.tb.Broker }

func (n *restartNode) RestartBroker(edit func(*broker.Options)) error {
	n.tb.Stop(n.t)
	n.tb = brokertest.StartIn(n.t, n.tb.Dir, brokertest.Config{Attach: attach, Mutate: edit})
	return nil
}

// A slave that starts following a master while behind the start of the master's last epoch
// takes that epoch into its history once replication brought its log there. The kill loops
// (examples/mqnode TestBinaryKillLoop, controller mode) found such a slave, promoted later,
// without the epoch: its history credited the epoch's records to the epoch before, and the old
// master, returning, compared histories with it and cut its store at the start of that epoch,
// acknowledged messages included, which it then had to fetch again.
func TestSlaveTakesTheMastersEpochsAsItsLogReachesThem(t *testing.T) {
	mdir := t.TempDir()
	m := controllerMaster(t, mdir, 2, 1)
	for i := range 3 {
		if resp := syncSend(t, m, fmt.Sprint("e1-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	m.Stop(t)
	m = controllerMaster(t, mdir, 2, 2)
	for i := range 3 {
		if resp := syncSend(t, m, fmt.Sprint("e2-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	history, end := m.Store().Epochs(), m.Store().MaxPhyOffset()
	if len(history) != 2 || history[1].StartOffset == 0 || history[1].StartOffset >= end {
		t.Fatalf("master's history %v, log end %d", history, end)
	}

	// The slave starts with an empty log: behind epoch 2's start.
	f := brokertest.Start(t, brokertest.Config{Attach: attach, Mutate: func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.Broker.ID, o.Broker.Role = true, 3, 3, storage.Slave
	}})
	n := &restartNode{t: t, tb: f}
	r := ha.NewReplicas(ha.ReplicasOptions{BrokerID: 3}, m.TCP, f.Addr, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ChangeRole(ctx, 2, m.Addr, 2); err != nil {
		t.Fatal(err)
	}
	if got := n.tb.Store().Epochs(); !slices.Equal(got, history[:1]) {
		t.Fatalf("an empty slave's history %v, want %v", got, history[:1])
	}
	// Replication: the master's log, byte for byte, at the same offsets.
	for off := int64(0); off < end; {
		v, err := m.Store().ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		err = n.tb.Store().AppendRaw(off, v.Data)
		off += int64(len(v.Data))
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	got := n.tb.Store().Epochs()
	if !slices.Equal(got, history) {
		t.Fatalf("the caught-up slave's history %v, want the master's %v", got, history)
	}
	// Compared with the master's, the slave's history parts nowhere before the logs' end.
	if p, ok := storage.ConsistentPoint(got, history, n.tb.Store().MaxPhyOffset(), end); !ok || p != end {
		t.Fatalf("consistent point %d (%v), want the log end %d", p, ok, end)
	}
}

// In controller mode a slave follows the master the controllers named, whatever a name
// server's REGISTER_BROKER answer says: a name server can still list a master the controllers
// replaced (one that returned for a moment in its old epoch), and a slave that streamed from it
// would take records the new master lacks, with no epoch comparison on the HA connection. The
// kill loops (examples/mqnode TestBinaryKillLoop, controller mode) found a slave that had
// followed such an answer holding four records the new master did not.
func TestControllerSlaveFollowsOnlyTheControllersMaster(t *testing.T) {
	_, s := start(t, func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.Broker.ID, o.Broker.Role = true, 3, 3, storage.Slave
		o.ControllerMaster = "127.0.0.1:10911"
	})
	if got := s.MasterAddr(); got != "127.0.0.1:10911" {
		t.Fatalf("master broker address %q before any registration, want the controllers' master", got)
	}
	s.Registered(&route.RegisterBrokerResult{MasterAddr: "127.0.0.1:20911", HAServerAddr: "127.0.0.1:20912"})
	if got, ha := s.MasterAddr(), s.MasterHAAddr(); got != "127.0.0.1:10911" || ha != "" {
		t.Fatalf("after an answer naming another master: master %q, HA %q", got, ha)
	}
	s.Registered(&route.RegisterBrokerResult{MasterAddr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912"})
	if got, ha := s.MasterAddr(), s.MasterHAAddr(); got != "127.0.0.1:10911" || ha != "127.0.0.1:10912" {
		t.Fatalf("after the controllers' master's answer: master %q, HA %q", got, ha)
	}
}

// A controller-mode master with all-ack bounds what consumers see by its SyncStateSet from
// the moment it serves: a message stored before every member has it stays out of the
// ConsumeQueues. The kill loops (examples/mqnode TestBinaryKillLoop, controller mode) found a
// master restarted in its own epoch serving sends before its replicas manager told it the set:
// a send stored then was visible at once, a consumer read and committed past it, and the next
// master, which lacked it, held the group's offset past its queue's end.
func TestControllerMasterBoundsReadsBySyncStateSetFromTheStart(t *testing.T) {
	tb, _ := start(t, func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.MasterEpoch, o.AllAckInSyncStateSet = true, 1, 1, true
		o.Broker.Role = storage.SyncMaster
		o.SyncStateSet = []int64{1, 2} // broker 2 never connects
		o.HA.SyncFlushTimeout = 100 * time.Millisecond
	})
	resp := syncSend(t, tb, "not on broker 2")
	if resp.Code == remoting.Success {
		t.Fatalf("send acknowledged without broker 2: %d %s", resp.Code, resp.Remark)
	}
	if tb.Store().MaxPhyOffset() == 0 {
		t.Fatal("the message was not stored")
	}
	if n := tb.Store().MaxOffsetInQueue("SYNC", 0); n != 0 {
		t.Fatalf("queue SYNC/0 shows %d messages that not every member of the SyncStateSet has", n)
	}
}
