package mqtest_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// consumeAll subscribes pc to topic and records every body it sees (by count).
func consumeAll(t *testing.T, pc *consumer.PushConsumer, topic string) func() map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	err := pc.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen[string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(seen))
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

func send(t *testing.T, p *producer.Producer, topic, body string) *producer.SendResult {
	t.Helper()
	res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
	if err != nil {
		t.Fatalf("send %s: %v", body, err)
	}
	return res
}

func TestStartCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mqtest.Config
	}{
		{"1ns_1group_tcp", mqtest.Config{}},
		{"2ns_2groups_tcp", mqtest.Config{NameServers: 2, BrokerGroups: 2}},
		{"2ns_2groups_inproc", mqtest.Config{NameServers: 2, BrokerGroups: 2, InProcess: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mqtest.StartCluster(t, tc.cfg)
			if got, want := len(c.NameServerAddrs()), max(1, tc.cfg.NameServers); got != want {
				t.Fatalf("%d name servers, want %d", got, want)
			}
			if got, want := len(c.Masters()), max(1, tc.cfg.BrokerGroups); got != want {
				t.Fatalf("%d masters, want %d", got, want)
			}
			const topic = "Orders"
			c.CreateTopic(topic, 4)
			p := c.NewProducer()
			brokers := map[string]bool{}
			for i := range 16 {
				brokers[send(t, p, topic, string(rune('a'+i))).Queue.BrokerName] = true
			}
			if len(brokers) != len(c.Masters()) {
				t.Fatalf("sends reached %v, want every one of %d groups", brokers, len(c.Masters()))
			}
			seen := consumeAll(t, c.NewPushConsumer(), topic)
			mqtest.Eventually(t, "16 messages consumed", func() bool { return len(seen()) == 16 })
		})
	}
}

// A killed master restarts on its store and on its ports, broker and HA (Restart's contract
// while they are free): what it stored before is consumed after.
func TestKillRestartMaster(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{})
	const topic = "Restart"
	c.CreateTopic(topic, 2)
	p := c.NewProducer()
	for _, b := range []string{"m1", "m2", "m3"} {
		send(t, p, topic, b)
	}
	m := c.Master(0)
	addr, haAddr := m.Addr(), m.Current().HAAddr()
	if haAddr == "" {
		t.Fatal("the master serves no HA port")
	}
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}
	if m.Running() || m.Current() != nil {
		t.Fatal("killed master still running")
	}
	if err := c.KillMaster(0); err != nil {
		t.Fatalf("second kill: %v", err)
	}
	if err := c.Restart(m); err != nil {
		t.Fatal(err)
	}
	if got, gotHA := m.Addr(), m.Current().HAAddr(); got != addr || gotHA != haAddr {
		// Restart may move only off a port someone took meanwhile (TestRestartOnTakenPort); one
		// we can bind now was free then, barring a holder that came and went within the restart.
		for _, a := range []string{addr, haAddr} {
			if l, err := net.Listen("tcp", a); err == nil {
				l.Close()
				t.Fatalf("restarted on %s (HA %s), not on %s (HA %s), though %s is free", got, gotHA, addr, haAddr, a)
			}
		}
		t.Logf("ports %s, %s were taken by another process; restarted on %s, %s", addr, haAddr, got, gotHA)
	}
	mqtest.Eventually(t, "a send after the restart", func() bool {
		_, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("m4")))
		return err == nil
	})
	seen := consumeAll(t, c.NewPushConsumer(consumer.WithGroup("after_restart")), topic)
	mqtest.Eventually(t, "m1..m4 consumed", func() bool {
		s := seen()
		return s["m1"] > 0 && s["m2"] > 0 && s["m3"] > 0 && s["m4"] > 0
	})
}

// A master whose port was taken while it was down restarts on a new one, registers it with the
// name server, and serves what it stored before.
func TestRestartOnTakenPort(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{})
	const topic = "Moved"
	c.CreateTopic(topic, 2)
	send(t, c.NewProducer(), topic, "before")
	m := c.Master(0)
	addr := m.Addr()
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}
	squatter, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("take the killed master's port %s: %v", addr, err)
	}
	defer squatter.Close()
	if err := c.Restart(m); err != nil {
		t.Fatal(err)
	}
	if m.Addr() == addr || !m.Running() {
		t.Fatalf("restarted on %s (running %v), the taken port was %s", m.Addr(), m.Running(), addr)
	}
	info := c.NameServerNodes()[0].Wiring().NameServer().ClusterInfo()
	if got := info.BrokerAddrTable[m.BrokerName].BrokerAddrs[0]; got != m.Addr() {
		t.Fatalf("name server knows the master at %s, want %s", got, m.Addr())
	}
	// A new producer: the old one's route still names the squatter, which never answers.
	send(t, c.NewProducer(), topic, "after")
	seen := consumeAll(t, c.NewPushConsumer(consumer.WithGroup("moved")), topic)
	mqtest.Eventually(t, "both messages consumed", func() bool {
		s := seen()
		return s["before"] > 0 && s["after"] > 0
	})
}

// A restarted name server (same port) learns every broker again from their registrations.
func TestRestartNameServer(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 2, BrokerGroups: 2})
	ns := c.NameServerNodes()[0]
	if err := c.Kill(ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ns); err != nil { // returns once both brokers registered again
		t.Fatal(err)
	}
	info := ns.Wiring().NameServer().ClusterInfo()
	if len(info.BrokerAddrTable) != 2 {
		t.Fatalf("restarted name server knows %v", info.BrokerAddrTable)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []mqtest.Config{{Role: "LEADER"}, {SlavesPerGroup: -1}, {ControllerMode: true},
		{Controllers: -1}, {Controllers: 1, ControllerMode: true, MinInSyncReplicas: 2}} {
		if err := mqtest.Validate(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
