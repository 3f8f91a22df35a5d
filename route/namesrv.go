package route

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// Defaults of Options (RocketMQ's values).
const (
	// DefaultScanNotActiveBrokerInterval is how often the name service drops silent brokers
	// (scanNotActiveBrokerInterval).
	DefaultScanNotActiveBrokerInterval = 10 * time.Second
	// DefaultBrokerChannelExpiredTime is how long a broker may stay silent before its routes go
	// (BROKER_CHANNEL_EXPIRED_TIME).
	DefaultBrokerChannelExpiredTime = 120 * time.Second
	// DefaultMaxQueueNums is ours (RocketMQ's name server takes any count): 1024, the bound
	// RocketMQ's admin tools follow by convention and the broker's default MaxQueueNums.
	DefaultMaxQueueNums = 1024
)

// Options configures a NameServer. The zero value is valid.
type Options struct {
	// ScanInterval is how often Run looks for silent brokers. Zero or negative means
	// DefaultScanNotActiveBrokerInterval.
	ScanInterval time.Duration
	// BrokerExpiry is how long a broker may go without registering before its routes are
	// removed. Zero or negative means DefaultBrokerChannelExpiredTime.
	BrokerExpiry time.Duration
	// KVConfigPath, when set, is the JSON file (RocketMQ's kvConfig.json format) the KV config is
	// persisted to on every change. Call LoadKVConfig before serving to read it back. Empty keeps
	// the KV config in memory only.
	KVConfigPath string
	// MaxQueueNums caps the read and write queue counts a broker may register for a topic
	// (larger counts are clamped): every client routing to the topic allocates one queue per
	// count. Zero or negative means DefaultMaxQueueNums.
	MaxQueueNums int32
	// Logger receives the name server's logs (component "route"); nil discards them.
	Logger *zerolog.Logger

	now func() time.Time // test hook; nil = time.Now
}

// NameServer is the name service: the route table, the KV config, the request processors and
// the expiry scan. Several name servers never talk to each other; brokers register with each.
// All methods are safe for concurrent use.
type NameServer struct {
	opts  Options
	log   zerolog.Logger
	now   func() time.Time
	table *table
	kv    *kvConfig

	// orderConfOff is orderMessageEnable=false (UPDATE_NAMESRV_CONFIG): routes then carry no
	// order topic configuration from the KV config.
	orderConfOff atomic.Bool

	// regLog is log, rate-limited: a broker repeats a flawed registration every 30 s.
	regLog zerolog.Logger
}

// NewNameServer builds a name server. It starts nothing and touches no file.
func NewNameServer(opts Options) *NameServer {
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = DefaultScanNotActiveBrokerInterval
	}
	if opts.BrokerExpiry <= 0 {
		opts.BrokerExpiry = DefaultBrokerChannelExpiredTime
	}
	if opts.MaxQueueNums <= 0 {
		opts.MaxQueueNums = DefaultMaxQueueNums
	}
	l := zerolog.Nop()
	if opts.Logger != nil {
		l = *opts.Logger
	}
	log := l.With().Str("component", "route").Logger()
	now := opts.now
	if now == nil {
		now = time.Now
	}
	return &NameServer{opts: opts, log: log, now: now, table: newTable(),
		regLog: log.Sample(&zerolog.BurstSampler{Burst: 1, Period: time.Minute}),
		kv:     newKVConfig(opts.KVConfigPath, log)}
}

// LoadKVConfig reads Options.KVConfigPath into the KV config, replacing what it holds. A missing
// file is not an error; an unreadable one is, and the file is left alone until the next change.
// Call it before Register.
func (n *NameServer) LoadKVConfig() error { return n.kv.load() }

// Register installs the name server's processors on d, all run on ex, and its connection
// listener, which removes a broker's routes as soon as the connection it registered on closes.
func (n *NameServer) Register(d *remoting.Dispatcher, ex *remoting.Executor) {
	for code, p := range n.processors() {
		d.Register(code, p, ex)
	}
	d.AddConnListener(n.OnConnEvent)
}

func (n *NameServer) processors() map[int32]remoting.ProcessorFunc {
	return map[int32]remoting.ProcessorFunc{
		remoting.PutKVConfig:                   n.putKVConfig,
		remoting.GetKVConfig:                   n.getKVConfig,
		remoting.DeleteKVConfig:                n.deleteKVConfig,
		remoting.GetKVListByNamespace:          n.getKVListByNamespace,
		remoting.RegisterBroker:                n.registerBroker,
		remoting.UnregisterBroker:              n.unregisterBroker,
		remoting.QueryDataVersion:              n.queryDataVersion,
		remoting.GetRouteInfoByTopic:           n.getRouteInfoByTopic,
		remoting.GetBrokerClusterInfo:          n.getBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer: n.getAllTopicList,
		remoting.DeleteTopicInNamesrv:          n.deleteTopic,
		remoting.RegisterTopicInNamesrv:        n.registerTopic,
		remoting.GetTopicsByCluster:            n.getTopicsByCluster,
		remoting.WipeWritePermOfBroker:         n.wipeWritePerm,
		remoting.AddWritePermOfBroker:          n.addWritePerm,
		remoting.GetSystemTopicListFromNS:      n.getSystemTopicList,
		remoting.GetUnitTopicList:              n.getUnitTopicList,
		remoting.GetNamesrvConfig:              n.getConfig,
		remoting.UpdateNamesrvConfig:           n.updateConfig,
	}
}

// OnConnEvent is the name server's remoting.ConnListener. When a connection a broker registered
// on closes, fails or goes idle, the broker is removed at once, as RocketMQ's
// BrokerHousekeepingService does (onChannelDestroy); closing the connection is the transport's
// business. Register installs it; it is exported for transports that deliver events some other
// way.
func (n *NameServer) OnConnEvent(ev remoting.ConnEvent) {
	switch ev.Type {
	case remoting.ConnClose, remoting.ConnException, remoting.ConnIdle:
	default:
		return
	}
	for _, rb := range n.table.removeChannel(ev.Channel) {
		n.log.Info().Str("addr", rb.addr).Str("broker", rb.brokerName).Bool("name_removed", rb.nameGone).
			Str("event", ev.Type.String()).Msg("broker channel destroyed, routes removed")
	}
}

// Run scans for brokers silent longer than BrokerExpiry every ScanInterval until ctx ends, then
// returns nil.
func (n *NameServer) Run(ctx context.Context) error {
	n.log.Info().Int64("scan_interval_ms", n.opts.ScanInterval.Milliseconds()).Int64("broker_expiry_ms", n.opts.BrokerExpiry.Milliseconds()).
		Msg("name server started")
	t := time.NewTicker(n.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.log.Info().Msg("name server stopped")
			return nil
		case <-t.C:
			n.scanNotActiveBrokers()
		}
	}
}

// scanNotActiveBrokers removes expired brokers and closes their connections (outside the table
// lock; closing fires a ConnClose that then finds nothing to remove).
func (n *NameServer) scanNotActiveBrokers() int {
	gone := n.table.expire(n.now(), n.opts.BrokerExpiry)
	for _, rb := range gone {
		n.log.Warn().Str("addr", rb.addr).Str("broker", rb.brokerName).Bool("name_removed", rb.nameGone).
			Int64("expiry_ms", n.opts.BrokerExpiry.Milliseconds()).Msg("broker expired, routes removed")
		if rb.channel != nil {
			_ = rb.channel.Close()
		}
	}
	return len(gone)
}

// TopicRoute returns the route of topic as GET_ROUTEINFO_BY_TOPIC would (in-process callers).
// The result is a copy owned by the caller.
func (n *NameServer) TopicRoute(topic string) (*TopicRouteData, bool) {
	r, ok := n.table.topicRoute(topic)
	if !ok {
		return nil, false
	}
	if n.orderConfOff.Load() {
		return r, true
	}
	if conf, ok := n.kv.get(NamespaceOrderTopicConfig, topic); ok {
		if validOrderTopicConf(conf) {
			r.OrderTopicConf = conf
		} else {
			n.log.Warn().Str("topic", topic).Str("value", conf).Msg("malformed order topic config ignored")
		}
	}
	return r, true
}

// ClusterInfo returns a copy of the broker and cluster tables.
func (n *NameServer) ClusterInfo() *ClusterInfo { return n.table.clusterInfo() }

// Topics returns every topic with a route, sorted.
func (n *NameServer) Topics() []string { return n.table.topics() }
