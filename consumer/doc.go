// Package consumer is the consume side of the RocketMQ 4.x client: a push consumer that
// receives the messages of its subscriptions and hands them to listeners, with the offset
// stores behind it (docs/protocol.md §5, §10); and RocketMQ 5's simple consumer, which pops.
//
//	pc, err := consumer.NewPushConsumer(consumer.WithNameServers("127.0.0.1:9876"),
//		consumer.WithGroup("orders-service"))
//	if err != nil { ... }
//	pc.Subscribe("orders", "TagA || TagB", func(ctx context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
//		for _, m := range msgs { handle(m.Body) }
//		return consumer.ConsumeSuccess, nil
//	})
//	if err := pc.Start(); err != nil { ... }
//	defer pc.Close()
//
// # How a message flows
//
// The consumer shares a client instance (internal/client, one per client id) for routes,
// broker addresses, heartbeats and the requests brokers send. Its goroutines:
//
//   - rebalance loop: at start, every WithRebalanceInterval (20 s) and on
//     NOTIFY_CONSUMER_IDS_CHANGED, for every subscribed topic (and %RETRY%group when
//     clustering) it reads the topic's readable queues from the route and the group's client
//     ids from a broker (GET_CONSUMER_LIST_BY_GROUP; a broker that does not know this
//     consumer, having restarted, gets a heartbeat at once and is asked again), allocates with
//     the strategy (rebalance.Averagely() by default; broadcasting takes every queue) and
//     updates the queue table: a dropped queue stops at once and its offset is persisted
//     (orderly: its broker lock released); a new queue gets its start offset (stored offset,
//     else consume-from-where, docs/protocol.md §10.3) and a pull loop.
//   - one pull loop per queue: long-polling PULL_MESSAGE (suspend WithPullSuspend, 15 s, within
//     WithPullTimeout, 30 s; the commit-offset bit carries the consumed offset in clustering;
//     the broker filters with the subscription heartbeats registered unless
//     WithSubscriptionInPull), client-side tag filtering, the messages into the queue's
//     processQueue (ordered by queue offset), then to the consume service, and a pause of
//     WithPullInterval (0) after a pull that found messages. Pulls pause 50 ms while the queue
//     caches more than 1000 messages or 100 MiB, or (concurrent) spans more than 2000 offsets.
//     FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL are handled as the official clients
//     do. A failed pull waits WithPullErrorDelay (1 s) before the next, except one whose
//     connection broke: that queue pulls again after DefaultReconnectPullDelay (20 ms),
//     doubling to DefaultMaxReconnectPullDelay (500 ms) while the broker stays away
//     (pull_retry.go).
//   - concurrent consume service: WithConsumeGoroutines workers (20) run the listener on batches
//     (WithConsumeBatchSize, 1). A failed batch (RECONSUME_LATER, an error or a panic) is sent
//     back to the broker (CONSUMER_SEND_MSG_BACK, delay level 0) into the retry topic; a
//     message the broker did not take is sent to the retry topic by the consumer itself
//     (SEND_MESSAGE_V2 as RocketMQ's internal producer, resend.go), and only when that fails
//     too consumed again locally after a delay. The offset committed is the smallest one still
//     cached. A scan every WithConsumeTimeout (15 min) sends back messages whose listener call
//     took longer than that, with delay level 3. Consume hooks (WithConsumeHook) run
//     around every listener call, concurrent or orderly.
//   - orderly consume service (WithOrderly): one consume loop per queue, consuming only while
//     the client holds the queue's broker lock (LOCK_BATCH_MQ at assignment, renewed every
//     WithLockInterval by the lock loop); SUSPEND_CURRENT_QUEUE_A_MOMENT retries the same
//     messages locally after WithSuspendDelay, for ever unless WithMaxReconsumeTimes is set
//     (RocketMQ's orderly default), past which they go to the dead-letter topic (delay level
//     -1, else the resend). At most WithMaxTimeConsumeContinuously (one minute) per turn. A dropped queue's
//     lock is released once no listener call runs on it, WithUnlockDelay (20 s) later if
//     messages were still cached.
//   - persist loop: every WithPersistInterval (5 s) the offsets of the held queues go to the
//     broker (UPDATE_CONSUMER_OFFSET, one-way unless WithSyncCommit) or, broadcasting, to
//     <dir>/<clientId>/<group>/offsets.json in the Java client's format, with a .bak copy
//     (written atomically).
//
// Close stops pulls, lets listener calls in progress finish (their context is cancelled after
// WithCloseTimeout), persists offsets, unlocks orderly queues, unregisters the group and
// releases the client instance; it returns after every goroutine above has exited. Messages
// pulled but not consumed are redelivered to whoever takes their queue next (at-least-once).
//
// # Masters and slaves
//
// A queue's pulls go where the last answer's suggestWhichBrokerId says (a master sends a
// reader far behind to its slave; the slave sends it back), per docs/protocol.md §3.1.4: that id's
// address, else id+1's, else the lowest id of the broker name. The commit-offset bit is set
// only on pulls to the master. A pull that cannot reach its broker (the master died) is
// retried at once at another address of the broker name, and the failed address is avoided
// for DefaultFailoverHold; offsets are still persisted to the master only, so commits wait
// until it is back. A pull left unanswered by a dying broker holds its queue for
// WithPullTimeout before it counts as failed.
//
// # Lifecycle
//
// A consumer is new until Start (RocketMQ's ServiceState): Subscribe only then, Start once.
// Start acquires the client instance, reads routes (a topic that does not exist yet is logged
// once and taken by the rebalance once it is created; unreachable name servers fail Start),
// asks a broker of each topic about every subscription that is not a tag expression
// (CHECK_CLIENT_CONFIG: an SQL92 one fails Start when it does not compile, or on an Apache
// broker without property filtering), registers the group (ErrGroupExists when another
// consumer of the group shares the instance), heartbeats and rebalances. The route refresh
// (WithPollNameServerInterval, 30 s) makes the consumer rebalance as soon as it finds a
// subscribed topic that had no route. A failed Start
// releases everything and is final, RocketMQ's START_FAILED: later calls return
// ErrStartFailed, and a new consumer must be made. After Close every call returns ErrClosed.
//
// # Namespaces
//
// WithNamespace(ns) puts the group and topics in ns on the wire ("ns%topic", "ns%group",
// "%RETRY%ns%group"), by RocketMQ's NamespaceUtil rule (internal/names.WrapNamespace), while
// listeners see topics without it.
//
// # Pull consumer
//
// NewPullConsumer builds a lite pull consumer on the same machinery: Subscribe (rebalanced) or
// Assign (fixed queues), then Poll returns pulled batches; offsets advance by auto-commit (what
// earlier Polls returned counts as consumed at the next Poll) or Commit; Seek, SeekToBegin,
// SeekToEnd, Pause and Resume act per queue.
//
// # Simple consumer
//
// NewSimpleConsumer builds RocketMQ 5's SimpleConsumer over POP (simple_consumer.go,
// docs/protocol.md Appendix F): Receive pops messages hidden from the rest of the group for an
// invisible duration, Ack takes each for good, ChangeInvisibleDuration moves its deadline; the
// broker keeps the group's progress and hands unacknowledged messages out again, so there is no
// rebalance, pull loop or offset store. It shares the client instance (routes, heartbeats,
// transport) and the options of the other consumers, and runs no goroutine of its own.
//
// # Locks
//
// Both consumers are built on one puller (puller.go: subscriptions, rebalancing, pull loops,
// offsets, lifecycle). PullConsumer.mu (its poll buffers), puller.mu (state, subscriptions) and
// puller.queuesMu (the queue table) are never held together; processQueue.mu and the offset
// stores' locks are leaves. None is held across I/O or a listener call.
package consumer
