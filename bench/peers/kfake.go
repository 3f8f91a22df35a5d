package peers

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kfakePartitions matches mq's queues per auto-created topic (RocketMQ defaultTopicQueueNums 4)
// rather than kfake's 10, so both spread a topic the same way.
const kfakePartitions = 4

type kfakePeer struct{}

// Kfake is franz-go's in-process fake Kafka cluster (one broker, TCP on loopback) driven by kgo.
func Kfake() Peer { return kfakePeer{} }

func (kfakePeer) ID() string    { return "kfake" }
func (kfakePeer) Title() string { return "kfake + kgo 1.22.3" }
func (kfakePeer) Defaults() string {
	return "in memory, no fsync (DataDir + SyncWrites, fsync per batch, in the fsync row); 4 partitions; " +
		"kgo defaults: acks=all, idempotent, linger 10 ms, 50,000 buffered records; group consumer, autocommit"
}

func (kfakePeer) Serve(cfg NodeConfig) (Server, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(kfakePartitions)}
	if cfg.Durable {
		opts = append(opts, kfake.DataDir(cfg.Dir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, err
	}
	return kfakeServer{c}, nil
}

type kfakeServer struct{ c *kfake.Cluster }

// Addr lists the cluster's brokers, comma-separated, to be the clients' seeds.
func (s kfakeServer) Addr() string { return strings.Join(s.c.ListenAddrs(), ",") }

func (s kfakeServer) Close() error {
	s.c.Close()
	return nil
}

// Connect ignores local: kgo has no in-process connection to use it for.
func (kfakePeer) Connect(addr string, cfg NodeConfig, _ Server) (Node, error) {
	return &kfakeNode{seeds: strings.Split(addr, ","), durable: cfg.Durable}, nil
}

type kfakeNode struct {
	seeds   []string
	durable bool
}

func (n *kfakeNode) Durability() string {
	if n.durable {
		return "SyncWrites (fsync per batch)"
	}
	return "in memory, no fsync"
}

// CreateTopic is left to the first producer: the cluster creates topics on metadata requests.
func (n *kfakeNode) CreateTopic(context.Context, string) error { return nil }

func (n *kfakeNode) Producer(cfg ProducerConfig) (Producer, error) {
	if cfg.InProcess {
		return nil, ErrUnsupported
	}
	// cfg.Batching changes nothing: kgo always batches per partition, with its linger.
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.seeds...), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	p := &kfakeProducer{cl: cl}
	p.onAsync = func(_ *kgo.Record, err error) { p.asyncErr.set(err) }
	return p, nil
}

type kfakeProducer struct {
	cl       *kgo.Client
	asyncErr firstErr
	onAsync  func(*kgo.Record, error)
}

func (p *kfakeProducer) Send(ctx context.Context, topic string, body []byte) error {
	return p.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: body}).FirstErr()
}

func (p *kfakeProducer) SendAsync(ctx context.Context, topic string, body []byte) error {
	p.cl.Produce(ctx, &kgo.Record{Topic: topic, Value: body}, p.onAsync)
	return nil
}

func (p *kfakeProducer) Flush(ctx context.Context) error {
	return errors.Join(p.cl.Flush(ctx), p.asyncErr.get())
}

func (p *kfakeProducer) Close() error {
	p.cl.Close()
	return nil
}

func (n *kfakeNode) Consumer(_ context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		return nil, err
	}
	c := &kfakeConsumer{cl: cl}
	c.wg.Add(1)
	go c.poll(deliver)
	return c, nil
}

type kfakeConsumer struct {
	cl *kgo.Client
	wg sync.WaitGroup
}

func (c *kfakeConsumer) poll(deliver func([]byte)) {
	defer c.wg.Done()
	for {
		fetches := c.cl.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachRecord(func(r *kgo.Record) { deliver(r.Value) })
	}
}

func (c *kfakeConsumer) Close() error {
	c.cl.Close()
	c.wg.Wait()
	return nil
}

// Close has nothing to release: every client belongs to a producer or consumer.
func (n *kfakeNode) Close() error { return nil }
