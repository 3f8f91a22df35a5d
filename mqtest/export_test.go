package mqtest

import "github.com/mqgo/mq/internal/node"

// Wiring exposes the running node's internals (broker, route table) to the external tests.
func (n *Node) Wiring() *node.Node { return n.wiring() }

// Validate exposes the configuration check to the external tests.
func Validate(cfg Config) error {
	if cfg.Role == "" {
		cfg.Role = AsyncMaster
	}
	return validate(cfg)
}
