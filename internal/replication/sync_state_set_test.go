package replication

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/mqgo/mq/storage"
)

// With a required set (allAckInSyncStateSet) the acknowledgement is the lowest best report of
// the members: a member with no connection holds everything back; an empty set acknowledges
// everything; nil goes back to the best slave.
func TestGroupTransferRequiredSet(t *testing.T) {
	var g groupTransfer
	g.connect(1, 2, 100) // broker 2
	g.setRequired([]int64{2, 3})
	if g.acked() != 0 {
		t.Fatalf("acked %d with member 3 not connected, want 0", g.acked())
	}
	w50, err := g.add(50, 1)
	if err != nil || w50 == nil {
		t.Fatalf("add(50) = %v, %v: want a waiter, not ErrNoSlave or a fall-behind refusal", w50, err)
	}
	g.connect(2, 3, 60) // broker 3
	if !released(w50) || g.acked() != 60 {
		t.Fatalf("after member 3 connected at 60: released %v, acked %d", released(w50), g.acked())
	}
	w80, _ := g.add(80, 1)
	g.report(1, 200) // member 2 far ahead: still member 3's 60
	if released(w80) || g.acked() != 60 {
		t.Fatalf("member 2 at 200, member 3 at 60: released %v, acked %d", released(w80), g.acked())
	}
	g.connect(3, 3, 90) // a second connection of broker 3 (reconnecting): its best report counts
	if !released(w80) || g.acked() != 90 {
		t.Fatalf("broker 3's better connection at 90: released %v, acked %d", released(w80), g.acked())
	}
	g.connect(4, 0, 500) // a slave outside the set does not count
	if g.acked() != 90 {
		t.Fatalf("acked %d after a non-member connected at 500, want 90", g.acked())
	}
	g.setRequired([]int64{})
	if g.acked() != math.MaxInt64 {
		t.Fatalf("acked %d with the master alone in the set", g.acked())
	}
	if w, err := g.add(1<<40, 1); w != nil || err != nil {
		t.Fatalf("add with the master alone in the set = %v, %v; want acknowledged at once", w, err)
	}
	g.setRequired(nil)
	if g.acked() != 500 {
		t.Fatalf("acked %d back on the best slave, want 500", g.acked())
	}
}

// A master that requires identities serves slaves that name themselves, refuses one that does
// not, and with a SyncStateSet acknowledges a send only once every member has it.
func TestSyncStateSetOverTheWire(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	mo := testMasterOptions(t)
	mo.RequireIdentity = true
	mo.SyncFlushTimeout = 200 * time.Millisecond
	m, _ := startMaster(t, master.Store, mo)

	anonymous := openStore(t, t.TempDir(), true)
	startSlave(t, anonymous.Store, testSlaveOptions(t, m.Addr()), nil)

	s2 := openStore(t, t.TempDir(), true)
	o2 := testSlaveOptions(t, m.Addr())
	o2.BrokerID = 2
	startSlave(t, s2.Store, o2, nil)
	s3 := openStore(t, t.TempDir(), true)
	o3 := testSlaveOptions(t, m.Addr())
	o3.BrokerID = 3
	_, stop3 := startSlave(t, s3.Store, o3, nil)
	waitFor(t, "the two named slaves", func() bool {
		ids := map[int64]bool{}
		for _, s := range m.Slaves() {
			ids[s.BrokerID] = true
		}
		return len(m.Slaves()) == 2 && ids[2] && ids[3]
	})

	m.SetSyncStateSet([]int64{2, 3})
	end := putN(t, master.Store, 0, 20)
	m.Notify()
	if err := m.WaitForAck(context.Background(), end); err != nil {
		t.Fatalf("both members connected: %v", err)
	}
	stop3()
	waitFor(t, "member 3 gone", func() bool { return len(m.Slaves()) == 1 })
	end = putN(t, master.Store, 20, 5)
	if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("member 3 away: %v, want ErrSlaveTimeout", err)
	}
	m.SetSyncStateSet([]int64{2}) // the master shrank the set
	waitCaughtUp(t, master.Store, s2.Store)
	if err := m.WaitForAck(context.Background(), end); err != nil {
		t.Fatalf("set shrunk to member 2, which has it: %v", err)
	}
	if anonymous.MaxPhyOffset() != 0 {
		t.Fatalf("the slave without a broker id got %d bytes", anonymous.MaxPhyOffset())
	}
}

// A master that requires identities sends its confirm offset with every block and heartbeat,
// and a named slave shows its consumers nothing past it, as the master does: a consumer that
// pulled from the slave could otherwise read a message no new master elected from the set may
// have, and come back to the master ahead of what it shows (internal/sim, seed 76: the master
// then moved the consumer's offset back to 0).
func TestConfirmOffsetReachesNamedSlaves(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	mo := testMasterOptions(t)
	mo.RequireIdentity = true
	m, _ := startMaster(t, master.Store, mo)
	slave := openStore(t, t.TempDir(), true)
	so := testSlaveOptions(t, m.Addr())
	so.BrokerID = 2
	startSlave(t, slave.Store, so, nil)
	waitFor(t, "the named slave", func() bool { return len(m.Slaves()) == 1 })

	putN(t, master.Store, 0, 10)
	half := master.MaxPhyOffset()
	master.SetConfirmOffset(half)
	putN(t, master.Store, 10, 10)
	m.Notify()
	waitFor(t, "the slave's log", func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() })
	waitFor(t, "the slave bound by the master's confirm offset", func() bool { return slave.ConfirmOffset() == half })
	total := func(st *storage.Store) (n int64) {
		for q := range int32(testQueues) {
			n += st.MaxOffsetInQueue("T", q)
		}
		return n
	}
	waitFor(t, "the slave's consumers see the confirmed messages", func() bool { return total(slave.Store) == 10 })
	if got := total(master.Store); got != 10 {
		t.Fatalf("the master shows %d messages, want the 10 confirmed", got)
	}
	master.SetConfirmOffset(math.MaxInt64)
	waitFor(t, "the slave's bound lifted", func() bool { return slave.ConfirmOffset() == math.MaxInt64 })
	waitFor(t, "every message shown", func() bool { return total(slave.Store) == 20 })
}
