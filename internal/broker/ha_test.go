package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

// startSyncMaster starts a SYNC_MASTER broker and runs its HA master (the node does that
// outside tests) until the test ends.
func startSyncMaster(t *testing.T, secret string) *testBroker {
	t.Helper()
	tb := startTestBroker(t, func(o *Options) {
		o.BrokerRole = RoleSyncMaster
		o.HA = HAOptions{
			ListenAddr:       "127.0.0.1:0",
			SyncFlushTimeout: 100 * time.Millisecond,
			// Only a lie may close a peer within a test's time.
			HousekeepingInterval: time.Minute,
			Secret:               secret,
			HandshakeTimeout:     100 * time.Millisecond,
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tb.HAMaster().Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("HA master: %v", err)
		}
	})
	<-tb.HAMaster().Ready()
	return tb
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
	c, err := net.Dial("tcp", tb.HAMaster().Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var report [8]byte
	if _, err := c.Write(report[:]); err != nil { // 0: "I hold nothing"
		t.Fatal(err)
	}
	eventually(t, "the peer to count as a slave", func() bool { return len(tb.HAMaster().Slaves()) == 1 })
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
	eventually(t, "the peer to be forgotten", func() bool { return len(tb.HAMaster().Slaves()) == 0 })
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
	c, err := net.Dial("tcp", tb.HAMaster().Addr())
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
	if n := len(tb.HAMaster().Slaves()); n != 0 {
		t.Fatalf("%d slaves", n)
	}
}
