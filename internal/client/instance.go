package client

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"
)

// Defaults of Options (docs/protocol.md §10.6).
const (
	DefaultPollNameServerInterval  = 30 * time.Second
	DefaultHeartbeatBrokerInterval = 30 * time.Second
	// DefaultRouteTimeout bounds one GET_ROUTEINFO_BY_TOPIC attempt on one name server.
	DefaultRouteTimeout = 3 * time.Second
	// DefaultHeartbeatTimeout bounds one HEART_BEAT or UNREGISTER_CLIENT request.
	DefaultHeartbeatTimeout = 3 * time.Second
	// DefaultInstanceName is replaced by the process id in the client id, as the official
	// clients do.
	DefaultInstanceName = "DEFAULT"
)

// Options configures an Instance. Zero values mean the defaults.
type Options struct {
	// NameServers are the "host:port" addresses of the name services. Required.
	NameServers []string
	// InstanceName is the second half of the client id; "" or "DEFAULT" means the process id.
	InstanceName string
	// Transport carries every request. nil means a TCP remoting.Client that the instance owns
	// and closes on its last Release. A given transport is closed by the instance only when
	// OwnTransport is set; otherwise it stays the caller's.
	Transport    remoting.Transport
	OwnTransport bool
	// Credentials, when set, sign every request the instance and its handles send, over any
	// transport (RocketMQ's AclClientRPCHook with SessionCredentials). Both keys or neither.
	Credentials remoting.Credentials
	// TLSConfig makes the instance's own TCP client dial TLS (RocketMQ's useTLS). A given
	// Transport dials as it was built to, so setting both is an error.
	TLSConfig *tls.Config
	// PollNameServerInterval is how often every known topic's route is refreshed (30 s).
	PollNameServerInterval time.Duration
	// HeartbeatBrokerInterval is how often every broker gets a heartbeat (30 s).
	HeartbeatBrokerInterval time.Duration
	// RouteTimeout bounds one route query to one name server (3 s).
	RouteTimeout time.Duration
	// Namespace is informational here (the handles prefix their topics and groups).
	Namespace string
	// Logger receives the instance's logs; nil means silent.
	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.InstanceName == "" {
		o.InstanceName = DefaultInstanceName
	}
	if o.PollNameServerInterval <= 0 {
		o.PollNameServerInterval = DefaultPollNameServerInterval
	}
	if o.HeartbeatBrokerInterval <= 0 {
		o.HeartbeatBrokerInterval = DefaultHeartbeatBrokerInterval
	}
	if o.RouteTimeout <= 0 {
		o.RouteTimeout = DefaultRouteTimeout
	}
	return o
}

// Consumer is what a consumer handle gives the instance so that heartbeats carry its group and
// broker requests reach it.
//
// The instance calls these methods from its own goroutines (heartbeat and route loops, broker
// requests) and, for HeartbeatData, synchronously inside SendHeartbeatToAllBrokers on the
// caller's goroutine. So a consumer must not call SendHeartbeatToAllBrokers (or Register /
// Unregister) while holding a lock that HeartbeatData or SubscribedTopics take: that
// deadlocks.
type Consumer interface {
	// HeartbeatData returns the group, consume type, model, from-where and subscriptions.
	HeartbeatData() protocol.ConsumerData
	// SubscribedTopics lists the topics whose routes the consumer needs, including
	// %RETRY%group for clustering.
	SubscribedTopics() []string
	// Rebalance is called on NOTIFY_CONSUMER_IDS_CHANGED. It must not block for long.
	Rebalance()
	// ConsumeMessageDirectly answers CONSUME_MESSAGE_DIRECTLY (309) for msg, one stored
	// record; nil answers SYSTEM_ERROR.
	ConsumeMessageDirectly(msg []byte) *remoting.Command
}

// Instance is the client state shared by every producer and consumer of a client id. Its
// methods are safe for concurrent use.
//
// Lock order: registry.mu, then Instance.mu. No I/O happens under either lock.
type Instance struct {
	key      string
	clientID string
	opts     Options
	tr       remoting.Transport // every request goes through it: base, signing with Credentials
	base     remoting.Transport // Options.Transport, or the TCP client the instance made
	ownTr    bool
	log      zerolog.Logger

	flight singleflight.Group
	nsNext uint32 // round-robin position over name servers; guarded by mu

	mu        sync.RWMutex
	routes    map[string]*route.TopicRouteData // topic -> route
	brokers   map[string]map[int64]string      // broker name -> id -> address
	producers map[string]int                   // group -> registrations
	consumers map[string]Consumer              // group -> consumer
	refs      int                              // guarded by registry.mu

	kick   chan struct{} // asks the heartbeat loop for a round now
	stop   chan struct{}
	ctx    context.Context // ends at the last Release
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// rebalanceAfterKick asks the next heartbeat round to make every consumer rebalance once
	// it is done, so a broker we reconnected to learns the members before they allocate.
	txCheckers transactionCheckers // producer groups answering CHECK_TRANSACTION_STATE
	replies    replyWaiters        // requests waiting for PUSH_REPLY_MESSAGE_TO_CLIENT

	rebalanceAfterKick atomic.Bool
	unhookReconnect    func() // stops the transport's reconnect reports; nil without them
}

var registry struct {
	sync.Mutex
	m map[string]*Instance
}

// Acquire returns the instance of opts' client id, name servers, transport, credentials and
// TLS config, creating and starting it on first use; every Acquire needs a Release. The first
// acquirer's intervals and logger win. A handle with its own Transport gets its own instance,
// so in-process and TCP handles never share connections, and handles signing with different
// accounts or dialling with different TLS configs never share one either.
func Acquire(opts Options) (*Instance, error) {
	opts = opts.withDefaults()
	if len(opts.NameServers) == 0 {
		return nil, errors.New("client: no name server address")
	}
	if (opts.Credentials.AccessKey == "") != (opts.Credentials.SecretKey == "") {
		return nil, fmt.Errorf("client: credentials of AccessKey %q need both keys", opts.Credentials.AccessKey)
	}
	if opts.TLSConfig != nil && opts.Transport != nil {
		return nil, errors.New("client: a TLS config with a given transport, which decides how it dials")
	}
	for _, a := range opts.NameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("client: name server address %q: %w", a, err)
		}
	}
	clientID := BuildClientID(opts.InstanceName)
	key := instanceKey(clientID, opts)
	registry.Lock()
	defer registry.Unlock()
	if i := registry.m[key]; i != nil {
		i.refs++
		if opts.OwnTransport && opts.Transport != nil && opts.Transport != i.base {
			// Cannot happen (the key holds the transport), but never leak an owned transport.
			_ = opts.Transport.Close()
		}
		return i, nil
	}
	i := newInstance(key, clientID, opts)
	if registry.m == nil {
		registry.m = make(map[string]*Instance)
	}
	registry.m[key] = i
	i.refs = 1
	i.start()
	return i, nil
}

func instanceKey(clientID string, opts Options) string {
	ns := slices.Clone(opts.NameServers)
	sort.Strings(ns)
	tr := "tcp"
	if opts.Transport != nil {
		tr = fmt.Sprintf("%p", opts.Transport)
	}
	if opts.TLSConfig != nil {
		tr += fmt.Sprintf("+tls%p", opts.TLSConfig)
	}
	key := clientID + "|" + strings.Join(ns, ";") + "|" + tr
	if !opts.Credentials.IsZero() {
		key += "|acl:" + credentialsDigest(opts.Credentials)
	}
	return key
}

// credentialsDigest tells accounts apart without the registry holding the secret in clear.
func credentialsDigest(c remoting.Credentials) string {
	sum := sha256.Sum256([]byte(c.AccessKey + "\x00" + c.SecretKey))
	return hex.EncodeToString(sum[:16])
}

func newInstance(key, clientID string, opts Options) *Instance {
	l := zerolog.Nop()
	if opts.Logger != nil {
		l = *opts.Logger
	}
	i := &Instance{
		key:       key,
		clientID:  clientID,
		opts:      opts,
		tr:        opts.Transport,
		ownTr:     opts.Transport == nil || opts.OwnTransport,
		log:       l.With().Str("component", "client").Str("client_id", clientID).Logger(),
		routes:    make(map[string]*route.TopicRouteData),
		brokers:   make(map[string]map[int64]string),
		producers: make(map[string]int),
		consumers: make(map[string]Consumer),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	i.ctx, i.cancel = context.WithCancel(context.Background())
	if i.tr == nil {
		i.tr = remoting.NewClient(remoting.ClientOptions{TLSConfig: opts.TLSConfig, Logger: opts.Logger})
	}
	i.base = i.tr
	i.tr = signTransport(i.tr, opts.Credentials)
	i.registerProcessors()
	if rn, ok := i.tr.(remoting.ReconnectNotifier); ok {
		i.unhookReconnect = rn.OnReconnect(i.onReconnect)
	}
	return i
}

// BuildClientID returns ip@instance as the official clients do (docs/protocol.md §10.1): the first
// non-loopback IPv4 address of an up interface ("" when none), and the process id when the
// instance name is "" or DEFAULT.
func BuildClientID(instanceName string) string {
	if instanceName == "" || instanceName == DefaultInstanceName {
		instanceName = strconv.Itoa(os.Getpid())
	}
	return LocalIPv4() + "@" + instanceName
}

// LocalIPv4 is the first non-loopback IPv4 address of an up interface, or "".
func LocalIPv4() string {
	ip := localIP4()
	if ip == nil {
		return ""
	}
	return ip.String()
}

var localIP = sync.OnceValue(func() net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagLoopback != 0 || iface.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
				if ip4 := ipn.IP.To4(); ip4 != nil {
					return ip4
				}
			}
		}
	}
	return nil
})

func localIP4() net.IP { return localIP() }

// LocalIPv4Bytes is LocalIPv4 as 4 bytes, or nil when there is none.
func LocalIPv4Bytes() []byte {
	if ip := localIP4(); ip != nil {
		return slices.Clone([]byte(ip))
	}
	return nil
}

func (i *Instance) start() {
	i.wg.Add(2)
	go i.routeLoop()
	go i.heartbeatLoop()
}

// Release drops one reference; the last one stops the background goroutines, waits for them
// and closes an owned transport. Releasing more often than acquiring is a no-op.
func (i *Instance) Release() error {
	registry.Lock()
	if i.refs <= 0 {
		registry.Unlock()
		return nil
	}
	i.refs--
	if i.refs > 0 {
		registry.Unlock()
		return nil
	}
	if registry.m[i.key] == i {
		delete(registry.m, i.key)
	}
	registry.Unlock()
	if i.unhookReconnect != nil {
		i.unhookReconnect()
	}
	close(i.stop)
	i.cancel()
	i.wg.Wait()
	if i.ownTr {
		return i.tr.Close()
	}
	return nil
}

// ClientID returns ip@instance.
func (i *Instance) ClientID() string { return i.clientID }

// Transport returns the transport every request of this instance goes through.
func (i *Instance) Transport() remoting.Transport { return i.tr }

// Logger returns the instance's logger (component "client", with the client id).
func (i *Instance) Logger() zerolog.Logger { return i.log }

// NameServers returns the configured name server addresses.
func (i *Instance) NameServers() []string { return slices.Clone(i.opts.NameServers) }

// RegisterProducer adds group to the heartbeats. A group may be registered more than once
// (several producers of one group in one process); each registration needs an
// UnregisterProducer.
func (i *Instance) RegisterProducer(group string) error {
	if group == "" {
		return errors.New("client: empty producer group")
	}
	i.mu.Lock()
	i.producers[group]++
	first := i.producers[group] == 1
	i.mu.Unlock()
	if first {
		i.kickHeartbeat()
	}
	return nil
}

// UnregisterProducer drops one registration of group; the last one tells every broker
// (UNREGISTER_CLIENT) and leaves the group out of later heartbeats.
func (i *Instance) UnregisterProducer(group string) {
	i.mu.Lock()
	n := i.producers[group]
	if n <= 1 {
		delete(i.producers, group)
	} else {
		i.producers[group] = n - 1
	}
	i.mu.Unlock()
	if n == 1 {
		i.unregisterClient(group, "")
	}
}

// ErrConsumerGroupRegistered is a RegisterConsumer of a group another consumer of the instance
// holds.
var ErrConsumerGroupRegistered = errors.New("client: consumer group already registered")

// RegisterConsumer adds c's group to the heartbeats and routes broker requests for the group
// to c. One consumer per group and client id: a second registration is an error.
func (i *Instance) RegisterConsumer(group string, c Consumer) error {
	if group == "" || c == nil {
		return errors.New("client: empty consumer group or nil consumer")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.consumers[group]; ok {
		return fmt.Errorf("%w: group %q, client %s", ErrConsumerGroupRegistered, group, i.clientID)
	}
	i.consumers[group] = c
	return nil
}

// UnregisterConsumer drops group and tells every broker (UNREGISTER_CLIENT).
func (i *Instance) UnregisterConsumer(group string) {
	i.mu.Lock()
	_, ok := i.consumers[group]
	delete(i.consumers, group)
	i.mu.Unlock()
	if ok {
		i.unregisterClient("", group)
	}
}

func (i *Instance) consumer(group string) Consumer {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.consumers[group]
}

func (i *Instance) consumerList() []Consumer {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]Consumer, 0, len(i.consumers))
	for _, c := range i.consumers {
		out = append(out, c)
	}
	return out
}

// unregisterClient sends UNREGISTER_CLIENT to every broker address (producers: masters only) in
// parallel and waits for the answers (each bounded by DefaultHeartbeatTimeout).
func (i *Instance) unregisterClient(producerGroup, consumerGroup string) {
	addrs := i.brokerAddrs(consumerGroup != "")
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), DefaultHeartbeatTimeout)
			defer cancel()
			h := &protocol.UnregisterClientRequestHeader{ClientID: i.clientID, ProducerGroup: producerGroup,
				ConsumerGroup: consumerGroup}
			req := remoting.NewRequest(remoting.UnregisterClient, remoting.EncodeHeader(h), nil)
			resp, err := i.tr.InvokeSync(ctx, addr, req)
			if err == nil {
				err = remoting.ErrorFromResponse(resp)
			}
			if err != nil {
				i.log.Debug().Err(err).Str("addr", addr).Str("group", producerGroup+consumerGroup).
					Msg("unregister client failed")
			}
		}()
	}
	wg.Wait()
}
