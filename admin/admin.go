// Package admin is a RocketMQ admin client (DefaultMQAdminExt in spirit): it asks name servers
// and brokers — ours or Apache RocketMQ 4.x — about clusters, topics, consumer groups and
// messages over the remoting protocol, and changes topics, groups and offsets.
package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// DefaultTimeout is the per-request timeout of RocketMQ's DefaultMQAdminExt (timeoutMillis).
const DefaultTimeout = 5 * time.Second

// Options configures an Admin.
type Options struct {
	// NameServers are "host:port" addresses; at least one is required.
	NameServers []string
	// Transport carries the requests; nil means a TCP remoting.Client of the Admin's own,
	// closed by Close. A Transport passed in is left open.
	Transport remoting.Transport
	// Credentials sign every request when AccessKey is set (RocketMQ ACL).
	Credentials remoting.Credentials
	// ClusterSecret, when set (the deployment's mq.Options.Security.ClusterSecret), proves every
	// request: nodes with the secret refuse controller requests without the proof, and
	// name-service writes (DeleteTopic's) too unless ACL is on and Credentials are an admin's.
	ClusterSecret string
	// TLSConfig makes the Admin's own TCP client speak TLS.
	TLSConfig *tls.Config
	// Timeout bounds each request whose context has no earlier deadline. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Logger receives the admin's logs; nil means silent.
	Logger *zerolog.Logger
}

// MinClusterSecretBytes is the shortest Options.ClusterSecret accepted, as the nodes'.
const MinClusterSecretBytes = clusterauth.MinSecretBytes

// MessageQueue is a queue of a topic on one broker.
type MessageQueue = rebalance.MessageQueue

// TopicOffset is one queue's offsets in TopicStats.
type TopicOffset struct {
	MinOffset, MaxOffset int64
	// LastUpdate is the store time of the queue's last message; the zero time when none.
	LastUpdate time.Time
}

// TopicConfig is what CreateTopic sets up on a broker.
type TopicConfig struct {
	Topic                         string
	ReadQueueNums, WriteQueueNums int
	// Perm is a mask of route.Perm*; 0 means route.PermReadWrite.
	Perm  int
	Order bool
	// Attributes modifies the topic's RocketMQ 5 attributes: "+message.type=FIFO" adds or
	// changes a key, "-key" deletes one, comma-separated; "" keeps them. The broker checks it.
	Attributes string
}

// SubscriptionGroupConfig is a consumer group's settings on a broker (RocketMQ
// SubscriptionGroupConfig).
type SubscriptionGroupConfig struct {
	GroupName                    string
	ConsumeEnable                bool
	ConsumeBroadcastEnable       bool
	RetryQueueNums               int
	RetryMaxTimes                int
	BrokerID                     int64
	WhichBrokerWhenConsumeSlowly int64
	ConsumeMessageOrderly        bool
	// DisableConsumeFromMin and DisableNotifyConsumerIdsChanged send RocketMQ's
	// consumeFromMinEnable and notifyConsumerIdsChangedEnable as false (both true by default,
	// as in RocketMQ; mqadmin updateSubGroup -m and -a).
	DisableConsumeFromMin           bool
	DisableNotifyConsumerIdsChanged bool
}

// OffsetWrapper is one queue's progress in ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset, ConsumerOffset int64
	// LastTimestamp is the store time of the last consumed message; the zero time when unknown.
	LastTimestamp time.Time
}

// ConsumeStats is a consumer group's progress per queue, summed over the brokers asked.
type ConsumeStats struct {
	Offsets    map[MessageQueue]OffsetWrapper
	ConsumeTPS float64
}

// Diff is the group's lag: the sum over its queues of BrokerOffset-ConsumerOffset.
func (s *ConsumeStats) Diff() int64 {
	var d int64
	for _, o := range s.Offsets {
		d += o.BrokerOffset - o.ConsumerOffset
	}
	return d
}

// Connection is one client connected to a broker as a member of a group.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// Subscription is one topic a consumer group subscribes to.
type Subscription struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression"`
	Type       string `json:"type"` // TAG or SQL92
}

// ConsumerConnection is who consumes for a group and how (GET_CONSUMER_CONNECTION_LIST).
type ConsumerConnection struct {
	Connections      []Connection   `json:"connections"`
	Subscriptions    []Subscription `json:"subscriptions"`
	ConsumeType      string         `json:"consumeType"`
	MessageModel     string         `json:"messageModel"`
	ConsumeFromWhere string         `json:"consumeFromWhere"`
}

// Admin is an admin client. It is safe for concurrent use.
type Admin struct {
	opts      Options
	transport remoting.Transport
	ownsTrans bool
	signer    *remoting.Signer    // nil without credentials
	prover    *clusterauth.Prover // nil without a cluster secret
	log       zerolog.Logger
}

// ErrNoNameServer is New's error when Options.NameServers is empty.
var ErrNoNameServer = errors.New("admin: no name server")

// New returns an Admin; it connects lazily, on the first request.
func New(opts Options) (*Admin, error) {
	if len(opts.NameServers) == 0 {
		return nil, ErrNoNameServer
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	a := &Admin{opts: opts, transport: opts.Transport, log: zerolog.Nop()}
	if opts.Logger != nil {
		a.log = opts.Logger.With().Str("component", "admin").Logger()
	}
	if opts.Credentials.AccessKey != "" {
		a.signer = remoting.NewSigner(opts.Credentials)
	}
	if err := clusterauth.CheckSecret(opts.ClusterSecret); err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	if opts.ClusterSecret != "" {
		a.prover = clusterauth.NewProver(opts.ClusterSecret)
	}
	if a.transport == nil {
		a.transport = remoting.NewClient(remoting.ClientOptions{TLSConfig: opts.TLSConfig, Logger: opts.Logger})
		a.ownsTrans = true
	}
	return a, nil
}

// Close closes the Admin's own transport.
func (a *Admin) Close() error {
	if a.ownsTrans {
		return a.transport.Close()
	}
	return nil
}

// invoke sends req to addr, proven when the Admin has a cluster secret and then signed when it
// has credentials (the signature covers the proof), bounded by Options.Timeout unless ctx ends
// earlier.
func (a *Admin) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > a.opts.Timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.opts.Timeout)
		defer cancel()
	}
	if a.prover != nil {
		a.prover.Prove(req)
	}
	if a.signer != nil {
		a.signer.Sign(req)
	}
	return a.transport.InvokeSync(ctx, addr, req)
}

// invokeOK is invoke that turns a response with another code than Success (or one of
// accepted) into an error.
func (a *Admin) invokeOK(ctx context.Context, addr string, req *remoting.Command, accepted ...int32) (*remoting.Command, error) {
	resp, err := a.invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if len(accepted) == 0 {
		accepted = []int32{remoting.Success}
	}
	if err := remoting.ErrorFromResponse(resp, accepted...); err != nil {
		return nil, err
	}
	return resp, nil
}

// invokeNameServer asks the name servers in turn until one answers; build makes a fresh
// request for each, as a request's opaque must not be reused. An answer with another code
// than Success is returned as an error without trying the others: they share the routes.
func (a *Admin) invokeNameServer(ctx context.Context, build func() *remoting.Command) (*remoting.Command, error) {
	var lastErr error
	for _, addr := range a.opts.NameServers {
		resp, err := a.invoke(ctx, addr, build())
		if err == nil {
			return resp, remoting.ErrorFromResponse(resp)
		}
		lastErr = fmt.Errorf("name server %s: %w", addr, err)
		a.log.Debug().Err(err).Str("nameServer", addr).Msg("name server did not answer, trying the next")
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// masters returns the master address of each broker of a route, sorted by broker name; broker
// names without a master are left out.
func masters(r *route.TopicRouteData) []brokerAddr {
	out := make([]brokerAddr, 0, len(r.BrokerDatas))
	for _, bd := range r.BrokerDatas {
		if addr := bd.MasterAddr(); addr != "" {
			out = append(out, brokerAddr{name: bd.BrokerName, addr: addr})
		}
	}
	slices.SortFunc(out, func(x, y brokerAddr) int { return strings.Compare(x.name, y.name) })
	return out
}

type brokerAddr struct{ name, addr string }

// routeMasters returns the masters of topic's route, or an error naming what was asked.
func (a *Admin) routeMasters(ctx context.Context, topic, what string) ([]brokerAddr, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("admin: %s: %w", what, err)
	}
	ms := masters(r)
	if len(ms) == 0 {
		return nil, fmt.Errorf("admin: %s: topic %s has no master broker", what, topic)
	}
	return ms, nil
}
