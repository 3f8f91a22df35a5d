package mq

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/probes"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Consumers across a broker restart (issue 18): a group of three push consumers consumes a
// steady stream from one node (name service and broker); the node is closed and started again
// on the same address and store while a fourth member joins. A restarted broker has forgotten
// every member, so the new one registers alone and takes every queue; the old members must
// come back and re-register at once, or both pull the same queues until their next heartbeat
// (30 s): a duplicate storm. Bounds, per restart: duplicates at most what was in flight (pull
// batch x queues), and every queue delivering again within 1 s of the node being ready,
// measured from StartNode's return to the delivery of a message sent to each queue right then.
// The consumers run with RocketMQ's default periods (heartbeat 30 s, rebalance 20 s, pull
// error delay 1 s), the ones the storm comes from.

var restartEvents = flag.Int("restart-events", 1,
	"restarts per transport in TestRestartConsumerGroup (issue 18's acceptance runs 5)")

const (
	rcQueues      = 8
	rcDupBound    = consumer.DefaultPullBatchSize * rcQueues
	rcResumeBound = time.Second
	rcTopic       = "RestartConsume"
	rcGroup       = "restart-group"
	rcSendRate    = 100 // messages a second, round robin over the queues
)

func TestRestartConsumerGroup(t *testing.T) {
	for _, transport := range []string{"inproc", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			s := startRestartScenario(t, transport)
			for k := range *restartEvents {
				s.restart(t, fmt.Sprintf("restart %d without a new member", k), false)
				s.restart(t, fmt.Sprintf("restart %d with a new member", k), true)
			}
		})
	}
}

// restartScenario is one node, its store and address, and the group consuming from it.
type restartScenario struct {
	transport string
	dir, addr string
	node      atomic.Pointer[Node]
	ta        *tally
	members   []*consumer.PushConsumer
	joined    int // members started so far
	events    int // restarts so far
	probes    *probes.Log
}

func startRestartScenario(t *testing.T, transport string) *restartScenario {
	s := &restartScenario{transport: transport, dir: t.TempDir(), ta: newTally(), probes: probes.NewLog()}
	n := s.startNode(t, "127.0.0.1:0")
	s.addr = n.Addr()
	t.Cleanup(func() { s.node.Load().Close() })
	s.createTopic(t)
	for range 3 {
		s.join(t)
	}
	waitUntil(t, 10*time.Second, "three members sharing the queues", s.splitStable)
	s.sendProbes(t, "warmup")
	for q, at := range s.probes.Wait("warmup", rcQueues) {
		if at.IsZero() {
			t.Fatalf("queue %d delivered nothing", q)
		}
	}
	return s
}

// startNode starts the node on addr and the scenario's store. A restart on the same address
// may find the port held for a moment by the closed listener; it tries again for a while. The
// HA listener takes a free port: the default, the broker's port + 1, may meanwhile be the
// ephemeral port of some client's connection.
func (s *restartScenario) startNode(t *testing.T, addr string) *Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := StartNode(Options{Listen: addr, Logger: &l, Store: config.Store{Dir: s.dir, SegmentBytes: 8 << 20}, HA: config.HA{Listen: "127.0.0.1:0"}})
		if err == nil {
			s.node.Store(n)
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("start on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transport returns a new transport to the node of the scenario's kind; the caller closes it.
func (s *restartScenario) newTransport() remoting.Transport {
	if s.transport == "inproc" {
		return s.node.Load().NewTransport()
	}
	return remoting.NewClient(remoting.ClientOptions{})
}

func (s *restartScenario) invoke(t *testing.T, tr remoting.Transport, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.InvokeSync(ctx, s.addr, req)
	if err != nil {
		t.Fatalf("request %d: %v", req.Code, err)
	}
	return resp
}

func (s *restartScenario) createTopic(t *testing.T) {
	t.Helper()
	tr := s.newTransport()
	defer tr.Close()
	h := &protocol.CreateTopicRequestHeader{Topic: rcTopic, DefaultTopic: "TBW102", ReadQueueNums: rcQueues,
		WriteQueueNums: rcQueues, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	if resp := s.invoke(t, tr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)); resp.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	waitUntil(t, 10*time.Second, "route of "+rcTopic, func() bool {
		resp := s.invoke(t, tr, route.BuildGetRouteInfo(rcTopic))
		if resp.Code != remoting.Success {
			return false
		}
		r, err := route.DecodeRouteInfoResponse(resp)
		return err == nil && len(r.QueueDatas) == 1 && r.QueueDatas[0].ReadQueueNums == rcQueues
	})
}

// join starts one more member of the group, with RocketMQ's default periods.
func (s *restartScenario) join(t *testing.T) {
	t.Helper()
	pc, err := s.newMember(t)
	if err != nil {
		t.Fatal(err)
	}
	s.members = append(s.members, pc)
}

// newMember starts a member; it may run on any goroutine.
func (s *restartScenario) newMember(t *testing.T) (*consumer.PushConsumer, error) {
	s.joined++
	who := fmt.Sprintf("m%d", s.joined)
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	opts := []consumer.Option{consumer.WithNameServers(s.addr), consumer.WithGroup(rcGroup), consumer.WithLogger(&l),
		consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-" + who),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{})}
	if s.transport == "inproc" {
		opts = append(opts, consumer.WithOwnedTransport(s.node.Load().NewTransport()))
	}
	pc, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { pc.Close() })
	if err := pc.Subscribe(rcTopic, "*", s.listener(who)); err != nil {
		return nil, err
	}
	return pc, pc.Start()
}

func (s *restartScenario) listener(who string) consumer.Listener {
	record := s.ta.listener(who)
	return func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		now := time.Now()
		for _, m := range msgs {
			s.probes.Saw(string(m.Body), now)
		}
		return record(ctx, msgs)
	}
}

// splitStable reports whether the members split the topic's queues.
func (s *restartScenario) splitStable() bool { return probes.SplitStable(s.members, rcTopic, rcQueues) }

// sendProbes stores one message in each queue, straight to the broker.
func (s *restartScenario) sendProbes(t *testing.T, tag string) {
	t.Helper()
	tr := s.newTransport()
	defer tr.Close()
	for q := range rcQueues {
		if resp := s.invoke(t, tr, probes.Request(rcTopic, rcQueues, tag, q)); resp.Code != remoting.Success {
			t.Fatalf("probe to queue %d: %d %s", q, resp.Code, resp.Remark)
		}
	}
}

// steadySender sends rcSendRate messages a second until stop closes, keeping the bodies the
// broker acknowledged; sends that fail while the node is away are not kept.
func (s *restartScenario) steadySender(t *testing.T, tag string, stop <-chan struct{}) (acked func() []string, done <-chan struct{}) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	opts := []producer.Option{producer.WithNameServers(s.addr), producer.WithLogger(&l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-p-" + tag)}
	if s.transport == "inproc" {
		opts = append(opts, producer.WithOwnedTransport(s.node.Load().NewTransport()))
	}
	p, err := producer.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []string
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer p.Close()
		tick := time.NewTicker(time.Second / rcSendRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			body := fmt.Sprintf("%s-%d", tag, i)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := p.SendSync(ctx, producer.NewMessage(rcTopic, []byte(body)))
			cancel()
			if err == nil {
				mu.Lock()
				bodies = append(bodies, body)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}, finished
}

// restart is one restart event: under steady sends the node is closed and started again,
// while a new member joins if join is set; then the duplicates it cost and how soon every
// queue delivered again are checked. Without a new member, the members holding the queues must
// come back on their own; with one, the oldest member leaves afterwards so that the next event
// starts from three members again.
func (s *restartScenario) restart(t *testing.T, event string, join bool) {
	s.events++
	tag := fmt.Sprintf("e%d", s.events)
	stop := make(chan struct{})
	acked, sent := s.steadySender(t, tag, stop)
	waitUntil(t, 10*time.Second, "steady consumption", func() bool { return len(acked()) >= rcSendRate/2 })
	dupsBefore := s.ta.dups()

	if err := s.node.Load().Close(); err != nil {
		t.Fatal(err)
	}
	s.startNode(t, s.addr)
	ready := time.Now()
	joined := make(chan error, 1)
	if join {
		go func() {
			pc, err := s.newMember(t)
			if err == nil {
				s.members = append(s.members, pc)
			}
			joined <- err
		}()
	} else {
		joined <- nil
	}
	s.sendProbes(t, tag)
	if err := <-joined; err != nil {
		t.Fatalf("%s: the new member: %v", event, err)
	}
	delivered := s.probes.Wait(tag, rcQueues)

	deadline := time.Now().Add(10 * time.Second)
	for !s.splitStable() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	settled := time.Since(ready).Round(time.Millisecond)
	if !s.splitStable() {
		t.Errorf("%s: the members' queues still overlap or leave gaps %v after the restart", event, settled)
	}
	// Sends go on for a while with the group settled, so duplicates of a split that only
	// looks settled would show.
	after := len(acked())
	waitUntil(t, 10*time.Second, "sends after the restart", func() bool { return len(acked()) >= after+rcSendRate/2 })
	close(stop)
	<-sent
	bodies := acked()
	waitUntil(t, 15*time.Second, "every acknowledged message consumed", func() bool { return len(s.ta.missing(bodies)) == 0 })
	dups := s.ta.dups() - dupsBefore

	var resume []time.Duration
	for q, at := range delivered {
		if at.IsZero() {
			t.Errorf("%s: queue %d delivered nothing in 40 s", event, q)
			at = time.Now()
		}
		resume = append(resume, at.Sub(ready).Round(time.Millisecond))
	}
	t.Logf("%s: %d duplicates (bound %d), resume per queue after ready %v, queues shared again %v after ready, %d acknowledged",
		event, dups, rcDupBound, resume, settled, len(bodies))
	if dups > rcDupBound {
		t.Errorf("%s: %d duplicates, want at most pull batch x queues = %d", event, dups, rcDupBound)
	}
	for q, d := range resume {
		if d > rcResumeBound {
			t.Errorf("%s: queue %d delivered again %v after the node was ready, want at most %v", event, q, d, rcResumeBound)
		}
	}
	if !join {
		return
	}
	oldest := s.members[0]
	s.members = s.members[1:]
	if err := oldest.Close(); err != nil {
		t.Errorf("close the oldest member: %v", err)
	}
	waitUntil(t, 30*time.Second, "three members sharing the queues again", s.splitStable)
}
