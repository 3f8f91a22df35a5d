package consumer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// lineLog collects log lines for a test to read while the consumer still writes.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *lineLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// laterConsumer is a push or a lite pull consumer of one topic, reduced to what the test needs:
// start it and read the bodies it consumed.
type laterConsumer interface {
	Start() error
	Close() error
	bodies() []string
}

type laterPush struct {
	*PushConsumer
	got seen
}

func (c *laterPush) bodies() []string { return c.got.bodies() }

type laterPull struct {
	*PullConsumer
	got  seen
	stop context.CancelFunc
	done chan struct{}
}

func (c *laterPull) Start() error {
	if err := c.PullConsumer.Start(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		for {
			msgs, err := c.Poll(ctx)
			if err != nil {
				return
			}
			c.got.add("poll", msgs)
		}
	}()
	return nil
}

func (c *laterPull) Close() error {
	if c.stop != nil {
		c.stop()
		<-c.done
	}
	return c.PullConsumer.Close()
}

func (c *laterPull) bodies() []string { return c.got.bodies() }

func newLaterConsumer(t *testing.T, kind, topic string, opts []Option) laterConsumer {
	t.Helper()
	switch kind {
	case "push":
		c := &laterPush{}
		pc, err := NewPushConsumer(opts...)
		if err != nil {
			t.Fatal(err)
		}
		c.PushConsumer = pc
		if err := pc.Subscribe(topic, "*", c.got.recorder("push")); err != nil {
			t.Fatal(err)
		}
		return c
	default:
		pc, err := NewPullConsumer(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Subscribe(topic, "*"); err != nil {
			t.Fatal(err)
		}
		return &laterPull{PullConsumer: pc}
	}
}

// laterProducer sends through n's in-process transport or over TCP.
func laterProducer(t *testing.T, n *node.Node, transport string) *producer.Producer {
	t.Helper()
	opts := []producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup("later-pg"),
		producer.WithInstanceName("later-p-" + transport)}
	if transport == "inproc" {
		opts = append(opts, producer.WithOwnedTransport(n.NewTransport()))
	}
	p, err := producer.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A consumer started before its topic exists (the usual order in a test: consumer first, then
// the producer whose first send creates the topic) starts, says once in its log that the topic
// is missing, and consumes every message once the topic exists, from its first: a new group
// consuming from the last offset reads a young queue from offset 0 (the broker answers
// QUERY_CONSUMER_OFFSET 0 while the queue's first message is in memory, as RocketMQ 4.9). Push
// and lite pull consumers, in process and over TCP. The rebalance interval is an hour, so the
// route refresh (every 50 ms here, pollNameServerInterval) is what finds the new topic.
func TestConsumerStartsBeforeItsTopic(t *testing.T) {
	for _, kind := range []string{"push", "pull"} {
		for _, transport := range transports {
			t.Run(kind+"/"+transport, func(t *testing.T) {
				n := testNode(t)
				topic := "Orders_" + kind + "_" + transport
				logs := &lineLog{}
				l := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.InfoLevel)
				opts := append(fastOptions(t, n, transportFor(t, n, transport), "later-"+kind+"-"+transport, "later-c-"+kind),
					WithConsumeFrom(FromLastOffset, time.Time{}), WithRebalanceInterval(time.Hour),
					WithPollNameServerInterval(50*time.Millisecond), WithLogger(&l))
				c := newLaterConsumer(t, kind, topic, opts)
				if err := c.Start(); err != nil {
					t.Fatalf("Start before the topic exists: %v", err)
				}
				t.Cleanup(func() { c.Close() })
				// Wall time: several route refreshes and rebalances pass while the topic is
				// missing, which must not repeat the log line.
				time.Sleep(300 * time.Millisecond)

				p := laterProducer(t, n, transport)
				var want []string
				for i := range 20 {
					body := fmt.Sprintf("order-%d", i)
					if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body))); err != nil {
						t.Fatal(err)
					}
					want = append(want, body)
				}
				slices.Sort(want)
				eventually(t, "every message consumed", func() bool { return len(c.bodies()) >= len(want) })
				if diff := cmp.Diff(want, c.bodies()); diff != "" {
					t.Errorf("consumed (-want +got):\n%s", diff)
				}
				if n := logs.count("the topic does not exist yet"); n != 1 {
					t.Errorf("the missing topic logged %d times, want once", n)
				}
				if n := logs.count("the topic exists now"); n != 1 {
					t.Errorf("the topic's arrival logged %d times, want once", n)
				}
			})
		}
	}
}

// The same through the rebalance loop alone: with RocketMQ's 30 s route refresh, the next
// rebalance (every 200 ms here) asks the name servers for the missing topic and takes it.
func TestConsumerStartsBeforeItsTopicRebalance(t *testing.T) {
	n := testNode(t)
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "later-rb", "later-rb"),
		WithConsumeFrom(FromLastOffset, time.Time{}))
	c := newLaterConsumer(t, "push", "OrdersRB", opts)
	if err := c.Start(); err != nil {
		t.Fatalf("Start before the topic exists: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	p := laterProducer(t, n, "inproc")
	for i := range 10 {
		if _, err := p.SendSync(context.Background(), producer.NewMessage("OrdersRB", []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every message consumed", func() bool { return len(c.bodies()) >= 10 })
	if got := len(c.bodies()); got != 10 {
		t.Errorf("consumed %d messages, want 10", got)
	}
}

// A consumer of two topics, one there at Start and one created later: the broker knows the
// consumer already, so nothing notifies it when the second topic appears; the route refresh
// (50 ms here) finding the new topic makes it rebalance, as its rebalance interval is an hour.
func TestSecondTopicCreatedLater(t *testing.T) {
	n := testNode(t)
	a := newAdmin(t, n)
	a.createTopic("First", 1)
	opts := append(fastOptions(t, n, transportFor(t, n, "inproc"), "later-two", "later-two"),
		WithConsumeFrom(FromLastOffset, time.Time{}), WithRebalanceInterval(time.Hour),
		WithPollNameServerInterval(50*time.Millisecond))
	var got seen
	pc, err := NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"First", "Second"} {
		if err := pc.Subscribe(topic, "*", got.recorder(topic)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	eventually(t, "First's queue held", func() bool { return len(heldQueues(pc, "First")) == 1 })
	p := laterProducer(t, n, "inproc")
	for i := range 5 {
		if _, err := p.SendSync(context.Background(), producer.NewMessage("Second", []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every message of Second consumed", func() bool { return got.count() >= 5 })
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "4"}, got.bodies()); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}
}
