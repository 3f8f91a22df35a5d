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
//	retry.go                     CONSUMER_SEND_MSG_BACK, retry and dead-letter topics
//	core_tx.go                   the Scheduler and Transactions the send, retry and commit paths
//	                             call, and what the core lends those services
//	transaction.go               -> internal/broker/transaction
//	schedule.go, timer.go        -> internal/broker/schedule (delay levels, delayOffset.json, timers)
//	query.go, admin.go, stats.go QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, admin reads, counters
//	limits.go                    caps on suspend time, parked pulls and queue counts
//
// One message: a send processor validates and appends to the store; the store's dispatcher
// writes the ConsumeQueue unit and calls onMessageArriving, which wakes pulls parked on that
// queue; a pull reads the stored records and lends them to the response without copying.
//
// Locks: every manager's mutex (topics, groups, offsets, consumers, queue locks, parked pulls,
// reply routes, stats) is a leaf: none is held while calling another manager, the store or a
// transport.
package broker
