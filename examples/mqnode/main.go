// Command mqnode runs a standalone mq node: a RocketMQ-compatible name service and broker on one
// port by default.
//
//	go run ./examples/mqnode -listen 127.0.0.1:9876 -store ./mqdata
//
// A master and its slave (the slave learns the master's HA address from the name service):
//
//	go run ./examples/mqnode -listen 127.0.0.1:9876 -store ./m -role sync-master
//	go run ./examples/mqnode -listen 127.0.0.1:9886 -store ./s -role slave -no-namesrv -namesrv 127.0.0.1:9876
//
// With MQ_HA_SECRET (or -ha-secret) set to the same value of 16 bytes or more on both, only a
// slave that knows it is served.
//
// With MQ_CLUSTER_SECRET (or -cluster-secret) set to the same value of 16 bytes or more on every
// process of a deployment, only its own processes may register brokers, make controller
// requests and, unless -ha-secret says otherwise, replicate.
//
// ACL from RocketMQ's plain_acl.yml (reloaded when the file changes) and TLS on the same port:
//
//	go run ./examples/mqnode -acl plain_acl.yml -tls-mode enforcing -tls-cert server.crt -tls-key server.key
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/controller"
	"github.com/mqgo/mq/metrics"
	"github.com/rs/zerolog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mqnode:", err)
		os.Exit(1)
	}
}

// haSecretEnv names the environment variable that carries the HA secret when -ha-secret is
// not given: a flag's value is visible to every local user in the process list.
const haSecretEnv = "MQ_HA_SECRET"

// secretKeyEnv carries the secret key of -access-key, for the same reason.
const secretKeyEnv = "MQ_SECRET_KEY"

// clusterSecretEnv carries the cluster secret when -cluster-secret is not given, for the same
// reason.
const clusterSecretEnv = "MQ_CLUSTER_SECRET"

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func run(args []string) error {
	fs := flag.NewFlagSet("mqnode", flag.ContinueOnError)
	var (
		listen         = fs.String("listen", mq.DefaultListen, "`HOST:PORT` serving the name service and the broker")
		namesrvListen  = fs.String("namesrv-listen", "", "serve the name service on this `HOST:PORT` instead (with -broker-listen)")
		brokerListen   = fs.String("broker-listen", "", "serve the broker on this `HOST:PORT` instead (with -namesrv-listen)")
		namesrv        = fs.String("namesrv", "", "name servers the broker registers with, `ADDR[;ADDR]` (default: its own)")
		store          = fs.String("store", "./"+mq.DefaultStoreDir, "store `DIR`")
		flush          = fs.String("flush", "async", "flush mode: async|sync")
		cluster        = fs.String("cluster", mq.DefaultClusterName, "cluster name")
		brokerName     = fs.String("broker-name", mq.DefaultBrokerName, "broker name")
		brokerID       = fs.Int64("broker-id", 0, "broker id (0 = master; a slave defaults to 1); with -controller, the broker's own id in its group (0: the controller assigns one, kept in <store>/brokerIdentity)")
		role           = fs.String("role", "", "broker role: async-master|sync-master|slave (default async-master, slave when -broker-id > 0)")
		haListen       = fs.String("ha-listen", "", "master: replication listener `HOST:PORT` (default: the broker port + 1)")
		masterHA       = fs.String("master-ha", "", "slave: the master's replication address `HOST:PORT` (default: learned from the name service)")
		haSecret       = fs.String("ha-secret", "", "master and slave: shared replication `SECRET` (16+ bytes; default: $MQ_HA_SECRET, which ps does not show)")
		clusterSecret  = fs.String("cluster-secret", "", "every process of the deployment: shared `SECRET` (16+ bytes) its processes prove on registration, controller and (without -ha-secret) replication traffic (default: $MQ_CLUSTER_SECRET, which ps does not show)")
		slaveRead      = fs.Bool("slave-read", false, "master: send consumers that fall far behind to the slave (slaveReadEnable)")
		maxConns       = fs.Int("max-connections", 0, "most connections each listener keeps open (default 10,000)")
		brokerIP       = fs.String("broker-ip", "", "`IP` clients are told to dial (default: the listener's host)")
		noNamesrv      = fs.Bool("no-namesrv", false, "do not run the name service")
		noBroker       = fs.Bool("no-broker", false, "do not run the broker")
		logLevel       = fs.String("log-level", "info", "log level: debug|info|warn|error")
		aclFile        = fs.String("acl", "", "turn ACL on with RocketMQ's plain_acl.yml `FILE`, reloaded when it changes")
		accessKey      = fs.String("access-key", "", "account `AK` the broker signs its registrations with (remote name servers with ACL); its secret key comes from $MQ_SECRET_KEY")
		tlsMode        = fs.String("tls-mode", "disabled", "TLS on the listeners: disabled|permissive|enforcing (tls.server.mode)")
		tlsCert        = fs.String("tls-cert", "", "server certificate `FILE` (PEM), with -tls-key")
		tlsKey         = fs.String("tls-key", "", "server private key `FILE` (PEM)")
		tlsClient      = fs.Bool("tls-client", false, "the broker dials name servers and its master with TLS")
		tlsCA          = fs.String("tls-ca", "", "with -tls-client or -ha-tls: trust the certificates of this CA `FILE` (PEM) instead of the system's")
		txTimeout      = fs.Duration("transaction-timeout", 0, "how long a half message waits for its producer before the broker checks (transactionTimeOut; default 6s)")
		txCheckEvery   = fs.Duration("transaction-check-interval", 0, "how often the broker looks for half messages to check (transactionCheckInterval; default 60s)")
		timerPrecision = fs.Duration("timer-precision", 0, "how late a timer message may be delivered, at most (timerPrecisionMs; ours default 100ms)")
		timerMaxDelay  = fs.Duration("timer-max-delay", 0, "how far ahead a timer message may be (timerMaxDelaySec; default 72h)")
		haTLS          = fs.Bool("ha-tls", false, "replication over TLS: a master's HA port presents -tls-cert, a slave dials its master trusting -tls-ca")
		httpListen     = fs.String("http", "", "serve /metrics (Prometheus), /healthz and the dashboard on this `HOST:PORT` (no authentication: keep it on a trusted network)")
		httpHosts      = fs.String("http-allowed-hosts", "", "more names the dashboard answers under, `NAME[:PORT],...` (besides -http's host and address, and localhost on loopback)")
		ctlListen      = fs.String("controller-listen", "", "run a controller in this name-service node: its Raft `HOST:PORT` (with -controller-id and -controller-peers)")
		ctlID          = fs.String("controller-id", "", "this controller's `ID` (controllerDLegerSelfId), e.g. n0")
		ctlPeers       = fs.String("controller-peers", "", "every controller's Raft address, `ID=HOST:PORT;...` (controllerDLegerPeers), this one's included")
		ctlDir         = fs.String("controller-dir", "", "the controller's Raft log and snapshots (default: <store>/controller)")
		ctlUnclean     = fs.Bool("controller-elect-unclean-master", false, "let the controller elect a master from outside the SyncStateSet (enableElectUncleanMaster; loses what only the set had)")
		ctlAddrs       = fs.String("controller", "", "controller mode: the controllers' `HOST:PORT;...` (controllerAddr, their name-service ports) decide this broker's role")
		allAck         = fs.Bool("all-ack-in-sync-state-set", false, "controller mode: acknowledge a send once every member of the SyncStateSet has it (allAckInSyncStateSet)")
		minInSync      = fs.Int("min-in-sync-replicas", 0, "controller mode: refuse sends while the SyncStateSet has fewer members (minInSyncReplicas; default 1)")
		ctlScan        = fs.Duration("controller-scan-interval", 0, "controller: how often it looks for brokers whose heartbeats stopped (scanNotActiveBrokerInterval; default 5s)")
		ctlHBTimeout   = fs.Duration("controller-heartbeat-timeout", 0, "controller: a broker silent this long is dead, and replaced if it was master (controllerHeartBeatTimeoutMills; default 10s)")
		brokerHB       = fs.Duration("broker-heartbeat-interval", 0, "controller mode: how often the broker heartbeats to the controllers (brokerHeartbeatInterval; default 1s)")
		syncMeta       = fs.Duration("sync-broker-metadata-period", 0, "controller mode: how often the broker asks the controllers for its group's master and SyncStateSet (syncBrokerMetadataPeriod; default 5s)")
		checkSet       = fs.Duration("check-sync-state-set-period", 0, "controller mode, master: how often it grows or shrinks the SyncStateSet (checkSyncStateSetPeriod; default 5s)")
		notCatchup     = fs.Duration("ha-max-time-slave-not-catchup", 0, "controller mode, master: a slave behind this long leaves the SyncStateSet (haMaxTimeSlaveNotCatchup; default 15s)")
		slaveSync      = fs.Duration("slave-sync-period", 0, "slave: how often it copies topics, consumer offsets and groups from its master (RocketMQ's SlaveSynchronize, a fixed 10s)")
		maxTopics      = fs.Int("max-topics", 0, "most topics the broker holds; sends that would create more are refused (ours; default 5,000)")
		createBurst    = fs.Int("auto-create-topic-burst", 0, "topics one connection's sends may create at once (ours; default 1,000)")
		createRate     = fs.Int("auto-create-topic-rate", 0, "topics a second one connection's sends may create after the burst (ours; default 100)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()

	// The standalone broker links both optional parts: the controller runs only with
	// -controller-id, and /metrics is served with -http.
	opts := mq.Options{
		Controller:        controller.Raft(),
		Metrics:           metrics.Prometheus(),
		Listen:            *listen,
		NameServerListen:  *namesrvListen,
		BrokerListen:      *brokerListen,
		DisableNameServer: *noNamesrv,
		DisableBroker:     *noBroker,
		StoreDir:          *store,
		ClusterName:       *cluster,
		BrokerName:        *brokerName,
		BrokerID:          *brokerID,
		BrokerIP:          *brokerIP,
		HAListen:          *haListen,
		MasterHA:          *masterHA,
		HASecret:          firstNonEmpty(*haSecret, os.Getenv(haSecretEnv)),
		ClusterSecret:     firstNonEmpty(*clusterSecret, os.Getenv(clusterSecretEnv)),
		SlaveReadEnable:   *slaveRead,
		MaxConnections:    *maxConns,
		Logger:            &log,
	}
	switch *role {
	case "":
	case "async-master":
		opts.BrokerRole = mq.AsyncMaster
	case "sync-master":
		opts.BrokerRole = mq.SyncMaster
	case "slave":
		opts.BrokerRole = mq.Slave
	default:
		return errors.New("-role must be async-master, sync-master or slave")
	}
	if *namesrv != "" {
		opts.NameServers = strings.Split(*namesrv, ";")
	}
	if err := securityFlags(&opts, *aclFile, *accessKey, *tlsMode, *tlsCert, *tlsKey, *tlsClient, *tlsCA); err != nil {
		return err
	}
	opts.HATLS = *haTLS
	opts.HTTPAllowedHosts = httpAllowedHosts(*httpListen, *httpHosts)
	if err := controllerFlags(&opts, *ctlListen, *ctlID, *ctlPeers, *ctlDir, *ctlUnclean, *ctlAddrs, *allAck, *minInSync); err != nil {
		return err
	}
	opts.ControllerScanInterval, opts.ControllerBrokerHeartbeatTimeout = *ctlScan, *ctlHBTimeout
	opts.ControllerHeartbeatInterval, opts.SyncBrokerMetadataPeriod = *brokerHB, *syncMeta
	opts.CheckSyncStateSetPeriod, opts.HAMaxTimeSlaveNotCatchup = *checkSet, *notCatchup
	opts.SlaveSyncPeriod = *slaveSync
	opts.MaxTopics, opts.AutoCreateTopicBurst, opts.AutoCreateTopicRate = *maxTopics, *createBurst, *createRate
	opts.TransactionTimeout, opts.TransactionCheckInterval = *txTimeout, *txCheckEvery
	opts.TimerPrecision, opts.TimerMaxDelay = *timerPrecision, *timerMaxDelay
	switch *flush {
	case "async":
		opts.FlushDiskType = mq.AsyncFlush
	case "sync":
		opts.FlushDiskType = mq.SyncFlush
	default:
		return errors.New("-flush must be async or sync")
	}

	// Listen for signals before starting, so one sent as soon as the node says it started is
	// not lost to the default handler.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	node, err := mq.StartNode(opts)
	if err != nil {
		return err
	}
	web, err := serveHTTP(*httpListen, node, &log)
	if err != nil {
		return errors.Join(err, node.Close())
	}
	started := log.Info().Str("component", "mqnode").Str("addr", node.Addr()).
		Str("namesrv_addr", node.NameServerAddr()).Str("broker_addr", node.BrokerAddr()).
		Str("ha_addr", node.HAAddr())
	if web != nil {
		started = started.Str("dashboard", "http://"+web.addr+"/").Str("metrics", "http://"+web.addr+"/metrics")
	}
	if opts.ControllerID != "" {
		started = started.Str("controller", node.NameServerAddr()).Str("controller_raft", opts.ControllerRaftListen)
	}
	started.Msg("mqnode started")
	warnExposed(&log, opts, node)

	s := <-sig
	log.Info().Str("component", "mqnode").Str("signal", s.String()).Msg("shutting down")
	return errors.Join(web.close(), node.Close())
}

// warnExposed warns, in controller mode without a cluster secret, that whoever reaches the
// name-service, controller or HA ports can take over a broker group: RocketMQ's protocol
// trusts them.
func warnExposed(log *zerolog.Logger, opts mq.Options, node *mq.Node) {
	if opts.ClusterSecret != "" || opts.ControllerID == "" && len(opts.ControllerAddrs) == 0 {
		return
	}
	var private []string
	for _, addr := range []string{node.NameServerAddr(), opts.ControllerRaftListen, node.HAAddr()} {
		if addr != "" {
			private = append(private, addr)
		}
	}
	if len(opts.ControllerAddrs) > 0 {
		private = append(private, opts.ControllerAddrs...)
	}
	log.Warn().Str("component", "mqnode").Strs("keep_private", private).
		Msg("controller mode without -cluster-secret: anyone who reaches the name-service, controller (remoting and Raft) or HA ports can register brokers, become a group's master and make a master cut its CommitLog; keep those ports on a private network or set $" + clusterSecretEnv + " on every process")
}

// securityFlags applies -acl, -access-key and the TLS flags to opts.
func securityFlags(opts *mq.Options, aclFile, accessKey, tlsMode, certFile, keyFile string, tlsClient bool, caFile string) error {
	if aclFile != "" {
		opts.ACLFile = aclfile.Watch(aclFile)
	}
	if accessKey != "" {
		secret := os.Getenv(secretKeyEnv)
		if secret == "" {
			return fmt.Errorf("-access-key needs the secret key in $%s", secretKeyEnv)
		}
		opts.Credentials = mq.Credentials{AccessKey: accessKey, SecretKey: secret}
	}
	switch mq.TLSMode(tlsMode) {
	case mq.TLSDisabled, "":
		if certFile != "" || keyFile != "" {
			// A certificate without a mode serves replication only (-ha-tls).
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return fmt.Errorf("-tls-cert/-tls-key: %w", err)
			}
			opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
	case mq.TLSPermissive, mq.TLSEnforcing:
		if certFile == "" || keyFile == "" {
			return fmt.Errorf("-tls-mode %s needs -tls-cert and -tls-key", tlsMode)
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		opts.TLSMode = mq.TLSMode(tlsMode)
		opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	default:
		return errors.New("-tls-mode must be disabled, permissive or enforcing")
	}
	opts.TLSClientEnable = tlsClient
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("-tls-ca: %w", err)
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca: no certificate in %s", caFile)
		}
		opts.TLSClientConfig = cfg
	}
	return nil
}

// controllerFlags applies the controller flags: a controller in this node (-controller-id,
// -controller-listen, -controller-peers) and controller mode for its broker (-controller).
func controllerFlags(opts *mq.Options, listen, id, peers, dir string, unclean bool, addrs string, allAck bool, minInSync int) error {
	if id != "" || listen != "" || peers != "" {
		if id == "" || listen == "" || peers == "" {
			return errors.New("-controller-id, -controller-listen and -controller-peers go together")
		}
		opts.ControllerID, opts.ControllerRaftListen, opts.ControllerDir = id, listen, dir
		opts.ControllerElectUncleanMaster = unclean
		opts.ControllerPeers = map[string]string{}
		for _, p := range strings.Split(peers, ";") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			pid, addr, ok := strings.Cut(p, "=")
			if !ok || pid == "" || addr == "" {
				return fmt.Errorf("-controller-peers: %q is not ID=HOST:PORT", p)
			}
			opts.ControllerPeers[pid] = addr
		}
		if opts.ControllerPeers[id] != listen {
			return fmt.Errorf("-controller-peers must name this controller, %s=%s", id, listen)
		}
	}
	if addrs != "" {
		for _, a := range strings.Split(addrs, ";") {
			if a = strings.TrimSpace(a); a != "" {
				opts.ControllerAddrs = append(opts.ControllerAddrs, a)
			}
		}
		opts.AllAckInSyncStateSet, opts.MinInSyncReplicas = allAck, minInSync
	} else if allAck || minInSync != 0 {
		return errors.New("-all-ack-in-sync-state-set and -min-in-sync-replicas need -controller")
	}
	return nil
}
