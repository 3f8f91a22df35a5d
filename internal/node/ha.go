package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// haListenAddr is where a master's HA listener binds: Options.HAListen, else the broker
// listener's host with port + 1 (RocketMQ haListenPort = listenPort + 1), or port 0 when the
// broker was asked for port 0. bound is the broker listener's bound address.
func (n *Node) haListenAddr(bound string) (string, error) {
	if n.opts.HAListen != "" || n.opts.BrokerRole == Slave {
		return n.opts.HAListen, nil
	}
	_, cfgPort, err := net.SplitHostPort(firstNonEmpty(n.opts.BrokerListen, n.opts.Listen))
	if err != nil {
		return "", fmt.Errorf("mq: broker listen address: %w", err)
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", fmt.Errorf("mq: broker listener address %q: %w", bound, err)
	}
	if cfgPort == "0" {
		return net.JoinHostPort(host, "0"), nil
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("mq: broker listener port %q: %w", port, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// startHA runs the broker's replication under the node's errgroup: a master's HA listener
// (bound before the broker registers, so REGISTER_BROKER carries its address), or a slave's
// link to its master.
func (n *Node) startHA(ctx context.Context) error {
	if s := n.broker.HASlave(); s != nil {
		n.g.Go(func() error { return s.Run(ctx) })
		return nil
	}
	m := n.broker.HAMaster()
	if m == nil {
		return nil
	}
	n.g.Go(func() error { return m.Run(ctx) })
	timeout := time.NewTimer(n.opts.StartTimeout)
	defer timeout.Stop()
	select {
	case <-m.Ready():
	case <-ctx.Done():
		n.cancel()
		return fmt.Errorf("mq: HA listener: %w", n.g.Wait())
	case <-timeout.C:
		return fmt.Errorf("mq: HA listener not ready after %v", n.opts.StartTimeout)
	}
	addr, err := advertisedAddr(m.Addr(), n.opts.BrokerIP)
	if err != nil {
		return err
	}
	n.broker.SetHAServerAddr(addr)
	n.log.Info().Str("role", "ha").Str("addr", addr).Msg("serving")
	return nil
}

// HAAddr is the advertised address of a master's HA listener, or "" for a slave or a node
// without a broker.
func (n *Node) HAAddr() string {
	if n.broker == nil || n.broker.HAMaster() == nil {
		return ""
	}
	m := n.broker.HAMaster()
	select {
	case <-m.Ready():
	default:
		return ""
	}
	addr, err := advertisedAddr(m.Addr(), n.opts.BrokerIP)
	if err != nil {
		return ""
	}
	return addr
}
