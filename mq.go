// Package mq runs an Apache RocketMQ 4.x compatible node inside a Go process: a name service and
// a broker on one gnet reactor, speaking RocketMQ's remoting protocol so that the official clients
// and this module's own clients work against it.
//
//	node, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", StoreDir: dir})
//	if err != nil { ... }
//	defer node.Close()
//	p, err := node.NewProducer()                      // in-process, no sockets
//	c, err := node.NewPushConsumer(consumer.WithGroup("g"))
//	fmt.Println("name server for other clients:", node.Addr())
//
// The node's wiring lives in internal/node (so that packages this one imports can start nodes
// in their tests); Options and its defaults are documented there and re-exported here.
package mq

import (
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/producer"
)

// Node is a running name service and/or broker: Addr, NameServerAddr, BrokerAddr, NameServers,
// NewTransport and Close come from the embedded node, plus the client handles below. Its
// methods are safe for concurrent use.
type Node struct {
	*node.Node
}

// StartNode builds and starts a node, returning once every listener is bound, the store is
// recovered and the broker has registered with its name servers. On error nothing is left
// running. Close stops it and every goroutine it started.
func StartNode(opts Options) (*Node, error) {
	n, err := node.Start(opts)
	if err != nil {
		return nil, err
	}
	return &Node{Node: n}, nil
}

// NewProducer returns a producer that reaches this node (and any other node of this process)
// in-process, without sockets or frame encoding, and other addresses over TCP. Its name servers
// are this node's name service, or Options.NameServers when the node has none; its logger is
// the node's. opts come last and override these. The producer owns its transport: close the
// producer when done (before or after the node).
func (n *Node) NewProducer(opts ...producer.Option) (*producer.Producer, error) {
	base := []producer.Option{producer.WithNameServers(n.NameServers()...),
		producer.WithLogger(n.Logger()), producer.WithOwnedTransport(n.NewTransport())}
	return producer.New(append(base, opts...)...)
}

// NewPushConsumer returns a push consumer that reaches this node (and any other node of this
// process) in-process and other addresses over TCP, with the node's name service and logger;
// opts come last and override these. Subscribe, then Start; the consumer owns its transport.
func (n *Node) NewPushConsumer(opts ...consumer.Option) (*consumer.PushConsumer, error) {
	return consumer.NewPushConsumer(append(n.consumerBase(), opts...)...)
}

// NewPullConsumer is NewPushConsumer's lite pull counterpart: Subscribe or Assign, Start, Poll.
func (n *Node) NewPullConsumer(opts ...consumer.Option) (*consumer.PullConsumer, error) {
	return consumer.NewPullConsumer(append(n.consumerBase(), opts...)...)
}

func (n *Node) consumerBase() []consumer.Option {
	return []consumer.Option{consumer.WithNameServers(n.NameServers()...),
		consumer.WithLogger(n.Logger()), consumer.WithOwnedTransport(n.NewTransport())}
}
