package node

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/mqgo/mq/config"
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
		ScanInterval: o.Periods.ScanNotActiveBrokerInterval,
		BrokerExpiry: o.Periods.BrokerChannelExpiredTime,
		MaxQueueNums: o.Limits.MaxQueueNums,
		KVConfigPath: filepath.Join(o.Store.Dir, "namesrv", "kvConfig.json"),
		Logger:       o.Logger,
	}
}

// serverOptions are the settings of a listener on addr.
func (o Options) serverOptions(addr string) remoting.ServerOptions {
	return remoting.ServerOptions{
		Addr:                 addr,
		MaxFrameBytes:        o.Limits.MaxFrameBytes,
		MaxHeaderBytes:       o.Limits.MaxHeaderBytes,
		MaxExtFields:         o.Limits.MaxExtFields,
		MaxPendingWriteBytes: o.Limits.MaxPendingWriteBytes,
		MaxConnections:       o.Limits.MaxConnections,
		IdleTimeout:          o.Periods.ChannelMaxIdleTime,
		EventLoops:           o.Limits.EventLoops,
		TLSMode:              o.Security.TLSMode,
		TLSConfig:            o.Security.TLSConfig,
		Logger:               o.Logger,
	}
}

// storeOptions are the message store's settings.
func (o Options) storeOptions() storage.Options {
	return storage.Options{
		Dir:                           o.Store.Dir,
		FlushDiskType:                 o.Store.FlushDiskType,
		ReadUnCommitted:               o.Store.ReadUnCommitted,
		SegmentBytes:                  o.Store.SegmentBytes,
		FileReservedTime:              o.Store.FileReservedTime,
		AccessMessageInMemoryMaxRatio: o.Store.AccessMessageInMemoryMaxRatio,
		ConsumeQueueUnits:             o.Store.ConsumeQueueUnits(),
		MaxHashSlotNum:                o.Store.MaxHashSlotNum,
		MaxIndexNum:                   o.Store.MaxIndexNum,
		DiskMaxUsedSpaceRatio:         o.Store.DiskMaxUsedSpaceRatio,
		DiskSpaceCleanForciblyRatio:   o.Store.DiskSpaceCleanForciblyRatio,
		DiskSpaceWarningLevelRatio:    o.Store.DiskSpaceWarningLevelRatio,
		DisableCleanFileForcibly:      o.Store.DisableCleanFileForcibly,
		CleanResourceInterval:         o.Store.CleanResourceInterval,
	}
}

// brokerOptions are the broker's settings. bound is its listener's bound address; the broker
// reaches nameServers through tr.
func (o Options) brokerOptions(bound string, nameServers []string, tr remoting.Transport) (broker.Options, error) {
	addr, err := config.AdvertisedAddr(bound, o.Broker.IP)
	if err != nil {
		return broker.Options{}, fmt.Errorf("mq: %w", err)
	}
	ha, err := o.haOptions(bound)
	if err != nil {
		return broker.Options{}, err
	}
	return broker.Options{
		Broker:                        o.Broker,
		Limits:                        o.Limits,
		Periods:                       o.Periods,
		Timers:                        o.Timers,
		Transactions:                  o.Transactions,
		Pop:                           o.Pop,
		Types:                         o.Types,
		BrokerAddr:                    addr,
		HA:                            ha,
		HAConn:                        o.haConn(),
		NameServers:                   nameServers,
		Transport:                     tr,
		Store:                         o.storeOptions(),
		AccessMessageInMemoryMaxBytes: o.Store.AccessMessageInMemoryMaxBytes,
		ControllerMode:                len(o.ControllerMode.Addrs) > 0,
		ReplicaID:                     o.Broker.ID,
		MinInSyncReplicas:             o.ControllerMode.MinInSyncReplicas,
		AllAckInSyncStateSet:          o.ControllerMode.AllAckInSyncStateSet,
		Logger:                        o.Logger,
	}, nil
}

// controllerOptions are the options of the node's controller; advertise is the name
// service's bound address, where brokers reach it.
func (o Options) controllerOptions(advertise string) addon.ControllerOptions {
	dir := o.Controller.Dir
	if dir == "" {
		dir = filepath.Join(o.Store.Dir, "controller")
	}
	return addon.ControllerOptions{
		ID: o.Controller.ID, Peers: o.Controller.Peers, RaftListen: o.Controller.RaftListen,
		Advertise: advertise, Dir: dir,
		ScanNotActiveBrokerInterval: o.Controller.ScanInterval,
		BrokerHeartbeatTimeout:      o.Controller.BrokerHeartbeatTimeout,
		ElectUncleanMaster:          o.Controller.ElectUncleanMaster,
		HeartbeatTimeout:            o.Controller.RaftTimeout,
		ElectionTimeout:             o.Controller.RaftTimeout,
		LeaderLeaseTimeout:          o.Controller.RaftTimeout / 2,
		Secret:                      o.Security.ClusterSecret,
		Logger:                      o.Logger,
	}
}

// httpOptions are the settings of the node's HTTP handler, which package mq builds the
// dashboard with.
func (o Options) httpOptions() HTTPOptions {
	return HTTPOptions{AllowedHosts: o.HTTP.AllowedHosts}
}

// haOptions are the broker's HA group: the node's, with the listen address and the secret
// resolved; bound is the broker listener's bound address.
func (o Options) haOptions(bound string) (config.HA, error) {
	listen, err := o.haListenAddr(bound)
	if err != nil {
		return config.HA{}, err
	}
	ha := o.HA
	ha.Listen = listen
	ha.Secret = firstNonEmpty(o.HA.Secret, o.Security.ClusterSecret)
	return ha, nil
}

// haConn is how the broker's replication connects: its advertised host and HA.TLS's configs.
func (o Options) haConn() broker.HAConn {
	return broker.HAConn{AdvertisedIP: o.Broker.IP, MasterTLS: o.haMasterTLS(), SlaveTLS: o.haSlaveTLS()}
}

// haMasterTLS is the HA listener's TLS with HA.TLS: the listeners' certificate.
func (o Options) haMasterTLS() *tls.Config {
	if !o.HA.TLS {
		return nil
	}
	return o.Security.TLSConfig
}

// haSlaveTLS is how a slave dials its master with HA.TLS.
func (o Options) haSlaveTLS() *tls.Config {
	if !o.HA.TLS {
		return nil
	}
	return o.clientTLS()
}

// clientTLS is how the broker dials TLS: Security.TLSClientConfig, or the system's roots.
func (o Options) clientTLS() *tls.Config {
	if o.Security.TLSClientConfig != nil {
		return o.Security.TLSClientConfig
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// haListenAddr is where a master's HA listener binds: HA.Listen, else the broker listener's
// host with port + 1 (RocketMQ haListenPort = listenPort + 1), or port 0 when the broker was
// asked for port 0.
func (o Options) haListenAddr(bound string) (string, error) {
	if o.HA.Listen != "" || o.Broker.Role == storage.Slave {
		return o.HA.Listen, nil
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

// grpcOptions are the endpoint's settings from Options; startGRPC adds the node's handles.
func (o Options) grpcOptions() addon.GRPCOptions {
	return addon.GRPCOptions{
		Listen:         o.GRPC.Listen,
		TLSMode:        o.Security.TLSMode,
		TLSConfig:      o.Security.TLSConfig,
		MaxRecvBytes:   o.Limits.MaxFrameBytes,
		MaxConnections: o.Limits.MaxConnections,
		Logger:         o.Logger,
	}
}
