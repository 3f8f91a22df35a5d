package replication

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestReplicateAcrossSegments(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	slave := openStore(t, t.TempDir(), true)
	putN(t, master.Store, 0, 100) // before the slave exists
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	startSlave(t, slave.Store, testSlaveOptions(t, m.Addr()), nil)
	for i := 100; i < 700; i += 50 {
		putN(t, master.Store, i, 50)
		m.Notify()
	}
	if end := master.MaxPhyOffset(); end < 3*testSegBytes {
		t.Fatalf("log ends at %d: want several segment rolls", end)
	}
	waitCaughtUp(t, master.Store, slave.Store)
	assertLogsEqual(t, master.Store, slave.Store)
	assertQueuesEqual(t, master.Store, slave.Store, 700)
	end := master.MaxPhyOffset()
	waitFor(t, "the ack", func() bool { return m.SlaveAckOffset() == end })
	if s := m.Slaves(); len(s) != 1 || s[0].AckOffset != end {
		t.Fatalf("Slaves() = %+v, want one at %d", s, end)
	}
	if err := m.WaitForAck(context.Background(), end); err != nil {
		t.Fatalf("WaitForAck(%d) after the ack: %v", end, err)
	}
}

func TestSlaveRestartCatchesUp(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	slaveDir := t.TempDir()
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	total := 0
	for round := range 3 {
		slave := openStore(t, slaveDir, true)
		_, stopSlave := startSlave(t, slave.Store, testSlaveOptions(t, m.Addr()), nil)
		putN(t, master.Store, total, 150)
		total += 150
		waitCaughtUp(t, master.Store, slave.Store)
		assertLogsEqual(t, master.Store, slave.Store)
		assertQueuesEqual(t, master.Store, slave.Store, total)
		// Kill the slave (its context), then write more before it comes back.
		stopSlave()
		slave.stop()
		putN(t, master.Store, total, 100+round*20)
		total += 100 + round*20
	}
	slave := openStore(t, slaveDir, true)
	startSlave(t, slave.Store, testSlaveOptions(t, m.Addr()), nil)
	waitCaughtUp(t, master.Store, slave.Store)
	assertLogsEqual(t, master.Store, slave.Store)
	assertQueuesEqual(t, master.Store, slave.Store, total)
}

func TestConnectionCutRepeatedly(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	slave := openStore(t, t.TempDir(), true)
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	startSlave(t, slave.Store, testSlaveOptions(t, m.Addr()), nil)

	const total = 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < total; i += 20 {
			putN(t, master.Store, i, 20)
			m.Notify()
		}
	})
	for range 20 {
		var addr string
		waitFor(t, "a slave connection", func() bool {
			s := m.Slaves()
			if len(s) == 1 {
				addr = s[0].Addr
			}
			return len(s) == 1
		})
		m.closeSlaveConns()
		waitFor(t, "the cut connection to go", func() bool {
			s := m.Slaves()
			return len(s) == 0 || s[0].Addr != addr
		})
	}
	wg.Wait()
	waitCaughtUp(t, master.Store, slave.Store)
	assertLogsEqual(t, master.Store, slave.Store)
	assertQueuesEqual(t, master.Store, slave.Store, total)
}

func TestWaitForAckNoSlave(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	end := putN(t, master.Store, 0, 1)
	if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrNoSlave) {
		t.Fatalf("WaitForAck with no slave: %v, want ErrNoSlave", err)
	}
}

// stalledSlave starts a slave whose receiver blocks before its first block until the returned
// release is called (also at cleanup); its offset reports go on.
func stalledSlave(t *testing.T, m *Master) (slave *testStore, release func()) {
	t.Helper()
	slave = openStore(t, t.TempDir(), true)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	startSlave(t, slave.Store, testSlaveOptions(t, m.Addr()), func() { <-gate })
	t.Cleanup(release) // runs before the slave's stop (cleanups run last first)
	waitFor(t, "the slave to connect", func() bool { return len(m.Slaves()) == 1 })
	return slave, release
}

func TestWaitForAckReleasedByAck(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	slave, release := stalledSlave(t, m)

	const senders = 20
	var released atomic.Bool
	errs := make(chan error, senders)
	var wg sync.WaitGroup
	var mu sync.Mutex // one append at a time, so ends grow with i
	for i := range senders {
		mu.Lock()
		end := putN(t, master.Store, i, 1)
		mu.Unlock()
		wg.Go(func() {
			err := m.WaitForAck(context.Background(), end)
			switch {
			case err != nil:
				errs <- err
			case !released.Load():
				errs <- errors.New("released before the slave could read")
			case m.SlaveAckOffset() < end || slave.MaxPhyOffset() < end:
				errs <- errors.New("released before the slave had the offset")
			}
		})
	}
	waitFor(t, "every sender to wait", func() bool { return m.gt.pending() == senders })
	released.Store(true)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWaitForAckTimeout: a slave that receives blocks but acknowledges none leaves a sender
// waiting exactly syncFlushTimeout (the default, on synctest's clock), then ErrSlaveTimeout
// (FLUSH_SLAVE_TIMEOUT) with no waiter left; a cancelled context ends a wait at once.
func TestWaitForAckTimeout(t *testing.T) {
	const syncFlushTimeout = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		master := openBubbleStore(t, false)
		m := newIdleMaster(t, master)
		c := pipePeer(t, m)
		drain(c)
		sendReport(t, c, 0)
		synctest.Wait()
		end := putN(t, master.Store, 0, 1)
		start := time.Now()
		if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrSlaveTimeout) {
			t.Fatalf("WaitForAck with a slave that does not acknowledge: %v, want ErrSlaveTimeout", err)
		}
		if got := time.Since(start); got != syncFlushTimeout {
			t.Fatalf("WaitForAck failed after %v, want syncFlushTimeout %v", got, syncFlushTimeout)
		}
		if n := m.gt.pending(); n != 0 {
			t.Fatalf("%d waiters left after the timeout", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start = time.Now()
		if err := m.WaitForAck(ctx, end); !errors.Is(err, context.Canceled) || time.Since(start) != 0 {
			t.Fatalf("WaitForAck with a cancelled context: %v after %v", err, time.Since(start))
		}
	})
}
