package replication

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
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

// TestMasterDropsSilentSlave: a slave that reported once and then fell silent is dropped
// exactly haHousekeepingInterval (20 s, the default) after its report, on synctest's clock,
// although it reads every block and heartbeat the master sends.
func TestMasterDropsSilentSlave(t *testing.T) {
	const housekeeping = 20 * time.Second
	synctest.Test(t, func(t *testing.T) {
		master := openBubbleStore(t, false)
		m := newIdleMaster(t, master)
		putN(t, master.Store, 0, 10)
		c := pipePeer(t, m)
		drain(c)
		sendReport(t, c, 0) // then silence: no heartbeats
		synctest.Wait()
		if n := len(m.Slaves()); n != 1 {
			t.Fatalf("%d slaves after the first report, want 1", n)
		}
		time.Sleep(housekeeping - time.Nanosecond)
		synctest.Wait()
		if n := len(m.Slaves()); n != 1 {
			t.Fatalf("slave dropped before %v of silence", housekeeping)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := len(m.Slaves()); n != 0 {
			t.Fatalf("slave silent for %v still served", housekeeping)
		}
	})
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

// pipeDial is one dial of a slave whose dial hands out net.Pipe ends: the fake clock's time
// of the dial and the master's end.
type pipeDial struct {
	at   time.Time
	conn net.Conn
}

// TestSlaveReconnectInterval: after a connection that carried no valid block (a first block
// at the wrong offset, or a close before any block) the slave dials again exactly
// ReconnectInterval (5 s, the default) later, and after one that carried a valid block it
// dials again at once; on synctest's clock, with net.Pipe for the sockets.
func TestSlaveReconnectInterval(t *testing.T) {
	const reconnect = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		slave := openBubbleStore(t, true)
		s, err := NewSlave(slave.Store, SlaveOptions{MasterAddr: "master:10912", Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		dials := make(chan pipeDial, 4)
		s.dial = func(context.Context, string, string) (net.Conn, error) {
			slaveEnd, masterEnd := net.Pipe()
			dials <- pipeDial{at: time.Now(), conn: masterEnd}
			return slaveEnd, nil
		}
		run(t, "slave", s.Run)
		// accept takes the next dial, which must come at want, and reads the slave's first
		// report.
		accept := func(want time.Time) net.Conn {
			t.Helper()
			if d := time.Until(want); d > 0 {
				time.Sleep(d - time.Nanosecond)
				synctest.Wait()
				select {
				case d := <-dials:
					t.Fatalf("the slave dialed %v early", want.Sub(d.at))
				default:
				}
				time.Sleep(time.Nanosecond)
			}
			synctest.Wait()
			var d pipeDial
			select {
			case d = <-dials:
			default:
				t.Fatal("the slave did not dial")
			}
			if !d.at.Equal(want) {
				t.Fatalf("the slave dialed %v late", d.at.Sub(want))
			}
			t.Cleanup(func() { d.conn.Close() })
			var b [reportBytes]byte
			if _, err := io.ReadFull(d.conn, b[:]); err != nil {
				t.Fatalf("read report: %v", err)
			}
			drain(d.conn) // later reports
			return d.conn
		}
		sendHeader := func(c net.Conn, off int64) {
			t.Helper()
			var h [headerBytes]byte
			putHeader(h[:], off, 0)
			if _, err := c.Write(h[:]); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the slave has taken it, and hung up if it was wrong
		}

		c := accept(time.Now())
		sendHeader(c, 100) // the log ends at 0: refused, nothing established
		c = accept(time.Now().Add(reconnect))
		sendHeader(c, 0) // a heartbeat where the log ends: established
		c.Close()
		c = accept(time.Now())
		c.Close() // before any block
		accept(time.Now().Add(reconnect))
	})
}
