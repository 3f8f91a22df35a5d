package node

import (
	"fmt"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/remoting"
)

// startGRPC starts the gRPC endpoint (Options.GRPC) once the broker is ready, so its first RPC
// finds the broker it turns into requests; a node without Listen starts none.
func (n *Node) startGRPC() error {
	f, err := n.opts.grpcFactory()
	if err != nil || f == nil || n.opts.GRPC.Listen == "" {
		return err
	}
	o := n.opts.grpcOptions()
	// Each SDK client's connection reaches this process's nodes only: the endpoint speaks
	// to its own broker and, for routes, to name servers of this process or (below) any.
	o.Local = func() remoting.Transport { return remoting.NewInProcTransport(lookupLocal, nil, 0) }
	o.Routes = n.NewTransport
	o.BrokerAddr, o.NameServers = n.BrokerAddr(), n.NameServers()
	o.Broker = func() *broker.Broker { return n.broker.Load() }
	o.ACL = n.acl
	srv, err := f.StartGRPC(o)
	if err != nil {
		return fmt.Errorf("mq: gRPC listener: %w", err)
	}
	n.grpc = srv
	n.log.Info().Str("role", "grpc").Str("addr", srv.Addr()).Msg("serving")
	return nil
}

// GRPCAddr is where the gRPC endpoint listens, or "" when the node serves none.
func (n *Node) GRPCAddr() string {
	if n.grpc == nil {
		return ""
	}
	return n.grpc.Addr()
}
