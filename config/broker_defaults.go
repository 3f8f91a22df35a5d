package config

import "time"

// Defaults of the broker's settings that Options declares, named after the RocketMQ settings
// they mirror (BrokerConfig, MessageStoreConfig) with RocketMQ's values unless a comment says
// otherwise; docs/rocketmq-differences.md lists every one. They live here, with the settings,
// and the broker and replication read them from here, so each default is written once.
const (
	// DefaultClusterName and DefaultBrokerName are brokerClusterName and brokerName.
	DefaultClusterName = "DefaultCluster"
	DefaultBrokerName  = "broker-a"
	// DefaultReregisterGrace is how long member lists are refused after a crash (ours;
	// RocketMQ answers at once). internal/broker's reregister.go says why.
	DefaultReregisterGrace = time.Second

	// DefaultMaxLongPollingSuspend caps a pull's suspendTimeoutMillis (ours). Clients ask
	// 15-30 s (the Go client 20 s, the Java client 15 s), so honest ones never notice.
	DefaultMaxLongPollingSuspend = 60 * time.Second
	// DefaultMaxHeldPullsPerConnection and DefaultMaxHeldPulls cap parked pulls (ours). A push
	// consumer parks one pull per queue it owns, so 4096 covers any honest client.
	DefaultMaxHeldPullsPerConnection = 4096
	DefaultMaxHeldPulls              = 65536
	// DefaultMaxTopics (ours) is well above the topics of one broker in real deployments
	// (hundreds to a few thousand) and below what a node holds without tuning: every queue
	// that receives a message keeps a ConsumeQueue file open and mapped, a topic a send
	// creates has up to 8 queues, and Linux allows 65,530 mappings per process unless
	// vm.max_map_count is raised: 5,000 topics are at most 40,000 mappings.
	DefaultMaxTopics = 5000
	// DefaultMaxSubscriptionGroups (ours) is well above the consumer groups of one broker in
	// real deployments (tens to a few thousand) and twice DefaultMaxTopics, since a topic is
	// often read by several groups. A group costs little by itself (one entry of
	// subscriptionGroup.json, a few hundred bytes, rewritten whole at each change), but it
	// brings a %RETRY% topic (MaxTopics), offsets per queue it commits and a (group, topic)
	// pair for every scrape of the metrics to visit: 10,000 keeps the file under a few MiB
	// and each of those within their own caps.
	DefaultMaxSubscriptionGroups = 10000
	// DefaultAutoCreateTopicBurst and DefaultAutoCreateTopicRate (ours) let one connection
	// create a thousand topics at once and a hundred a second after that: an application
	// creating its topics at start never meets them, a flood of new names meets MaxTopics only
	// after seconds.
	DefaultAutoCreateTopicBurst = 1000
	DefaultAutoCreateTopicRate  = 100

	DefaultRegisterNameServerPeriod = 30 * time.Second // registerNameServerPeriod
	// DefaultRegisterNameServerPeriodMin is BrokerController.start's hard-coded 10 s: the
	// first periodic round and the floor of the period.
	DefaultRegisterNameServerPeriodMin = 10 * time.Second
	DefaultFlushConsumerOffsetInterval = 5 * time.Second   // flushConsumerOffsetInterval
	DefaultChannelExpiredTimeout       = 120 * time.Second // channelExpiredTimeout
	DefaultRebalanceLockMaxLiveTime    = 60 * time.Second  // rocketmq.broker.rebalance.lockMaxLiveTime

	// DefaultTimerPrecision is timerPrecisionMs; RocketMQ's is 1 s, ours 100 ms so that a
	// message arrives within 100 ms of its time.
	DefaultTimerPrecision = 100 * time.Millisecond
	DefaultTimerMaxDelay  = 3 * 24 * time.Hour // timerMaxDelaySec

	DefaultTransactionTimeout       = 6 * time.Second  // transactionTimeOut
	DefaultTransactionCheckMax      = 15               // transactionCheckMax
	DefaultTransactionCheckInterval = 60 * time.Second // transactionCheckInterval

	// Replication, RocketMQ's MessageStoreConfig and HAService values.
	//
	// DefaultHATransferBatchBytes is haTransferBatchSize: the most CommitLog bytes in one block.
	DefaultHATransferBatchBytes = 32 << 10
	// DefaultHAHousekeepingInterval is haHousekeepingInterval: a peer silent this long is
	// dropped.
	DefaultHAHousekeepingInterval = 20 * time.Second
	// DefaultHASendHeartbeatInterval is haSendHeartbeatInterval: the slave reports its offset
	// (and the master sends an empty block) at least this often.
	DefaultHASendHeartbeatInterval = 5 * time.Second
	// DefaultHASlaveFallBehindMax is haSlaveFallbehindMax: a slave further behind than this
	// does not count as available for sync replication.
	DefaultHASlaveFallBehindMax = 256 << 20
	// DefaultHATransferWaitInterval is how long a master's writer sleeps when a slave has
	// everything and nobody called Notify (RocketMQ's WriteSocketService waits 100 ms).
	DefaultHATransferWaitInterval = 100 * time.Millisecond
	// DefaultHAReconnectInterval is how long a slave waits before dialing again after a failed
	// attempt (RocketMQ's HAClient waits 5 s).
	DefaultHAReconnectInterval = 5 * time.Second
	// DefaultSlaveSyncPeriod is how often a slave copies its master's metadata (RocketMQ's
	// SlaveSynchronize, a fixed 10 s).
	DefaultSlaveSyncPeriod = 10 * time.Second
)
