package peers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

// mqBatchMaxBytes bounds a batch of the client batching row as kgo's ProducerBatchMaxBytes
// (1,000,012 bytes) bounds kfake's, rather than at the producer's default (RocketMQ 5's 32
// KiB), which pays for about 30 times more requests.
const mqBatchMaxBytes = 1 << 20

type mqPeer struct{}

// MQ is this module's node (name service and broker) with its producer and push consumer.
func MQ() Peer { return mqPeer{} }

func (mqPeer) ID() string    { return "mq" }
func (mqPeer) Title() string { return "mq" }
func (mqPeer) Defaults() string {
	return "ASYNC_FLUSH, fsync every 500 ms (RocketMQ flushIntervalCommitLog; SYNC_FLUSH in the fsync row); " +
		"4 queues (defaultTopicQueueNums); SendAsync 1024 in flight; client batching row: WithAsyncBatching, 10 ms linger " +
		"(RocketMQ 5 autoBatch's and kgo's), batches up to 1 MiB per queue (kgo's size; the default is 32 KiB); " +
		"push consumer, 20 goroutines, batch 1, offsets committed every 5 s; " +
		"acknowledged row: SimpleConsumer (POP), 4 receivers of 32, each message's Ack concurrent (merged into BATCH_ACK while 4 are on the wire)"
}

func (mqPeer) Serve(cfg NodeConfig) (Server, error) {
	opts := mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: cfg.Dir}}
	if cfg.Durable {
		opts.Store.FlushDiskType = mq.SyncFlush
	}
	n, err := mq.StartNode(opts)
	if err != nil {
		return nil, err
	}
	return mqServer{n}, nil
}

// mqServer's address is its name service's, which routes clients to its broker.
type mqServer struct{ *mq.Node }

func (mqPeer) Connect(addr string, cfg NodeConfig, local Server) (Node, error) {
	n := &mqNode{addr: addr, durable: cfg.Durable}
	if s, ok := local.(mqServer); ok {
		n.local = s.Node
	}
	return n, nil
}

type mqNode struct {
	addr string
	// local is the node when it runs in this process, for in-process producers.
	local   *mq.Node
	durable bool
}

// mqClientSeq keeps client ids apart: clients of one id share an instance and its transport.
var mqClientSeq atomic.Int64

func mqInstanceName(kind string) string {
	return fmt.Sprintf("bench-%s-%d", kind, mqClientSeq.Add(1))
}

func (n *mqNode) Durability() string {
	if n.durable {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

// CreateTopic is left to the first send: the broker auto-creates topics (autoCreateTopicEnable).
func (n *mqNode) CreateTopic(context.Context, string) error { return nil }

func (n *mqNode) Producer(cfg ProducerConfig) (Producer, error) {
	opts := []producer.Option{producer.WithGroup("bench-pg"), producer.WithInstanceName(mqInstanceName("p"))}
	if cfg.AsyncWindow > 0 {
		opts = append(opts, producer.WithMaxAsyncInFlight(cfg.AsyncWindow))
	}
	if cfg.Batching {
		opts = append(opts, producer.WithAsyncBatching(producer.DefaultAsyncBatchLinger, mqBatchMaxBytes))
	}
	var p *producer.Producer
	var err error
	switch {
	case cfg.InProcess && n.local == nil:
		return nil, ErrUnsupported
	case cfg.InProcess:
		p, err = n.local.NewProducer(opts...)
	default:
		p, err = producer.New(append(opts, producer.WithNameServers(n.addr))...)
	}
	if err != nil {
		return nil, err
	}
	mp := &mqProducer{p: p}
	mp.onAsync = func(res *producer.SendResult, err error) {
		if err == nil && res.Status != producer.SendOK {
			err = fmt.Errorf("mq: send status %v", res.Status)
		}
		mp.asyncErr.set(err)
		mp.pending.Done()
	}
	return mp, nil
}

type mqProducer struct {
	p        *producer.Producer
	pending  sync.WaitGroup
	asyncErr firstErr
	onAsync  func(*producer.SendResult, error)
}

func (p *mqProducer) Send(ctx context.Context, topic string, body []byte) error {
	res, err := p.p.SendSync(ctx, producer.NewMessage(topic, body))
	if err != nil {
		return err
	}
	if res.Status != producer.SendOK {
		// SYNC_FLUSH answers FLUSH_DISK_TIMEOUT as a status, not an error.
		return fmt.Errorf("mq: send status %v", res.Status)
	}
	return nil
}

func (p *mqProducer) SendAsync(ctx context.Context, topic string, body []byte) error {
	p.pending.Add(1)
	if err := p.p.SendAsync(ctx, producer.NewMessage(topic, body), p.onAsync); err != nil {
		p.pending.Done()
		return err
	}
	return nil
}

func (p *mqProducer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	// Ends once every callback ran, which the producer guarantees (at the latest when Close
	// gives up on its send timeout).
	go func() {
		p.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return p.asyncErr.get()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *mqProducer) Close() error { return p.p.Close() }

func (n *mqNode) Consumer(_ context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	pc, err := consumer.NewPushConsumer(consumer.WithNameServers(n.addr), consumer.WithGroup(group),
		consumer.WithInstanceName(mqInstanceName("c")), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		return nil, err
	}
	err = pc.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			deliver(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err == nil {
		err = pc.Start()
	}
	if err != nil {
		pc.Close()
		return nil, err
	}
	return pc, nil
}

// Close has nothing to release: producers and consumers are closed by whoever made them.
func (n *mqNode) Close() error { return nil }

// mqAckWorkers are the goroutines an acking consumer receives with, as the POP benchmarks
// in package consumer run them; each acknowledges a received batch's messages concurrently.
const mqAckWorkers = 4

// AckingConsumer consumes by POP: a SimpleConsumer whose workers receive up to 32 messages at
// a time and acknowledge each one (the client merges acks made while others are on the wire).
func (n *mqNode) AckingConsumer(ctx context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	sc, err := consumer.NewSimpleConsumer(consumer.WithNameServers(n.addr), consumer.WithGroup(group),
		consumer.WithInstanceName(mqInstanceName("s")), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithAwaitDuration(time.Second))
	if err != nil {
		return nil, err
	}
	if err = sc.Subscribe(topic, consumer.ByTag("*")); err == nil {
		err = sc.Start()
	}
	if err != nil {
		sc.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &mqAckingConsumer{sc: sc, cancel: cancel}
	for range mqAckWorkers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.work(ctx, deliver)
		}()
	}
	return c, nil
}

type mqAckingConsumer struct {
	sc     *consumer.SimpleConsumer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    firstErr
}

// work receives and acknowledges until ctx ends; the first failure is Close's to report.
func (c *mqAckingConsumer) work(ctx context.Context, deliver func([]byte)) {
	for ctx.Err() == nil {
		views, err := c.sc.Receive(ctx, consumer.MaxReceiveMessageNum, time.Minute)
		if err != nil {
			if ctx.Err() == nil {
				c.err.set(err)
			}
			return
		}
		var acks sync.WaitGroup
		for _, v := range views {
			acks.Add(1)
			go func() {
				defer acks.Done()
				if err := c.sc.Ack(ctx, v); err != nil {
					if ctx.Err() == nil {
						c.err.set(err)
					}
					return
				}
				deliver(v.Body)
			}()
		}
		acks.Wait()
	}
}

func (c *mqAckingConsumer) Close() error {
	c.cancel()
	c.wg.Wait()
	c.sc.Close()
	return c.err.get()
}
