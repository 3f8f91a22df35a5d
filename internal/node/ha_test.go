package node

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// haOpts are a node's options for HA tests: loopback, free ports, short periods.
func haOpts(t *testing.T, role storage.BrokerRole) Options {
	return Options{Options: config.Options{
		Listen:  "127.0.0.1:0",
		Broker:  config.Broker{Role: role},
		Store:   config.Store{Dir: t.TempDir(), SegmentBytes: 1 << 20},
		Periods: config.Periods{RegisterNameServerPeriod: 100 * time.Millisecond},
		HA: config.HA{
			SendHeartbeatInterval: 100 * time.Millisecond,
			ReconnectInterval:     50 * time.Millisecond,
			TransferWaitInterval:  10 * time.Millisecond,
			SyncFlushTimeout:      15 * time.Second, // generous: a slow CI machine must not time out
			SlaveSyncPeriod:       50 * time.Millisecond,
		},
	}}
}

func startNode(t *testing.T, opts Options) *Node {
	t.Helper()
	n, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// startSlave starts a slave (no name service) of the master node m.
func startSlave(t *testing.T, m *Node, mutate func(*Options)) *Node {
	o := haOpts(t, storage.Slave)
	o.DisableNameServer = true
	o.NameServers = []string{m.NameServerAddr()}
	if mutate != nil {
		mutate(&o)
	}
	return startNode(t, o)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func invoke(t *testing.T, n *Node, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	tr := n.NewTransport()
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("request %d to %s: %v", req.Code, addr, err)
	}
	return resp
}

func sendReq(topic string, queueID int32, body string) *remoting.Command {
	props := map[string]string{message.PropertyUniqKey: "U-" + body, "WAIT": "true"}
	h := &protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		Properties: message.MarshalProperties(props), MaxReconsumeTimes: -1}
	return remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), []byte(body))
}

func send(t *testing.T, n *Node, addr, topic string, queueID int32, body string) *remoting.Command {
	t.Helper()
	return invoke(t, n, addr, sendReq(topic, queueID, body))
}

func pull(t *testing.T, n *Node, addr, topic string, queueID int32, offset int64, max int32) (*remoting.Command, protocol.PullMessageResponseHeader) {
	t.Helper()
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: topic, QueueID: queueID,
		QueueOffset: offset, MaxMsgNums: max, SysFlag: protocol.PullFlagSubscription, Subscription: "*"}
	resp := invoke(t, n, addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
	var rh protocol.PullMessageResponseHeader
	if resp.Code == remoting.Success {
		if err := rh.Decode(resp.ExtFields); err != nil {
			t.Fatal(err)
		}
	}
	return resp, rh
}

// equalCommitLogs fails unless both stores hold the same CommitLog bytes.
func equalCommitLogs(t *testing.T, master, slave *storage.Store) {
	t.Helper()
	end := master.MaxPhyOffset()
	if got := slave.MaxPhyOffset(); got != end {
		t.Fatalf("slave CommitLog ends at %d, master's at %d", got, end)
	}
	for off := int64(0); off < end; {
		a, err := master.ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatalf("master ReadCommitLog(%d): %v", off, err)
		}
		b, err := slave.ReadCommitLog(off, len(a.Data))
		if err != nil {
			a.Release()
			t.Fatalf("slave ReadCommitLog(%d): %v", off, err)
		}
		same, n := bytes.Equal(a.Data, b.Data), len(a.Data)
		a.Release()
		b.Release()
		if !same || n == 0 {
			t.Fatalf("CommitLogs differ in the %d bytes at %d", n, off)
		}
		off += int64(n)
	}
}

func TestHAMasterSlave(t *testing.T) {
	mo := haOpts(t, storage.AsyncMaster)
	mo.Timers.DelayLevels = []time.Duration{10 * time.Millisecond}
	m := startNode(t, mo)
	if m.HAAddr() == "" {
		t.Fatal("master has no HA address")
	}
	s := startSlave(t, m, nil)
	if s.HAAddr() != "" {
		t.Fatalf("slave has an HA address %q", s.HAAddr())
	}
	if s.Broker().IsMaster() || s.Broker().Role() != "SLAVE" {
		t.Fatalf("slave broker: master %v, role %s", s.Broker().IsMaster(), s.Broker().Role())
	}
	eventually(t, "the slave to learn its master", func() bool {
		return s.HA().MasterHAAddr() == m.HAAddr() && s.HA().MasterAddr() == m.BrokerAddr()
	})

	const n = 60
	for i := range n {
		if resp := send(t, m, m.BrokerAddr(), "HA", int32(i%4), fmt.Sprintf("m-%d", i)); resp.Code != remoting.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	mst, sst := m.Broker().Store(), s.Broker().Store()
	eventually(t, "the slave to catch up", func() bool { return sst.MaxPhyOffset() == mst.MaxPhyOffset() })
	equalCommitLogs(t, mst, sst)

	t.Run("slave refuses sends", func(t *testing.T) {
		resp := send(t, s, s.BrokerAddr(), "HA", 0, "refused")
		if resp.Code != remoting.ServiceNotAvailable {
			t.Fatalf("send to slave: code %d %q, want %d", resp.Code, resp.Remark, remoting.ServiceNotAvailable)
		}
	})

	t.Run("metadata sync", func(t *testing.T) {
		// The topic HA was created on the master by the first send; commit an offset there, for
		// a group created first (a commit needs its group, as in RocketMQ 5).
		created := invoke(t, m, m.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil,
			[]byte(`{"groupName":"cg","consumeEnable":true}`)))
		if created.Code != remoting.Success {
			t.Fatalf("create group cg: %d %s", created.Code, created.Remark)
		}
		h := &protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "HA", QueueID: 1, CommitOffset: 7}
		resp := invoke(t, m, m.BrokerAddr(), remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(h), nil))
		if resp.Code != remoting.Success {
			t.Fatalf("commit offset: %d %s", resp.Code, resp.Remark)
		}
		eventually(t, "the slave to sync topic HA and the offset", func() bool {
			topics := invoke(t, s, s.BrokerAddr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
			offsets := invoke(t, s, s.BrokerAddr(), remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil))
			if topics.Code != remoting.Success || offsets.Code != remoting.Success {
				return false
			}
			w, err := protocol.DecodeConsumerOffsetSerializeWrapper(offsets.Body)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Contains(topics.Body, []byte(`"HA"`)) && w.OffsetTable["HA@cg"][1] == 7
		})
	})

	t.Run("metadata sync of groups and delay offsets", func(t *testing.T) {
		resp := invoke(t, m, m.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil,
			[]byte(`{"groupName":"ha-group","consumeEnable":true}`)))
		if resp.Code != remoting.Success {
			t.Fatalf("create group: %d %s", resp.Code, resp.Remark)
		}
		// A level-1 delayed message (10 ms here) advances the master's level-1 cursor to 1.
		props := map[string]string{message.PropertyUniqKey: "U-delayed", message.PropertyDelayTimeLevel: "1"}
		h := &protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "HAD", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(),
			Properties: message.MarshalProperties(props), MaxReconsumeTimes: -1}
		resp = invoke(t, m, m.BrokerAddr(), remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), []byte("delayed")))
		if resp.Code != remoting.Success {
			t.Fatalf("delayed send: %d %s", resp.Code, resp.Remark)
		}
		eventually(t, "the slave to sync the group and the delay cursor", func() bool {
			groups := invoke(t, s, s.BrokerAddr(), remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
			delays := invoke(t, s, s.BrokerAddr(), remoting.NewRequest(remoting.GetAllDelayOffset, nil, nil))
			if groups.Code != remoting.Success || delays.Code != remoting.Success {
				return false
			}
			w, err := protocol.DecodeDelayOffsetSerializeWrapper(delays.Body)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Contains(groups.Body, []byte(`"ha-group"`)) && w.OffsetTable[1] == 1
		})
	})

	t.Run("slave serves pulls", func(t *testing.T) {
		// The slave builds its ConsumeQueues from the replicated log asynchronously.
		eventually(t, "the slave to know topic HA and index queue 0", func() bool {
			resp, rh := pull(t, s, s.BrokerAddr(), "HA", 0, 0, 32)
			return resp.Code == remoting.Success && rh.NextBeginOffset == n/4
		})
		resp, rh := pull(t, s, s.BrokerAddr(), "HA", 0, 0, 32)
		if resp.Code != remoting.Success {
			t.Fatalf("pull from slave: %d %s", resp.Code, resp.Remark)
		}
		if rh.NextBeginOffset != n/4 || !bytes.Contains(resp.Body, []byte("m-0")) {
			t.Fatalf("pull from slave: next %d, body has m-0: %v", rh.NextBeginOffset, bytes.Contains(resp.Body, []byte("m-0")))
		}
		if rh.SuggestWhichBrokerID != 0 {
			t.Fatalf("slave without slave reading suggests broker %d, want 0", rh.SuggestWhichBrokerID)
		}
	})
}

func TestHASyncMaster(t *testing.T) {
	m := startNode(t, haOpts(t, storage.SyncMaster))
	if resp := send(t, m, m.BrokerAddr(), "SYNC", 0, "alone"); resp.Code != remoting.SlaveNotAvailable {
		t.Fatalf("sync master without slave: code %d %q, want %d", resp.Code, resp.Remark, remoting.SlaveNotAvailable)
	}
	s := startSlave(t, m, nil)
	eventually(t, "the slave to connect", func() bool { return m.HA().ConnectedSlaves() > 0 })
	for i := range 20 {
		if resp := send(t, m, m.BrokerAddr(), "SYNC", int32(i%2), fmt.Sprintf("s-%d", i)); resp.Code != remoting.Success {
			t.Fatalf("sync send %d: code %d %q", i, resp.Code, resp.Remark)
		}
		// Acknowledged means replicated: the slave has the message's bytes already.
		if s.Broker().Store().MaxPhyOffset() < m.Broker().Store().MaxPhyOffset() {
			t.Fatalf("send %d acknowledged before the slave had it", i)
		}
	}
	equalCommitLogs(t, m.Broker().Store(), s.Broker().Store())
}

func TestHASuggestSlave(t *testing.T) {
	o := haOpts(t, storage.AsyncMaster)
	o.HA.SlaveReadEnable = true
	o.Store.AccessMessageInMemoryMaxBytes = 1 // any unread byte is "far behind"
	m := startNode(t, o)
	for i := range 3 {
		if resp := send(t, m, m.BrokerAddr(), "SLOW", 0, fmt.Sprintf("x-%d", i)); resp.Code != remoting.Success {
			t.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	eventually(t, "dispatch", func() bool { return m.Broker().Store().MaxOffsetInQueue("SLOW", 0) == 3 })
	resp, rh := pull(t, m, m.BrokerAddr(), "SLOW", 0, 0, 1)
	if resp.Code != remoting.Success || rh.SuggestWhichBrokerID != 1 {
		t.Fatalf("far-behind pull: code %d, suggest %d, want 0 and 1", resp.Code, rh.SuggestWhichBrokerID)
	}

	o = haOpts(t, storage.AsyncMaster)
	o.Store.AccessMessageInMemoryMaxBytes = 1 // slave reading disabled: always the master
	m2 := startNode(t, o)
	if resp := send(t, m2, m2.BrokerAddr(), "SLOW", 0, "y"); resp.Code != remoting.Success {
		t.Fatalf("send: %d %s", resp.Code, resp.Remark)
	}
	send(t, m2, m2.BrokerAddr(), "SLOW", 0, "z")
	eventually(t, "dispatch", func() bool { return m2.Broker().Store().MaxOffsetInQueue("SLOW", 0) == 2 })
	resp, rh = pull(t, m2, m2.BrokerAddr(), "SLOW", 0, 0, 1)
	if resp.Code != remoting.Success || rh.SuggestWhichBrokerID != 0 {
		t.Fatalf("pull without slave reading: code %d, suggest %d, want 0 and 0", resp.Code, rh.SuggestWhichBrokerID)
	}
}

func TestHAOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Options: config.Options{Broker: config.Broker{Role: storage.AsyncMaster, ID: 2}}},
		{Options: config.Options{Broker: config.Broker{Role: "PRIMARY"}}},
		{Options: config.Options{HA: config.HA{Listen: "nope"}}},
	} {
		if err := o.withDefaults().validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if o := (Options{Options: config.Options{Broker: config.Broker{ID: 2}}}).withDefaults(); o.Broker.Role != storage.Slave {
		t.Errorf("broker id 2 defaults to role %s", o.Broker.Role)
	}
	if o := (Options{Options: config.Options{Broker: config.Broker{Role: storage.Slave}}}).withDefaults(); o.Broker.ID != 1 {
		t.Errorf("a slave with no id gets id %d", o.Broker.ID)
	}
}

// A slave that connects but never acknowledges makes a sync master answer FLUSH_SLAVE_TIMEOUT
// once HASyncFlushTimeout passed; the message is stored all the same.
func TestHASyncMasterSlaveTimeout(t *testing.T) {
	o := haOpts(t, storage.SyncMaster)
	o.HA.SyncFlushTimeout = 50 * time.Millisecond
	m := startNode(t, o)
	c, err := net.Dial("tcp", m.HAAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var report [8]byte // "I hold nothing": offset 0, then silence
	if _, err := c.Write(report[:]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fake slave to count", func() bool { return m.HA().ConnectedSlaves() > 0 })
	resp := send(t, m, m.BrokerAddr(), "SYNC", 0, "unacked")
	if resp.Code != remoting.FlushSlaveTimeout {
		t.Fatalf("send: code %d %q, want %d", resp.Code, resp.Remark, remoting.FlushSlaveTimeout)
	}
	eventually(t, "the message to be stored", func() bool { return m.Broker().Store().MaxOffsetInQueue("SYNC", 0) == 1 })
}

// A master whose HA port is taken does not start: Start says why and stops everything it
// started, leaving no goroutine and the store unlocked.
func TestHAListenerFailureFailsStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	o := haOpts(t, storage.SyncMaster)
	o.HA.Listen = taken.Addr().String()
	before := runtime.NumGoroutine()
	n, err := Start(o)
	if err == nil {
		n.Close()
		t.Fatal("a node started without its HA listener")
	}
	if !strings.Contains(err.Error(), "mq: broker: HA listener: ") || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("error %q does not name the HA listener and its address", err)
	}
	// An exiting goroutine may still count for a moment after Start's wait for it returned.
	eventually(t, "the failed node's goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
	o.HA.Listen = "127.0.0.1:0"
	startNode(t, o) // the failed node left the store unlocked
}

// With HATLS a sync master and its slave replicate over TLS, the slave trusting the master's
// CA; a slave dialling plaintext beside it gets nothing and never counts as a slave.
func TestHASyncMasterOverTLS(t *testing.T) {
	certs, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	o := haOpts(t, storage.SyncMaster)
	o.HA.TLS, o.Security.TLSMode, o.Security.TLSConfig = true, remoting.TLSPermissive, certs.Server()
	m := startNode(t, o)
	plain := startSlave(t, m, func(o *Options) { o.Broker.ID = 2 })
	s := startSlave(t, m, func(o *Options) { o.HA.TLS, o.Security.TLSClientConfig = true, certs.Client() })
	eventually(t, "the TLS slave to connect", func() bool { return m.HA().ConnectedSlaves() > 0 })
	for i := range 10 {
		if resp := send(t, m, m.BrokerAddr(), "SYNCTLS", int32(i%2), fmt.Sprintf("s-%d", i)); resp.Code != remoting.Success {
			t.Fatalf("sync send %d: code %d %q", i, resp.Code, resp.Remark)
		}
	}
	equalCommitLogs(t, m.Broker().Store(), s.Broker().Store())
	if n := m.HA().ConnectedSlaves(); n != 1 {
		t.Fatalf("%d slaves connected, want the TLS one only", n)
	}
	if off := plain.Broker().Store().MaxPhyOffset(); off != 0 {
		t.Fatalf("the plaintext slave holds %d bytes of the log", off)
	}
}
