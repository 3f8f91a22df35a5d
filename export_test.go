package mq

import "github.com/mqgo/mq/internal/broker"

// Broker gives this package's tests (internal and external) the node's broker, which the
// public API does not offer; nil when the node has none.
func (n *Node) Broker() *broker.Broker { return n.n.Broker() }

// WithoutRequestMetrics stops the node's listeners observing requests, for the benchmark that
// measures what the observation costs.
func (n *Node) WithoutRequestMetrics() { n.n.SetRequestObserver(nil) }
