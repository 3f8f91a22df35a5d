package reply

import (
	"container/heap"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/remoting"
)

// Where a reply goes (docs/protocol.md §4.4). RocketMQ pushes a reply to whichever connection
// its producer table finds first under the reply's REPLY_TO_CLIENT, a client id that anyone can
// claim in a heartbeat, and that a requester's connection is known under only once its client
// heartbeated (every 30 s for the Go client). Here:
//
//  1. The broker remembers, for each request it stores (a plain send carrying CORRELATION_ID
//     and REPLY_TO_CLIENT, not a reply), the connection it came on, under the pair (correlation
//     id, REPLY_TO_CLIENT): a route. A reply carrying the same pair is pushed to that connection,
//     whatever heartbeats said. The first request of a pair holds it while it lives: another
//     connection sending the same pair changes nothing.
//  2. A reply without a route (its request went through another broker of the cluster, or
//     expired here) goes to the holder of its client id: the connection that first sent a
//     request or a heartbeat (with at least one group) under that id and is still open. Another
//     connection can take the id over only once the holder closed, or sent nothing under the id
//     for ChannelExpiredTimeout (the reconnect of a client whose old connection is half open).
//
// Everything is bounded: routes per connection (the connection's oldest goes) and in all (a
// request over the bound is stored but not routed), client ids held per connection and in all,
// key lengths; routes expire with their request's TTL. A connection's routes and holds go when
// it closes. One mutex, a leaf, guards it all; lookups are map reads.

// Bounds of the reply routing. RocketMQ remembers nothing per request, so none of them is its.
const (
	// DefaultMaxReplyRoutesPerConnection is how many requests of one connection wait for their
	// reply with a route; a newer request pushes out the connection's oldest route. An honest
	// requester has far fewer in flight: a route goes once its reply is delivered.
	DefaultMaxReplyRoutesPerConnection = 4096
	// DefaultMaxReplyRoutes bounds the routes of all connections; beyond it a request is
	// stored, and its reply goes to the holder of its client id.
	DefaultMaxReplyRoutes = 65536
	// DefaultMaxReplyPushesPerConnection bounds the pushes to one connection that wait for its
	// acknowledgement; a reply over it is answered SYSTEM_ERROR at once, so a client that never
	// acknowledges costs its own replies, never another client's. 64 is what our clients run at
	// once (remoting.ClientOptions.MaxServerRequests).
	DefaultMaxReplyPushesPerConnection = 64
	// maxClientIDsPerConnection and maxClientIDHolds bound the client ids held for replies.
	maxClientIDsPerConnection = 64
	maxClientIDHolds          = 65536
	// maxCorrelationIDBytes and maxReplyClientIDBytes bound what a route keeps: a UUID is 36
	// bytes, a client id ip@instance. A longer one is not remembered.
	maxCorrelationIDBytes = 128
	maxReplyClientIDBytes = 255
	// minReplyRouteLife and maxReplyRouteLife clamp a route's life, the request's TTL read in
	// milliseconds, as RocketMQ's Java client writes it (its timeout) and ours does. The
	// official Go client writes whole seconds ("3"), hence the floor; the cap keeps a TTL from
	// pinning a route for good.
	minReplyRouteLife = 30 * time.Second
	maxReplyRouteLife = time.Hour
)

// replyKey is what a route is found by: a reply matches the request it answers on both.
type replyKey struct {
	correlationID, clientID string
}

// replyRoute is the connection a request came on, until its reply is delivered or its life
// ends.
type replyRoute struct {
	key      replyKey
	ch       remoting.Channel
	conn     *replyConn
	deadline time.Time
	index    int // in replyRoutes.expiry
	// prev and next link the connection's routes, oldest first.
	prev, next *replyRoute
}

// replyConn is one connection's part of the table.
type replyConn struct {
	ch         remoting.Channel
	head, tail *replyRoute
	routes     int
	holds      []string // client ids held
	pushes     int      // pushes waiting for the connection's acknowledgement
	dropped    bool     // closed: no longer in replyRoutes.conns
}

// clientHold is the connection holding a client id for replies (point 2 above).
type clientHold struct {
	id       string // the key it is held under (a copy of no request's buffer)
	conn     *replyConn
	lastSeen time.Time
}

// replyRoutes is the table of routes and holds.
type replyRoutes struct {
	now func() time.Time
	// holdExpiry is how long a hold lasts without a request or heartbeat from its holder
	// (ChannelExpiredTimeout).
	holdExpiry time.Duration
	// The bounds and the push timeout, fields so tests can lower them (under mu).
	maxPerConn, maxRoutes, maxPushesPerConn, maxHoldsPerConn, maxHolds int
	pushTimeout                                                        time.Duration

	mu      sync.Mutex
	routes  map[replyKey]*replyRoute
	expiry  routeHeap
	conns   map[uint64]*replyConn
	holders map[string]*clientHold
}

func newReplyRoutes(now func() time.Time, holdExpiry time.Duration) *replyRoutes {
	return &replyRoutes{now: now, holdExpiry: holdExpiry,
		maxPerConn: DefaultMaxReplyRoutesPerConnection, maxRoutes: DefaultMaxReplyRoutes,
		maxPushesPerConn: DefaultMaxReplyPushesPerConnection,
		maxHoldsPerConn:  maxClientIDsPerConnection, maxHolds: maxClientIDHolds, pushTimeout: replyPushTimeout,
		routes: map[replyKey]*replyRoute{}, conns: map[uint64]*replyConn{}, holders: map[string]*clientHold{}}
}

// NoteRequest remembers where the reply to a plain send goes, if the send is a request. It
// is on the send path: a message without REPLY_TO_CLIENT costs one scan of its properties.
func (s *Service) NoteRequest(ch remoting.Channel, props string) {
	clientID, ok := message.PropertyValueString(props, message.PropertyReplyToClient)
	if !ok || clientID == "" {
		return
	}
	corr, _ := message.PropertyValueString(props, message.PropertyCorrelationID)
	if t, _ := message.PropertyValueString(props, message.PropertyMsgType); t == replyMessageType {
		return // a reply sent as a plain message: it asks for nothing
	}
	ttl, _ := message.PropertyValueString(props, message.PropertyTTL)
	s.routes.request(ch, corr, clientID, ttl)
}

// replyMessageType is MSG_TYPE of a reply (MixAll.REPLY_MESSAGE_FLAG).
const replyMessageType = "reply"

// routeLife reads a request's TTL (milliseconds) into the life of its route.
func routeLife(ttl string) time.Duration {
	ms, err := strconv.ParseInt(ttl, 10, 64) // out of range: the extreme, with ErrRange
	if err != nil && !errors.Is(err, strconv.ErrRange) || ms <= 0 {
		return minReplyRouteLife
	}
	if ms >= int64(maxReplyRouteLife/time.Millisecond) {
		return maxReplyRouteLife
	}
	return max(time.Duration(ms)*time.Millisecond, minReplyRouteLife)
}

// request records a request: the connection claims clientID (if free) and, when the pair is
// new, gets its route. The strings may lie in the request's buffer: what is kept is cloned.
func (r *replyRoutes) request(ch remoting.Channel, corr, clientID, ttl string) {
	if len(clientID) > maxReplyClientIDBytes {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimLocked(ch, clientID, now)
	if corr != "" && len(corr) <= maxCorrelationIDBytes {
		r.addRouteLocked(ch, replyKey{corr, clientID}, now.Add(routeLife(ttl)), now)
	}
	r.forgetIfClosedLocked(ch)
}

// heartbeat records that ch heartbeated under clientID: it claims the id if free.
func (r *replyRoutes) heartbeat(ch remoting.Channel, clientID string) {
	if clientID == "" || len(clientID) > maxReplyClientIDBytes {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimLocked(ch, clientID, now)
	r.forgetIfClosedLocked(ch)
}

// forgetIfClosedLocked drops ch when it closed meanwhile. Its close event may have been
// handled before this request (events and requests run on different goroutines): the
// channel is marked closed before the event fires, so what was added after the event is
// seen here and dropped. r.mu must be held.
func (r *replyRoutes) forgetIfClosedLocked(ch remoting.Channel) {
	if ch.Closed() {
		r.dropLocked(ch.ID())
	}
}

// connLocked returns ch's part of the table, made on first use. r.mu must be held.
func (r *replyRoutes) connLocked(ch remoting.Channel) *replyConn {
	c := r.conns[ch.ID()]
	if c == nil {
		c = &replyConn{ch: ch}
		r.conns[ch.ID()] = c
	}
	return c
}

// claimLocked makes ch the holder of clientID when nobody holds it, the holder closed, or it
// went quiet for holdExpiry; a refresh by the holder keeps it. r.mu must be held.
func (r *replyRoutes) claimLocked(ch remoting.Channel, clientID string, now time.Time) {
	h := r.holders[clientID]
	if h != nil {
		if h.conn.ch.ID() == ch.ID() {
			h.lastSeen = now
			return
		}
		if !h.conn.ch.Closed() && now.Sub(h.lastSeen) < r.holdExpiry {
			return
		}
	}
	c := r.conns[ch.ID()]
	if c != nil && len(c.holds) >= r.maxHoldsPerConn || h == nil && len(r.holders) >= r.maxHolds {
		return
	}
	if c == nil {
		c = r.connLocked(ch)
	}
	if h != nil {
		h.conn.holds = removeString(h.conn.holds, h.id)
		h.conn, h.lastSeen = c, now
	} else {
		h = &clientHold{id: strings.Clone(clientID), conn: c, lastSeen: now}
		r.holders[h.id] = h
	}
	c.holds = append(c.holds, h.id)
}

func removeString(list []string, s string) []string {
	for i, x := range list {
		if x == s {
			list[i] = list[len(list)-1]
			return list[:len(list)-1]
		}
	}
	return list
}

// addRouteLocked gives key a route to ch unless a live route holds it. r.mu must be held.
func (r *replyRoutes) addRouteLocked(ch remoting.Channel, key replyKey, deadline, now time.Time) {
	r.expireLocked(now)
	if old := r.routes[key]; old != nil {
		if !old.ch.Closed() {
			return // first come: a second sender of the pair gets nothing of the first's
		}
		r.removeRouteLocked(old)
	}
	c := r.connLocked(ch)
	if c.routes >= r.maxPerConn {
		r.removeRouteLocked(c.head)
	}
	if len(r.routes) >= r.maxRoutes {
		return
	}
	key = replyKey{strings.Clone(key.correlationID), strings.Clone(key.clientID)}
	rt := &replyRoute{key: key, ch: ch, conn: c, deadline: deadline, prev: c.tail}
	if c.tail != nil {
		c.tail.next = rt
	} else {
		c.head = rt
	}
	c.tail = rt
	c.routes++
	r.routes[key] = rt
	heap.Push(&r.expiry, rt)
}

// expireLocked removes the routes whose life ended. r.mu must be held.
func (r *replyRoutes) expireLocked(now time.Time) {
	for len(r.expiry) > 0 && !r.expiry[0].deadline.After(now) {
		r.removeRouteLocked(r.expiry[0])
	}
}

// removeRouteLocked takes rt out of every structure. r.mu must be held.
func (r *replyRoutes) removeRouteLocked(rt *replyRoute) {
	delete(r.routes, rt.key)
	heap.Remove(&r.expiry, rt.index)
	c := rt.conn
	if rt.prev != nil {
		rt.prev.next = rt.next
	} else {
		c.head = rt.next
	}
	if rt.next != nil {
		rt.next.prev = rt.prev
	} else {
		c.tail = rt.prev
	}
	rt.prev, rt.next = nil, nil
	c.routes--
}

// dropChannel forgets a closed connection's routes and holds.
func (r *replyRoutes) dropChannel(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(id)
}

func (r *replyRoutes) dropLocked(id uint64) {
	c := r.conns[id]
	if c == nil {
		return
	}
	for c.head != nil {
		r.removeRouteLocked(c.head)
	}
	for _, clientID := range c.holds {
		delete(r.holders, clientID)
	}
	c.holds = nil
	c.dropped = true
	delete(r.conns, id)
}

// replyTarget is where one reply is pushed, with what the push must give back when it ends.
type replyTarget struct {
	ch      remoting.Channel
	conn    *replyConn
	route   *replyRoute // nil when found by the client id's holder
	timeout time.Duration
	limit   int // maxPushesPerConn, for the remark of a refusal
}

// Why a reply has no target.
type replyMiss int

const (
	replyFound replyMiss = iota
	replyNoChannel
	replyTooManyPushes
)

// target finds where the reply to (corr, clientID) goes and counts a push to it: a live route,
// else the id's holder. Over maxPushesPerConn it answers replyTooManyPushes and counts nothing.
// A found target must be given back with pushDone.
func (r *replyRoutes) target(corr, clientID string) (replyTarget, replyMiss) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var t replyTarget
	if rt := r.routes[replyKey{corr, clientID}]; rt != nil {
		if rt.ch.Closed() || !rt.deadline.After(now) {
			r.removeRouteLocked(rt)
		} else {
			t = replyTarget{ch: rt.ch, conn: rt.conn, route: rt}
		}
	}
	if t.ch == nil {
		h := r.holders[clientID]
		if h == nil || h.conn.ch.Closed() {
			return t, replyNoChannel
		}
		t = replyTarget{ch: h.conn.ch, conn: h.conn}
	}
	if t.conn.pushes >= r.maxPushesPerConn {
		return replyTarget{limit: r.maxPushesPerConn}, replyTooManyPushes
	}
	t.conn.pushes++
	t.timeout = r.pushTimeout
	return t, replyFound
}

// pushDone gives back a push counted by target. A delivered reply ends its route, so that
// routes live as long as requests wait, not as long as their TTL; a second reply to the same
// request (a second group answering it) goes to the client id's holder. A failed push keeps
// the route, so the replier's retry goes the same way.
func (r *replyRoutes) pushDone(t replyTarget, delivered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t.conn.pushes--
	if delivered && t.route != nil && r.routes[t.route.key] == t.route {
		r.removeRouteLocked(t.route)
	}
}

// routeHeap orders routes by deadline (container/heap), so expiry looks at the earliest only.
type routeHeap []*replyRoute

func (h routeHeap) Len() int           { return len(h) }
func (h routeHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h routeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *routeHeap) Push(x any) {
	rt := x.(*replyRoute)
	rt.index = len(*h)
	*h = append(*h, rt)
}
func (h *routeHeap) Pop() any {
	old := *h
	rt := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	rt.index = -1
	return rt
}
