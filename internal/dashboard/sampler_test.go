package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/route"
)

// fakeCluster answers ClusterInfo and BrokerRuntimeInfo from tables the test changes; the
// dashboard's other calls are not made by the tests that use it (the nil source panics).
type fakeCluster struct {
	source
	mu      sync.Mutex
	info    map[string]map[string]string // addr -> runtime info
	addrs   map[int64]string             // broker-a's table; nil: m:1 and s:1
	fail    error
	samples int
}

func (f *fakeCluster) ClusterInfo(context.Context) (*route.ClusterInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	f.samples++
	addrs := map[int64]string{0: "m:1", 1: "s:1"}
	if f.addrs != nil {
		addrs = maps.Clone(f.addrs)
	}
	return &route.ClusterInfo{
		BrokerAddrTable:  map[string]route.BrokerData{"broker-a": {Cluster: "c1", BrokerName: "broker-a", BrokerAddrs: addrs}},
		ClusterAddrTable: map[string][]string{"c1": {"broker-a"}},
	}, nil
}

// table sets broker-a's addresses by id.
func (f *fakeCluster) table(addrs map[int64]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = addrs
}

func (f *fakeCluster) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.samples
}

func (f *fakeCluster) BrokerRuntimeInfo(_ context.Context, addr string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, ok := f.info[addr]
	if !ok {
		return nil, errors.New("connection refused")
	}
	out := make(map[string]string, len(info))
	for k, v := range info {
		out[k] = v
	}
	return out, nil
}

// drop makes addr stop answering.
func (f *fakeCluster) drop(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.info, addr)
}

func (f *fakeCluster) set(addr string, kv ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.info == nil {
		f.info = map[string]map[string]string{}
	}
	f.info[addr] = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		f.info[addr][kv[i]] = kv[i+1]
	}
}

// Without RocketMQ's TPS keys the rates are the counters' rise between two samples; with them
// the first of the three figures is taken; a slave's puts do not count towards the cluster's.
func TestSamplerRates(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1", keyPutTotal, "100", keyGetTotal, "50", keyDiskRatio, "0.25")
	f.set("s:1", keyPutTps, "7.5 6 5", keyGetTps, "3 2 1")
	s := newSampler(f, 0, time.Minute)
	ctx := context.Background()
	first, history, err := s.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, sl := first.brokers[0], first.brokers[1]
	if m.Role != "MASTER" || sl.Role != "SLAVE" || m.Cluster != "c1" || sl.Addr != "s:1" {
		t.Fatalf("brokers %+v", first.brokers)
	}
	if m.PutTPS != nil || m.GetTPS != nil {
		t.Fatalf("a first sample without TPS keys has rates %v %v", m.PutTPS, m.GetTPS)
	}
	if *m.DiskRatio != 0.25 || *m.PutTotal != 100 {
		t.Fatalf("master %+v", m)
	}
	if *sl.PutTPS != 7.5 || *sl.GetTPS != 3 {
		t.Fatalf("slave rates %v %v", *sl.PutTPS, *sl.GetTPS)
	}
	// The slave's get rate is known, its put rate does not count: one point, put 0, get 3.
	if len(history) != 1 || history[0].Put != 0 || history[0].Get != 3 {
		t.Fatalf("history %+v", history)
	}

	f.set("m:1", keyPutTotal, "300", keyGetTotal, "40")
	for time.Since(first.at) <= 0 {
		time.Sleep(time.Millisecond) // the rate divides by the time between samples
	}
	second, history, err := s.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m = second.brokers[0]
	elapsed := second.at.Sub(first.at).Seconds()
	if m.PutTPS == nil || *m.PutTPS != 200/elapsed {
		t.Fatalf("derived put rate %v, want %v", m.PutTPS, 200/elapsed)
	}
	if m.GetTPS != nil {
		t.Fatalf("a counter that fell (restart) gave a get rate %v", *m.GetTPS)
	}
	if len(history) != 2 || history[1].Put != 200/elapsed || history[1].Get != 3 {
		t.Fatalf("history %+v", history)
	}
}

// Pages polling together share one sample per minInterval.
func TestSamplerSharesSamples(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1", keyPutTps, "1 1 1")
	f.set("s:1", keyPutTps, "1 1 1")
	s := newSampler(f, time.Hour, time.Minute)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := s.current(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if f.samples != 1 {
		t.Fatalf("%d samples for 8 concurrent pages within minInterval", f.samples)
	}
}

// The history keeps only the window and at most maxHistorySamples points.
func TestSamplerHistoryBounded(t *testing.T) {
	s := newSampler(&fakeCluster{}, 0, time.Minute)
	tps := 1.0
	start := time.Now()
	for i := range maxHistorySamples + 10 {
		s.record(&snapshot{at: start.Add(time.Duration(i) * time.Millisecond),
			brokers: []brokerRow{{Role: "MASTER", PutTPS: &tps}}})
	}
	if len(s.history) != maxHistorySamples {
		t.Fatalf("%d points kept", len(s.history))
	}
	s.record(&snapshot{at: start.Add(2 * time.Minute), brokers: []brokerRow{{Role: "MASTER", PutTPS: &tps}}})
	if len(s.history) != 1 {
		t.Fatalf("%d points kept after a window passed", len(s.history))
	}
}

func TestParseRuntimeFigures(t *testing.T) {
	for v, want := range map[string]string{"12.5 11 10": "12.5", "3": "3", "": "nil", "x y": "nil",
		"-1 2 3": "nil", "NaN": "nil", "+Inf 1 1": "nil", "1e400": "nil"} {
		got := "nil"
		if f := parseTPS(v); f != nil {
			got = strconv.FormatFloat(*f, 'g', -1, 64)
		}
		if got != want {
			t.Errorf("parseTPS(%q) = %s, want %s", v, got, want)
		}
	}
	var b brokerRow
	fillRuntime(&b, map[string]string{keyDiskRatio: "1.5", keyPutTotal: "-3", keyVersion: strings.Repeat("v", 1000)})
	if b.DiskRatio != nil || b.PutTotal != nil || len(b.Version) > 64+len("…") {
		t.Fatalf("hostile runtime info taken: %+v", b)
	}
}

// A broker that does not answer is a row with its error; a name server that does not answer
// is a 502 with {"error": ...}.
func TestOverviewErrors(t *testing.T) {
	f := &fakeCluster{}
	f.set("m:1", keyPutTps, "1 1 1")
	srv := httptest.NewServer(newServer(f, Options{Refresh: time.Millisecond}))
	defer srv.Close()
	var o overviewBody
	getJSON(t, srv.URL+"/api/overview", http.StatusOK, &o)
	if len(o.Brokers) != 2 || o.Brokers[0].Error != "" || !strings.Contains(o.Brokers[1].Error, "connection refused") {
		t.Fatalf("brokers %+v", o.Brokers)
	}
	f.mu.Lock()
	f.fail = errors.New("name server down")
	f.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := http.Get(srv.URL + "/api/overview")
		if err != nil {
			t.Fatal(err)
		}
		var e errorBody
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadGateway && err == nil && strings.Contains(e.Error, "name server down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("overview answered %d %+v (%v) with the name server down", resp.StatusCode, e, err)
		}
		time.Sleep(time.Millisecond) // the last sample is reused for Refresh/2
	}
}

func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A group's consume rate is the rise of its committed offsets between polls Refresh/2 apart;
// pages polling in between get the same rate, and a reset (offsets falling) gives none.
func TestConsumeRate(t *testing.T) {
	s := newServer(&fakeCluster{}, Options{Refresh: 2 * time.Second})
	at := time.Unix(1000, 0)
	if r := s.consumeRate("g", 100, at); r != nil {
		t.Fatalf("first poll: rate %v", *r)
	}
	r := s.consumeRate("g", 300, at.Add(2*time.Second))
	if r == nil || *r != 100 {
		t.Fatalf("rate %v, want 100/s", r)
	}
	if again := s.consumeRate("g", 5000, at.Add(2500*time.Millisecond)); again == nil || *again != 100 {
		t.Fatalf("a poll within Refresh/2 got %v, want the last rate", again)
	}
	if r := s.consumeRate("g", 0, at.Add(4*time.Second)); r != nil {
		t.Fatalf("after a reset: rate %v", *r)
	}
	for i := range maxGroups + 1 {
		s.consumeRate(strconv.Itoa(i), 0, at)
	}
	if len(s.marks) > maxGroups {
		t.Fatalf("%d marks kept", len(s.marks))
	}
}
