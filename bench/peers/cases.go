package peers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

const (
	// BodyBytes is the size of every measured message.
	BodyBytes = 1024
	// E2ERate is the send rate of the end-to-end case, in messages per second.
	E2ERate = 5000
	// asyncWindow is the async sends in flight for clients that bound them (nats.go, mq).
	asyncWindow = 1024
	// concurrentProducers is the number of goroutines sending at once in the concurrent rows.
	concurrentProducers = 64
	// warmUpMsgs are sent before a measurement so that routes, connections and topics exist.
	warmUpMsgs = 100
	// warmUpTimeout bounds the wait for a consumer to receive the warm-up messages.
	warmUpTimeout = 30 * time.Second
)

// Config sizes a run.
type Config struct {
	// Msgs is the number of messages of each throughput case.
	Msgs int
	// E2EMsgs is the number of messages of the end-to-end case (sent at E2ERate).
	E2EMsgs int
	// StartRuns is how many times the node-start case starts and closes a node.
	StartRuns int
	// Dir holds every node's store while it runs.
	Dir string
	// Timeout bounds one case on one peer.
	Timeout time.Duration
	// Split runs every node's server in a child process (StartSplit), clients in this one.
	Split bool
}

// Case is one row of the table.
type Case struct {
	ID    string
	Title string
	// Latency marks rows measured in time (lower is better), not in messages per second.
	Latency bool
	// Local marks cases that need the node in this process (an in-process connection, the
	// node's own start), which split mode leaves out.
	Local bool
	run   func(ctx context.Context, p Peer, cfg Config) (Result, error)
}

// Cases returns every case, in table order.
func Cases() []Case {
	return []Case{
		{ID: "sync-send-tcp", Title: "sync send, 1 producer, TCP", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "sync-tcp", false, func(n Node, topic string) (Result, error) {
				return sendSync(ctx, n, ProducerConfig{}, topic, cfg.Msgs, 1)
			})
		}},
		{ID: "sync-send-inproc", Title: "sync send, 1 producer, in-process", Local: true, run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "sync-inproc", false, func(n Node, topic string) (Result, error) {
				return sendSync(ctx, n, ProducerConfig{InProcess: true}, topic, cfg.Msgs, 1)
			})
		}},
		{ID: "sync-send-64-tcp", Title: "sync send, 64 goroutines, TCP", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "sync-64", false, func(n Node, topic string) (Result, error) {
				return sendSync(ctx, n, ProducerConfig{}, topic, cfg.Msgs, concurrentProducers)
			})
		}},
		{ID: "async-send-tcp", Title: "async send, 1 producer, TCP", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "async", false, func(n Node, topic string) (Result, error) {
				return sendAsync(ctx, n, ProducerConfig{AsyncWindow: asyncWindow}, topic, cfg.Msgs)
			})
		}},
		{ID: "async-send-batch-tcp", Title: "async send, 1 producer, TCP, client batching", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "async-batch", false, func(n Node, topic string) (Result, error) {
				return sendAsync(ctx, n, ProducerConfig{AsyncWindow: asyncWindow, Batching: true}, topic, cfg.Msgs)
			})
		}},
		{ID: "consume-tcp", Title: "consume, TCP (pre-filled, from consumer start to last message)", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "consume", false, func(n Node, topic string) (Result, error) {
				return consume(ctx, n, topic, cfg.Msgs)
			})
		}},
		{ID: "consume-ack-tcp", Title: "consume, an acknowledged ack per message, TCP (pre-filled; mq: POP)", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "consume-ack", false, func(n Node, topic string) (Result, error) {
				return consumeAcked(ctx, n, topic, cfg.Msgs)
			})
		}},
		{ID: "e2e-5000-tcp", Title: "end to end at 5,000 msg/s, TCP", Latency: true, run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "e2e", false, func(n Node, topic string) (Result, error) {
				return endToEnd(ctx, n, topic, cfg.E2EMsgs)
			})
		}},
		{ID: "node-start", Title: "node start", Latency: true, Local: true, run: nodeStart},
		{ID: "fsync-send-64-tcp", Title: "sync send, 64 goroutines, fsync before ack, TCP", run: func(ctx context.Context, p Peer, cfg Config) (Result, error) {
			return onNode(ctx, p, cfg, "fsync-64", true, func(n Node, topic string) (Result, error) {
				return sendSync(ctx, n, ProducerConfig{}, topic, cfg.Msgs, concurrentProducers)
			})
		}},
	}
}

// SplitCases returns the cases that split mode runs, in table order.
func SplitCases() []Case {
	var out []Case
	for _, c := range Cases() {
		if !c.Local {
			out = append(out, c)
		}
	}
	return out
}

// errLocalCase is a Local case asked of split mode.
var errLocalCase = errors.New("case needs the node in this process, which split mode does not offer")

// Run runs the case on p within cfg.Timeout. A peer without the case's feature gives a
// skipped result, a failure a result with Error: the run goes on with the next case.
func (c Case) Run(ctx context.Context, p Peer, cfg Config) Result {
	// Each case starts without the garbage of the one before.
	runtime.GC()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var r Result
	var err error
	if c.Local && cfg.Split {
		err = errLocalCase
	} else {
		r, err = c.run(ctx, p, cfg)
	}
	r.Peer, r.Case = p.ID(), c.ID
	switch {
	case errors.Is(err, ErrUnsupported):
		r = Result{Peer: p.ID(), Case: c.ID, Skipped: true}
	case err != nil:
		r.Error = err.Error()
	}
	r.Split = cfg.Split
	return r
}

var topicSeq atomic.Int64

// onNode runs f on a fresh node of p (split if cfg says so) with a fresh, created topic, and
// removes the node's store.
func onNode(ctx context.Context, p Peer, cfg Config, name string, durable bool, f func(Node, string) (Result, error)) (r Result, err error) {
	dir, err := os.MkdirTemp(cfg.Dir, p.ID()+"-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	ncfg := NodeConfig{Dir: dir, Durable: durable}
	var n Node
	if cfg.Split {
		n, err = StartSplit(ctx, p, ncfg)
	} else {
		n, err = Start(p, ncfg)
	}
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, n.Close()) }()
	topic := fmt.Sprintf("bench-%s-%d", name, topicSeq.Add(1))
	if err := n.CreateTopic(ctx, topic); err != nil {
		return r, err
	}
	r, err = f(n, topic)
	r.Durability = n.Durability()
	return r, err
}

// payload returns message i's body: a window of a pseudo-random pool, read-only, so that sends
// allocate nothing and no two messages near each other share bytes. Both matter for kgo, which
// compresses batches (snappy by default): equal or repeated bodies would shrink to almost
// nothing on their way, a gain no real workload sees.
func payload(i int) []byte {
	off := (i * payloadStride) % (len(payloadPool) - BodyBytes)
	return payloadPool[off : off+BodyBytes : off+BodyBytes]
}

// payloadStride is prime and past BodyBytes, so consecutive bodies never overlap and repeat only
// after about len(payloadPool)/BodyBytes messages.
const payloadStride = 1031

var payloadPool = func() []byte {
	b := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(12, 1024))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// warmUp sends warmUpMsgs messages of body(i), waiting for each.
func warmUp(ctx context.Context, p Producer, topic string, body func(int) []byte) error {
	for i := range warmUpMsgs {
		if err := p.Send(ctx, topic, body(i)); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// sendSync sends msgs messages from workers goroutines sharing one producer, each waiting for
// every answer, and measures each send.
func sendSync(ctx context.Context, n Node, pcfg ProducerConfig, topic string, msgs, workers int) (r Result, err error) {
	p, err := n.Producer(pcfg)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	if err := warmUp(ctx, p, topic, payload); err != nil {
		return r, err
	}
	samples := make([][]time.Duration, workers)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for w := range workers {
		samples[w] = make([]time.Duration, 0, msgs/workers+1)
		g.Go(func() error {
			for i := next.Add(1); i <= int64(msgs); i = next.Add(1) {
				t := time.Now()
				if err := p.Send(gctx, topic, payload(int(i))); err != nil {
					return err
				}
				samples[w] = append(samples[w], time.Since(t))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return r, err
	}
	elapsed := time.Since(start)
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	r.Msgs, r.MsgsPerSec = msgs, rate(msgs, elapsed)
	r.setLatency(all)
	return r, nil
}

// sendAsync hands msgs messages to one producer without waiting, then waits for every answer.
func sendAsync(ctx context.Context, n Node, pcfg ProducerConfig, topic string, msgs int) (r Result, err error) {
	p, err := n.Producer(pcfg)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	if err := warmUp(ctx, p, topic, payload); err != nil {
		return r, err
	}
	start := time.Now()
	if err := fill(ctx, p, topic, msgs); err != nil {
		return r, err
	}
	r.Msgs, r.MsgsPerSec = msgs, rate(msgs, time.Since(start))
	return r, nil
}

func fill(ctx context.Context, p Producer, topic string, msgs int) error {
	for i := range msgs {
		if err := p.SendAsync(ctx, topic, payload(i)); err != nil {
			return err
		}
	}
	return p.Flush(ctx)
}
