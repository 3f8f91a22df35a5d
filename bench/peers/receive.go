package peers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// drain counts deliveries and notes when the want-th arrived.
type drain struct {
	want int64
	got  atomic.Int64
	last atomic.Int64 // unix nanoseconds
	done chan struct{}
}

func newDrain(want int) *drain {
	return &drain{want: int64(want), done: make(chan struct{})}
}

func (d *drain) deliver([]byte) {
	if d.got.Add(1) == d.want {
		d.last.Store(time.Now().UnixNano())
		close(d.done)
	}
}

func (d *drain) wait(ctx context.Context) error {
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("received %d of %d: %w", d.got.Load(), d.want, ctx.Err())
	}
}

// consume fills the topic with msgs messages, then starts a consumer and measures the rate
// from its start to its last message. The start counts (a group join, a rebalance): timing from
// the first message instead would flatter clients that fetch megabytes at once, since their
// first delivery comes after much of the work.
func consume(ctx context.Context, n Node, topic string, msgs int) (Result, error) {
	return consumeWith(ctx, n, topic, msgs, func(deliver func([]byte)) (Consumer, error) {
		return n.Consumer(ctx, topic, "bench-consume", deliver)
	})
}

// consumeAcked is consume with a consumer that acknowledges each message and counts it once
// the broker confirmed the ack.
func consumeAcked(ctx context.Context, n Node, topic string, msgs int) (Result, error) {
	an, ok := clientOf(n).(AckingNode)
	if !ok {
		return Result{}, ErrUnsupported
	}
	return consumeWith(ctx, n, topic, msgs, func(deliver func([]byte)) (Consumer, error) {
		return an.AckingConsumer(ctx, topic, "bench-consume-ack", deliver)
	})
}

// consumeWith fills the topic, starts the consumer open makes and measures as consume says.
func consumeWith(ctx context.Context, n Node, topic string, msgs int, open func(deliver func([]byte)) (Consumer, error)) (r Result, err error) {
	p, err := n.Producer(ProducerConfig{AsyncWindow: asyncWindow})
	if err != nil {
		return r, err
	}
	err = fill(ctx, p, topic, msgs)
	if err = errors.Join(err, p.Close()); err != nil {
		return r, fmt.Errorf("fill: %w", err)
	}
	d := newDrain(msgs)
	start := time.Now()
	c, err := open(d.deliver)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	if err := d.wait(ctx); err != nil {
		return r, err
	}
	r.Msgs = msgs
	r.MsgsPerSec = rate(msgs, time.Unix(0, d.last.Load()).Sub(start))
	return r, nil
}

// latencies records, for every message of BodyBytes, the time from the send time stamped in
// its first 8 bytes to its delivery; shorter messages count as warm-up.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
	want    int
	done    chan struct{}
	warm    *drain
}

func (l *latencies) deliver(b []byte) {
	now := time.Now()
	if len(b) != BodyBytes {
		l.warm.deliver(b)
		return
	}
	sent := time.Unix(0, int64(binary.BigEndian.Uint64(b)))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples = append(l.samples, now.Sub(sent))
	if len(l.samples) == l.want {
		close(l.done)
	}
}

// endToEnd sends msgs messages at E2ERate, each stamped with its send time, to a running
// consumer, after warm-up messages that the consumer must have received (so routes, queue
// assignment and fetch sessions exist).
func endToEnd(ctx context.Context, n Node, topic string, msgs int) (r Result, err error) {
	p, err := n.Producer(ProducerConfig{})
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	warm := func(int) []byte { return []byte("warm-up") }
	if err := warmUp(ctx, p, topic, warm); err != nil {
		return r, err
	}
	l := &latencies{samples: make([]time.Duration, 0, msgs), want: msgs, done: make(chan struct{}), warm: newDrain(warmUpMsgs)}
	c, err := n.Consumer(ctx, topic, "bench-e2e", l.deliver)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	wctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	err = l.warm.wait(wctx)
	cancel()
	if err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	start := time.Now()
	for i := range msgs {
		// Sends keep to the schedule from the start: one that ran late is followed at once.
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / E2ERate)); wait > 0 {
			time.Sleep(wait)
		}
		b := slices.Clone(payload(i))
		binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
		if err := p.Send(ctx, topic, b); err != nil {
			return r, err
		}
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		l.mu.Lock()
		got := len(l.samples)
		l.mu.Unlock()
		return r, fmt.Errorf("received %d of %d: %w", got, msgs, ctx.Err())
	}
	r.Msgs = msgs
	l.mu.Lock()
	r.setLatency(l.samples)
	l.mu.Unlock()
	return r, nil
}

// nodeStart starts and closes a node cfg.StartRuns times, each on an empty store, and reports
// the time until it is ready as the latency percentiles; then once more, for the process's
// resident memory growth while the node idles (where /proc has it).
func nodeStart(_ context.Context, p Peer, cfg Config) (r Result, err error) {
	samples := make([]time.Duration, 0, cfg.StartRuns)
	for range cfg.StartRuns {
		d, err := startOnce(p, cfg.Dir)
		if err != nil {
			return r, err
		}
		samples = append(samples, d)
	}
	r.setLatency(samples)
	r.Durability = "default"
	growth, ok, err := idleRSSGrowth(p, cfg.Dir)
	if err != nil {
		return r, err
	}
	if ok {
		r.IdleRSSGrowth = &growth
	}
	return r, nil
}

func startOnce(p Peer, parent string) (time.Duration, error) {
	dir, err := os.MkdirTemp(parent, p.ID()+"-start-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	t := time.Now()
	n, err := Start(p, NodeConfig{Dir: dir})
	if err != nil {
		return 0, err
	}
	d := time.Since(t)
	return d, n.Close()
}
