// Package peers runs the same benchmark cases against three embeddable brokers in one process
// each: NATS JetStream (embedded nats-server, nats.go), franz-go's kfake (with kgo) and mq.
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

// Peer starts nodes of one broker.
type Peer interface {
	// ID is the short name used in JSON lines ("nats", "kfake", "mq").
	ID() string
	// Title names the broker and client with their versions, for the table.
	Title() string
	// Defaults states the settings the peer runs with: durability, partitions, client policy.
	Defaults() string
	Start(cfg NodeConfig) (Node, error)
}

// NodeConfig is what a case asks of a node.
type NodeConfig struct {
	// Dir is an empty directory the node may store into; the case removes it.
	Dir string
	// Durable asks for fsync before the acknowledgement of every send.
	Durable bool
}

// Node is one running broker.
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
	// InProcess asks for a connection that bypasses the network stack.
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

// Consumer is a running consumer.
type Consumer interface {
	Close() error
}

// All returns every peer, in table order.
func All() []Peer {
	return []Peer{NATS(), Kfake(), MQ()}
}
