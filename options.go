package mq

import (
	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Options configures a Node: the node's listeners and roles, then one group of settings per
// part as RocketMQ groups them — Broker (identity), Store (files, flush, retention), Limits,
// Periods, Timers, Transactions, HA (replication), Security (cluster secret, ACL, TLS),
// Controller (RocketMQ 5's controller in this node), ControllerMode (the broker's side) and
// HTTP (the dashboard's hosts and the optional metrics). It is declared once, in package
// github.com/mqgo/mq/config (`go doc github.com/mqgo/mq/config Options` lists every field),
// where each group keeps its defaults (EnsureDefaults) and checks (Validate); examples/mqnode's
// flags are generated from the same declarations (config.BindFlags).
//
// The zero value of every field means its default, so mq.StartNode(mq.Options{}) runs a name
// service and a broker on DefaultListen:
//
//	mq.StartNode(mq.Options{Listen: "127.0.0.1:0",
//		Store:    config.Store{Dir: dir, FlushDiskType: mq.SyncFlush},
//		Security: config.Security{ACLFile: aclfile.Watch("plain_acl.yml")}})
type Options = config.Options

// FlushDiskType says when an appended message counts as stored (RocketMQ flushDiskType):
// AsyncFlush ("ASYNC_FLUSH", the default) or SyncFlush ("SYNC_FLUSH"). It is the store's type.
type FlushDiskType = storage.FlushDiskType

// Flush modes.
const (
	// AsyncFlush acknowledges a send once the message is in the page cache.
	AsyncFlush = storage.AsyncFlush
	// SyncFlush acknowledges a send once the message is fsynced (group commit).
	SyncFlush = storage.SyncFlush
)

// BrokerRole is a broker's part in its master/slave group (RocketMQ brokerRole): AsyncMaster
// ("ASYNC_MASTER"), SyncMaster ("SYNC_MASTER") or Slave ("SLAVE"). It is the store's type.
type BrokerRole = storage.BrokerRole

// Broker roles.
const (
	// AsyncMaster, the default for broker id 0, acknowledges sends without waiting for a slave.
	AsyncMaster = storage.AsyncMaster
	// SyncMaster acknowledges sends once a slave has them.
	SyncMaster = storage.SyncMaster
	// Slave, the default for a broker id above 0, follows its master; it refuses sends and
	// serves reads.
	Slave = storage.Slave
)

// ACLConfig is RocketMQ's plain_acl.yml: the white-listed addresses and the accounts. See
// package github.com/mqgo/mq/aclfile for reading one from RocketMQ's YAML.
type ACLConfig = acl.Config

// ACLAccount is one account of an ACLConfig: its keys, the address it may skip signing from,
// whether it is an admin, and its permissions ("DENY", "PUB", "SUB", "PUB|SUB") by default and
// per topic and group ("name=PUB|SUB").
type ACLAccount = acl.Account

// Credentials are an ACL account's AccessKey and SecretKey (the official clients'
// primitive.Credentials).
type Credentials = remoting.Credentials

// TLSMode is how a node's listeners treat TLS (RocketMQ's tls.server.mode).
type TLSMode = remoting.TLSMode

// TLS modes.
const (
	TLSDisabled   = remoting.TLSDisabled
	TLSPermissive = remoting.TLSPermissive
	TLSEnforcing  = remoting.TLSEnforcing
)

// Defaults of Options, named after the RocketMQ settings they mirror. Each is the constant of
// the part that applies it; each comment gives the value.
const (
	// DefaultListen, "127.0.0.1:9876", is where a node serves when Options.Listen is empty:
	// RocketMQ's name server port, on loopback so an embedded node is not exposed by accident.
	DefaultListen = config.DefaultListen
	// DefaultStoreDir, "mqdata", is the store directory when Options.Store.Dir is empty.
	DefaultStoreDir = config.DefaultStoreDir
	// DefaultClusterName ("DefaultCluster") and DefaultBrokerName ("broker-a") are RocketMQ's.
	DefaultClusterName = config.DefaultClusterName
	DefaultBrokerName  = config.DefaultBrokerName
	// DefaultScanNotActiveBrokerInterval (10 s) is how often the name service drops silent
	// brokers.
	DefaultScanNotActiveBrokerInterval = route.DefaultScanNotActiveBrokerInterval
	// DefaultBrokerChannelExpiredTime (120 s) is how long a broker may stay silent before its
	// routes go.
	DefaultBrokerChannelExpiredTime = route.DefaultBrokerChannelExpiredTime
	// DefaultChannelMaxIdleTime (120 s, serverChannelMaxIdleTimeSeconds) closes connections that
	// sent nothing for this long.
	DefaultChannelMaxIdleTime = remoting.DefaultChannelMaxIdleTime
	// DefaultServerWorkerThreads (8, serverWorkerThreads) is the size of the name service's
	// request pool.
	DefaultServerWorkerThreads = config.DefaultServerWorkerThreads
	// DefaultServerQueueCapacity (10,000) is how many requests may wait for a name service
	// worker before the node answers SYSTEM_BUSY (RocketMQ's queue is unbounded).
	DefaultServerQueueCapacity = config.DefaultServerQueueCapacity
	// DefaultStartTimeout (10 s) bounds StartNode's wait for each listener and for the broker
	// (its HA listener and first registration).
	DefaultStartTimeout = config.DefaultStartTimeout
	// DefaultACLWatchInterval (500 ms, RocketMQ's FileWatchService) is how often Security.ACLFile is
	// checked for changes.
	DefaultACLWatchInterval = config.DefaultACLWatchInterval
)
