package ha_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/broker/schedule"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// attach builds the HA service over the core, with the schedule service's delay offsets, as the
// node does.
func attach(b *broker.Broker) error {
	sched, err := schedule.New(b)
	if err != nil {
		return err
	}
	b.Attach(sched)
	s, err := ha.New(b, ha.Deps{DelayOffsets: sched})
	if err != nil {
		return err
	}
	b.Attach(s)
	return nil
}

func start(t *testing.T, mutate func(*broker.Options)) (*brokertest.Broker, *ha.Service) {
	t.Helper()
	tb := brokertest.Start(t, brokertest.Config{Mutate: mutate, Attach: attach})
	s := ha.Of(tb.Broker)
	if s == nil {
		t.Fatal("no HA service installed as the core's Replicator")
	}
	return tb, s
}

// startSyncMaster starts a SYNC_MASTER broker, whose Run has bound its HA listener by the time
// it is Ready.
func startSyncMaster(t *testing.T, secret string) (*brokertest.Broker, *ha.Service) {
	t.Helper()
	return start(t, func(o *broker.Options) {
		o.Broker.Role = storage.SyncMaster
		o.HA = config.HA{
			Listen:           "127.0.0.1:0",
			SyncFlushTimeout: 100 * time.Millisecond,
			// Only a lie may close a peer within a test's time.
			HousekeepingInterval: time.Minute,
			Secret:               secret,
		}
		o.HAConn.HandshakeTimeout = 100 * time.Millisecond
	})
}

// syncSend sends one message to topic SYNC (auto-created from TBW102).
func syncSend(t *testing.T, tb *brokertest.Broker, body string) *remoting.Command {
	t.Helper()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "SYNC", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 1, QueueID: 0, BornTimestamp: 1700000000123, BrokerName: "broker-a"}
	ext := map[string]string{}
	(*protocol.SendMessageRequestHeaderV2)(&h).Encode(ext)
	return brokertest.Invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.SendMessageV2, ext, []byte(body)))
}

// A peer on the HA port that reports 0 and then MaxInt64 is closed, and SYNC_MASTER sends are
// not acknowledged by its lie: with it gone no slave is available.
func TestHASyncMasterIgnoresFakeReport(t *testing.T) {
	tb, s := startSyncMaster(t, "")
	c, err := net.Dial("tcp", tb.HAAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var report [8]byte
	if _, err := c.Write(report[:]); err != nil { // 0: "I hold nothing"
		t.Fatal(err)
	}
	brokertest.Eventually(t, "the peer to count as a slave", func() bool { return s.ConnectedSlaves() == 1 })
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
	brokertest.Eventually(t, "the peer to be forgotten", func() bool { return s.ConnectedSlaves() == 0 })
	resp := syncSend(t, tb, "after the lie")
	if resp.Code != remoting.SlaveNotAvailable {
		t.Fatalf("send after a fake report: code %d %q, want SLAVE_NOT_AVAILABLE (%d)",
			resp.Code, resp.Remark, remoting.SlaveNotAvailable)
	}
}

// HAOptions.Secret reaches the HA master: a RocketMQ-style peer gets the challenge and no
// CommitLog byte, and sends find no slave.
func TestHASecretWired(t *testing.T) {
	tb, s := startSyncMaster(t, "a secret of sixteen bytes or more")
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
	if n := s.ConnectedSlaves(); n != 0 {
		t.Fatalf("%d slaves", n)
	}
}

// Without the HA service a SYNC_MASTER replicates nothing: no HA address goes out and a send
// is answered once stored (RocketMQ with HA off), not SLAVE_NOT_AVAILABLE.
func TestSyncMasterWithoutHAService(t *testing.T) {
	tb := brokertest.Start(t, brokertest.Config{Mutate: func(o *broker.Options) { o.Broker.Role = storage.SyncMaster }})
	if tb.HAAddr() != "" || ha.Of(tb.Broker) != nil {
		t.Fatalf("HA address %q without the HA service", tb.HAAddr())
	}
	if resp := syncSend(t, tb, "m"); resp.Code != remoting.Success {
		t.Fatalf("send: code %d %q, want SUCCESS", resp.Code, resp.Remark)
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
	opts := brokertest.Options(t, t.TempDir())
	opts.BrokerAddr = "127.0.0.1:10911"
	opts.HA.Listen = taken.Addr().String()
	b, err := broker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := attach(b); err != nil {
		t.Fatal(err)
	}
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
	m, ms := start(t, func(o *broker.Options) { o.HAConn.AdvertisedIP = "10.1.2.3" })
	_, port, err := net.SplitHostPort(ms.ListenAddr())
	if err != nil {
		t.Fatal(err)
	}
	if want := net.JoinHostPort("10.1.2.3", port); m.HAAddr() != want || ms.Addr() != want {
		t.Fatalf("master HA address %q, want %q", m.HAAddr(), want)
	}
	s, ss := start(t, func(o *broker.Options) { o.Broker.ID = 1; o.HA.MasterAddr = ms.ListenAddr() })
	if s.HAAddr() != "" || ss.MasterHAAddr() != ms.ListenAddr() {
		t.Fatalf("slave: HA address %q, master HA address %q", s.HAAddr(), ss.MasterHAAddr())
	}
	brokertest.Eventually(t, "the slave to connect", func() bool { return ms.ConnectedSlaves() == 1 })
	if acks := ms.Slaves(); len(acks) != 1 || acks[0].Addr == "" {
		t.Fatalf("slaves %+v", acks)
	}
	if got := m.Seams().SlaveAcks(); len(got) != 1 {
		t.Fatalf("the core lists %d slaves for its metrics, want 1", len(got))
	}
}

// warnWriter keeps the warning and error lines written to it.
type warnWriter struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"error"`)) || bytes.Contains(p, []byte(`"level":"warn"`)) {
		w.mu.Lock()
		w.lines = append(w.lines, string(p))
		w.mu.Unlock()
	}
	return len(p), nil
}

func (w *warnWriter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// A slave in controller mode follows only the master the controllers named: a REGISTER_BROKER
// answer naming another (a deposed master cut off from the controllers still registers as
// master) changes neither its master broker address nor its HA address. It used to follow
// it, and stream a log that parted from its own onto its store (internal/sim, seed 76).
func TestControllerModeSlaveFollowsOnlyTheNamedMaster(t *testing.T) {
	_, s := start(t, func(o *broker.Options) {
		o.Broker.Role, o.Broker.ID = storage.Slave, 2
		o.ControllerMode, o.ReplicaID, o.ControllerMaster = true, 2, "10.0.0.2:10911"
	})
	// The slave knows the named master's broker address from the start; its HA address comes
	// with the name server's answer naming that master.
	s.Registered(&route.RegisterBrokerResult{MasterAddr: "10.0.0.1:10911", HAServerAddr: "10.0.0.1:10912"})
	if s.MasterAddr() != "10.0.0.2:10911" || s.MasterHAAddr() != "" {
		t.Fatalf("followed a master the controllers did not name: %q, HA %q", s.MasterAddr(), s.MasterHAAddr())
	}
	s.Registered(&route.RegisterBrokerResult{MasterAddr: "10.0.0.2:10911", HAServerAddr: "10.0.0.2:10912"})
	if s.MasterAddr() != "10.0.0.2:10911" || s.MasterHAAddr() != "10.0.0.2:10912" {
		t.Fatalf("did not follow the named master: %q, HA %q", s.MasterAddr(), s.MasterHAAddr())
	}
}
