package node

import (
	"fmt"
	"os"

	"github.com/mqgo/mq/internal/addon"
)

// startController builds the node's controller (Options.Controller.ID) and installs its
// processors on the name service's dispatcher, as RocketMQ's enableControllerInNamesrv does:
// brokers reach it on the name server's address. Raft starts at once (it must, to elect a
// leader with its peers); the leader's duties run under the node's errgroup (runController).
func (n *Node) startController() error {
	o := n.opts
	if o.Controller.ID == "" {
		return nil
	}
	ep := n.endpointOf("namesrv")
	if ep == nil {
		return fmt.Errorf("mq: ControllerID needs the name service: it serves on its listener")
	}
	co := o.controllerOptions(ep.srv.Addr())
	co.Listen, co.Dial = n.raftNet()
	if err := os.MkdirAll(co.Dir, 0o755); err != nil {
		return fmt.Errorf("mq: controller: %w", err)
	}
	f, err := o.controllerFactory()
	if err != nil {
		return err
	}
	c, err := f.StartController(co)
	if err != nil {
		return fmt.Errorf("mq: controller: %w", err)
	}
	n.controller = c
	c.Register(ep.d)
	n.g.Go(func() error { return c.Run(n.ctx) })
	return nil
}

// Controller is the node's controller, or nil when it runs none (tests and tools read the Raft
// one's state through internal/controller.Of).
func (n *Node) Controller() addon.Controller { return n.controller }
