package mq

import "github.com/mqgo/mq/internal/node"

// Options configures a node; every field is documented on node.Options, and the zero value of
// each means RocketMQ's default.
type Options = node.Options

// FlushDiskType says when an appended message counts as stored.
type FlushDiskType = node.FlushDiskType

// Flush modes (RocketMQ's flushDiskType).
const (
	AsyncFlush = node.AsyncFlush // acknowledged once in the page cache (the default)
	SyncFlush  = node.SyncFlush  // acknowledged once fsynced (group commit)
)

// BrokerRole is a broker's part in its master/slave group (RocketMQ brokerRole).
type BrokerRole = node.BrokerRole

// Broker roles.
const (
	AsyncMaster = node.AsyncMaster // acknowledges sends without waiting for a slave (the default)
	SyncMaster  = node.SyncMaster  // acknowledges sends once a slave has them
	Slave       = node.Slave       // follows its master; refuses sends, serves reads
)

// Defaults of Options, named after the RocketMQ settings they mirror.
const (
	DefaultListen                      = node.DefaultListen
	DefaultStoreDir                    = node.DefaultStoreDir
	DefaultClusterName                 = node.DefaultClusterName
	DefaultBrokerName                  = node.DefaultBrokerName
	DefaultScanNotActiveBrokerInterval = node.DefaultScanNotActiveBrokerInterval
	DefaultBrokerChannelExpiredTime    = node.DefaultBrokerChannelExpiredTime
	DefaultChannelMaxIdleTime          = node.DefaultChannelMaxIdleTime
	DefaultServerWorkerThreads         = node.DefaultServerWorkerThreads
	DefaultServerQueueCapacity         = node.DefaultServerQueueCapacity
	DefaultStartTimeout                = node.DefaultStartTimeout
)
