package ha_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/storagehook"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// failEpochWrites makes every write of the epoch file under dir fail with EIO, as a failing
// disk does, until the returned heal is called.
func failEpochWrites(t *testing.T, dir string) (heal func()) {
	var failing atomic.Bool
	failing.Store(true)
	remove := storagehook.Install(dir, &storagehook.Hooks{WriteAt: func(f *os.File, b []byte, off int64) (int, error) {
		if failing.Load() && strings.HasPrefix(filepath.Base(f.Name()), storage.EpochFileName) {
			return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
		}
		return f.WriteAt(b, off)
	}})
	t.Cleanup(remove)
	return func() { failing.Store(false) }
}

// diskNode is the node a Replicas drives here: its RestartBroker starts the broker again on its
// store with the edited options and, when that start fails, is left without a broker, as
// internal/node's is.
type diskNode struct {
	t  *testing.T
	tb *brokertest.Broker
}

func (n *diskNode) Broker() *broker.Broker {
	if n.tb == nil {
		return nil
	}
	return n.tb.Broker
}

func (n *diskNode) RestartBroker(edit func(*broker.Options)) error {
	dir := n.tb.Dir
	if n.Broker() != nil {
		n.tb.Stop(n.t)
	}
	tb, err := brokertest.TryStartIn(n.t, dir, brokertest.Config{Attach: attach, Mutate: edit})
	if err != nil {
		n.tb = &brokertest.Broker{Dir: dir}
		return err
	}
	n.tb = tb
	return nil
}

// A replica whose epoch file cannot take its new master's history does not follow that master:
// the role change fails, and is tried again, rather than leave a slave streaming the master's
// new epoch under its old history. The simulation (seed 315) found a slave that went on after
// the write failed: the bytes of epoch 3 it streamed were epoch 2's in its history; promoted,
// it compared histories with the deposed master of epoch 2, whose own epoch-2 tail past epoch
// 3's start it took for a prefix of its log, so that master followed it without a cut and the
// two logs parted.
func TestSlaveDoesNotFollowAMasterWhoseEpochsItCouldNotAdopt(t *testing.T) {
	// The master: three messages in epoch 1, then epoch 2 from their end, and three more.
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
	for i := range 3 {
		if resp := syncSend(t, m, fmt.Sprint("e2-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	history, end := m.Store().Epochs(), m.Store().MaxPhyOffset()

	// The replica, a master of epoch 1 before, holds epoch 1 up to where epoch 2 starts.
	sdir := t.TempDir()
	old := controllerMaster(t, sdir, 3, 1)
	for i := range 3 {
		if resp := syncSend(t, old, fmt.Sprint("m-", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	if e := old.Store().MaxPhyOffset(); e != point {
		t.Fatalf("the replica's log ends at %d, the master's epoch 2 starts at %d", e, point)
	}
	heal := failEpochWrites(t, sdir)
	n := &diskNode{t: t, tb: old}
	r := ha.NewReplicas(ha.ReplicasOptions{BrokerID: 3}, m.TCP, old.Addr, n)
	r.SetStoreOptions(brokertest.Options(t, sdir).Store)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := r.ChangeRole(ctx, 2, m.Addr, 2)
	if err == nil {
		t.Fatalf("the role change succeeded though the master's history was not written: the slave's history %v, the master's %v",
			n.Broker().Store().Epochs(), history)
	}
	if !strings.Contains(err.Error(), "epochs not adopted") {
		t.Fatalf("role change failed with %v; want the epochs not adopted", err)
	}
	if n.Broker() != nil {
		t.Fatal("a broker runs after the failed role change")
	}

	// Once the disk takes writes again, the next role change follows the master, its history
	// the master's before a byte of epoch 2 arrives.
	heal()
	if err := r.ChangeRole(ctx, 2, m.Addr, 2); err != nil {
		t.Fatal(err)
	}
	s := n.Broker().Store()
	if n.Broker().Role() != storage.Slave {
		t.Fatalf("restarted as %s", n.Broker().Role())
	}
	if got := s.Epochs(); !slices.Equal(got, history) {
		t.Fatalf("the slave's history %v before it streams, want the master's %v", got, history)
	}
	for off := point; off < end; {
		v, err := m.Store().ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		err = s.AppendRaw(off, v.Data)
		off += int64(len(v.Data))
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if p, ok := storage.ConsistentPoint(s.Epochs(), history, s.MaxPhyOffset(), end); !ok || p != end {
		t.Fatalf("consistent point %d (%v) of the slave's history %v, want the log end %d", p, ok, s.Epochs(), end)
	}
}
