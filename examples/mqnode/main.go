// Command mqnode runs a standalone mq node: a RocketMQ-compatible name service and broker on one
// port by default.
//
//	go run ./examples/mqnode -listen 127.0.0.1:9876 -store ./mqdata
//
// Every setting of mq.Options a command line can give is a flag, generated from its declaration
// in package config; -h lists them with their defaults and the RocketMQ settings they mirror.
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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/controller"
	"github.com/mqgo/mq/metrics"
	"github.com/mqgo/mq/proxy"
	"github.com/rs/zerolog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mqnode:", err)
		os.Exit(1)
	}
}

// secretKeyEnv carries the secret key of -access-key: a flag's value is visible to every local
// user in the process list. The HA and cluster secrets have theirs in config's env tags
// ($MQ_HA_SECRET, $MQ_CLUSTER_SECRET).
const secretKeyEnv = "MQ_SECRET_KEY"

// clusterSecretEnv is named in the warning about controller mode without a cluster secret.
const clusterSecretEnv = "MQ_CLUSTER_SECRET"

// run parses args into mq.Options: the flags of every setting come from config.BindFlags (the
// declarations of mq.Options, their defaults and RocketMQ's names); the flags here are the
// ones that take files or pick what only a process has (logging, the HTTP listener).
func run(args []string) error {
	fs := flag.NewFlagSet("mqnode", flag.ContinueOnError)
	// The standalone broker links every optional part: the controller runs only with
	// -controller-id, /metrics is served with -http, -acl reads plain_acl.yml, and the gRPC
	// endpoint of the 5.x SDKs serves with -grpc-listen.
	opts := mq.Options{
		Controller: config.Controller{Impl: controller.Raft()},
		HTTP:       config.HTTP{Metrics: metrics.Prometheus()},
		GRPC:       config.GRPC{Service: proxy.Service()},
	}
	applyEnv := config.BindFlags(fs, &opts)
	var (
		logLevel  = fs.String("log-level", "info", "log level: debug|info|warn|error")
		aclFile   = fs.String("acl", "", "turn ACL on with RocketMQ's plain_acl.yml `FILE`, reloaded when it changes")
		accessKey = fs.String("access-key", "", "account `AK` the broker signs its registrations with (remote name servers with ACL); its secret key comes from $"+secretKeyEnv)
		tlsCert   = fs.String("tls-cert", "", "server certificate `FILE` (PEM), with -tls-key")
		tlsKey    = fs.String("tls-key", "", "server private key `FILE` (PEM)")
		tlsCA     = fs.String("tls-ca", "", "with -tls-client or -ha-tls: trust the certificates of this CA `FILE` (PEM) instead of the system's")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(); err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	// Milliseconds, so that the order of a shutdown's lines can be told; the format is
	// zerolog's package setting, which a program (not the library) owns.
	zerolog.TimeFieldFormat = logTimeFormat
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()
	opts.Logger = &log
	if err := securityFlags(&opts, *aclFile, *accessKey, *tlsCert, *tlsKey, *tlsCA); err != nil {
		return err
	}
	opts.HTTP.AllowedHosts = append(opts.HTTP.AllowedHosts, httpAllowedHosts(opts.HTTP.Listen, "")...)

	// Listen for signals before starting, so one sent as soon as the node says it started is
	// not lost to the default handler.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	node, err := mq.StartNode(opts)
	if err != nil {
		return err
	}
	started := log.Info().Str("component", "mqnode").Str("addr", node.Addr()).
		Str("namesrv_addr", node.NameServerAddr()).Str("broker_addr", node.BrokerAddr()).
		Str("ha_addr", node.HAAddr())
	if a := node.HTTPAddr(); a != "" {
		started = started.Str("dashboard", "http://"+a+"/").Str("metrics", "http://"+a+"/metrics").
			Str("readyz", "http://"+a+"/readyz")
	}
	if a := node.GRPCAddr(); a != "" {
		started = started.Str("grpc_addr", a)
	}
	if opts.Controller.ID != "" {
		started = started.Str("controller", node.NameServerAddr()).Str("controller_raft", opts.Controller.RaftListen)
	}
	started.Msg("mqnode started")
	warnExposed(&log, opts, node)

	s := <-sig
	log.Info().Str("component", "mqnode").Str("signal", s.String()).Msg("shutting down")
	// The node closes its HTTP listener last: probes read 503 "closing" meanwhile.
	return node.Close()
}

// logTimeFormat is RFC 3339 with milliseconds, always three digits so that lines sort as text.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// warnExposed warns, in controller mode without a cluster secret, that whoever reaches the
// name-service, controller or HA ports can take over a broker group: RocketMQ's protocol
// trusts them.
func warnExposed(log *zerolog.Logger, opts mq.Options, node *mq.Node) {
	if opts.Security.ClusterSecret != "" || opts.Controller.ID == "" && len(opts.ControllerMode.Addrs) == 0 {
		return
	}
	var private []string
	for _, addr := range []string{node.NameServerAddr(), opts.Controller.RaftListen, node.HAAddr()} {
		if addr != "" {
			private = append(private, addr)
		}
	}
	if len(opts.ControllerMode.Addrs) > 0 {
		private = append(private, opts.ControllerMode.Addrs...)
	}
	log.Warn().Str("component", "mqnode").Strs("keep_private", private).
		Msg("controller mode without -cluster-secret: anyone who reaches the name-service, controller (remoting and Raft) or HA ports can register brokers, become a group's master and make a master cut its CommitLog; keep those ports on a private network or set $" + clusterSecretEnv + " on every process")
}

// securityFlags applies -acl, -access-key and the TLS files to opts.
func securityFlags(opts *mq.Options, aclFile, accessKey, certFile, keyFile, caFile string) error {
	if aclFile != "" {
		opts.Security.ACLFile = aclfile.Watch(aclFile)
	}
	if accessKey != "" {
		secret := os.Getenv(secretKeyEnv)
		if secret == "" {
			return fmt.Errorf("-access-key needs the secret key in $%s", secretKeyEnv)
		}
		opts.Security.Credentials = mq.Credentials{AccessKey: accessKey, SecretKey: secret}
	}
	if opts.Security.TLSMode != mq.TLSDisabled && opts.Security.TLSMode != "" && (certFile == "" || keyFile == "") {
		return fmt.Errorf("-tls-mode %s needs -tls-cert and -tls-key", opts.Security.TLSMode)
	}
	if certFile != "" || keyFile != "" {
		// A certificate without a mode serves replication only (-ha-tls).
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		opts.Security.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("-tls-ca: %w", err)
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca: no certificate in %s", caFile)
		}
		opts.Security.TLSClientConfig = cfg
	}
	return nil
}
