// Package peers runs the same benchmark cases against three embeddable brokers: NATS JetStream
// (embedded nats-server, nats.go), franz-go's kfake (with kgo) and mq, each with its clients in
// one process, or in split mode with the broker in a child process (split.go).
//
// Each peer is one file implementing Peer; each case is one function in cases.go written
// against these interfaces only, so a new case runs on every peer and a new peer runs every
// case. A peer that has no equivalent of a case's setting returns ErrUnsupported and its cell
// shows "—".
package peers

import (
	"context"
	"errors"
)

// ErrUnsupported means the peer has no equivalent of what a case asks for (kfake has no
// in-process connection).
var ErrUnsupported = errors.New("not offered by this peer")

// Peer starts nodes of one broker. A node is two halves, so that they can run in different
// processes: the Server, the broker itself, and the Node, its clients, which find the server
// by address alone.
type Peer interface {
	// ID is the short name used in JSON lines ("nats", "kfake", "mq").
	ID() string
	// Title names the broker and client with their versions, for the table.
	Title() string
	// Defaults states the settings the peer runs with: durability, partitions, client policy.
	Defaults() string
	// Serve starts the broker half of a node.
	Serve(cfg NodeConfig) (Server, error)
	// Connect returns the client half of a node whose server is at addr (its Server.Addr).
	// local is that server when it runs in this process, which in-process connections need;
	// nil when it runs in another. Closing the Node leaves the server running.
	Connect(addr string, cfg NodeConfig, local Server) (Node, error)
}

// Server is the broker half of a running node.
type Server interface {
	// Addr is all that clients need to find the node: a name server, a URL, seed brokers.
	Addr() string
	Close() error
}

// Start starts a node with both halves in this process; closing the Node stops its server.
func Start(p Peer, cfg NodeConfig) (Node, error) {
	s, err := p.Serve(cfg)
	if err != nil {
		return nil, err
	}
	n, err := p.Connect(s.Addr(), cfg, s)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return &localNode{Node: n, server: s}, nil
}

type localNode struct {
	Node
	server Server
}

func (n *localNode) Close() error { return errors.Join(n.Node.Close(), n.server.Close()) }

func (n *localNode) client() Node { return n.Node }

// wrapped is a Node that wraps a peer's client half (Start's and StartSplit's), whose optional
// interfaces the wrapping hides.
type wrapped interface{ client() Node }

// clientOf returns the peer's own client half of n.
func clientOf(n Node) Node {
	for {
		w, ok := n.(wrapped)
		if !ok {
			return n
		}
		n = w.client()
	}
}

// NodeConfig is what a case asks of a node.
type NodeConfig struct {
	// Dir is an empty directory the node may store into; the case removes it.
	Dir string
	// Durable asks for fsync before the acknowledgement of every send.
	Durable bool
}

// Node is the clients' side of one running broker.
type Node interface {
	// Durability states the flush setting this node runs with.
	Durability() string
	// CreateTopic makes topic ready for producers and consumers (a NATS stream; a no-op where
	// the broker creates topics on first use).
	CreateTopic(ctx context.Context, topic string) error
	Producer(cfg ProducerConfig) (Producer, error)
	// Consumer starts a consumer of topic in group, from the topic's first message, that
	// calls deliver for every message, possibly from several goroutines. deliver must not
	// keep body.
	Consumer(ctx context.Context, topic, group string, deliver func(body []byte)) (Consumer, error)
	Close() error
}

// ProducerConfig is what a case asks of a producer.
type ProducerConfig struct {
	// InProcess asks for a connection that bypasses the network stack. A Node whose server
	// runs in another process returns ErrUnsupported.
	InProcess bool
	// AsyncWindow bounds the async sends in flight where the client has such a setting.
	AsyncWindow int
	// Batching asks for client-side batching of async sends, lingering for company. A peer
	// whose client cannot batch returns ErrUnsupported; one that always batches ignores it.
	Batching bool
}

// Producer sends to one node. It is safe for concurrent use.
type Producer interface {
	// Send returns once the broker stored the message.
	Send(ctx context.Context, topic string, body []byte) error
	// SendAsync returns once the message is handed to the client; body must not change until
	// Flush returns.
	SendAsync(ctx context.Context, topic string, body []byte) error
	// Flush waits for every SendAsync so far and returns the first error any of them got.
	Flush(ctx context.Context) error
	Close() error
}

// AckingNode is a Node whose client can acknowledge each message on its own and wait for the
// broker to confirm it before the next step, as RocketMQ 5's POP consumption does (receive,
// then one ack per message). A peer without it skips the acknowledged-consume row.
type AckingNode interface {
	// AckingConsumer starts a consumer of topic in group, from the topic's first message,
	// that calls deliver for every message once the broker confirmed its ack, possibly from
	// several goroutines. deliver must not keep body.
	AckingConsumer(ctx context.Context, topic, group string, deliver func(body []byte)) (Consumer, error)
}

// Consumer is a running consumer.
type Consumer interface {
	Close() error
}

// All returns every peer, in table order.
func All() []Peer {
	return []Peer{NATS(), Kfake(), MQ(), MQGRPC()}
}
