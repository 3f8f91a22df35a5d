package peers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsReadyTimeout bounds how long a started server may take to accept connections.
const natsReadyTimeout = 10 * time.Second

type natsPeer struct{}

// NATS is an embedded nats-server with JetStream on a file store, driven by nats.go.
func NATS() Peer { return natsPeer{} }

func (natsPeer) ID() string    { return "nats" }
func (natsPeer) Title() string { return "NATS JetStream 2.15.2 (nats.go 1.55.0)" }
func (natsPeer) Defaults() string {
	return "file store, R1 stream per topic, fsync every 2 min (sync_interval default; sync_always in the fsync row); " +
		"PublishAsync 1024 pending; durable pull consumer, AckExplicit, one Ack per message; " +
		"acknowledged row: DoubleAck (waits for the server's confirmation), 128 in flight"
}

func (natsPeer) Serve(cfg NodeConfig) (Server, error) {
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  cfg.Dir,
		NoLog:     true,
		NoSigs:    true,
		// Durable: every write is fsynced before the stream acknowledges it.
		SyncAlways: cfg.Durable,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	s.Start()
	if !s.ReadyForConnections(natsReadyTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, errors.New("nats: server not ready")
	}
	return natsServer{s}, nil
}

type natsServer struct{ s *server.Server }

func (s natsServer) Addr() string { return s.s.ClientURL() }

func (s natsServer) Close() error {
	s.s.Shutdown()
	s.s.WaitForShutdown()
	return nil
}

func (natsPeer) Connect(url string, cfg NodeConfig, local Server) (Node, error) {
	n := &natsNode{url: url, durable: cfg.Durable}
	if s, ok := local.(natsServer); ok {
		n.local = s.s
	}
	return n, nil
}

type natsNode struct {
	url string
	// local is the server when it runs in this process, for in-process connections.
	local   *server.Server
	durable bool
}

func (n *natsNode) Durability() string {
	if n.durable {
		return "sync_always"
	}
	return "file store, sync_interval 2m"
}

func (n *natsNode) connect(inProcess bool, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	var connOpts []nats.Option
	if inProcess {
		if n.local == nil {
			return nil, nil, ErrUnsupported
		}
		connOpts = append(connOpts, nats.InProcessServer(n.local))
	}
	nc, err := nats.Connect(n.url, connOpts...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

func (n *natsNode) CreateTopic(ctx context.Context, topic string) error {
	nc, js, err := n.connect(false)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: topic, Subjects: []string{topic}})
	return err
}

func (n *natsNode) Producer(cfg ProducerConfig) (Producer, error) {
	if cfg.Batching {
		// PublishAsync pipelines publishes, one message each; JetStream's atomic batches are
		// another feature, not a client-side linger.
		return nil, ErrUnsupported
	}
	p := &natsProducer{}
	opts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		p.asyncErr.set(err)
	})}
	if cfg.AsyncWindow > 0 {
		opts = append(opts, jetstream.WithPublishAsyncMaxPending(cfg.AsyncWindow))
	}
	nc, js, err := n.connect(cfg.InProcess, opts...)
	if err != nil {
		return nil, err
	}
	p.nc, p.js = nc, js
	return p, nil
}

type natsProducer struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	asyncErr firstErr
}

func (p *natsProducer) Send(ctx context.Context, topic string, body []byte) error {
	_, err := p.js.Publish(ctx, topic, body)
	return err
}

func (p *natsProducer) SendAsync(ctx context.Context, topic string, body []byte) error {
	for {
		_, err := p.js.PublishAsync(topic, body)
		// A full window makes PublishAsync give up after its stall wait (200 ms); the
		// caller's answer to that is to offer the message again.
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (p *natsProducer) Flush(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
		return p.asyncErr.get()
	case <-ctx.Done():
		return fmt.Errorf("nats: %d async publishes pending: %w", p.js.PublishAsyncPending(), ctx.Err())
	}
}

func (p *natsProducer) Close() error {
	p.nc.Close()
	return nil
}

func (n *natsNode) Consumer(ctx context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	nc, js, err := n.connect(false)
	if err != nil {
		return nil, err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, topic, jetstream.ConsumerConfig{
		Durable:   group,
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		deliver(m.Data())
		// Ack publishes without waiting for the server's confirmation.
		_ = m.Ack()
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsConsumer{nc: nc, cc: cc}, nil
}

type natsConsumer struct {
	nc *nats.Conn
	cc jetstream.ConsumeContext
}

func (c *natsConsumer) Close() error {
	c.cc.Stop()
	<-c.cc.Closed()
	c.nc.Close()
	return nil
}

// Close has nothing to release: every connection belongs to a producer or consumer.
func (n *natsNode) Close() error { return nil }

// natsAcksInFlight bounds the confirmed acks an acking consumer has outstanding.
const natsAcksInFlight = 128

// AckingConsumer is Consumer with each message acknowledged by DoubleAck, which waits for the
// server to confirm the ack, up to natsAcksInFlight at once.
func (n *natsNode) AckingConsumer(ctx context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	nc, js, err := n.connect(false)
	if err != nil {
		return nil, err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, topic, jetstream.ConsumerConfig{
		Durable:   group,
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &natsAckingConsumer{nc: nc, cancel: cancel, slots: make(chan struct{}, natsAcksInFlight)}
	c.cc, err = cons.Consume(func(m jetstream.Msg) {
		c.slots <- struct{}{}
		c.wg.Add(1)
		go func() {
			defer func() { <-c.slots; c.wg.Done() }()
			if err := m.DoubleAck(ctx); err != nil {
				if ctx.Err() == nil {
					c.err.set(err)
				}
				return
			}
			deliver(m.Data())
		}()
	})
	if err != nil {
		cancel()
		nc.Close()
		return nil, err
	}
	return c, nil
}

type natsAckingConsumer struct {
	nc     *nats.Conn
	cc     jetstream.ConsumeContext
	cancel context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	err    firstErr
}

func (c *natsAckingConsumer) Close() error {
	c.cc.Stop()
	<-c.cc.Closed()
	c.cancel()
	c.wg.Wait()
	c.nc.Close()
	return c.err.get()
}
