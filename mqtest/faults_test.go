package mqtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// transports runs f over TCP and in-process.
func transports(t *testing.T, f func(t *testing.T, inProcess bool)) {
	t.Run("tcp", func(t *testing.T) { f(t, false) })
	t.Run("inproc", func(t *testing.T) { f(t, true) })
}

// trySend sends one message with a deadline and returns its status, or the error.
func trySend(p *producer.Producer, topic string, timeout time.Duration) (producer.SendStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("x")))
	if err != nil {
		return 0, err
	}
	return res.Status, nil
}

// A SYNC_MASTER cut from its slave still takes sends from clients but says the slave is
// missing; healed, it acknowledges normally again and the slave catches up.
func TestCutSyncMasterFromSlave(t *testing.T) {
	transports(t, func(t *testing.T, inProcess bool) {
		c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1, Role: mqtest.SyncMaster, InProcess: inProcess,
			Options: func(o *mq.Options) { o.HA.SyncFlushTimeout = 300 * time.Millisecond }})
		const topic = "CutSlave"
		c.CreateTopic(topic, 2)
		p := c.NewProducer()
		master, slave := c.Master(0), c.Group(0)[1]
		if st, err := trySend(p, topic, 5*time.Second); err != nil || st != producer.SendOK {
			t.Fatalf("send before the cut: %v, %v", st, err)
		}

		c.Cut(master, slave)
		var last producer.SendStatus
		mqtest.Eventually(t, "a send answered without the slave", func() bool {
			st, err := trySend(p, topic, 5*time.Second)
			if err != nil {
				t.Fatalf("send to a master cut only from its slave: %v", err)
			}
			last = st
			return st == producer.SendFlushSlaveTimeout || st == producer.SendSlaveNotAvailable
		})
		t.Logf("cut: %v", last)
		mstore, sstore := master.Wiring().Broker().Store(), slave.Wiring().Broker().Store()
		if s, m := sstore.MaxPhyOffset(), mstore.MaxPhyOffset(); s >= m {
			t.Fatalf("the cut slave is at %d, its master at %d: bytes crossed the cut", s, m)
		}
		// The stalled HA connection goes after HAHousekeeping; then the master knows.
		mqtest.Eventually(t, "the master to drop its slave", func() bool {
			return master.Wiring().HA().ConnectedSlaves() == 0
		})
		if st, err := trySend(p, topic, 5*time.Second); err != nil || st != producer.SendSlaveNotAvailable {
			t.Fatalf("send with the slave gone: %v, %v; want SLAVE_NOT_AVAILABLE", st, err)
		}

		c.Heal(master, slave)
		mqtest.Eventually(t, "SEND_OK after healing", func() bool {
			st, err := trySend(p, topic, 5*time.Second)
			return err == nil && st == producer.SendOK
		})
		mqtest.Eventually(t, "the slave to catch up", func() bool {
			return sstore.MaxPhyOffset() == mstore.MaxPhyOffset()
		})
	})
}

// A broker cut from the name server expires from its routes; healed, it registers again.
func TestCutBrokerFromNameServer(t *testing.T) {
	transports(t, func(t *testing.T, inProcess bool) {
		c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2, InProcess: inProcess})
		ns, cut, other := c.NameServerNodes()[0], c.Master(0), c.Master(1)
		registered := func(b *mqtest.Node) bool {
			bd, ok := ns.Wiring().NameServer().ClusterInfo().BrokerAddrTable[b.BrokerName]
			return ok && bd.BrokerAddrs[b.ID] == b.Addr()
		}

		c.Cut(cut, ns)
		mqtest.Eventually(t, "the cut broker to expire", func() bool { return !registered(cut) })
		if !registered(other) {
			t.Fatalf("%s expired too, though only %s was cut", other, cut)
		}

		c.Heal(cut, ns)
		mqtest.Eventually(t, "the healed broker to register again", func() bool { return registered(cut) })
	})
}

// A paused master does not answer: a send times out; resumed, sends work again.
func TestPauseMaster(t *testing.T) {
	transports(t, func(t *testing.T, inProcess bool) {
		c := mqtest.StartCluster(t, mqtest.Config{InProcess: inProcess})
		const topic = "Paused"
		c.CreateTopic(topic, 2)
		p := c.NewProducer(producer.WithRetries(0))
		if st, err := trySend(p, topic, 5*time.Second); err != nil || st != producer.SendOK {
			t.Fatalf("send before the pause: %v, %v", st, err)
		}

		c.Pause(c.Master(0))
		_, err := trySend(p, topic, 300*time.Millisecond)
		if !errors.Is(err, remoting.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("send to a paused master: %v, want a timeout", err)
		}

		c.Resume(c.Master(0))
		mqtest.Eventually(t, "SEND_OK after resuming", func() bool {
			st, err := trySend(p, topic, 5*time.Second)
			return err == nil && st == producer.SendOK
		})
	})
}

// Isolating a master cuts it from its slave and the name server; HealAll undoes it.
func TestIsolate(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1})
	const topic = "Isolated"
	c.CreateTopic(topic, 2)
	p := c.NewProducer(producer.WithRetries(0))
	master, ns := c.Master(0), c.NameServerNodes()[0]
	registered := func() bool {
		bd, ok := ns.Wiring().NameServer().ClusterInfo().BrokerAddrTable[master.BrokerName]
		return ok && bd.BrokerAddrs[0] == master.Addr()
	}

	c.Isolate(master)
	mqtest.Eventually(t, "the isolated master to lose its slave and its route", func() bool {
		return master.Wiring().HA().ConnectedSlaves() == 0 && !registered()
	})

	c.HealAll()
	mqtest.Eventually(t, "the slave and the route back, and sends through", func() bool {
		if master.Wiring().HA().ConnectedSlaves() != 1 || !registered() {
			return false
		}
		st, err := trySend(p, topic, 5*time.Second)
		return err == nil && st == producer.SendOK
	})
}

// CutClients fails the helpers' clients' requests to a node at once, over TCP and in-process.
func TestCutClients(t *testing.T) {
	transports(t, func(t *testing.T, inProcess bool) {
		c := mqtest.StartCluster(t, mqtest.Config{InProcess: inProcess})
		const topic = "ClientsCut"
		c.CreateTopic(topic, 2)
		// Retrying an unreachable broker until the deadline would only delay the error.
		p := c.NewProducer(producer.WithRetries(0), producer.WithRetryUnreachableUntilTimeout(false))
		if _, err := trySend(p, topic, 5*time.Second); err != nil {
			t.Fatalf("send before the cut: %v", err)
		}

		c.CutClients(c.Master(0))
		if _, err := trySend(p, topic, 5*time.Second); !errors.Is(err, remoting.ErrConnClosed) {
			t.Fatalf("send over a cut client link: %v, want ErrConnClosed", err)
		}

		c.HealClients(c.Master(0))
		if st, err := trySend(p, topic, 5*time.Second); err != nil || st != producer.SendOK {
			t.Fatalf("send after healing: %v, %v", st, err)
		}
	})
}
