package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func sampleNow(t *testing.T, s *sampler) *snapshot {
	t.Helper()
	snap, _, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func rowOfAddr(snap *snapshot, addr string) *brokerRow {
	for i := range snap.brokers {
		if snap.brokers[i].Addr == addr {
			return &snap.brokers[i]
		}
	}
	return nil
}

// A slave that stops answering is down while still registered, stays down once the name
// servers drop it, cannot be cleared while they list it, and is gone once cleared; back again
// it is up.
func TestBrokerDownUntilCleared(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1", keyCommitLogMax, "10")
	f.set("s:1", keyCommitLogMax, "10", keyVersion, "V4_9_7")
	s := newSampler(f, 0, time.Minute)
	snap := sampleNow(t, s)
	sl := rowOfAddr(snap, "s:1")
	if len(snap.brokers) != 2 || sl.Status != statusUp || !sl.Registered || sl.LastSeen == 0 || sl.DownSince != 0 {
		t.Fatalf("both up: %+v", snap.brokers)
	}
	lastUp := sl.LastSeen

	f.drop("s:1")
	time.Sleep(2 * time.Millisecond)
	snap = sampleNow(t, s)
	sl = rowOfAddr(snap, "s:1")
	if sl.Status != statusDown || !sl.Registered || sl.DownSince == 0 || sl.LastSeen != lastUp || !strings.Contains(sl.Error, "connection refused") {
		t.Fatalf("slave not answering: %+v", sl)
	}
	downSince := sl.DownSince
	if _, err := s.clear("s:1", false); !errors.Is(err, errStillRegistered) {
		t.Fatalf("clearing a registered broker: %v", err)
	}
	if gone, err := s.clear("", true); err != nil || len(gone) != 0 {
		t.Fatalf("clear all with none gone: %v %v", gone, err)
	}

	f.table(map[int64]string{0: "m:1"})
	time.Sleep(2 * time.Millisecond)
	snap = sampleNow(t, s)
	sl = rowOfAddr(snap, "s:1")
	if len(snap.brokers) != 2 || sl == nil || sl.Status != statusDown || sl.Registered || sl.Error != goneRemark ||
		sl.DownSince != downSince || sl.LastSeen != lastUp || sl.Role != "SLAVE" || sl.BrokerID != 1 || sl.Version != "V4_9_7" {
		t.Fatalf("slave unregistered: %+v", snap.brokers)
	}
	if snap.brokers[0].Addr != "m:1" {
		t.Fatalf("rows out of order: %+v", snap.brokers)
	}
	if _, err := s.clear("nope:1", false); !errors.Is(err, errNotRemembered) {
		t.Fatalf("clearing an unknown address: %v", err)
	}
	if gone, err := s.clear("s:1", false); err != nil || len(gone) != 1 {
		t.Fatalf("clear: %v %v", gone, err)
	}
	if s.last.brokers[0].Addr != "m:1" || len(s.last.brokers) != 1 {
		t.Fatalf("the cleared broker is still in the last snapshot: %+v", s.last.brokers)
	}
	if snap := sampleNow(t, s); len(snap.brokers) != 1 {
		t.Fatalf("cleared broker back: %+v", snap.brokers)
	}

	f.table(nil)
	f.set("s:1", keyCommitLogMax, "10")
	snap = sampleNow(t, s)
	if sl := rowOfAddr(snap, "s:1"); sl == nil || sl.Status != statusUp || sl.DownSince != 0 {
		t.Fatalf("slave back: %+v", snap.brokers)
	}
}

// The registry is bounded: the brokers of every sample are kept and the gone ones beyond the
// bound are forgotten, however many addresses a name server makes up.
func TestBrokerRegistryBounded(t *testing.T) {
	f := &fakeCluster{}
	s := newSampler(f, 0, time.Minute)
	for round := range 5 {
		addrs := map[int64]string{}
		for i := range maxBrokers {
			addrs[int64(i)] = fmt.Sprintf("10.0.%d.%d:1", round, i)
		}
		f.table(addrs)
		snap := sampleNow(t, s)
		if len(s.seen) > maxSeenBrokers || len(snap.brokers) > maxSeenBrokers {
			t.Fatalf("round %d: %d remembered, %d rows", round, len(s.seen), len(snap.brokers))
		}
		for _, a := range addrs {
			if s.seen[a] == nil || !s.seen[a].listed {
				t.Fatalf("round %d: listed %s forgotten", round, a)
			}
		}
	}
}

// The server samples in its own goroutine, so a page opened later has history; Close stops it.
func TestHistoryKeptWithoutPages(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1", keyPutTps, "5 5 5")
	f.set("s:1", keyGetTps, "1 1 1")
	s := newServer(f, Options{Refresh: 5 * time.Millisecond})
	s.start()
	defer s.Close()
	for deadline := time.Now().Add(10 * time.Second); f.count() < 5; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d samples without a page", f.count())
		}
	}
	s.Close()
	stopped := f.count()
	time.Sleep(30 * time.Millisecond)
	if f.count() != stopped {
		t.Fatalf("sampling went on after Close: %d then %d", stopped, f.count())
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var o overviewBody
	getJSON(t, srv.URL+"/api/overview", http.StatusOK, &o)
	if len(o.History) < 4 || o.History[0].Put != 5 {
		t.Fatalf("a page opened later got %d points: %+v", len(o.History), o.History)
	}
}

// POST /api/brokers/clear: a write, so the token; a JSON object naming one address or all;
// 404 for an address never seen, 409 for one still registered.
func TestClearEndpoint(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1")
	s := newServer(f, Options{Refresh: time.Hour})
	srv := httptest.NewServer(s)
	defer srv.Close()
	sampleNow(t, s.rates)
	f.table(map[int64]string{0: "m:1"})
	s.rates.minInterval = 0
	sampleNow(t, s.rates)
	post := func(body string, token bool) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/brokers/clear", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token {
			req.Header.Set(TokenHeader, s.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e errorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	for _, c := range []struct {
		body   string
		token  bool
		status int
	}{
		{`{"addr":"s:1"}`, false, 403},
		{`{`, true, 400},
		{`{}`, true, 400},
		{`{"addr":"s:1","all":true}`, true, 400},
		{`{"addr":"s:1","bogus":1}`, true, 400},
		{`{"addr":"s:1"} {"all":true}`, true, 400},
		{`{"addr":"` + strings.Repeat("a", 300) + `"}`, true, 400},
		{`{"addr":"` + strings.Repeat("a", 5000) + `"}`, true, 400},
		{`{"addr":"nope:1"}`, true, 404},
		{`{"addr":"m:1"}`, true, 409},
	} {
		if st, msg := post(c.body, c.token); st != c.status || msg == "" {
			t.Errorf("%.60s: %d %q, want %d with an error", c.body, st, msg, c.status)
		}
	}
	if st, msg := post(`{"addr":"s:1"}`, true); st != http.StatusOK {
		t.Fatalf("clear s:1: %d %s", st, msg)
	}
	var o overviewBody
	getJSON(t, srv.URL+"/api/overview", http.StatusOK, &o)
	if len(o.Brokers) != 1 || o.Brokers[0].Addr != "m:1" {
		t.Fatalf("after clearing: %+v", o.Brokers)
	}
}
