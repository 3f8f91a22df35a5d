// Package broker is the RocketMQ broker of a node: the request processors over the message store
// and the tables and managers of the packages below it (tables, clients, longpoll, filter,
// registrar, reqnames, tickets), which import nothing of this package.
//
// The core is split as RocketMQ splits its processors into classes: Broker keeps the
// lifecycle and the managers, and each request family is a type of its own that embeds *Broker
// for the store, the managers and the pools, and owns its request codes (its register method)
// and its state:
//
//	sender          send.go, send_check.go, send_props.go, send_put.go: SEND_MESSAGE(_V2),
//	                SEND_BATCH_MESSAGE, CONSUMER_SEND_MSG_BACK (retry.go)
//	puller          pull*.go, offset_processor.go: PULL_MESSAGE and LITE_PULL_MESSAGE, long
//	                polling, the offset requests
//	clientManager   clients.go, reregister.go: heartbeats, producer and consumer groups, expiry,
//	                notifications, the member-list grace after a crash
//	querier         query.go: QUERY_MESSAGE, VIEW_MESSAGE_BY_ID
//
// Services (below) reach the core through a narrow interface (issue 27: the store, dispatcher
// registration, the topic and group registry, client channels, the logger) made of a few small
// views the core hands out rather than methods on Broker (methods_test.go keeps every type
// under 60); services read the time themselves:
//
//	b.Topics()      view_tables.go: Get, All, Count, Update, Delete, AddSystem, QueueLoopBound,
//	                InstallMaster
//	b.Groups()      view_tables.go: All, Find, Lookup (with GroupRemark), Get, Update, Delete,
//	                InstallMaster
//	b.Offsets()     view_tables.go: All, Query, Commit, TopicsOf, InstallMaster
//	b.Clients()     view_clients.go: Members, Member, ConsumerGroup, Producers, ProducerConns,
//	                Counts, PullHolds
//	b.Messages()    view_messages.go: the send path's CheckSend and StoreAsSend, Put, CountPut,
//	                Schedule, Refusal, Read, CheckRead, StoreHost
//	b.Seams()       seams.go: SetScheduler, SetTransactions, SetRequestNoter, SetCounter,
//	                SetReplicator, SetRetentionFloor (and Counter, Replicator, SlaveAcks); its
//	                unexported methods are the core's calls through them
//	b.Hooks(), b.Pools(), Attach   service.go: dispatch, heartbeat and close hooks; executors
//	b.Store(), b.Logger(), b.Options()   the store, the node's logger, the settings
//
// Files by concern (every file of the package):
//
//	broker.go, options.go        lifecycle (New, Register, Run, Close) and settings
//	registration.go              the registrar over the topic table; brokerPermission
//	service.go, seams.go,        the seam for services (Service, Hooks, Pools), the seams they
//	view_*.go                    plug into and the views they use (above)
//	send.go, send_check.go,      the sender (above); topic_create.go: topic auto-creation on
//	send_props.go, send_put.go   the send path and its refusals
//	retry.go                     CONSUMER_SEND_MSG_BACK, retry and dead-letter topics
//	pull.go, pull_body.go,       the puller: checks, reads and parking; the records lent to the
//	pull_hold.go, slave_read.go  answer; parked pulls' deadlines; suggestWhichBrokerId
//	offset_processor.go          the offset requests
//	clients.go, reregister.go    the clientManager (above)
//	query.go                     the querier (above)
//	names.go, read_check.go      the checks of names in requests; ReadCheck on what is read
//	limits.go                    caps on suspend time and queue counts
//	core_svc.go, core_tx.go,     what the core declares for its services: the seams of reply
//	core_ha.go                   and stats (RequestNoter, Counter) and the send-path helpers
//	                             reply shares; the Scheduler and Transactions; HA connection
//	                             settings and the Replicator (HA address, SYNC_MASTER wait,
//	                             in-sync refusal, REGISTER_BROKER answers)
//
// The packages below the core: tables/ (the topics, groups and offsets, their files and
// metadata writer; a slave's checked installs of a master's tables), clients/ (the client
// groups), longpoll/ (the parked pulls), filter/ (tag and SQL92 subscriptions), registrar/
// (name-server registration), reqnames/ (the names requests carry), tickets/ (the rounds topic
// changes wait on).
//
// Moved to packages of their own, the services (issue 27; service.go, internal/broker/services):
//
//	ha.go, slave_sync.go, controller_mode.go -> internal/broker/ha (with internal/node's
//	                             replicas.go: the replicas manager)
//	transaction.go               -> internal/broker/transaction
//	schedule.go, timer.go        -> internal/broker/schedule (delay levels, delayOffset.json,
//	                                timers, the recall handles of timer messages)
//	reply.go, reply_route.go     -> internal/broker/reply (reply.go, route.go)
//	stats.go, tps.go, metrics.go -> internal/broker/stats
//	admin.go, topic_admin.go, reset_offset.go, consumer_connection.go, consume_directly.go
//	                             -> internal/broker/admin (reads.go, topics.go, reset_offset.go,
//	                                connections.go, consume_directly.go); QUERY_MESSAGE and
//	                                VIEW_MESSAGE_BY_ID stay here (query.go)
//	permission.go                -> broker.properties to internal/broker/admin (config_file.go),
//	                                the registered topics' overlay to registrar/; the
//	                                permission itself stays (registration.go)
//	LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, clients/locks.go -> internal/broker/locks
//
// One message: sender.processSend (send.go) decodes the header; sendOne checks it (check,
// send_check.go), builds the stored message, sets its properties and target (redirect,
// send_props.go) and appends it and answers (put, send_put.go), returning to sendOne between
// these steps only. The store's dispatcher writes the ConsumeQueue unit and calls
// puller.onMessageArriving, which wakes pulls parked on that queue; a pull reads the stored
// records and lends them to the response without copying.
//
// Locks: every manager's mutex (topics, groups, offsets, consumers, parked pulls) is a leaf:
// none is held while calling another manager, the store or a transport. The processor types
// add no lock: sender and querier hold no mutable state, the registrar's tickets and puller's
// hold have their own leaf mutex, clientManager's state is the consumer manager's.
package broker
