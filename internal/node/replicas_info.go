package node

import "github.com/mqgo/mq/internal/broker/ha"

// ReplicaID is the broker's own id in its group in controller mode (assigned by the controllers
// or kept on its store), the id it registers with while it is a slave; 0 when the node is not
// in controller mode. Test tools (mqtest) read it to tell the group's peers apart.
func (n *Node) ReplicaID() int64 {
	if n.replicas == nil {
		return 0
	}
	return n.replicas.ID()
}

// HA is the replication of the node's current broker (internal/broker/ha), or nil when it has
// no broker: its slaves, its master, its metadata syncs.
func (n *Node) HA() *ha.Service { return ha.Of(n.broker.Load()) }
