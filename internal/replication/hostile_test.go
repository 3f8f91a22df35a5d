package replication

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// Tests with peers that lie to the master or do not know its secret: none of them may make
// a send look replicated or read the CommitLog.

// waitForAckAsync runs WaitForAck(offset) on a goroutine and returns its result channel.
func waitForAckAsync(m *Master, offset int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.WaitForAck(context.Background(), offset) }()
	return done
}

// A peer that reports 0, then MaxInt64 while a sender waits: the lie closes the peer at once,
// not at a timeout; the sender is not acknowledged and fails after exactly syncFlushTimeout
// (the default, on synctest's clock), and later sends find no slave.
func TestMasterClosesPeerReportingPastItsEnd(t *testing.T) {
	const syncFlushTimeout = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		master := openBubbleStore(t, false)
		m := newIdleMaster(t, master)
		end := putN(t, master.Store, 0, 10)

		c := pipePeer(t, m)
		sendReport(t, c, 0)
		synctest.Wait()
		if n := len(m.Slaves()); n != 1 {
			t.Fatalf("%d slaves after the first report, want 1", n)
		}
		start := time.Now()
		acked := waitForAckAsync(m, end)
		synctest.Wait()
		if n := m.gt.pending(); n != 1 {
			t.Fatalf("%d senders wait, want 1", n)
		}
		sendReport(t, c, math.MaxInt64)
		readUntilClosed(t, c)
		if got := time.Since(start); got != 0 {
			t.Fatalf("the liar was closed after %v, not at its lie", got)
		}

		if err := <-acked; !errors.Is(err, ErrSlaveTimeout) {
			t.Fatalf("WaitForAck after a report of MaxInt64: %v, want ErrSlaveTimeout", err)
		}
		if got := time.Since(start); got != syncFlushTimeout {
			t.Fatalf("WaitForAck failed after %v, want syncFlushTimeout %v", got, syncFlushTimeout)
		}
		if n := len(m.Slaves()); n != 0 {
			t.Fatalf("%d slaves after the liar left", n)
		}
		if got := m.SlaveAckOffset(); got != 0 {
			t.Fatalf("SlaveAckOffset %d after the liar left, want 0", got)
		}
		if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrNoSlave) {
			t.Fatalf("WaitForAck after the liar left: %v, want ErrNoSlave", err)
		}
	})
}

// A report past what the master has sent, even if within the master's end, is refused at once:
// a peer cannot acknowledge bytes it has not been given.
func TestMasterClosesPeerReportingUnsentBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newIdleMaster(t, openBubbleStore(t, false))
		c := pipePeer(t, m)
		sendReport(t, c, 0) // the log is empty: nothing is sent
		synctest.Wait()
		if n := len(m.Slaves()); n != 1 {
			t.Fatalf("%d slaves after the first report, want 1", n)
		}
		start := time.Now()
		sendReport(t, c, 1)
		readUntilClosed(t, c)
		synctest.Wait()
		if got := time.Since(start); got != 0 {
			t.Fatalf("the peer was closed after %v, not at its report", got)
		}
		if n := len(m.Slaves()); n != 0 {
			t.Fatalf("%d slaves after the refused report", n)
		}
	})
}

// A peer that acknowledged everything and left must not acknowledge later waits: with no
// slave connected the answer is ErrNoSlave (SLAVE_NOT_AVAILABLE), not success.
func TestWaitForAckAfterSlaveLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		master := openBubbleStore(t, false)
		m := newIdleMaster(t, master)
		end := putN(t, master.Store, 0, 10)
		c := pipePeer(t, m)
		sendReport(t, c, end) // "I have it all": legal, and unverifiable without a secret
		synctest.Wait()
		if n := len(m.Slaves()); n != 1 {
			t.Fatalf("%d slaves after the first report, want 1", n)
		}
		if err := m.WaitForAck(context.Background(), end); err != nil {
			t.Fatalf("WaitForAck while the slave is connected: %v", err)
		}
		c.Close()
		synctest.Wait()
		if n := len(m.Slaves()); n != 0 {
			t.Fatalf("%d slaves once the peer closed", n)
		}
		if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrNoSlave) {
			t.Fatalf("WaitForAck after the slave left: %v, want ErrNoSlave", err)
		}
	})
}

const testSecret = "correct horse battery staple"

// hmacSHA256 computes a handshake proof from the wire format in doc.go, independently of
// proof().
func hmacSHA256(secret, label string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(label))
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// readAll reads what the master sends until it closes the connection.
func readAll(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // only against a hang
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("master did not close the connection")
	}
	return b
}

func secretMaster(t *testing.T) (*testStore, *Master, int64) {
	t.Helper()
	master := openStore(t, t.TempDir(), false)
	opts := testMasterOptions(t)
	opts.Secret = []byte(testSecret)
	opts.HandshakeTimeout = 100 * time.Millisecond
	m, _ := startMaster(t, master.Store, opts)
	return master, m, putN(t, master.Store, 0, 20)
}

// Peers that do not prove the secret receive the master's challenge and nothing else: not a
// block header, not a CommitLog byte, and they never count as a slave.
func TestSecretRefusesPeers(t *testing.T) {
	_, m, end := secretMaster(t)
	for _, tc := range []struct {
		name string
		talk func(c net.Conn, nonce []byte)
	}{
		{"RocketMQ slave", func(c net.Conn, _ []byte) {
			var r [reportBytes]byte // a plain slave reports at once
			c.Write(r[:])
		}},
		{"silent", func(net.Conn, []byte) {}},
		{"wrong secret", func(c net.Conn, nonce []byte) {
			mine := make([]byte, nonceBytes)
			c.Write(append(mine, hmacSHA256("wrong horse battery staple", slaveProofLabel, nonce, mine)...))
		}},
		{"master's proof replayed", func(c net.Conn, nonce []byte) {
			mine := make([]byte, nonceBytes)
			c.Write(append(mine, hmacSHA256(testSecret, masterProofLabel, nonce, mine)...))
		}},
		{"garbage", func(c net.Conn, _ []byte) {
			c.Write(make([]byte, 4096))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialMaster(t, m)
			nonce := make([]byte, nonceBytes)
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.ReadFull(c, nonce); err != nil {
				t.Fatalf("read challenge: %v", err)
			}
			tc.talk(c, nonce)
			if rest := readAll(t, c); len(rest) != 0 {
				t.Fatalf("a peer without the secret received %d bytes after the challenge", len(rest))
			}
			if s := m.Slaves(); len(s) != 0 {
				t.Fatalf("slaves %+v", s)
			}
			if err := m.WaitForAck(context.Background(), end); !errors.Is(err, ErrNoSlave) {
				t.Fatalf("WaitForAck: %v, want ErrNoSlave", err)
			}
		})
	}
}

// The handshake as doc.go draws it, spoken by hand: challenge, answer, the master's proof,
// then RocketMQ's protocol (a report, blocks from there).
func TestSecretHandshakeWire(t *testing.T) {
	master, m, _ := secretMaster(t)
	c := dialMaster(t, m)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	masterNonce := make([]byte, nonceBytes)
	if _, err := io.ReadFull(c, masterNonce); err != nil {
		t.Fatalf("read challenge: %v", err)
	}
	slaveNonce := []byte("0123456789abcdef0123456789abcdef")
	if _, err := c.Write(append(slaveNonce, hmacSHA256(testSecret, "mq-ha-slave-v1", masterNonce, slaveNonce)...)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, proofBytes)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read the master's proof: %v", err)
	}
	if want := hmacSHA256(testSecret, "mq-ha-master-v1", masterNonce, slaveNonce); !hmac.Equal(got, want) {
		t.Fatalf("master's proof %x, want %x", got, want)
	}
	sendReport(t, c, 0)
	hdr := make([]byte, headerBytes)
	if _, err := io.ReadFull(c, hdr); err != nil {
		t.Fatalf("read the first block header: %v", err)
	}
	if off, size := parseHeader(hdr); off != 0 || size <= 0 {
		t.Fatalf("first block at %d, %d bytes; want offset 0 and data", off, size)
	}
	waitFor(t, "the peer to count as a slave", func() bool { return len(m.Slaves()) == 1 })
	if master.MaxPhyOffset() == 0 {
		t.Fatal("empty master")
	}
}

// A slave and a master that share the secret replicate byte for byte.
func TestSecretReplicates(t *testing.T) {
	master, m, _ := secretMaster(t)
	slave := openStore(t, t.TempDir(), true)
	opts := testSlaveOptions(t, m.Addr())
	opts.Secret = []byte(testSecret)
	startSlave(t, slave.Store, opts, nil)
	putN(t, master.Store, 20, 200)
	m.Notify()
	waitCaughtUp(t, master.Store, slave.Store)
	assertLogsEqual(t, master.Store, slave.Store)
	assertQueuesEqual(t, master.Store, slave.Store, 220)
	if err := m.WaitForAck(context.Background(), master.MaxPhyOffset()); err != nil {
		t.Fatalf("WaitForAck: %v", err)
	}
}

// A slave with a secret follows only a master that proves it: an impostor's proof closes the
// connection before the slave reports or appends anything.
func TestSecretSlaveRefusesImpostor(t *testing.T) {
	slave := openStore(t, t.TempDir(), true)
	f := newFakeMaster(t)
	opts := testSlaveOptions(t, f.ln.Addr().String())
	opts.Secret = []byte(testSecret)
	opts.HandshakeTimeout = time.Second
	startSlave(t, slave.Store, opts, nil)

	c, err := f.ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	masterNonce := make([]byte, nonceBytes)
	if _, err := c.Write(masterNonce); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, nonceBytes+proofBytes)
	if _, err := io.ReadFull(c, answer); err != nil {
		t.Fatalf("read the slave's answer: %v", err)
	}
	if want := hmacSHA256(testSecret, "mq-ha-slave-v1", masterNonce, answer[:nonceBytes]); !hmac.Equal(answer[nonceBytes:], want) {
		t.Fatal("the slave's proof does not match doc.go")
	}
	// The impostor does not know the secret; it sends a wrong proof and a block.
	wrong := hmacSHA256("wrong horse battery staple", "mq-ha-master-v1", masterNonce, answer[:nonceBytes])
	block := make([]byte, headerBytes+4)
	putHeader(block, 0, 4)
	c.Write(append(wrong, block...))
	if rest, _ := io.ReadAll(c); len(rest) != 0 {
		t.Fatalf("the slave sent %d bytes to an impostor", len(rest))
	}
	if slave.MaxPhyOffset() != 0 {
		t.Fatalf("slave log ends at %d after an impostor", slave.MaxPhyOffset())
	}
}

func TestSecretOptions(t *testing.T) {
	st := openStore(t, t.TempDir(), false)
	if _, err := NewMaster(st.Store, MasterOptions{Secret: []byte("short")}); err == nil {
		t.Error("NewMaster accepted a 5-byte secret")
	}
	if _, err := NewSlave(st.Store, SlaveOptions{Secret: []byte("short")}); err == nil {
		t.Error("NewSlave accepted a 5-byte secret")
	}
	secret := []byte(testSecret)
	m, err := NewMaster(st.Store, MasterOptions{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	secret[0] = 'X' // the caller's slice is not the master's
	if string(m.opts.Secret) != testSecret {
		t.Error("NewMaster kept the caller's slice")
	}
}
