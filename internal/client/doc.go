// Package client is the client instance shared by the producers and consumers of a process that
// use the same client id (ip@instanceName, REMOTING.md §10.1): one transport, one route table
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
// and the interface a consumer implements so the instance can heartbeat and rebalance it:
//
//	type Consumer interface {
//		HeartbeatData() protocol.ConsumerData // group, consume type, model, from-where, subscriptions
//		SubscribedTopics() []string           // including %RETRY%group for clustering
//		Rebalance()                           // NOTIFY_CONSUMER_IDS_CHANGED and the periodic timer
//		ConsumeMessageDirectly(msg []byte) *remoting.Command // CONSUME_MESSAGE_DIRECTLY (309)
//	}
package client
