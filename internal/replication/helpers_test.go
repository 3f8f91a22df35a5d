package replication

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

const testSegBytes = 64 << 10

var (
	testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	testBornHost  = netip.MustParseAddrPort("10.1.2.3:40000")
)

func testLogger(t testing.TB) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	return &l
}

func storeOptions(t testing.TB, dir string, slave bool) storage.Options {
	return storage.Options{
		Dir:                       dir,
		SegmentBytes:              testSegBytes,
		ConsumeQueueUnits:         64,
		MaxHashSlotNum:            64,
		MaxIndexNum:               500,
		FlushIntervalCommitLog:    10 * time.Millisecond,
		FlushIntervalConsumeQueue: 20 * time.Millisecond,
		Slave:                     slave,
		Logger:                    testLogger(t),
	}
}

// testStore is an open store with its services running; stop closes it (also at cleanup).
type testStore struct {
	*storage.Store
	stop func()
}

func openStore(t testing.TB, dir string, slave bool) *testStore {
	t.Helper()
	return openStoreWith(t, storeOptions(t, dir, slave))
}

// openBubbleStore is openStore for a test in a synctest bubble: with the default flush
// periods, so the store's services wake rarely while the fake clock runs through seconds.
func openBubbleStore(t testing.TB, slave bool) *testStore {
	t.Helper()
	opts := storeOptions(t, t.TempDir(), slave)
	opts.FlushIntervalCommitLog, opts.FlushIntervalConsumeQueue = 0, 0
	return openStoreWith(t, opts)
}

func openStoreWith(t testing.TB, opts storage.Options) *testStore {
	t.Helper()
	st, err := storage.Open(opts)
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	stopRun := run(t, "store", st.Run)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopRun()
			if err := st.Close(); err != nil {
				t.Errorf("store Close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &testStore{Store: st, stop: stop}
}

// run runs f on a goroutine until the returned stop is called (also at cleanup); stop
// waits for f and reports its error.
func run(t testing.TB, name string, f func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func testMasterOptions(t testing.TB) MasterOptions {
	return MasterOptions{
		ListenAddr:            "127.0.0.1:0",
		TransferBatchBytes:    4 << 10, // several blocks per segment
		HousekeepingInterval:  5 * time.Second,
		SendHeartbeatInterval: 20 * time.Millisecond,
		TransferWaitInterval:  5 * time.Millisecond,
		Logger:                testLogger(t),
	}
}

func testSlaveOptions(t testing.TB, addr string) SlaveOptions {
	return SlaveOptions{
		MasterAddr:            addr,
		HousekeepingInterval:  5 * time.Second,
		SendHeartbeatInterval: 20 * time.Millisecond,
		ReconnectInterval:     5 * time.Millisecond,
		Logger:                testLogger(t),
	}
}

// startMaster runs a master on a free loopback port and waits until it listens.
func startMaster(t testing.TB, st *storage.Store, opts MasterOptions) (*Master, func()) {
	t.Helper()
	m, err := NewMaster(st, opts)
	if err != nil {
		t.Fatalf("NewMaster: %v", err)
	}
	stop := run(t, "master", m.Run)
	select {
	case <-m.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("master not ready")
	}
	return m, stop
}

// pipePeer serves one end of a net.Pipe on m, as Run serves an accepted connection, and
// returns the other end for a hand-written peer. It is for tests in a synctest bubble, where
// a socket cannot be used (socket I/O never blocks durably, so the fake clock would stall);
// m need not be running. The connection is closed and served out at cleanup.
func pipePeer(t *testing.T, m *Master) net.Conn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	masterEnd, peer := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.serve(ctx, masterEnd)
	}()
	t.Cleanup(func() {
		cancel()
		peer.Close()
		<-done
	})
	return peer
}

// newIdleMaster builds a master with the default options that is not running: pipePeer
// serves its connections.
func newIdleMaster(t *testing.T, st *testStore) *Master {
	t.Helper()
	m, err := NewMaster(st.Store, MasterOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("NewMaster: %v", err)
	}
	return m
}

// drain reads and discards what the master sends to c until c closes: a peer that receives
// every block and heartbeat (net.Pipe has no buffer, so an unread block would stall the
// master's writer).
func drain(c net.Conn) { go io.Copy(io.Discard, c) }

func startSlave(t testing.TB, st *storage.Store, opts SlaveOptions, hook func()) (*Slave, func()) {
	t.Helper()
	s, err := NewSlave(st, opts)
	if err != nil {
		t.Fatalf("NewSlave: %v", err)
	}
	s.testHookBeforeRead = hook
	return s, run(t, "slave", s.Run)
}

func testMsg(topic string, qid int32, body string) *storage.Message {
	return &storage.Message{
		Topic: topic, QueueID: qid, Body: []byte(body),
		Properties:    message.MarshalProperties(map[string]string{"KEYS": "k" + body[:6]}),
		BornTimestamp: 1_700_000_000_000, BornHost: testBornHost, StoreHost: testStoreHost,
	}
}

func body(i, n int) string {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte('a' + (i+j)%26)
	}
	return fmt.Sprintf("%06d:%s", i, b)
}

const testQueues = 3

// putN puts n messages numbered from first and returns the end offset of the last.
func putN(t testing.TB, st *storage.Store, first, n int) int64 {
	t.Helper()
	var end int64
	for i := first; i < first+n; i++ {
		r, err := st.PutMessage(testMsg("T", int32(i%testQueues), body(i, 100+i%400)))
		if err != nil {
			t.Errorf("PutMessage: %v (status %v)", err, r.Status)
			return end
		}
		end = r.PhyOffset + int64(r.WroteBytes)
	}
	return end
}

// waitFor polls cond every millisecond; the limit only keeps a broken test from hanging. It is
// for tests over loopback sockets (a real Master.Run or Slave), which cannot run in a synctest
// bubble; pipePeer tests use synctest.Wait instead.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitCaughtUp waits until the slave's log ends where the master's does and everything is
// dispatched on both.
func waitCaughtUp(t testing.TB, master, slave *storage.Store) {
	t.Helper()
	waitFor(t, "slave to catch up", func() bool {
		end := master.MaxPhyOffset()
		return slave.MaxPhyOffset() == end && slave.DispatchedPhyOffset() >= end &&
			master.DispatchedPhyOffset() >= end
	})
}

// assertLogsEqual compares the two CommitLogs byte for byte.
func assertLogsEqual(t testing.TB, master, slave *storage.Store) {
	t.Helper()
	end := master.MaxPhyOffset()
	if got := slave.MaxPhyOffset(); got != end {
		t.Fatalf("slave log ends at %d, master's at %d", got, end)
	}
	if master.MinPhyOffset() != 0 || slave.MinPhyOffset() != 0 {
		t.Fatalf("min offsets %d, %d", master.MinPhyOffset(), slave.MinPhyOffset())
	}
	for off := int64(0); off < end; {
		a, err := master.ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatalf("master ReadCommitLog(%d): %v", off, err)
		}
		b, err := slave.ReadCommitLog(off, len(a.Data))
		if err != nil {
			t.Fatalf("slave ReadCommitLog(%d): %v", off, err)
		}
		equal := bytes.Equal(a.Data, b.Data)
		n := len(a.Data)
		a.Release()
		b.Release()
		if !equal || n == 0 {
			t.Fatalf("CommitLogs differ in the %d bytes at %d", n, off)
		}
		off += int64(n)
	}
}

// readQueue returns copies of every message of a queue.
func readQueue(t testing.TB, st *storage.Store, qid int32) [][]byte {
	t.Helper()
	var out [][]byte
	off := st.MinOffsetInQueue("T", qid)
	for {
		r := st.GetMessage("g", "T", qid, off, 32, 0, nil)
		if r.Status != storage.Found {
			st := r.Status
			r.Release()
			if st == storage.OffsetOverflowOne || st == storage.NoMessageInQueue {
				return out
			}
			t.Fatalf("GetMessage(T, %d, %d): %v", qid, off, st)
		}
		for _, m := range r.Messages {
			out = append(out, bytes.Clone(m))
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// assertQueuesEqual checks that the slave's ConsumeQueues serve the master's messages.
func assertQueuesEqual(t testing.TB, master, slave *storage.Store, wantTotal int) {
	t.Helper()
	total := 0
	for q := range int32(testQueues) {
		a, b := readQueue(t, master, q), readQueue(t, slave, q)
		if len(a) != len(b) {
			t.Fatalf("queue %d: master has %d messages, slave %d", q, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("queue %d message %d differs", q, i)
			}
		}
		total += len(a)
	}
	if total != wantTotal {
		t.Fatalf("%d messages in the queues, want %d", total, wantTotal)
	}
}
