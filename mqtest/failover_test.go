package mqtest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// failoverConfig is the acceptance tests' cluster: three controllers, one group of three
// peers in controller mode, a send acknowledged once the whole SyncStateSet has it.
func failoverConfig() mqtest.Config {
	return mqtest.Config{Controllers: 3, ControllerMode: true, AllAck: true, SlavesPerGroup: 2}
}

// startFailoverCluster starts failoverConfig's cluster and waits until every broker is in the
// SyncStateSet, so that any of them may take over.
func startFailoverCluster(t testing.TB) *mqtest.Cluster {
	c := mqtest.StartCluster(t, failoverConfig())
	waitInSync(t, c, 3)
	return c
}

// waitInSync waits until group 0's SyncStateSet has n members.
func waitInSync(t testing.TB, c *mqtest.Cluster, n int) mqtest.GroupState {
	t.Helper()
	var st mqtest.GroupState
	mqtest.Eventually(t, fmt.Sprintf("%d brokers in the SyncStateSet", n), func() bool {
		var ok bool
		st, ok = c.ControllerGroup(0)
		return ok && len(st.SyncStateSet) == n
	})
	return st
}

// ack is when an acknowledged send began and when its acknowledgement came.
type ack struct{ began, done time.Time }

// senders send distinct bodies continuously from producers of their own (mqtest's, over TCP)
// and record which were acknowledged (SEND_OK) and when each send began.
type senders struct {
	mu       sync.Mutex
	acked    map[string]ack // by body
	statuses map[string]int // non-OK outcomes, by status or "error"
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startSenders(t *testing.T, c *mqtest.Cluster, topic string, producers int) *senders {
	s := &senders{acked: map[string]ack{}, statuses: map[string]int{}, stop: make(chan struct{})}
	for i := range producers {
		p := c.NewProducer()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-s.stop:
					return
				default:
				}
				body := fmt.Sprintf("p%d-%d", i, n)
				began := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body)))
				cancel()
				s.mu.Lock()
				switch {
				case err != nil:
					s.statuses["error"]++
				case res.Status == producer.SendOK:
					s.acked[body] = ack{began, time.Now()}
				default:
					s.statuses[res.Status.String()]++
				}
				s.mu.Unlock()
			}
		}()
	}
	t.Cleanup(s.halt)
	return s
}

// halt stops the senders and waits for their last sends.
func (s *senders) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// ackedSince counts the acknowledged sends that began at or after t0, and returns the earliest
// of their acknowledgements.
func (s *senders) ackedSince(t0 time.Time) (n int, first time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.acked {
		if !a.began.Before(t0) {
			n++
			if first.IsZero() || a.done.Before(first) {
				first = a.done
			}
		}
	}
	return n, first
}

// ackedBodies returns the acknowledged bodies.
func (s *senders) ackedBodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.acked))
	for b := range s.acked {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

func (s *senders) outcomes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{"SEND_OK": len(s.acked)}
	for k, v := range s.statuses {
		out[k] = v
	}
	return out
}

// requireHolds fails unless broker n holds every body of acked (queues queues of topic).
func requireHolds(t *testing.T, c *mqtest.Cluster, n *mqtest.Node, topic string, queues int, acked []string) {
	t.Helper()
	msgs, err := c.PullAll(n, topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	have := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		have[string(m.Body)] = true
	}
	var missing []string
	for _, b := range acked {
		if !have[b] {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s lacks %d of %d acknowledged messages, e.g. %v", n, len(missing), len(acked), missing[:min(5, len(missing))])
	}
	t.Logf("%s holds all %d acknowledged messages (%d stored)", n, len(acked), len(msgs))
}

// position is a message's place: queue and offset in it.
type position struct {
	queue  int
	offset int64
}

// deliveries records what a push consumer of topic was given, by position.
type deliveries struct {
	mu sync.Mutex
	at map[position]map[string]bool
}

func consumeByPosition(t *testing.T, c *mqtest.Cluster, topic string) *deliveries {
	t.Helper()
	d := &deliveries{at: map[position]map[string]bool{}}
	pc := c.NewPushConsumer()
	err := pc.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, m := range msgs {
			p := position{m.Queue.QueueID, m.QueueOffset}
			if d.at[p] == nil {
				d.at[p] = map[string]bool{}
			}
			d.at[p][string(m.Body)] = true
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	return d
}

// requireConsumed waits until the consumer was given something at every position of
// master's queues, then fails unless it got every acknowledged body. A consumer that read, on
// the old master, a message the SyncStateSet did not have would move past that position and
// skip the acknowledged message the new master stores there: the master's confirm offset (the
// lowest acknowledgement of the set, RocketMQ 5's getReputEndOffset without readUnCommitted)
// bounds what consumers see, so that cannot happen.
func requireConsumed(t *testing.T, c *mqtest.Cluster, d *deliveries, master *mqtest.Node, topic string, queues int, acked []string) {
	t.Helper()
	stored, err := c.PullAll(master, topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	where := make(map[string]position, len(stored))
	for _, m := range stored {
		where[string(m.Body)] = position{m.Queue.QueueID, m.QueueOffset}
	}
	mqtest.Eventually(t, "the consumer to reach the end of every queue", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, p := range where {
			if len(d.at[p]) == 0 {
				return false
			}
		}
		return true
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	for _, bodies := range d.at {
		for b := range bodies {
			seen[b] = true
		}
	}
	for _, b := range acked {
		if seen[b] {
			continue
		}
		p := where[b]
		if others := d.at[p]; len(others) > 0 {
			// The consumer was given another message at b's position: one the old master
			// held there, which the store's confirm offset must have kept from consumers.
			t.Fatalf("the consumer skipped acknowledged message %s at queue %d offset %d: it was given %v there", b, p.queue, p.offset, others)
		}
		t.Fatalf("the consumer never got acknowledged message %s (queue %d offset %d)", b, p.queue, p.offset)
	}
}

// newMaster waits until group 0 has a master other than old, and returns it.
func newMaster(t *testing.T, c *mqtest.Cluster, old *mqtest.Node) *mqtest.Node {
	t.Helper()
	var m *mqtest.Node
	mqtest.Eventually(t, "a new master", func() bool {
		m = c.Master(0)
		return m != nil && m != old
	})
	return m
}

// waitFollows waits until n is a running slave with its master's whole log, then checks one
// history: n's CommitLog is exactly master's.
func waitFollows(t *testing.T, c *mqtest.Cluster, n, master *mqtest.Node) {
	t.Helper()
	mqtest.Eventually(t, n.String()+" to follow "+master.String(), func() bool {
		w, mw := n.Wiring(), master.Wiring()
		if w == nil || mw == nil || w.Broker() == nil || mw.Broker() == nil || w.Broker().IsMaster() {
			return false
		}
		return w.Broker().Store().MaxPhyOffset() == mw.Broker().Store().MaxPhyOffset()
	})
	if err := mqtest.CommitLogPrefix(n, master); err != nil {
		t.Fatal(err)
	}
}

// The master dies under continuous sends: the controllers elect another, sends are
// acknowledged again, the new master has every acknowledged message and so does a push
// consumer; the old master comes back as a slave whose log is the new master's.
func TestFailoverKillMaster(t *testing.T) {
	c := startFailoverCluster(t)
	const topic, queues = "FailoverKill", 4
	c.CreateTopic(topic, queues)
	d := consumeByPosition(t, c, topic)
	s := startSenders(t, c, topic, 2)
	mqtest.Eventually(t, "sends acknowledged", func() bool { n, _ := s.ackedSince(time.Time{}); return n >= 50 })

	old := c.Master(0)
	before, _ := c.ControllerGroup(0)
	killed := time.Now()
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	next := newMaster(t, c, old)
	elected := time.Since(killed)
	mqtest.Eventually(t, "sends acknowledged by the new master", func() bool {
		n, _ := s.ackedSince(killed)
		return n >= 20
	})
	_, first := s.ackedSince(killed)
	t.Logf("master killed: %s master after %v, first send begun after it acknowledged %v after the kill", next, elected, first.Sub(killed))
	after, _ := c.ControllerGroup(0)
	if after.MasterEpoch <= before.MasterEpoch {
		t.Fatalf("epoch %d after the failover, %d before", after.MasterEpoch, before.MasterEpoch)
	}
	s.halt()
	t.Logf("outcomes: %v", s.outcomes())
	acked := s.ackedBodies()
	requireHolds(t, c, next, topic, queues, acked)
	requireConsumed(t, c, d, next, topic, queues, acked)

	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	if c.Master(0) != next {
		t.Fatalf("master %s after the old one restarted, want %s", c.Master(0), next)
	}
	waitFollows(t, c, old, next)
}

// The leading controller dies: another takes over with the group's master, epoch and
// SyncStateSet as they were; the master dies next, and the new leader elects its successor.
func TestFailoverControllerLeader(t *testing.T) {
	c := startFailoverCluster(t)
	const topic, queues = "FailoverLeader", 2
	c.CreateTopic(topic, queues)
	s := startSenders(t, c, topic, 1)
	mqtest.Eventually(t, "sends acknowledged", func() bool { n, _ := s.ackedSince(time.Time{}); return n >= 20 })

	leader := c.ControllerLeader()
	if leader == nil {
		t.Fatal("no controller leads")
	}
	before, _ := c.ControllerGroup(0)
	master := c.Master(0)
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	var next *mqtest.Node
	mqtest.Eventually(t, "a new controller leader", func() bool {
		next = c.ControllerLeader()
		return next != nil && next != leader
	})
	after, ok := c.ControllerGroup(0)
	if !ok || after.MasterID != before.MasterID || after.MasterEpoch != before.MasterEpoch ||
		!slices.Equal(after.SyncStateSet, before.SyncStateSet) {
		t.Fatalf("leader %s sees %+v, %s saw %+v", next, after, leader, before)
	}
	if m := c.Master(0); m != master {
		t.Fatalf("master %s after the controller leader died, want %s", m, master)
	}
	t.Logf("controller leader %s killed, %s leads with %+v", leader, next, after)

	killed := time.Now()
	if err := c.Kill(master); err != nil {
		t.Fatal(err)
	}
	successor := newMaster(t, c, master)
	mqtest.Eventually(t, "sends acknowledged by the new master", func() bool { n, _ := s.ackedSince(killed); return n >= 10 })
	st, _ := c.ControllerGroup(0)
	if c.ControllerLeader() != next || st.MasterEpoch <= before.MasterEpoch || st.MasterAddr != successor.Addr() {
		t.Fatalf("after the master died: leader %s, group %+v; want leader %s, master %s at a newer epoch than %d",
			c.ControllerLeader(), st, next, successor, before.MasterEpoch)
	}
	s.halt()
	requireHolds(t, c, successor, topic, queues, s.ackedBodies())

	// The old leader returns on its Raft port and log, and catches up as a follower.
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	mqtest.Eventually(t, "the restarted controller to learn the new epoch", func() bool {
		for _, g := range controller.Of(leader.Wiring().Controller()).Groups() {
			if g.BrokerName == successor.BrokerName && g.MasterEpoch == st.MasterEpoch && g.MasterAddr() == successor.Addr() {
				return true
			}
		}
		return false
	})
}

// The master is partitioned from the controllers and its slaves but not from clients: with
// all-ack it acknowledges nothing more; a slave is elected and takes sends; healed, the old
// master follows it, its unacknowledged tail cut: one history.
func TestFailoverIsolatedMaster(t *testing.T) {
	c := startFailoverCluster(t)
	const topic, queues = "FailoverIsolated", 2
	c.CreateTopic(topic, queues)
	s := startSenders(t, c, topic, 2)
	mqtest.Eventually(t, "sends acknowledged", func() bool { n, _ := s.ackedSince(time.Time{}); return n >= 20 })

	old := c.Master(0)
	// Longer than the master's wait for its SyncStateSet, so that the master's answer comes.
	p := c.NewProducer(producer.WithRetries(0), producer.WithSendTimeout(3*mqtest.ControllerModeSyncFlushTimeout))
	isolated := time.Now()
	c.Isolate(old)
	// Sent at once, this reaches the old master, whose routes stand until the election.
	ctx, cancel := context.WithTimeout(context.Background(), 3*mqtest.ControllerModeSyncFlushTimeout)
	res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("to-the-isolated-master")))
	cancel()
	if err != nil {
		t.Fatalf("send to the isolated master: %v", err)
	}
	if res.Status != producer.SendFlushSlaveTimeout && res.Status != producer.SendSlaveNotAvailable {
		t.Fatalf("the isolated master answered %v, want FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE", res.Status)
	}
	t.Logf("send to the isolated master: %v", res.Status)

	next := newMaster(t, c, old)
	mqtest.Eventually(t, "sends acknowledged by the new master", func() bool { n, _ := s.ackedSince(isolated); return n >= 20 })
	_, first := s.ackedSince(isolated)
	t.Logf("%s master, first send begun after it acknowledged %v after the partition", next, first.Sub(isolated))
	if !old.Wiring().Broker().IsMaster() {
		t.Fatalf("%s stopped being master while cut from the controllers", old)
	}
	s.halt()
	t.Logf("outcomes: %v", s.outcomes())
	acked := s.ackedBodies()
	requireHolds(t, c, next, topic, queues, acked)
	oldEnd := old.Wiring().Broker().Store().MaxPhyOffset()

	c.HealAll()
	waitFollows(t, c, old, next)
	t.Logf("healed: %s (log end %d while isolated) follows %s at %d", old, oldEnd, next, next.Wiring().Broker().Store().MaxPhyOffset())
	// Its unacknowledged tail is gone: what it holds now is the new master's.
	msgs, err := c.PullAll(old, topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if string(m.Body) == "to-the-isolated-master" {
			t.Fatal("the old master kept the message only it had")
		}
	}
}
