package mqtest

import (
	"errors"

	"github.com/mqgo/mq"
)

// haSupported reports whether the node can run cfg's roles.
func haSupported(cfg Config) error {
	if cfg.SlavesPerGroup > 0 || cfg.Role == SyncMaster {
		return errors.New("mqtest: slaves and SYNC_MASTER need the node's HA wiring, which is not in mq.Options yet")
	}
	return nil
}

// roleOptions sets the HA options of broker n.
func (c *Cluster) roleOptions(n *Node, o *mq.Options) {}
