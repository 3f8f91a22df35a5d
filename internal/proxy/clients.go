package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// clientIDHeader is the metadata key every SDK call carries its client id in.
const clientIDHeader = "x-mq-client-id"

// DefaultChannelExpiredTimeout is how long a client that neither calls nor keeps a Telemetry
// stream open stays registered (RocketMQ's proxy channelExpiredTimeout, 120 s; the SDKs
// heartbeat every 10 s).
const DefaultChannelExpiredTimeout = 120 * time.Second

// DefaultMaxClients bounds the clients the endpoint keeps at once (ours: RocketMQ's proxy has
// no bound). A client id beyond it is answered TOO_MANY_REQUESTS until others end or expire,
// so a stranger minting client ids cannot make the node hold unbounded state.
const DefaultMaxClients = 10000

// maxClientIDBytes bounds the client id taken from metadata (ours; RocketMQ's 5.x SDKs build ids
// of well under 100 bytes: host, pid, index, time).
const maxClientIDBytes = 256

// client is one SDK client as the endpoint knows it.
type client struct {
	id string
	// tr is the client's own connection to the broker: the broker registers its groups on
	// it and calls back on it.
	tr remoting.Transport

	mu       sync.Mutex
	settings *apiv2.Settings // as the client last sent them, nil before
	lastSeen time.Time
	stream   *telemetryStream // the open Telemetry stream, nil when none
}

// telemetryStream is a client's open Telemetry stream; send serializes writes, which gRPC
// requires of a stream.
type telemetryStream struct {
	mu     sync.Mutex
	stream grpc.BidiStreamingServer[apiv2.TelemetryCommand, apiv2.TelemetryCommand]
}

// send writes one command to the stream.
func (t *telemetryStream) send(cmd *apiv2.TelemetryCommand) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stream.Send(cmd)
}

// Stream returns the client's open Telemetry stream, nil when none: how a broker request for
// the client (a transaction check) reaches it as a Telemetry command.
func (c *client) Stream() *telemetryStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream
}

func (c *client) touch() {
	c.mu.Lock()
	c.lastSeen = time.Now()
	c.mu.Unlock()
}

func (c *client) Settings() *apiv2.Settings {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settings
}

// clients is the registry of SDK clients by id.
type clients struct {
	newTransport func() remoting.Transport
	max          int
	expire       time.Duration
	// onNew lets the service install its processors (broker requests for the client) on a
	// new client's transport.
	onNew func(*client)

	mu     sync.Mutex
	byID   map[string]*client
	closed bool
}

// clientIDFrom reads the caller's client id from the call's metadata, or says what is wrong.
func clientIDFrom(ctx context.Context) (string, *apiv2.Status) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids := md.Get(clientIDHeader)
	if len(ids) == 0 || ids[0] == "" {
		return "", status(apiv2.Code_CLIENT_ID_REQUIRED, "the call carries no client id: set the "+clientIDHeader+" metadata, as the RocketMQ 5.x SDKs do")
	}
	if len(ids[0]) > maxClientIDBytes {
		return "", statusf(apiv2.Code_BAD_REQUEST, "client id of %d bytes: at most %d", len(ids[0]), maxClientIDBytes)
	}
	return ids[0], nil
}

// get returns the client of the call, registering it on its first call.
func (r *clients) get(ctx context.Context) (*client, *apiv2.Status) {
	id, st := clientIDFrom(ctx)
	if st != nil {
		return nil, st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, status(apiv2.Code_INTERNAL_SERVER_ERROR, "the node is closing")
	}
	c := r.byID[id]
	if c == nil {
		if len(r.byID) >= r.max {
			return nil, statusf(apiv2.Code_TOO_MANY_REQUESTS, "the endpoint serves %d clients already, its limit: retry once some end", len(r.byID))
		}
		c = &client{id: id, tr: r.newTransport()}
		r.byID[id] = c
		if r.onNew != nil {
			r.onNew(c)
		}
	}
	c.touch()
	return c, nil
}

// lookup returns a registered client, nil when there is none.
func (r *clients) lookup(id string) *client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// remove forgets a client and closes its connection to the broker, which then drops its groups
// as it drops a remoting client's when the connection closes.
func (r *clients) remove(c *client) {
	r.mu.Lock()
	if r.byID[c.id] == c {
		delete(r.byID, c.id)
	}
	r.mu.Unlock()
	c.tr.Close()
}

// expireIdle removes the clients silent for longer than the expiry that have no open
// Telemetry stream.
func (r *clients) expireIdle(now time.Time) {
	var gone []*client
	r.mu.Lock()
	for id, c := range r.byID {
		c.mu.Lock()
		idle := c.stream == nil && now.Sub(c.lastSeen) > r.expire
		c.mu.Unlock()
		if idle {
			delete(r.byID, id)
			gone = append(gone, c)
		}
	}
	r.mu.Unlock()
	for _, c := range gone {
		c.tr.Close()
	}
}

// closeAll forgets every client; no client registers after it.
func (r *clients) closeAll() {
	r.mu.Lock()
	r.closed = true
	all := r.byID
	r.byID = nil
	r.mu.Unlock()
	for _, c := range all {
		c.tr.Close()
	}
}

func (r *clients) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}
