package node

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Each part's settings come from the node's through one method here, so that every node
// setting is handed on in exactly one place; a zero field is defaulted by the part that owns
// it.

// nameServerOptions are the name service's settings.
func (o Options) nameServerOptions() route.Options {
	return route.Options{
		ScanInterval: o.ScanNotActiveBrokerInterval,
		BrokerExpiry: o.BrokerChannelExpiredTime,
		MaxQueueNums: o.MaxQueueNums,
		KVConfigPath: filepath.Join(o.StoreDir, "namesrv", "kvConfig.json"),
		Logger:       o.Logger,
	}
}

// serverOptions are the settings of a listener on addr.
func (o Options) serverOptions(addr string) remoting.ServerOptions {
	return remoting.ServerOptions{
		Addr:                 addr,
		MaxFrameBytes:        o.MaxFrameBytes,
		MaxHeaderBytes:       o.MaxHeaderBytes,
		MaxExtFields:         o.MaxExtFields,
		MaxPendingWriteBytes: o.MaxPendingWriteBytes,
		MaxConnections:       o.MaxConnections,
		IdleTimeout:          o.ChannelMaxIdleTime,
		EventLoops:           o.EventLoops,
		TLSMode:              o.TLSMode,
		TLSConfig:            o.TLSConfig,
		Logger:               o.Logger,
	}
}

// storeOptions are the message store's settings.
func (o Options) storeOptions() storage.Options {
	return storage.Options{
		Dir:                           o.StoreDir,
		FlushDiskType:                 o.FlushDiskType,
		SegmentBytes:                  o.SegmentBytes,
		FileReservedTime:              o.FileReservedTime,
		AccessMessageInMemoryMaxRatio: o.AccessMessageInMemoryMaxRatio,
	}
}

// brokerOptions are the broker's settings. bound is its listener's bound address; the broker
// reaches nameServers through tr.
func (o Options) brokerOptions(bound string, nameServers []string, tr remoting.Transport) (broker.Options, error) {
	addr, err := broker.AdvertisedAddr(bound, o.BrokerIP)
	if err != nil {
		return broker.Options{}, fmt.Errorf("mq: %w", err)
	}
	ha, err := o.haOptions(bound)
	if err != nil {
		return broker.Options{}, err
	}
	return broker.Options{
		ClusterName:                     o.ClusterName,
		BrokerName:                      o.BrokerName,
		BrokerID:                        o.BrokerID,
		BrokerAddr:                      addr,
		BrokerRole:                      o.BrokerRole,
		HA:                              ha,
		NameServers:                     nameServers,
		Transport:                       tr,
		Store:                           o.storeOptions(),
		DisableAutoCreateTopic:          o.DisableAutoCreateTopic,
		MaxMessageBytes:                 o.MaxMessageBytes,
		MaxLongPollingSuspend:           o.MaxLongPollingSuspend,
		MaxHeldPullsPerConnection:       o.MaxHeldPullsPerConnection,
		MaxHeldPulls:                    o.MaxHeldPulls,
		MaxQueueNums:                    o.MaxQueueNums,
		MaxTopics:                       o.MaxTopics,
		AutoCreateTopicBurst:            o.AutoCreateTopicBurst,
		AutoCreateTopicRate:             o.AutoCreateTopicRate,
		SlaveReadEnable:                 o.SlaveReadEnable,
		AccessMessageInMemoryMaxBytes:   o.AccessMessageInMemoryMaxBytes,
		SlaveSyncPeriod:                 o.SlaveSyncPeriod,
		DelayLevels:                     o.DelayLevels,
		RegisterNameServerPeriod:        o.RegisterNameServerPeriod,
		RegisterNameServerPeriodMin:     o.RegisterNameServerPeriodMin,
		DisableForceRegister:            o.DisableForceRegister,
		DisableNotifyConsumerIdsChanged: o.DisableNotifyConsumerIdsChanged,
		RejectTransactionMessage:        o.RejectTransactionMessage,
		TransactionTimeout:              o.TransactionTimeout,
		TransactionCheckMax:             o.TransactionCheckMax,
		TransactionCheckInterval:        o.TransactionCheckInterval,
		TimerPrecision:                  o.TimerPrecision,
		TimerMaxDelay:                   o.TimerMaxDelay,
		ReregisterGrace:                 o.ReregisterGrace,
		FlushConsumerOffsetInterval:     o.FlushConsumerOffsetInterval,
		ChannelExpiredTimeout:           o.ClientChannelExpiredTime,
		RebalanceLockMaxLiveTime:        o.RebalanceLockMaxLiveTime,
		ControllerMode:                  len(o.ControllerAddrs) > 0,
		ReplicaID:                       o.BrokerID,
		MinInSyncReplicas:               o.MinInSyncReplicas,
		AllAckInSyncStateSet:            o.AllAckInSyncStateSet,
		Logger:                          o.Logger,
	}, nil
}

// controllerOptions are the options of the node's controller; advertise is the name
// service's bound address, where brokers reach it.
func (o Options) controllerOptions(advertise string) addon.ControllerOptions {
	dir := o.ControllerDir
	if dir == "" {
		dir = filepath.Join(o.StoreDir, "controller")
	}
	return addon.ControllerOptions{
		ID: o.ControllerID, Peers: o.ControllerPeers, RaftListen: o.ControllerRaftListen,
		Advertise: advertise, Dir: dir,
		ScanNotActiveBrokerInterval: o.ControllerScanInterval,
		BrokerHeartbeatTimeout:      o.ControllerBrokerHeartbeatTimeout,
		ElectUncleanMaster:          o.ControllerElectUncleanMaster,
		HeartbeatTimeout:            o.ControllerRaftTimeout,
		ElectionTimeout:             o.ControllerRaftTimeout,
		LeaderLeaseTimeout:          o.ControllerRaftTimeout / 2,
		Secret:                      o.ClusterSecret,
		Logger:                      o.Logger,
	}
}

// httpOptions are the settings of the node's HTTP handler, which package mq builds the
// dashboard with.
func (o Options) httpOptions() HTTPOptions {
	return HTTPOptions{AllowedHosts: o.HTTPAllowedHosts}
}

// haOptions are the broker's replication settings; bound is the broker listener's bound address.
func (o Options) haOptions(bound string) (broker.HAOptions, error) {
	listen, err := o.haListenAddr(bound)
	if err != nil {
		return broker.HAOptions{}, err
	}
	return broker.HAOptions{
		ListenAddr:            listen,
		AdvertisedIP:          o.BrokerIP,
		MasterAddr:            o.MasterHA,
		TransferBatchBytes:    o.HATransferBatchBytes,
		HousekeepingInterval:  o.HAHousekeepingInterval,
		SendHeartbeatInterval: o.HASendHeartbeatInterval,
		SlaveFallBehindMax:    o.HASlaveFallBehindMax,
		SyncFlushTimeout:      o.HASyncFlushTimeout,
		TransferWaitInterval:  o.HATransferWaitInterval,
		ReconnectInterval:     o.HAReconnectInterval,
		Secret:                firstNonEmpty(o.HASecret, o.ClusterSecret),
		MasterTLS:             o.haMasterTLS(),
		SlaveTLS:              o.haSlaveTLS(),
	}, nil
}

// haMasterTLS is the HA listener's TLS with HATLS: the listeners' certificate.
func (o Options) haMasterTLS() *tls.Config {
	if !o.HATLS {
		return nil
	}
	return o.TLSConfig
}

// haSlaveTLS is how a slave dials its master with HATLS.
func (o Options) haSlaveTLS() *tls.Config {
	if !o.HATLS {
		return nil
	}
	return o.clientTLS()
}

// clientTLS is how the broker dials TLS: TLSClientConfig, or the system's roots.
func (o Options) clientTLS() *tls.Config {
	if o.TLSClientConfig != nil {
		return o.TLSClientConfig
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// haListenAddr is where a master's HA listener binds: HAListen, else the broker listener's
// host with port + 1 (RocketMQ haListenPort = listenPort + 1), or port 0 when the broker was
// asked for port 0.
func (o Options) haListenAddr(bound string) (string, error) {
	if o.HAListen != "" || o.BrokerRole == storage.Slave {
		return o.HAListen, nil
	}
	_, cfgPort, err := net.SplitHostPort(firstNonEmpty(o.BrokerListen, o.Listen))
	if err != nil {
		return "", fmt.Errorf("mq: broker listen address: %w", err)
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", fmt.Errorf("mq: broker listener address %q: %w", bound, err)
	}
	if cfgPort == "0" {
		return net.JoinHostPort(host, "0"), nil
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("mq: broker listener port %q: %w", port, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}
