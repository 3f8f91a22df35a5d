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
//	reply.go, reply_route.go     SEND_REPLY_MESSAGE(_V2), the asynchronous push to the requester,
//	                             and where it goes (the request's connection, the id's holder)
//	clients.go, consumer_manager.go, lock.go
//	                             heartbeats, producer and consumer groups, expiry, notifications,
//	                             LOCK_BATCH_MQ / UNLOCK_BATCH_MQ
//	pull*.go, filter.go, offset_processor.go
//	                             PULL_MESSAGE, tag and SQL92 filtering, long polling, offset requests
//	expression.go                which expression types are filtered, RocketMQ's answers for the rest
//	transaction.go               half messages, END_TRANSACTION, op records, transaction state checks
//	retry.go, schedule.go        CONSUMER_SEND_MSG_BACK, retry and dead-letter topics, delayed
//	                             delivery (SCHEDULE_TOPIC_XXXX, delayOffset.json)
//	query.go, admin.go, stats.go QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, admin reads, counters
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
// One message: a send processor validates and appends to the store; the store's dispatcher
// writes the ConsumeQueue unit and calls onMessageArriving, which wakes pulls parked on that
// queue; a pull reads the stored records and lends them to the response without copying.
//
// Locks: every manager's mutex (topics, groups, offsets, consumers, queue locks, parked pulls,
// reply routes, schedule, stats) is a leaf: none is held while calling another manager, the store or a
// transport.
package broker
