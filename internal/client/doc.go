// Package client is the client instance shared by the producers and consumers of a process that
// use the same client id (ip@instanceName, docs/protocol.md §10.1): one transport, one route table
// refreshed in the background, one heartbeat listing every group, and the processors for the
// requests brokers send to clients. Producer and consumer handles acquire an Instance and
// release it; the last release stops it.
//
// The contract the producer and consumer packages build on (implemented in instance.go):
//
//	func Acquire(opts Options) (*Instance, error)  // shared per client id, reference-counted
//	func (i *Instance) Release() error              // the last release stops and closes it
//	func (i *Instance) ClientID() string
//	func (i *Instance) Transport() remoting.Transport
//	func (i *Instance) RegisterProducer(group string) error
//	func (i *Instance) UnregisterProducer(group string)
//	func (i *Instance) RegisterConsumer(group string, c Consumer) error
//	func (i *Instance) UnregisterConsumer(group string)
//	func (i *Instance) TopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error)
//	func (i *Instance) RefreshTopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error)
//	func (i *Instance) BrokerAddr(brokerName string, brokerID int64) string  // "" if unknown
//	func (i *Instance) MasterAddr(brokerName string) string
//	func (i *Instance) AnyBrokerAddrOfTopic(topic string) string            // for GET_CONSUMER_LIST_BY_GROUP
//	func (i *Instance) SendHeartbeatToAllBrokers(ctx context.Context)
//	func (i *Instance) Logger() zerolog.Logger
//
// Additions beyond that contract (no signature above changed): Options (NameServers,
// InstanceName, Transport + OwnTransport, Credentials, TLSConfig, PollNameServerInterval, HeartbeatBrokerInterval,
// RouteTimeout, Namespace, Logger), CachedTopicRoute (no I/O), NameServers, BuildClientID,
// LocalIPv4, ErrNameServersUnreachable (every name server failed with a transport error) and
// ErrConsumerGroupRegistered (a second consumer of a group).
//
// Semantics worth knowing:
//   - The instance key is client id + sorted name servers + transport identity ("tcp" for the
//     default, else the transport's pointer) + the TLS config's pointer + a SHA-256 digest of
//     the account, so in-process and TCP handles, accounts and TLS configs never share.
//   - With Credentials every request the instance and its handles send is signed just before
//     it goes (signing.go), over any transport.
//   - RegisterProducer is counted (several producers of one group may share a process);
//     RegisterConsumer refuses a second consumer of the same group.
//   - Unregister{Producer,Consumer} send UNREGISTER_CLIENT (35) to the masters (consumers: every
//     address) and wait for the answers, each bounded by 3 s.
//   - Route queries go round robin over the name servers and move on only after a transport
//     error; a failed refresh keeps the cached route. TOPIC_NOT_EXIST is a
//     *remoting.ResponseError (errors.As).
//   - Consumer methods are called from the instance's goroutines, and HeartbeatData also
//     synchronously inside SendHeartbeatToAllBrokers on the caller's goroutine: never call that
//     while holding a lock HeartbeatData or SubscribedTopics take (it deadlocks).
//   - When the transport reconnects to a known broker (remoting.ReconnectNotifier), the
//     heartbeat loop sends a round at once and then makes every consumer rebalance: a broker
//     that restarted has forgotten the groups (RocketMQ 4.9 waits for the next heartbeat).
//   - Processors: 40 rebalances every consumer (no reply), 307 answers a minimal running info,
//     309 goes to the group's consumer. 39 (CHECK_TRANSACTION_STATE) is not handled yet.
//
// and the interface a consumer implements so the instance can heartbeat and rebalance it:
//
//	type Consumer interface {
//		HeartbeatData() protocol.ConsumerData // group, consume type, model, from-where, subscriptions
//		SubscribedTopics() []string           // including %RETRY%group for clustering
//		Rebalance()                           // NOTIFY_CONSUMER_IDS_CHANGED and the periodic timer
//		ConsumeMessageDirectly(msg []byte) *remoting.Command // CONSUME_MESSAGE_DIRECTLY (309)
//	}
package client
