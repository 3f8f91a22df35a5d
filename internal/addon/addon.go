// Package addon declares the parts a node runs only when the application supplies them: the
// controller (RocketMQ 5's Raft group, package github.com/mqgo/mq/controller), the
// Prometheus metrics (github.com/mqgo/mq/metrics), the plain_acl.yml reader
// (github.com/mqgo/mq/aclfile) and RocketMQ 5's gRPC endpoint (github.com/mqgo/mq/proxy). The
// node holds them through these small interfaces, so `import "github.com/mqgo/mq"` links
// neither hashicorp/raft and its log store nor the Prometheus client nor a YAML parser nor
// gRPC: Go's pruned module graph leaves them out of an application that does not import the
// packages that implement them. It imports nothing heavy itself.
package addon

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/mqgo/mq/acl"
	iacl "github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// ControllerFactory starts a node's controller (Options.Controller.Impl).
type ControllerFactory interface {
	// StartController builds the controller and starts Raft, which must run before the node
	// serves so that the peers can elect a leader; the node calls Run for the leader's duties.
	StartController(ControllerOptions) (Controller, error)
}

// Controller is a running controller as the node drives it.
type Controller interface {
	// Register installs the controller's request processors on the name service's dispatcher.
	Register(*remoting.Dispatcher)
	// Run does the leader's duties until ctx ends.
	Run(ctx context.Context) error
	// Close stops Raft and releases its files.
	Close() error
}

// ACLFile is a plain_acl.yml the node loads at start and reloads when it changes
// (Options.Security.ACLFile).
type ACLFile interface {
	Path() string
	// Parse reads the file's content; its errors name lines and fields, never a value.
	Parse(data []byte) (*acl.Config, error)
}

// MetricsFactory builds a node's metrics (Options.HTTP.Metrics).
type MetricsFactory interface {
	NewMetrics(MetricsSources) Metrics
}

// Metrics are what the node serves at /metrics and the observer its dispatchers feed.
type Metrics interface {
	// Observer is installed on every dispatcher before any listener serves.
	Observer() remoting.RequestObserver
	// Handler serves GET /metrics.
	Handler() http.Handler
}

// MetricsListener is one of a node's remoting listeners.
type MetricsListener struct {
	Role  string     // namesrv, broker or namesrv+broker
	Conns func() int // open connections
}

// MetricsSources are the parts of a node the metrics read when scraped; nil parts are not
// reported.
type MetricsSources struct {
	Broker      func() *broker.Broker // nil, or nil while the broker has not started
	Listeners   []MetricsListener
	ACLRefusals func() uint64
	Logger      *zerolog.Logger
}

// ControllerOptions configure a controller (internal/controller.Options).
type ControllerOptions struct {
	// ID is this controller's Raft id (RocketMQ's controllerDLegerSelfId), e.g. "n0".
	ID string
	// Peers are every controller's Raft address by id, this one's included (RocketMQ's
	// controllerDLegerPeers). They bootstrap a new cluster; a controller restarted on its Dir
	// uses the configuration in its log.
	Peers map[string]string
	// RaftListen is the TCP address Raft listens on; it must be this controller's entry in
	// Peers. The remoting port that brokers use is separate (Advertise).
	RaftListen string
	// Advertise is the remoting address brokers reach this controller on. The leader records
	// it in the replicated state, so every controller can name the leader's address.
	Advertise string
	// Dir holds the Raft log and stable store (bbolt) and the snapshots. Empty keeps them in
	// memory (tests): a restart then starts empty.
	Dir string

	// ScanNotActiveBrokerInterval: default DefaultScanNotActiveBrokerInterval.
	ScanNotActiveBrokerInterval time.Duration
	// BrokerHeartbeatTimeout applies to heartbeats that carry no heartbeatTimeoutMills, and to
	// every broker when a controller becomes leader. Default DefaultBrokerHeartbeatTimeout.
	BrokerHeartbeatTimeout time.Duration
	// ElectUncleanMaster (RocketMQ's enableElectUncleanMaster, default false) lets a broker
	// outside the SyncStateSet become master when no member of the set is alive, at the cost of
	// the messages only the set had.
	ElectUncleanMaster bool
	// ElectMasterMaxRetryCount: default DefaultElectMasterMaxRetryCount.
	ElectMasterMaxRetryCount int
	// ApplyTimeout: default DefaultApplyTimeout.
	ApplyTimeout time.Duration

	// Raft's timeouts (raft.Config); defaults are hashicorp/raft's.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration

	// Secret is the deployment's cluster secret (mq.Options.Security.ClusterSecret): when set, only
	// peers that prove it reach Raft, and only requests that prove it reach the controller.
	Secret string

	// Listen and Dial replace TCP for Raft's connections when set: the simulation
	// (internal/sim) runs controllers over its in-memory network. Nil means TCP.
	Listen func(addr string) (net.Listener, error)
	Dial   func(addr string, timeout time.Duration) (net.Conn, error)

	// Logger receives the controller's and Raft's logs (component "controller"); nil is silent.
	Logger *zerolog.Logger
}

// GRPCFactory starts a node's gRPC endpoint (Options.GRPC.Service, internal/proxy).
type GRPCFactory interface {
	// StartGRPC binds the listener and serves until Close; it returns once the listener is bound.
	StartGRPC(GRPCOptions) (GRPCServer, error)
}

// GRPCServer is a running gRPC endpoint.
type GRPCServer interface {
	// Addr is the bound listen address.
	Addr() string
	// Close stops the listener, ends every open call and stream, and returns once each of the
	// endpoint's goroutines has.
	Close() error
}

// GRPCOptions are what the gRPC endpoint needs of its node.
type GRPCOptions struct {
	// Listen is the "host:port" to bind.
	Listen string
	// TLSMode and TLSConfig are the node's (Options.Security): the endpoint serves TLS and
	// plaintext on its one port as the remoting listeners do.
	TLSMode   remoting.TLSMode
	TLSConfig *tls.Config
	// MaxRecvBytes bounds a gRPC message the endpoint reads (the node's Limits.MaxFrameBytes).
	MaxRecvBytes int
	// MaxConnections bounds the connections the endpoint keeps open at once (the node's
	// Limits.MaxConnections, as each remoting listener's); 0 is remoting.DefaultMaxConnections.
	MaxConnections int
	// ACL is the node's ACL (nil: off). Each call is checked against it with the 5.x SDKs'
	// authorization metadata, and the broker requests the call becomes are signed with the
	// caller's account, so the broker checks them as that account's.
	ACL *iacl.Guard
	// Local returns a transport that reaches this process's nodes in-process, one per client
	// of the endpoint, so that the broker sees each SDK client as a connection of its own.
	Local func() remoting.Transport
	// Routes returns the transport route queries go on: in-process to this process's name
	// servers, TCP to others. The endpoint closes it.
	Routes func() remoting.Transport
	// BrokerAddr is this node's broker listener ("" without a broker): where the endpoint sends
	// the broker requests its RPCs become.
	BrokerAddr string
	// NameServers are where it looks up routes.
	NameServers []string
	// Broker is this node's running broker (nil while there is none), read for what RocketMQ's
	// local-mode proxy reads from its broker's configuration: topic attributes, limits, the
	// groups' retry policies.
	Broker func() *broker.Broker
	// Logger receives the endpoint's logs (component "grpc"); nil is silent.
	Logger *zerolog.Logger
}
