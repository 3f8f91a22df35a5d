package mq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// Producers across a broker restart (issue 18): a node is closed under steady sync and async
// sends from a producer over TCP and one in-process, and comes back about a second later on
// the same address and store, well inside the 3 s send timeout. A send whose every broker is
// unreachable waits for one until its timeout, so the restart costs latency, never an error;
// and every acknowledged message is in the store the node reopened.

const restartDowntime = time.Second // how long the node stays away, under DefaultSendTimeout

func TestRestartProducerSendsSurvive(t *testing.T) {
	dir := t.TempDir()
	n := startRestartNode(t, "127.0.0.1:0", dir)
	addr := n.Addr()
	var node atomic.Pointer[mq.Node]
	node.Store(n)
	t.Cleanup(func() { node.Load().Close() })

	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	tcp, err := producer.New(producer.WithNameServers(addr), producer.WithLogger(&l),
		producer.WithInstanceName("restart_tcp"))
	if err != nil {
		t.Fatal(err)
	}
	inproc, err := n.NewProducer(producer.WithInstanceName("restart_inproc"), producer.WithLogger(&l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close(); inproc.Close() })

	var acks restartAcks
	for name, p := range map[string]*producer.Producer{"tcp": tcp, "inproc": inproc} {
		// The first send creates the topic; its metadata must be on disk before the close.
		topic := "Restart_" + name
		res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(topic+"-first")))
		if err != nil {
			t.Fatal(err)
		}
		acks.add(t, topic, topic+"-first", res)
	}
	time.Sleep(200 * time.Millisecond)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for name, p := range map[string]*producer.Producer{"tcp": tcp, "inproc": inproc} {
		topic := "Restart_" + name
		for k := range 2 {
			wg.Add(2)
			go func() { defer wg.Done(); sendSyncUntil(t, p, topic, fmt.Sprint("sync", k), stop, &acks) }()
			go func() { defer wg.Done(); sendAsyncUntil(t, p, topic, fmt.Sprint("async", k), stop, &acks) }()
		}
	}
	acks.waitFor(t, 200)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	before := acks.count()
	time.Sleep(restartDowntime)
	n = startRestartNode(t, addr, dir)
	node.Store(n)
	acks.waitFor(t, before+400)
	close(stop)
	wg.Wait()

	if f := acks.failures(); len(f) > 0 {
		t.Errorf("%d sends failed across a %v restart; first: %v", len(f), restartDowntime, f[0])
	}
	store := n.Broker().Store()
	for _, a := range acks.all() {
		if err := checkRecord(store, a.sentAck, a.topic); err != nil {
			t.Errorf("acknowledged message not in the store after the restart: %v", err)
		}
	}
	t.Logf("%d sends acknowledged, %d before the close", acks.count(), before)
}

// startRestartNode starts a node with its name service and broker on addr and store dir. A
// restart on the same address may find the port still held for a moment by the closed
// listener's last connections; it tries again for a few seconds. The HA listener takes any
// free port: its default, the broker's port + 1, may be a client's ephemeral port by then.
func startRestartNode(t *testing.T, addr, dir string) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := mq.StartNode(mq.Options{
			Listen: addr,
			Logger: &l,
			Store:  config.Store{Dir: dir, SegmentBytes: 8 << 20},
			HA:     config.HA{Listen: "127.0.0.1:0"},
		})
		if err == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("start on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sendSyncUntil sends one message after another to topic until stop closes.
func sendSyncUntil(t *testing.T, p *producer.Producer, topic, who string, stop <-chan struct{}, acks *restartAcks) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		body := fmt.Sprintf("%s-%s-%d", topic, who, i)
		res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
		if err != nil {
			acks.fail(fmt.Errorf("sync %s: %w", body, err))
		} else {
			acks.add(t, topic, body, res)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sendAsyncUntil keeps a few async sends in flight to topic until stop closes, then waits for
// their callbacks.
func sendAsyncUntil(t *testing.T, p *producer.Producer, topic, who string, stop <-chan struct{}, acks *restartAcks) {
	const inFlight = 4
	room := make(chan struct{}, inFlight)
	defer func() {
		for range inFlight {
			room <- struct{}{}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case room <- struct{}{}:
		}
		body := fmt.Sprintf("%s-%s-%d", topic, who, i)
		err := p.SendAsync(context.Background(), producer.NewMessage(topic, []byte(body)), func(res *producer.SendResult, err error) {
			defer func() { <-room }()
			if err != nil {
				acks.fail(fmt.Errorf("async %s: %w", body, err))
				return
			}
			acks.add(t, topic, body, res)
		})
		if err != nil {
			<-room
			acks.fail(fmt.Errorf("async %s: %w", body, err))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// restartAcks collects what the senders saw: each acknowledged message with where it was
// stored, and each failed send.
type restartAcks struct {
	mu     sync.Mutex
	acks   []topicAck
	failed []error
}

type topicAck struct {
	sentAck
	topic string
}

func (a *restartAcks) add(t *testing.T, topic, body string, res *producer.SendResult) {
	_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		t.Errorf("%s: offset message id %q: %v", body, res.OffsetMsgID, err)
		return
	}
	a.mu.Lock()
	a.acks = append(a.acks, topicAck{sentAck{phy, body}, topic})
	a.mu.Unlock()
}

func (a *restartAcks) fail(err error) {
	a.mu.Lock()
	a.failed = append(a.failed, err)
	a.mu.Unlock()
}

func (a *restartAcks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

func (a *restartAcks) all() []topicAck {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]topicAck(nil), a.acks...)
}

func (a *restartAcks) failures() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.failed...)
}

// waitFor waits until n sends were acknowledged; it fails the test (naming the first failed
// send, if any) when they are not within 30 s.
func (a *restartAcks) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for a.count() < n {
		if time.Now().After(deadline) {
			var first []string
			for _, err := range a.failures() {
				first = append(first, err.Error())
				if len(first) == 3 {
					break
				}
			}
			t.Fatalf("%d of %d sends acknowledged after 30 s; failures: %s", a.count(), n, strings.Join(first, "; "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
