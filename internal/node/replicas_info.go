package node

// ReplicaID is the broker's own id in its group in controller mode (assigned by the controllers
// or kept on its store), the id it registers with while it is a slave; 0 when the node is not
// in controller mode. Test tools (mqtest) read it to tell the group's peers apart.
func (n *Node) ReplicaID() int64 {
	r := n.replicas
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}
