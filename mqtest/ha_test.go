package mqtest_test

import (
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/mqtest"
)

// Master and slave: the slave connects before StartCluster returns, and takes every byte.
func TestMasterSlave(t *testing.T) {
	for _, role := range []mq.BrokerRole{mqtest.AsyncMaster, mqtest.SyncMaster} {
		t.Run(string(role), func(t *testing.T) {
			c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2, SlavesPerGroup: 1, Role: role})
			if got := len(c.Slaves()); got != 2 {
				t.Fatalf("%d slaves, want 2", got)
			}
			for g := range 2 {
				group := c.Group(g)
				if len(group) != 2 || group[0].ID != 0 || group[1].ID != 1 || group[1].BrokerName != group[0].BrokerName {
					t.Fatalf("group %d: %v", g, group)
				}
			}
			c.CreateTopic("Replicated", 2)
			p := c.NewProducer()
			for i := range 20 {
				send(t, p, "Replicated", string(rune('a'+i)))
			}
			for g := range 2 {
				m, s := c.Group(g)[0].Wiring().Broker().Store(), c.Group(g)[1].Wiring().Broker().Store()
				if role == mqtest.SyncMaster && s.MaxPhyOffset() < m.MaxPhyOffset() {
					// Every send was acknowledged by the slave: nothing to wait for.
					t.Fatalf("group %d: sync slave at %d behind master %d", g, s.MaxPhyOffset(), m.MaxPhyOffset())
				}
				mqtest.Eventually(t, "slave caught up", func() bool { return s.MaxPhyOffset() == m.MaxPhyOffset() })
			}
		})
	}
}

// A restarted slave connects to its master again before Restart returns.
func TestRestartSlave(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1})
	s := c.Slaves()[0]
	if err := c.Kill(s); err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer()
	c.CreateTopic("WhileDown", 1)
	send(t, p, "WhileDown", "x")
	if err := c.Restart(s); err != nil {
		t.Fatal(err)
	}
	m := c.Master(0).Wiring().Broker().Store()
	mqtest.Eventually(t, "restarted slave caught up", func() bool {
		return s.Wiring().Broker().Store().MaxPhyOffset() == m.MaxPhyOffset()
	})
}
