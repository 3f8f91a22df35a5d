package proxy

import "testing"

// The checks waiting for one client's stream are bounded, per client, and none start once the
// endpoint closes.
func TestCheckRelayBounds(t *testing.T) {
	var r checkRelay
	a, b := &client{id: "a"}, &client{id: "b"}
	for i := range maxPendingChecks {
		if !r.start(a) {
			t.Fatalf("check %d of a refused", i)
		}
	}
	if r.start(a) {
		t.Fatalf("check %d of a started: the bound is %d", maxPendingChecks+1, maxPendingChecks)
	}
	if !r.start(b) {
		t.Fatal("a's full queue refused b's check")
	}
	r.done(a)
	if !r.start(a) {
		t.Fatal("a's check refused after one finished")
	}
	for range maxPendingChecks {
		r.done(a)
	}
	r.done(b)
	if len(r.pending) != 0 {
		t.Fatalf("pending after every check finished: %v", r.pending)
	}
	r.close() // returns: nothing is pending
	if r.start(a) {
		t.Fatal("a check started after close")
	}
}
