package reply

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
)

// routesWith is a table on a fake clock with small bounds.
func routesWith(clock *wiretest.FakeClock, perConn, total int) *replyRoutes {
	r := newReplyRoutes(clock.Now, time.Minute)
	r.maxPerConn, r.maxRoutes = perConn, total
	return r
}

// wantTarget checks where the reply to (corr, clientID) goes: to the channel want, routed by
// its request (routed) or by the client id's holder; want nil means nowhere. It gives the
// push back, undelivered, so the lookup changes nothing.
func wantTarget(t *testing.T, r *replyRoutes, corr, clientID string, want *wiretest.FakeChannel, routed bool) {
	t.Helper()
	tg, miss := r.target(corr, clientID)
	if want == nil {
		if miss != replyNoChannel {
			t.Fatalf("reply (%s, %s) goes to %v, want nowhere", corr, clientID, tg.ch.ID())
		}
		return
	}
	if miss != replyFound {
		t.Fatalf("reply (%s, %s): miss %d, want channel %d", corr, clientID, miss, want.Num)
	}
	r.pushDone(tg, false)
	if tg.ch.ID() != want.Num || (tg.route != nil) != routed {
		t.Fatalf("reply (%s, %s) goes to %d (routed %t), want %d (routed %t)", corr, clientID, tg.ch.ID(),
			tg.route != nil, want.Num, routed)
	}
}

// checkInvariants checks that the map, the heap and the per-connection lists and counts
// agree, so that nothing is left behind by any path.
func checkInvariants(t *testing.T, r *replyRoutes) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.routes) != len(r.expiry) {
		t.Fatalf("%d routes, %d in the expiry heap", len(r.routes), len(r.expiry))
	}
	for i, rt := range r.expiry {
		if rt.index != i || r.routes[rt.key] != rt {
			t.Fatalf("heap slot %d holds route %+v (index %d)", i, rt.key, rt.index)
		}
	}
	n := 0
	for id, c := range r.conns {
		k := 0
		for rt := c.head; rt != nil; rt = rt.next {
			if rt.conn != c || r.routes[rt.key] != rt {
				t.Fatalf("connection %d lists route %+v it does not own", id, rt.key)
			}
			k++
		}
		if k != c.routes {
			t.Fatalf("connection %d counts %d routes, lists %d", id, c.routes, k)
		}
		n += k
		for _, id := range c.holds {
			if h := r.holders[id]; h == nil || h.conn != c {
				t.Fatalf("connection lists hold %q it does not have", id)
			}
		}
	}
	if n != len(r.routes) {
		t.Fatalf("connections list %d routes, the table has %d", n, len(r.routes))
	}
	for id, h := range r.holders {
		if r.conns[h.conn.ch.ID()] != h.conn {
			t.Fatalf("hold %q by a connection not in the table", id)
		}
	}
}

// A request's reply goes to its connection, matched on both the correlation id and the
// client id it claimed; the first request of a pair keeps it.
func TestReplyRoutesMatchAndFirstWins(t *testing.T) {
	clock := wiretest.NewFakeClock()
	r := routesWith(clock, 10, 100)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	r.request(a, "c1", "A@1", "3000")
	wantTarget(t, r, "c1", "A@1", a, true)
	// b claims A@1 too and sends the same pair: a keeps both the route and the hold.
	r.request(b, "c1", "A@1", "3000")
	r.heartbeat(b, "A@1")
	wantTarget(t, r, "c1", "A@1", a, true)
	// Same correlation id, another client id: not a's route; b holds B@1.
	r.request(b, "c2", "B@1", "3000")
	wantTarget(t, r, "c1", "B@1", b, false)
	wantTarget(t, r, "c1", "nobody@1", nil, false)
	// No correlation id: the holder.
	wantTarget(t, r, "", "A@1", a, false)
	checkInvariants(t, r)
}

// A connection over its bound loses its oldest route; over the global bound a request is not
// routed; both leave the table consistent.
func TestReplyRoutesBounds(t *testing.T) {
	clock := wiretest.NewFakeClock()
	r := routesWith(clock, 3, 5)
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	for i := range 4 {
		r.request(a, fmt.Sprintf("a%d", i), "A@1", "3000")
	}
	if got := len(r.routes); got != 3 {
		t.Fatalf("%d routes after 4 requests over a bound of 3", got)
	}
	wantTarget(t, r, "a0", "A@1", a, false) // pushed out: the holder still is a
	wantTarget(t, r, "a3", "A@1", a, true)
	for i := range 3 {
		r.request(b, fmt.Sprintf("b%d", i), "B@1", "3000")
	}
	if got := len(r.routes); got != 5 {
		t.Fatalf("%d routes with a global bound of 5", got)
	}
	wantTarget(t, r, "b2", "B@1", b, false) // not routed: over the global bound
	checkInvariants(t, r)

	// Keys too long are not kept; nor are client ids as holders.
	long := strings.Repeat("x", maxCorrelationIDBytes+1)
	r2 := routesWith(clock, 3, 5)
	r2.request(a, long, "A@1", "3000")
	r2.request(a, "c", strings.Repeat("y", maxReplyClientIDBytes+1), "3000")
	r2.heartbeat(a, strings.Repeat("y", maxReplyClientIDBytes+1))
	if len(r2.routes) != 0 || len(r2.holders) != 1 {
		t.Fatalf("long keys: %d routes, %d holders, want 0 and 1 (A@1)", len(r2.routes), len(r2.holders))
	}

	// Client ids held per connection and in all.
	r3 := routesWith(clock, 3, 5)
	r3.maxHoldsPerConn, r3.maxHolds = 2, 3
	for i := range 3 {
		r3.heartbeat(a, fmt.Sprintf("a%d", i))
	}
	r3.heartbeat(b, "b0")
	r3.heartbeat(b, "b1")
	if len(r3.holders) != 3 || len(r3.conns[1].holds) != 2 {
		t.Fatalf("%d holders, a holds %v; want 3 and 2", len(r3.holders), r3.conns[1].holds)
	}
	checkInvariants(t, r3)
}

// A route lives as long as its request's TTL read in milliseconds, clamped; expired routes
// leave the table as new requests come.
func TestReplyRoutesExpire(t *testing.T) {
	for ttl, want := range map[string]time.Duration{
		"3": minReplyRouteLife, "3000": minReplyRouteLife, "45000": 45 * time.Second, "": minReplyRouteLife,
		"x": minReplyRouteLife, "-5": minReplyRouteLife, "99999999999999999999": maxReplyRouteLife,
		"9223372036854775807": maxReplyRouteLife, "7200000": maxReplyRouteLife,
	} {
		if got := routeLife(ttl); got != want {
			t.Errorf("routeLife(%q) = %v, want %v", ttl, got, want)
		}
	}
	clock := wiretest.NewFakeClock()
	r := routesWith(clock, 10, 100)
	a := &wiretest.FakeChannel{Num: 1}
	r.request(a, "short", "A@1", "1000")
	r.request(a, "long", "A@1", "45000")
	clock.Advance(minReplyRouteLife)
	wantTarget(t, r, "short", "A@1", a, false) // expired: the holder
	wantTarget(t, r, "long", "A@1", a, true)
	clock.Advance(15 * time.Second)
	r.request(a, "new", "A@1", "3000") // sweeps what expired
	if _, ok := r.routes[replyKey{"long", "A@1"}]; ok || len(r.routes) != 1 {
		t.Fatalf("routes after expiry: %d", len(r.routes))
	}
	checkInvariants(t, r)
}

// A closed connection's routes and holds go; the client id is free for the next connection
// (a client reconnecting). A holder that went quiet for holdExpiry loses its id too.
func TestReplyRoutesConnectionClose(t *testing.T) {
	clock := wiretest.NewFakeClock()
	r := routesWith(clock, 10, 100)
	a, b, c := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}, &wiretest.FakeChannel{Num: 3}
	r.request(a, "c1", "A@1", "3000")
	r.heartbeat(b, "A@1") // refused: a holds it
	wantTarget(t, r, "other", "A@1", a, false)
	a.Shut = true
	// Before the close event is handled, a closed holder is skipped already.
	wantTarget(t, r, "c1", "A@1", nil, false)
	r.dropChannel(a.Num)
	if len(r.routes) != 0 || len(r.holders) != 0 || len(r.conns) != 0 {
		t.Fatalf("after close: %d routes, %d holders, %d connections", len(r.routes), len(r.holders), len(r.conns))
	}
	r.heartbeat(b, "A@1")
	wantTarget(t, r, "c1", "A@1", b, false)

	// b goes quiet; c takes the id once holdExpiry passed since b's last heartbeat.
	clock.Advance(30 * time.Second)
	r.heartbeat(c, "A@1")
	wantTarget(t, r, "", "A@1", b, false)
	clock.Advance(30 * time.Second)
	r.heartbeat(c, "A@1")
	wantTarget(t, r, "", "A@1", c, false)
	if len(r.conns[b.Num].holds) != 0 {
		t.Fatalf("b still lists %v", r.conns[b.Num].holds)
	}

	// A request or heartbeat handled after its connection's close event leaves nothing.
	d := &wiretest.FakeChannel{Num: 4, Shut: true}
	r.request(d, "late", "D@1", "3000")
	r.heartbeat(d, "D@1")
	if _, ok := r.conns[d.Num]; ok {
		t.Fatal("a closed connection was added to the table")
	}
	checkInvariants(t, r)
}

// Pushes to one connection are bounded; a delivered push ends its route, a failed one keeps it.
func TestReplyRoutesPushes(t *testing.T) {
	clock := wiretest.NewFakeClock()
	r := routesWith(clock, 10, 100)
	r.maxPushesPerConn = 2
	a, b := &wiretest.FakeChannel{Num: 1}, &wiretest.FakeChannel{Num: 2}
	r.request(a, "c1", "A@1", "3000")
	r.heartbeat(b, "B@1")
	t1, m1 := r.target("c1", "A@1")
	t2, m2 := r.target("c1", "A@1")
	if _, m3 := r.target("c1", "A@1"); m1 != replyFound || m2 != replyFound || m3 != replyTooManyPushes {
		t.Fatalf("three pushes with a bound of 2: %d %d %d", m1, m2, m3)
	}
	if _, m := r.target("", "B@1"); m != replyFound {
		t.Fatalf("another connection's push: %d", m)
	}
	r.pushDone(t1, false)
	wantTarget(t, r, "c1", "A@1", a, true) // failed: the route stays
	r.pushDone(t2, true)
	wantTarget(t, r, "c1", "A@1", a, false) // delivered: the route went
	if a := r.conns[a.Num]; a.pushes != 0 {
		t.Fatalf("%d pushes left", a.pushes)
	}
	checkInvariants(t, r)
}
