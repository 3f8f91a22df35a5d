package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/proxy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	// mqGRPCReceivers are the goroutines a gRPC consumer receives with, as the POP row's.
	mqGRPCReceivers = 4
	// mqGRPCBatch is a receive's batch size: the proxy's default (32).
	mqGRPCBatch = 32
	// mqGRPCClusterName is the cluster topics are created in (the node's default).
	mqGRPCClusterName = "DefaultCluster"
	// mqGRPCQueues is the queue count of a created topic, as the remoting peer's topics get.
	mqGRPCQueues = 4
)

type mqGRPCPeer struct{}

// MQGRPC is this module's node serving RocketMQ 5's gRPC API (the endpoint the 5.x SDKs use),
// driven by a client of that API: the same node as MQ, another protocol.
func MQGRPC() Peer { return mqGRPCPeer{} }

func (mqGRPCPeer) ID() string    { return "mq-grpc" }
func (mqGRPCPeer) Title() string { return "mq, gRPC (5.x API)" }
func (mqGRPCPeer) Defaults() string {
	return "the mq node and settings above, with its gRPC endpoint (proxy.Service) on another port; the client speaks " +
		"apache.rocketmq.v2 through grpc-go as the 5.x SDKs do: one SendMessage per message (async: 1024 calls in flight; " +
		"no client batching), consumption by ReceiveMessage (4 receivers, batches of 32, 60 s invisible) and one " +
		"AckMessage per batch, confirmed before a message counts; topics created with the admin API first (5.x SDKs create none)"
}

func (mqGRPCPeer) Serve(cfg NodeConfig) (Server, error) {
	opts := mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: cfg.Dir},
		GRPC: config.GRPC{Listen: "127.0.0.1:0", Service: proxy.Service()}}
	if cfg.Durable {
		opts.Store.FlushDiskType = mq.SyncFlush
	}
	n, err := mq.StartNode(opts)
	if err != nil {
		return nil, err
	}
	return mqGRPCServer{n}, nil
}

// mqGRPCServer's address names both ports: "nameserver|grpc".
type mqGRPCServer struct{ *mq.Node }

func (s mqGRPCServer) Addr() string { return s.Node.Addr() + "|" + s.Node.GRPCAddr() }

func (mqGRPCPeer) Connect(addr string, cfg NodeConfig, _ Server) (Node, error) {
	ns, endpoint, ok := strings.Cut(addr, "|")
	if !ok {
		return nil, fmt.Errorf("mq-grpc: address %q is not nameserver|grpc", addr)
	}
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &mqGRPCNode{ns: ns, cc: cc, api: apiv2.NewMessagingServiceClient(cc), durable: cfg.Durable}, nil
}

type mqGRPCNode struct {
	ns      string
	cc      *grpc.ClientConn
	api     apiv2.MessagingServiceClient
	durable bool
}

// mqGRPCSeq keeps client and message ids apart.
var mqGRPCSeq atomic.Int64

// call is ctx carrying a client id, as every SDK call does.
func mqGRPCCall(ctx context.Context, clientID string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", clientID)
}

func (n *mqGRPCNode) Durability() string {
	if n.durable {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

func (n *mqGRPCNode) CreateTopic(ctx context.Context, topic string) error {
	a, err := admin.New(admin.Options{NameServers: []string{n.ns}})
	if err != nil {
		return err
	}
	defer a.Close()
	return a.CreateTopicInCluster(ctx, mqGRPCClusterName,
		admin.TopicConfig{Topic: topic, ReadQueueNums: mqGRPCQueues, WriteQueueNums: mqGRPCQueues})
}

func (n *mqGRPCNode) Producer(cfg ProducerConfig) (Producer, error) {
	if cfg.InProcess || cfg.Batching {
		return nil, ErrUnsupported
	}
	window := cfg.AsyncWindow
	if window <= 0 {
		window = asyncWindow
	}
	return &mqGRPCProducer{api: n.api, id: fmt.Sprintf("bench-grpc-p-%d", mqGRPCSeq.Add(1)),
		slots: make(chan struct{}, window)}, nil
}

type mqGRPCProducer struct {
	api      apiv2.MessagingServiceClient
	id       string
	slots    chan struct{} // async calls in flight
	pending  sync.WaitGroup
	asyncErr firstErr
}

func (p *mqGRPCProducer) Send(ctx context.Context, topic string, body []byte) error {
	msg := &apiv2.Message{Topic: &apiv2.Resource{Name: topic}, Body: body,
		SystemProperties: &apiv2.SystemProperties{MessageId: fmt.Sprintf("%s-%d", p.id, mqGRPCSeq.Add(1)),
			MessageType: apiv2.MessageType_NORMAL, BornTimestamp: timestamppb.Now(), BornHost: "127.0.0.1",
			BodyEncoding: apiv2.Encoding_IDENTITY}}
	resp, err := p.api.SendMessage(mqGRPCCall(ctx, p.id), &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg}})
	if err != nil {
		return err
	}
	if c := resp.GetStatus().GetCode(); c != apiv2.Code_OK {
		return fmt.Errorf("mq-grpc: send: %v %s", c, resp.GetStatus().GetMessage())
	}
	return nil
}

// SendAsync is a Send on a goroutine of its own, at most the window at once: the 5.x SDKs'
// async send is a unary call left running.
func (p *mqGRPCProducer) SendAsync(ctx context.Context, topic string, body []byte) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.pending.Add(1)
	go func() {
		defer func() { <-p.slots; p.pending.Done() }()
		p.asyncErr.set(p.Send(ctx, topic, body))
	}()
	return nil
}

func (p *mqGRPCProducer) Flush(ctx context.Context) error {
	done := make(chan struct{})
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

func (p *mqGRPCProducer) Close() error {
	p.pending.Wait()
	return nil
}

// Consumer receives and acknowledges: the 5.x API consumes no other way (a message counts once
// its ack was confirmed, as in AckingConsumer).
func (n *mqGRPCNode) Consumer(ctx context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	return n.AckingConsumer(ctx, topic, group, deliver)
}

func (n *mqGRPCNode) AckingConsumer(ctx context.Context, topic, group string, deliver func([]byte)) (Consumer, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &mqGRPCConsumer{api: n.api, id: fmt.Sprintf("bench-grpc-c-%d", mqGRPCSeq.Add(1)), cancel: cancel,
		topic: topic, group: group}
	for range mqGRPCReceivers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for ctx.Err() == nil {
				if err := c.receiveAndAck(ctx, deliver); err != nil {
					if ctx.Err() == nil {
						c.err.set(err)
						cancel()
					}
					return
				}
			}
		}()
	}
	return c, nil
}

type mqGRPCConsumer struct {
	api          apiv2.MessagingServiceClient
	id           string
	topic, group string
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	err          firstErr
}

// receiveAndAck makes one ReceiveMessage call, acknowledges what it brought with one
// AckMessage and delivers each message whose ack succeeded.
func (c *mqGRPCConsumer) receiveAndAck(ctx context.Context, deliver func([]byte)) error {
	ctx = mqGRPCCall(ctx, c.id)
	stream, err := c.api.ReceiveMessage(ctx, &apiv2.ReceiveMessageRequest{Group: &apiv2.Resource{Name: c.group},
		MessageQueue:     &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: c.topic}},
		FilterExpression: &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "*"},
		BatchSize:        mqGRPCBatch, InvisibleDuration: durationpb.New(time.Minute),
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		return err
	}
	var msgs []*apiv2.Message
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch x := r.Content.(type) {
		case *apiv2.ReceiveMessageResponse_Status:
			if code := x.Status.GetCode(); code != apiv2.Code_OK && code != apiv2.Code_MESSAGE_NOT_FOUND {
				return fmt.Errorf("mq-grpc: receive: %v %s", code, x.Status.GetMessage())
			}
		case *apiv2.ReceiveMessageResponse_Message:
			msgs = append(msgs, x.Message)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	req := &apiv2.AckMessageRequest{Group: &apiv2.Resource{Name: c.group}, Topic: &apiv2.Resource{Name: c.topic}}
	for _, m := range msgs {
		req.Entries = append(req.Entries, &apiv2.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
			ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
	}
	resp, err := c.api.AckMessage(ctx, req)
	if err != nil {
		return err
	}
	if code := resp.GetStatus().GetCode(); code != apiv2.Code_OK {
		return fmt.Errorf("mq-grpc: ack: %v %s", code, resp.GetStatus().GetMessage())
	}
	for _, m := range msgs {
		deliver(m.Body)
	}
	return nil
}

func (c *mqGRPCConsumer) Close() error {
	c.cancel()
	c.wg.Wait()
	return c.err.get()
}

func (n *mqGRPCNode) Close() error { return n.cc.Close() }
