package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// startSyncMaster starts a SYNC_MASTER broker, whose Run has bound its HA listener by the time
// it is Ready.
func startSyncMaster(t *testing.T, secret string) *testBroker {
	t.Helper()
	return startTestBroker(t, func(o *Options) {
		o.BrokerRole = storage.SyncMaster
		o.HA = HAOptions{
			ListenAddr:       "127.0.0.1:0",
			SyncFlushTimeout: 100 * time.Millisecond,
			// Only a lie may close a peer within a test's time.
			HousekeepingInterval: time.Minute,
			Secret:               secret,
			HandshakeTimeout:     100 * time.Millisecond,
		}
	})
}

func syncSend(t *testing.T, tb *testBroker, body string) *remoting.Command {
	t.Helper()
	tb.topics.update(TopicConfig{TopicName: "SYNC", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	h := goSendHeader("SYNC", 0, nil)
	return invoke(t, tb.InProc, tb.Addr, sendRequest(remoting.SendMessageV2, &h, []byte(body), remoting.SerializeJSON))
}

// A peer on the HA port that reports 0 and then MaxInt64 is closed, and SYNC_MASTER sends are
// not acknowledged by its lie: with it gone no slave is available.
func TestHASyncMasterIgnoresFakeReport(t *testing.T) {
	tb := startSyncMaster(t, "")
	c, err := net.Dial("tcp", tb.HAAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var report [8]byte
	if _, err := c.Write(report[:]); err != nil { // 0: "I hold nothing"
		t.Fatal(err)
	}
	eventually(t, "the peer to count as a slave", func() bool { return tb.ConnectedSlaves() == 1 })
	binary.BigEndian.PutUint64(report[:], math.MaxInt64)
	if _, err := c.Write(report[:]); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the master kept a peer that reported MaxInt64")
		}
	}
	eventually(t, "the peer to be forgotten", func() bool { return tb.ConnectedSlaves() == 0 })
	resp := syncSend(t, tb, "after the lie")
	if resp.Code != remoting.SlaveNotAvailable {
		t.Fatalf("send after a fake report: code %d %q, want SLAVE_NOT_AVAILABLE (%d)",
			resp.Code, resp.Remark, remoting.SlaveNotAvailable)
	}
}

// HAOptions.Secret reaches the HA master: a RocketMQ-style peer gets the challenge and no
// CommitLog byte, and sends find no slave.
func TestHASecretWired(t *testing.T) {
	tb := startSyncMaster(t, "a secret of sixteen bytes or more")
	if resp := syncSend(t, tb, "stored before any slave"); resp.Code != remoting.SlaveNotAvailable {
		t.Fatalf("send: code %d %q, want SLAVE_NOT_AVAILABLE", resp.Code, resp.Remark)
	}
	c, err := net.Dial("tcp", tb.HAAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var report [8]byte
	if _, err := c.Write(report[:]); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the master kept a peer without the secret")
	}
	if len(got) != 32 {
		t.Fatalf("a peer without the secret received %d bytes, want only the 32-byte challenge", len(got))
	}
	if n := tb.ConnectedSlaves(); n != 0 {
		t.Fatalf("%d slaves", n)
	}
}

// A master whose HA port is taken fails Run, naming the HA listener, and never gets Ready: it
// must not register an HA address nobody serves.
func TestRunFailsWhenHAListenerCannotBind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	opts := testOptions(t, t.TempDir())
	opts.BrokerAddr = "127.0.0.1:10911"
	opts.HA.ListenAddr = taken.Addr().String()
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "broker: HA listener") {
		t.Fatalf("Run: %v, want an HA listener error", err)
	}
	select {
	case <-b.Ready():
		t.Fatal("Ready closed by a Run that failed")
	default:
	}
	if b.HAAddr() != "" {
		t.Fatalf("HA address %q advertised without a listener", b.HAAddr())
	}
}

// Run binds a master's HA listener before it is Ready and advertises it under AdvertisedIP;
// a slave has no HA address and follows the master HA address it was given.
func TestRunAdvertisesHAAddr(t *testing.T) {
	m := startTestBroker(t, func(o *Options) { o.HA.AdvertisedIP = "10.1.2.3" })
	_, port, err := net.SplitHostPort(m.ha.master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if want := net.JoinHostPort("10.1.2.3", port); m.HAAddr() != want {
		t.Fatalf("master HA address %q, want %q", m.HAAddr(), want)
	}
	s := startTestBroker(t, func(o *Options) { o.BrokerID = 1; o.HA.MasterAddr = m.ha.master.Addr() })
	if s.HAAddr() != "" || s.MasterHAAddr() != m.ha.master.Addr() {
		t.Fatalf("slave: HA address %q, master HA address %q", s.HAAddr(), s.MasterHAAddr())
	}
	eventually(t, "the slave to connect", func() bool { return m.ConnectedSlaves() == 1 })
}
