package node

import (
	"fmt"

	"github.com/mqgo/mq/internal/addon"
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
	srv, err := f.StartGRPC(addon.GRPCOptions{
		Listen:       n.opts.GRPC.Listen,
		TLSMode:      n.opts.Security.TLSMode,
		TLSConfig:    n.opts.Security.TLSConfig,
		MaxRecvBytes: n.opts.Limits.MaxFrameBytes,
		Local: func() remoting.Transport {
			return remoting.NewInProcTransport(lookupLocal, nil, 0)
		},
		BrokerAddr:  n.BrokerAddr(),
		NameServers: n.NameServers(),
		Broker:      func() *broker.Broker { return n.broker.Load() },
		Logger:      n.opts.Logger,
	})
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
