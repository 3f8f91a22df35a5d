package mq_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// kindProducer is a producer of n made with opts, reaching it in process ("inproc", through the
// node's own transport) or over TCP ("tcp", by its name server address); closed at cleanup.
func kindProducer(t *testing.T, n *mq.Node, kind string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	var p *producer.Producer
	var err error
	if kind == "inproc" {
		p, err = n.NewProducer(opts...)
	} else {
		p, err = producer.New(append(opts, producer.WithNameServers(n.Addr()))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// deliveries counts what a push consumer received, by body.
type deliveries struct {
	mu   sync.Mutex
	seen map[string]int
	more chan struct{}
}

func (d *deliveries) add(msgs []*consumer.Message) {
	d.mu.Lock()
	for _, m := range msgs {
		d.seen[string(m.Body)]++
	}
	d.mu.Unlock()
	select {
	case d.more <- struct{}{}:
	default:
	}
}

// kindConsumer starts a push consumer of topic in group, in process or over TCP (see
// kindProducer), from the first offset, with rebalances in milliseconds and opts; it counts
// what it receives and is closed at cleanup.
func kindConsumer(t *testing.T, n *mq.Node, kind, topic, group string, opts ...consumer.Option) *deliveries {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	base := []consumer.Option{consumer.WithGroup(group), consumer.WithLogger(&l),
		consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-" + group),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50 * time.Millisecond)}
	var c *consumer.PushConsumer
	var err error
	if kind == "inproc" {
		c, err = n.NewPushConsumer(append(base, opts...)...)
	} else {
		c, err = consumer.NewPushConsumer(append(append(base, consumer.WithNameServers(n.Addr())), opts...)...)
	}
	if err != nil {
		t.Fatal(err)
	}
	d := &deliveries{seen: map[string]int{}, more: make(chan struct{}, 1)}
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		d.add(msgs)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return d
}

// waitFor waits until every body was delivered at least once, failing after 20 s.
func (d *deliveries) waitFor(t *testing.T, bodies ...string) {
	t.Helper()
	d.waitCount(t, 1, bodies...)
}

// waitCount waits until every body was delivered at least times times, failing after 20 s.
func (d *deliveries) waitCount(t *testing.T, times int, bodies ...string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		short := 0
		for _, b := range bodies {
			if d.seen[b] < times {
				short++
			}
		}
		d.mu.Unlock()
		if short == 0 {
			return
		}
		select {
		case <-d.more:
		case <-deadline.C:
			d.mu.Lock()
			defer d.mu.Unlock()
			t.Fatalf("%d of %v not delivered %d times (delivered: %v)", short, bodies, times, d.seen)
		}
	}
}

// waitExactly waits until want were each delivered, then lets anything else show up for a
// moment and checks that nothing else was, and nothing twice.
func (d *deliveries) waitExactly(t *testing.T, want ...string) {
	t.Helper()
	d.waitFor(t, want...)
	// Only absence is checked after this pause: a slow machine can hide a bug, never fail the test.
	time.Sleep(500 * time.Millisecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	var got []string
	for b, n := range d.seen {
		for range n {
			got = append(got, b)
		}
	}
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("delivered %v, want exactly %v", got, w)
	}
}
