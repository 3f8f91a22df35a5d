package replication

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Tests against a hand-written peer speaking the wire format, to pin down what each side does
// with a silent, confused or broken counterpart.

func dialMaster(t *testing.T, m *Master) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readUntilClosed reads and discards until the master closes the connection.
func readUntilClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // only against a hang
	if _, err := io.Copy(io.Discard, c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("master did not close the connection")
		}
	}
}

func sendReport(t *testing.T, c net.Conn, off int64) {
	t.Helper()
	var b [reportBytes]byte
	putReport(b[:], off)
	if _, err := c.Write(b[:]); err != nil {
		t.Fatal(err)
	}
}

func TestMasterDropsSilentSlave(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	opts := testMasterOptions(t)
	opts.HousekeepingInterval = 50 * time.Millisecond
	opts.SendHeartbeatInterval = 10 * time.Millisecond
	m, _ := startMaster(t, master.Store, opts)
	putN(t, master.Store, 0, 10)
	c := dialMaster(t, m)
	sendReport(t, c, 0) // then silence: no heartbeats
	readUntilClosed(t, c)
	waitFor(t, "the slave to be forgotten", func() bool { return len(m.Slaves()) == 0 })
}

func TestMasterRefusesSlaveAhead(t *testing.T) {
	master := openStore(t, t.TempDir(), false)
	m, _ := startMaster(t, master.Store, testMasterOptions(t))
	end := putN(t, master.Store, 0, 10)
	c := dialMaster(t, m)
	sendReport(t, c, end+1)
	readUntilClosed(t, c)
	if s := m.Slaves(); len(s) != 0 || m.SlaveAckOffset() != 0 {
		t.Fatalf("slaves %+v, ack %d after a refused slave", s, m.SlaveAckOffset())
	}
}

// fakeMaster accepts the slave's connections one by one.
type fakeMaster struct {
	t  *testing.T
	ln net.Listener
}

func newFakeMaster(t *testing.T) *fakeMaster {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fakeMaster{t: t, ln: ln}
}

// accept takes the next connection and returns it with the slave's first report.
func (f *fakeMaster) accept() (net.Conn, int64) {
	f.t.Helper()
	c, err := f.ln.Accept()
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	var b [reportBytes]byte
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		f.t.Fatalf("read report: %v", err)
	}
	return c, parseReport(b[:])
}

func (f *fakeMaster) send(c net.Conn, off int64, size int, body []byte) {
	f.t.Helper()
	b := make([]byte, headerBytes, headerBytes+len(body))
	putHeader(b, off, size)
	if _, err := c.Write(append(b, body...)); err != nil {
		f.t.Fatal(err)
	}
}

func TestSlaveRejectsBadBlocks(t *testing.T) {
	src := openStore(t, t.TempDir(), false) // real CommitLog bytes to send
	end := putN(t, src.Store, 0, 5)
	v, err := src.ReadCommitLog(0, int(end))
	if err != nil || int64(len(v.Data)) != end {
		t.Fatalf("ReadCommitLog: %v", err)
	}
	logBytes := append([]byte(nil), v.Data...)
	v.Release()

	slave := openStore(t, t.TempDir(), true)
	f := newFakeMaster(t)
	startSlave(t, slave.Store, testSlaveOptions(t, f.ln.Addr().String()), nil)

	c, off := f.accept()
	if off != 0 {
		t.Fatalf("first report %d, want 0", off)
	}
	f.send(c, 100, 10, make([]byte, 10)) // wrong offset: the slave hangs up
	readUntilClosed(t, c)

	c, _ = f.accept()
	f.send(c, 0, 1<<30, nil) // size out of bounds
	readUntilClosed(t, c)

	c, _ = f.accept()
	f.send(c, 0, len(logBytes), logBytes[:len(logBytes)/2]) // a partial block, then a cut
	c.Close()

	c, off = f.accept()
	if off != 0 || slave.MaxPhyOffset() != 0 {
		t.Fatalf("after a partial block: report %d, log end %d; want 0, 0", off, slave.MaxPhyOffset())
	}
	half := int64(len(logBytes) / 2)
	f.send(c, 0, int(half), logBytes[:half]) // a block may end mid-record
	f.send(c, half, 0, nil)                  // heartbeat
	f.send(c, half, len(logBytes)-int(half), logBytes[half:])
	var b [reportBytes]byte
	for off != end {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("read report: %v", err)
		}
		off = parseReport(b[:])
	}
	waitCaughtUp(t, src.Store, slave.Store)
	assertLogsEqual(t, src.Store, slave.Store)
	assertQueuesEqual(t, src.Store, slave.Store, 5)
}

func TestSlaveSetMasterAddr(t *testing.T) {
	slave := openStore(t, t.TempDir(), true)
	s, _ := startSlave(t, slave.Store, testSlaveOptions(t, ""), nil)
	f1, f2 := newFakeMaster(t), newFakeMaster(t)
	s.SetMasterAddr(f1.ln.Addr().String())
	c, _ := f1.accept()
	s.SetMasterAddr(f2.ln.Addr().String()) // drops the connection to f1
	readUntilClosed(t, c)
	f2.accept()
}
