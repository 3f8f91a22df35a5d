// Package producer sends messages to Apache RocketMQ 4.x compatible brokers: this module's
// nodes (in-process through mq.Node's transport, or over TCP) and Apache RocketMQ clusters.
//
//	p, err := producer.New(producer.WithNameServers("127.0.0.1:9876"), producer.WithGroup("pg"))
//	if err != nil { ... }
//	defer p.Close()
//	res, err := p.SendSync(ctx, producer.NewMessage("Orders", body).WithTags("created").WithKeys(orderID))
//
// There is no Start: New validates the options, acquires the client instance shared by every
// handle of the same client id (internal/client) and registers the group; Close unregisters it.
//
// What a send does (docs/protocol.md §4):
//
//   - Validation before any I/O: topic non-empty, [%|a-zA-Z0-9_-], at most 127 bytes, not a
//     reserved system topic; body non-empty and at most the max message size (4 MiB);
//     properties free of the separator bytes. Errors wrap ErrInvalidMessage.
//   - Route: the topic's writable queues are cached per topic and rebuilt when the instance's
//     route changes (refreshed every 30 s). A miss asks the name servers; a topic they do not
//     know borrows TBW102's route (queues capped at 4) so brokers auto-create it. While every
//     name server is down the cached route keeps working.
//   - Queue: round robin over the writable queues (one counter per topic, starting at a
//     random queue as RocketMQ's ThreadLocalIndex does); a retry avoids the broker the attempt
//     before failed on. With latency fault tolerance on (off by default, as RocketMQ's
//     sendLatencyFaultEnable), a broker whose send failed is isolated for 600 s and a slow one
//     for 30 s..600 s by RocketMQ's table (latency 550 ms, 1 s, 2 s, 3 s, 15 s); isolated
//     brokers are skipped unless none other is left.
//   - Request: SEND_MESSAGE_V2 (310, short keys, as Java clients send), or SEND_BATCH_MESSAGE
//     (320) for SendBatch. Each message gets a UNIQ_KEY (each batch element too, unlike the
//     official Go client). Bodies of at least 4 KiB are zlib-compressed (level 5).
//   - Retries, as RocketMQ 4.9: SendSync and SendBatch retry transport errors and the
//     retryable codes (SYSTEM_ERROR, SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST) on
//     another broker, up to retries (default 2) more attempts; SendAsync retries only attempts
//     that got no answer, up to async retries (default 2); SendOneway is sent once. All
//     attempts share the send timeout (3 s): none starts once it is spent. A *SendError lists
//     every attempt; errors.Is/As see each attempt's error.
//   - Unreachable brokers, unlike RocketMQ: an attempt that could not reach its broker at all
//     (connection refused or broken) does not end a send; once every broker of the route
//     failed so, the send pauses (50 ms doubling to 500 ms, jittered) and tries again, with
//     its retries count fresh, until its timeout, so a broker restart shorter than the
//     timeout costs latency, not errors (WithRetryUnreachableUntilTimeout).
//   - Client-side batching, beyond RocketMQ 4.x and off by default (WithAsyncBatching, as
//     RocketMQ 5's autoBatch): SendAsync messages of one queue gather into one
//     SEND_BATCH_MESSAGE until the next would pass maxBytes (32 KiB) or linger (10 ms) ends;
//     one batch per queue in flight keeps each queue in SendAsync's order, and every callback
//     gets its own result. Delayed, retry-topic, transactional and to-be-compressed messages
//     go alone.
//   - Ordered: SendOrdered with a MessageQueueSelector (HashSelector, RandomSelector or your
//     own); when the selector outlasts the send timeout nothing is sent. StrictOrder never
//     leaves the selected queue and never retries; FailoverOrder moves to the next available
//     queue while the selected broker is isolated (fault tolerance on). SendToQueue sends to
//     one queue, once (both wait for an unreachable broker of their queue, as above).
//   - Message groups (RocketMQ 5's FIFO messages, message_group.go): a Message with a
//     MessageGroup carries it as __SHARDINGKEY and goes, in every attempt, to the queue
//     SipHash-2-4 of the group picks as 5.x's clients do, so the group keeps its order there
//     for a FIFO consumer (consumer.SimpleConsumer). Such messages are not async-batched.
//
// A Producer is safe for concurrent use. Messages are only read, never kept or modified.
package producer
