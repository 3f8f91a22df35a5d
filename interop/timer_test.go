package interop

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	mqconsumer "github.com/mqgo/mq/consumer"
	mqproducer "github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// timerPrecision is the node's default TimerPrecision; timerSlack is what a loaded shared
// machine may add between a slot's end and the store (the latency is logged).
const (
	timerPrecision = 100 * time.Millisecond
	timerSlack     = 400 * time.Millisecond
)

// arrival is when a timer message was due (its TIMER_OUT_MS), stored in its topic and received.
type arrival struct{ due, stored, received time.Time }

// arrivals records the first arrival of each body and counts every delivery.
type arrivals struct {
	mu     sync.Mutex
	first  map[string]arrival
	count  map[string]int
	all    chan struct{}
	expect int
}

func newArrivals(expect int) *arrivals {
	return &arrivals{first: map[string]arrival{}, count: map[string]int{}, all: make(chan struct{}), expect: expect}
}

// add records a delivery. The due time is TIMER_OUT_MS, which the broker sets when it holds a
// message back, else TIMER_DELIVER_MS (a message whose time had passed when it was sent).
func (a *arrivals) add(body, timerOut, deliverAt string, stored time.Time) {
	now := time.Now()
	due, err := strconv.ParseInt(timerOut, 10, 64)
	if err != nil {
		due, _ = strconv.ParseInt(deliverAt, 10, 64)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count[body]++
	if a.count[body] > 1 {
		return
	}
	a.first[body] = arrival{time.UnixMilli(due), stored, now}
	if len(a.first) == a.expect {
		close(a.all)
	}
}

// check waits for every message, then checks each was stored no earlier than due and at most
// the precision (plus slack) after it, received no earlier than due, and delivered once.
func (a *arrivals) check(t *testing.T) {
	t.Helper()
	select {
	case <-a.all:
	case <-time.After(20 * time.Second):
		a.mu.Lock()
		defer a.mu.Unlock()
		t.Fatalf("timed out; arrived %v", a.count)
	}
	time.Sleep(time.Second) // a second delivery would show up by now; absence only is checked
	a.mu.Lock()
	defer a.mu.Unlock()
	for body, r := range a.first {
		late := r.stored.Sub(r.due)
		t.Logf("%s: stored %v after its time, received %v after", body, late, r.received.Sub(r.due))
		if r.due.UnixMilli() == 0 || late < 0 || r.received.Before(r.due) {
			t.Errorf("%s early or without TIMER_OUT_MS: due %v, stored %v, received %v", body, r.due, r.stored, r.received)
		}
		if late > timerPrecision+timerSlack {
			t.Errorf("%s stored %v late", body, late)
		}
		if a.count[body] != 1 {
			t.Errorf("%s delivered %d times", body, a.count[body])
		}
	}
}

// TestOfficialDelayTimestamp: the official client's WithDelayTimestamp (TIMER_DELIVER_MS)
// reaches its push consumer no earlier than asked, within the precision, once.
func TestOfficialDelayTimestamp(t *testing.T) {
	n := startNode(t)
	const topic = "OfficialTimer"
	createTopic(t, n, topic, 2)
	createTopic(t, n, "WarmUp", 1)
	got := newArrivals(3)
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(n)), consumer.WithGroupName("cg-official-timer"),
		consumer.WithInstance(uniqueInstance(t.Name())), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				got.add(string(m.Body), m.GetProperty("TIMER_OUT_MS"), m.GetProperty(primitive.PropertyTimerDeliverMS),
					time.UnixMilli(m.StoreTimestamp))
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	p := newProducer(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, primitive.NewMessage("WarmUp", []byte("route"))); err != nil {
		t.Fatal(err)
	}
	for i, d := range []time.Duration{time.Second, 1300 * time.Millisecond, 1700 * time.Millisecond} {
		due := time.Now().Add(d)
		m := primitive.NewMessage(topic, []byte("official-"+strconv.Itoa(i))).WithDelayTimestamp(due)
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send: %v %v", res, err)
		}
	}
	got.check(t)
}

// TestOurProducerTimer: our producer's WithDeliverTime and WithDeliverAfter, over TCP and in
// process, to our consumer.
func TestOurProducerTimer(t *testing.T) {
	n := startNode(t)
	const topic = "OurTimer"
	createTopic(t, n, topic, 2)
	createTopic(t, n, "WarmUp", 1)
	got := newArrivals(4)
	ourConsumer(t, n, "cg-our-timer", uniqueInstance(t.Name()), topic, "*",
		func(_ context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
			for _, m := range msgs {
				got.add(string(m.Body), m.Properties["TIMER_OUT_MS"], m.Properties["TIMER_DELIVER_MS"], m.StoreTime)
			}
			return mqconsumer.ConsumeSuccess, nil
		})
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	inproc, err := n.NewProducer(mqproducer.WithGroup("our-pg-inproc"), mqproducer.WithLogger(&log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inproc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	producers := map[string]*mqproducer.Producer{"tcp": newOurProducer(t, n), "inproc": inproc}
	for name, p := range producers {
		// The first send looks the route up; the timer messages should not wait for that.
		if _, err := p.SendSync(ctx, mqproducer.NewMessage("WarmUp", []byte(name))); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range producers {
		at := mqproducer.NewMessage(topic, []byte(name+"-at")).WithDeliverTime(time.Now().Add(time.Second))
		after := mqproducer.NewMessage(topic, []byte(name+"-after")).WithDeliverAfter(1500 * time.Millisecond)
		for _, m := range []*mqproducer.Message{at, after} {
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatalf("%s send: %v", name, err)
			}
		}
	}
	got.check(t)
}
