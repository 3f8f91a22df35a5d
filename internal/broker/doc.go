// Package broker is the RocketMQ broker of a node: the request processors over the message store,
// and the managers of topics, subscription groups, consumer offsets, clients and locks.
//
// Files by concern:
//
//	broker.go, options.go        lifecycle (New, Register, Run, Close) and settings
//	topic_config.go              topics (topics.json), system topics, auto-creation from TBW102
//	subscription_group.go        consumer group settings (subscriptionGroup.json)
//	consumer_offset.go           committed offsets (consumerOffset.json)
//	registration.go              REGISTER_BROKER / UNREGISTER_BROKER with every name server
//	send*.go, topic_admin.go     SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE; topic admin
//	service.go, core_svc.go      the seams of the services in packages of their own (Service,
//	                             Hooks, RequestNoter, Counter) and the narrow methods they call
//	clients.go, consumer_manager.go, lock.go
//	                             heartbeats, producer and consumer groups, expiry, notifications,
//	                             LOCK_BATCH_MQ / UNLOCK_BATCH_MQ
//	pull*.go, filter.go, offset_processor.go
//	                             PULL_MESSAGE, tag and SQL92 filtering, long polling, offset requests
//	expression.go                which expression types are filtered, RocketMQ's answers for the rest
//	retry.go                     CONSUMER_SEND_MSG_BACK, retry and dead-letter topics
//	core_tx.go                   the Scheduler and Transactions the send, retry and commit paths
//	                             call, and what the core lends those services
//	query.go                     QUERY_MESSAGE, VIEW_MESSAGE_BY_ID
//	limits.go                    caps on suspend time, parked pulls and queue counts
//	core_ha.go                   HA settings, the Replicator seam (HA address, SYNC_MASTER wait,
//	                             in-sync refusal, REGISTER_BROKER answers) and the checked installs
//	                             of a master's tables on a slave; name_drops.go: the name checks
//	                             they share with loading; slave_read.go: suggestWhichBrokerId
//
// Moved to their own packages (issue 27):
//
//	ha.go, slave_sync.go, controller_mode.go -> internal/broker/ha (with internal/node's
//	                             replicas.go: the replicas manager)
//
// Moved to packages of their own (issue 27):
//
//	transaction.go               -> internal/broker/transaction
//	schedule.go, timer.go        -> internal/broker/schedule (delay levels, delayOffset.json, timers)
//	reply.go, reply_route.go     -> internal/broker/reply (reply.go, route.go)
//	stats.go, tps.go, metrics.go -> internal/broker/stats
//	admin.go                     -> internal/broker/admin (reads.go); QUERY_MESSAGE and
//	                                VIEW_MESSAGE_BY_ID stay here (query.go)
//	reset_offset.go, consumer_connection.go, consume_directly.go
//	                             -> internal/broker/admin (reset_offset.go, connections.go,
//	                                consume_directly.go)
//
// One message: a send processor validates and appends to the store; the store's dispatcher
// writes the ConsumeQueue unit and calls onMessageArriving, which wakes pulls parked on that
// queue; a pull reads the stored records and lends them to the response without copying.
//
// Locks: every manager's mutex (topics, groups, offsets, consumers, queue locks, parked pulls)
// is a leaf: none is held while calling another manager, the store or a
// transport.
package broker
