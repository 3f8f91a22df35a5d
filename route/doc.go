// Package route is the name service: the registry brokers register with and clients ask for
// topic routes, speaking RocketMQ 4.x's name server protocol (docs/protocol.md §3), plus the route
// data types and request helpers brokers and clients use against it or against Apache RocketMQ
// name servers.
//
// # Tables
//
// A NameServer keeps, in memory, RocketMQ's RouteInfoManager tables:
//
//	clusterAddr  cluster name -> set of broker names
//	brokerAddr   broker name  -> BrokerData{cluster, brokerName, brokerAddrs: id -> "ip:port"} (id 0 = master)
//	topicQueue   topic        -> broker name -> QueueData{readQueueNums, writeQueueNums, perm, topicSynFlag}
//	brokerLive   broker addr  -> last registration time, DataVersion, channel, HA address
//
// and a KV config (namespace -> key -> value), optionally persisted to a kvConfig.json file.
// Filter servers are not kept. Name servers never talk to each other (AP): each broker
// registers with every name server, and each answers from what it was told.
//
// # Registration
//
// REGISTER_BROKER doubles as the heartbeat (brokers send it every 30 s). It adds the broker
// name to its cluster and the address under its id; a master's topics update the topic queue
// table when the broker is new or its DataVersion changed, otherwise only liveness is refreshed.
// Topics a master stops reporting are kept until DELETE_TOPIC_IN_NAMESRV or until the broker
// name disappears, as in RocketMQ 4.x (brokers may register only what changed). A slave is
// answered with its master's address and HA address.
//
// # Expiry
//
// A broker leaves the table when
//   - it sends UNREGISTER_BROKER;
//   - the connection it last registered on closes, fails or goes idle (the ConnListener matches
//     the channel by ID and removes every broker registered on it, as brokers of one process may
//     share a link; an event for an older connection of a broker that has re-registered on a
//     new one removes nothing);
//   - Run's scan, every Options.ScanInterval (10 s), finds it silent for longer than
//     Options.BrokerExpiry (120 s); its connection is then closed, unless a live broker shares
//     it.
//
// Removing an address drops its liveness and its entry in the broker data. When a broker name
// has no address left, the name leaves its cluster (and an empty cluster goes), and its queue data
// leaves every topic (and a topic left without queue data goes). While a slave remains, a gone
// master leaves the queue data in place: consumers can still read from the slave, and producers
// skip queue data without a master.
//
// # Routes
//
// GET_ROUTEINFO_BY_TOPIC answers the topic's queue datas, sorted by broker name, and the broker
// datas of exactly those broker names, encoded by TopicRouteData.Encode in the compact form the
// official Go client parses (no whitespace in brokerAddrs, which is never null). A topic with
// no queue data, or whose broker names are all unknown, gets TOPIC_NOT_EXIST (17).
// DecodeTopicRouteData reads both our bodies and Apache's (fastjson's bare integer keys).
//
// # Locking
//
// The route table has one sync.RWMutex (table.mu): queries take it shared, registration and
// removal exclusively; no I/O happens under it, and channels of expired brokers are closed
// after it is released. The KV config has its own RWMutex (kvConfig.mu) and a persistMu for file
// writes. Lock order: kvConfig.persistMu before kvConfig.mu; table.mu and the KV locks are never
// held together (a route query reads the table, releases it, then reads ORDER_TOPIC_CONFIG).
//
// # Usage
//
//	ns := route.NewNameServer(route.Options{Logger: &log})
//	ns.Register(dispatcher, remoting.NewExecutor("namesrv", 8, 10000))
//	g.Go(func() error { return ns.Run(ctx) })
package route
