package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	mqadmin "github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/controller"
	ictl "github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/internal/freeport"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// officialRouteRefresh is rocketmq-client-go's _PullNameServerInterval: a constant that no
// option shortens, so a client keeps sending to a dead master until its next tick.
const officialRouteRefresh = 30 * time.Second

// failoverDeadline bounds each wait for the official clients to move to the new master: two
// route ticks, in case one falls between the old master's unregistration and the new one's
// registration, plus the election.
const failoverDeadline = 2*officialRouteRefresh + 15*time.Second

// freeLoopbackAddr probes a free loopback port and releases it: Raft's address must be in the
// controller's peer list before the controller listens on it.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func warnLogger(t *testing.T) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	return &l
}

// startControllerNameServer runs a name service with a one-member controller (n0) and test
// periods, like internal/node's controllerNode.
func startControllerNameServer(t *testing.T) *mq.Node {
	t.Helper()
	raft := freeLoopbackAddr(t)
	n, err := mq.StartNode(mq.Options{
		Listen:        "127.0.0.1:0",
		DisableBroker: true,
		Logger:        warnLogger(t),
		Store:         config.Store{Dir: t.TempDir()},
		Periods:       config.Periods{ScanNotActiveBrokerInterval: 100 * time.Millisecond, BrokerChannelExpiredTime: time.Second},
		Controller: config.Controller{
			ID:                     "n0",
			Impl:                   controller.Raft(),
			Peers:                  map[string]string{"n0": raft},
			RaftListen:             raft,
			ScanInterval:           50 * time.Millisecond,
			BrokerHeartbeatTimeout: time.Second,
			RaftTimeout:            100 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// startReplicatedBroker runs a broker in controller mode under ctl with internal/node's
// replicatedOpts periods; its registrations, unlike there, come well within the name
// service's one-second expiry, or the route would vanish between them.
func startReplicatedBroker(t *testing.T, ctl *mq.Node) *mq.Node {
	t.Helper()
	n, err := mq.StartNode(mq.Options{
		Listen:            "127.0.0.1:0",
		Logger:            warnLogger(t),
		DisableNameServer: true,
		NameServers:       []string{ctl.NameServerAddr()},
		Store:             config.Store{Dir: t.TempDir(), SegmentBytes: 1 << 20},
		Periods:           config.Periods{RegisterNameServerPeriod: 100 * time.Millisecond, RegisterNameServerPeriodMin: 100 * time.Millisecond},
		HA: config.HA{
			SendHeartbeatInterval: 100 * time.Millisecond,
			ReconnectInterval:     50 * time.Millisecond,
			TransferWaitInterval:  10 * time.Millisecond,
			SyncFlushTimeout:      3 * time.Second,
			SlaveSyncPeriod:       50 * time.Millisecond,
		},
		ControllerMode: config.ControllerMode{
			Addrs:                    []string{ctl.NameServerAddr()},
			AllAckInSyncStateSet:     true,
			HeartbeatInterval:        50 * time.Millisecond,
			SyncBrokerMetadataPeriod: 200 * time.Millisecond,
			CheckSyncStateSetPeriod:  100 * time.Millisecond,
			HAMaxTimeSlaveNotCatchup: time.Second,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// pollUntil polls cond every 20 ms until it holds, failing after timeout.
func pollUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routedMaster is the address the name service gives clients for broker id 0 of the default
// broker name, "" while it has none.
func routedMaster(adm *mqadmin.Admin) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ci, err := adm.ClusterInfo(ctx)
	if err != nil {
		return ""
	}
	bd, ok := ci.BrokerAddrTable[mq.DefaultBrokerName]
	if !ok {
		return ""
	}
	return bd.MasterAddr()
}

// knowsTopic reports whether the broker at addr has topic's config: a pull is refused with
// TOPIC_NOT_EXIST otherwise.
func knowsTopic(c *remoting.Client, addr, topic string) bool {
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: "failover-probe", Topic: topic, QueueOffset: 0,
		MaxMsgNums: 1, SysFlag: protocol.PullFlagSubscription, Subscription: "*"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil))
	return err == nil && resp.Code != remoting.TopicNotExist
}

// acks is what the sending goroutine saw acknowledged: each body with when its send began
// and when it was acknowledged.
type acks struct {
	mu             sync.Mutex
	bodies         []string
	started, acked []time.Time
	failed         int
}

func (a *acks) add(body string, started, acked time.Time) {
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.started = append(a.started, started)
	a.acked = append(a.acked, acked)
	a.mu.Unlock()
}

func (a *acks) fail() {
	a.mu.Lock()
	a.failed++
	a.mu.Unlock()
}

// begunAfter returns how many acknowledged sends began after t and when the first of them was
// acknowledged: a send in flight at t may be acknowledged by the old master after t.
func (a *acks) begunAfter(t time.Time) (int, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, first := 0, time.Time{}
	for i, started := range a.started {
		if started.After(t) {
			if n == 0 {
				first = a.acked[i]
			}
			n++
		}
	}
	return n, first
}

func (a *acks) snapshot() ([]string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...), a.failed
}

// The official producer keeps sending through the name service while the master of a
// three-broker controller-mode group (all-ack) is closed: once the controller elects a member
// of the SyncStateSet and the client's route refresh sees it, the same producer's sends
// succeed again, and the official push consumer receives every acknowledged message.
func TestOfficialClientsThroughControllerFailover(t *testing.T) {
	t.Parallel() // mostly waits for the election and the client's route refresh: side by side with the other waiting tests
	ctl := startControllerNameServer(t)
	brokers := make([]*mq.Node, 3)
	for i := range brokers {
		brokers[i] = startReplicatedBroker(t, ctl)
	}
	adm, err := mqadmin.New(mqadmin.Options{NameServers: []string{ctl.NameServerAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })

	// Only members of the SyncStateSet may take over (unclean elections are off), so every
	// broker must be in it before the kill.
	pollUntil(t, "every broker in the SyncStateSet", 20*time.Second, func() bool {
		for _, g := range ictl.Of(node.Of(ctl).Controller()).Groups() {
			if g.BrokerName == mq.DefaultBrokerName {
				return len(g.SyncStateSet) == len(brokers)
			}
		}
		return false
	})
	var oldMasterAddr string
	pollUntil(t, "a master in the name service", 10*time.Second, func() bool {
		oldMasterAddr = routedMaster(adm)
		return oldMasterAddr != ""
	})
	var master *mq.Node
	for _, b := range brokers {
		if b.BrokerAddr() == oldMasterAddr {
			master = b
		}
	}
	if master == nil {
		t.Fatalf("the name service routes to %s, none of the brokers", oldMasterAddr)
	}

	const topic = "OfficialFailover"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = adm.CreateTopic(ctx, oldMasterAddr, mqadmin.TopicConfig{Topic: topic, ReadQueueNums: 4, WriteQueueNums: 4})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ctl, topic)
	// A follower that takes over must already have the topic (slave metadata sync), or the
	// new master would not route it.
	probe := remoting.NewClient(remoting.ClientOptions{})
	defer probe.Close()
	pollUntil(t, "the followers know the topic", 10*time.Second, func() bool {
		for _, b := range brokers {
			if b != master && !knowsTopic(probe, b.BrokerAddr(), topic) {
				return false
			}
		}
		return true
	})

	got := newCollector()
	c := startConsumer(t, ctl, uniqueInstance("cg-failover"), uniqueInstance("failover-consumer"), topic, "*",
		func(m *primitive.MessageExt) consumer.ConsumeResult {
			got.add(m)
			return consumer.ConsumeSuccess
		})
	defer c.Shutdown()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(ctl)), producer.WithGroupName("pg-failover"),
		producer.WithInstanceName(uniqueInstance("failover-producer")), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()

	var sent acks
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Paced so that the outage, which lasts until the client's route tick, costs a few
		// thousand refused attempts rather than a busy loop.
		pace := time.NewTicker(10 * time.Millisecond)
		defer pace.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-pace.C:
			}
			body := fmt.Sprint("f-", i)
			started := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
			cancel()
			if err == nil && res.Status == primitive.SendOK {
				sent.add(body, started, time.Now())
			} else {
				sent.fail()
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	pollUntil(t, "50 acknowledged sends before the kill", 20*time.Second, func() bool {
		n, _ := sent.begunAfter(time.Time{})
		return n >= 50
	})
	killedAt := time.Now()
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	var newMasterAddr string
	var routedAt time.Time
	pollUntil(t, "a new master in the name service", failoverDeadline, func() bool {
		newMasterAddr = routedMaster(adm)
		routedAt = time.Now()
		return newMasterAddr != "" && newMasterAddr != oldMasterAddr
	})
	if !slices.ContainsFunc(brokers, func(b *mq.Node) bool { return b != master && b.BrokerAddr() == newMasterAddr }) {
		t.Fatalf("the name service routes to %s, none of the surviving brokers", newMasterAddr)
	}
	var firstAck time.Time
	pollUntil(t, "20 acknowledged sends begun after the kill", failoverDeadline, func() bool {
		var n int
		n, firstAck = sent.begunAfter(killedAt)
		return n >= 20
	})
	close(stop)
	<-done
	acked, failed := sent.snapshot()
	t.Logf("master %s closed; name service routes to %s after %v; first send begun after the kill acknowledged %v after it "+
		"(official route refresh every %v); %d sends acknowledged, %d failed",
		oldMasterAddr, newMasterAddr, routedAt.Sub(killedAt).Round(time.Millisecond),
		firstAck.Sub(killedAt).Round(time.Millisecond), officialRouteRefresh, len(acked), failed)

	// The consumer also pulls from the dead master until its own route tick.
	missing := func(msgs []*primitive.MessageExt) []string {
		seen := make(map[string]bool, len(msgs))
		for _, m := range msgs {
			seen[string(m.Body)] = true
		}
		var out []string
		for _, b := range acked {
			if !seen[b] {
				out = append(out, b)
			}
		}
		return out
	}
	deadline := time.Now().Add(failoverDeadline)
	for {
		got.mu.Lock()
		msgs := append([]*primitive.MessageExt(nil), got.msgs...)
		got.mu.Unlock()
		lost := missing(msgs)
		if len(lost) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged messages never consumed, e.g. %v", len(lost), len(acked), lost[:min(len(lost), 10)])
		}
		select {
		case <-got.more:
		case <-time.After(50 * time.Millisecond):
		}
	}
}
