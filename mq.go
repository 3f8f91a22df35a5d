// Package mq runs an Apache RocketMQ 4.x compatible node inside a Go process: a name service and
// a broker on one gnet reactor, speaking RocketMQ's remoting protocol so that the official clients
// and this module's own clients work against it.
//
//	node, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: dir}})
//	if err != nil { ... }
//	defer node.Close()
//	p, err := node.NewProducer()                      // in-process, no sockets
//	c, err := node.NewPushConsumer(consumer.WithGroup("g"))
//	fmt.Println("name server for other clients:", node.Addr())
//
// Node and StartNode are this package's own, and Options names config.Options, where the
// settings are declared in groups (Broker, Store, Limits, ...); the wiring that builds and runs
// the parts lives in internal/node, so that packages this one imports can start nodes in their
// tests.
package mq

import (
	"errors"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Node is a running name service and/or broker with its listeners. Its methods are safe for
// concurrent use.
type Node struct {
	n      *node.Node
	logger *zerolog.Logger
	web    webState // Handler's dashboard (http.go)
}

// mqtest and the module's tests reach the broker and the route table through this hook; the
// public API offers neither.
func init() {
	node.Of = func(v any) *node.Node {
		if n, ok := v.(*Node); ok && n != nil {
			return n.n
		}
		return nil
	}
}

// StartNode builds and starts a node, returning once every listener is bound, the store is
// recovered and the broker has registered with its name servers. On error nothing is left
// running. Close stops it and every goroutine it started.
func StartNode(opts Options) (*Node, error) {
	n, err := node.Start(node.Options{Options: opts})
	if err != nil {
		return nil, err
	}
	mn := &Node{n: n, logger: opts.Logger}
	mn.web.secret = opts.Security.ClusterSecret
	if opts.HTTP.Listen != "" {
		mn.Handler() // the dashboard joins /metrics, /healthz and /readyz, served since the start
	}
	return mn, nil
}

// Close stops the node: listeners first, then in-flight requests drain, then background
// services. It waits for every goroutine the node started and is safe to call more than once.
func (n *Node) Close() error {
	n.web.stopSampling()
	return errors.Join(n.n.Close(), n.web.close())
}

// Addr is the address of the node's first listener: the shared one, or the name service's when
// the roles listen apart. Give it to RocketMQ clients as their name server.
func (n *Node) Addr() string { return n.n.Addr() }

// NameServerAddr is where the name service listens, or "" when this node has none.
func (n *Node) NameServerAddr() string { return n.n.NameServerAddr() }

// BrokerAddr is where the broker listens, or "" when this node has none.
func (n *Node) BrokerAddr() string { return n.n.BrokerAddr() }

// HAAddr is the advertised address of a master's replication listener, or "" for a slave or a
// node without a broker.
func (n *Node) HAAddr() string { return n.n.HAAddr() }

// NameServers is where this node's clients look up routes: its own name service, else the
// ones its broker registers with (Options.NameServers).
func (n *Node) NameServers() []string { return n.n.NameServers() }

// UpdateACL replaces the ACL of a node started with Options.Security.ACL or .ACLFile: requests
// from then on are checked against cfg (a watched ACLFile replaces it again when the file
// changes). A cfg that does not validate is an error and changes nothing.
func (n *Node) UpdateACL(cfg *ACLConfig) error { return n.n.UpdateACL(cfg) }

// NewTransport returns a transport that reaches nodes of this process in-process (no socket, no
// encoding) and every other address over TCP, for producer.WithOwnedTransport and the like. The
// caller closes it.
func (n *Node) NewTransport() remoting.Transport { return n.n.NewTransport() }

// NewProducer returns a producer that reaches this node (and any other node of this process)
// in-process, without sockets or frame encoding, and other addresses over TCP. Its name servers
// are this node's name service, or Options.NameServers when the node has none; its logger is
// the node's. opts come last and override these. The producer owns its transport: close the
// producer when done (before or after the node).
func (n *Node) NewProducer(opts ...producer.Option) (*producer.Producer, error) {
	base := []producer.Option{producer.WithNameServers(n.NameServers()...),
		producer.WithLogger(n.logger), producer.WithOwnedTransport(n.NewTransport())}
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
		consumer.WithLogger(n.logger), consumer.WithOwnedTransport(n.NewTransport())}
}

// GRPCAddr is where the node serves RocketMQ 5's gRPC API (Options.GRPC), or "" when it
// serves none.
func (n *Node) GRPCAddr() string { return n.n.GRPCAddr() }
