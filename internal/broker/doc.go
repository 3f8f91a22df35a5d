// Package broker is the RocketMQ broker of a node: the request processors over the message store,
// and the managers of topics, subscription groups, consumer offsets, clients and locks.
//
// Files by concern: broker.go (lifecycle), options.go, topic_config.go, subscription_group.go,
// consumer_offset.go, registration.go (name servers), send.go (producing), clients.go
// (heartbeats, consumer groups, queue locks), pull.go (pulls, long polling, offsets), retry.go
// (send-back, retry and dead-letter topics, delayed delivery), admin.go (queries and admin reads).
//
// Lock order: a manager's mutex is never held while calling another manager or doing I/O.
package broker
