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
