package node

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/storage"
)

// probe GETs path on addr and returns the status and body; an error fails the test, as the
// listener must answer from the start of the node to its end.
func probe(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if cc := resp.Header.Get("Cache-Control"); (path == "/readyz" || path == "/healthz") && cc != "no-store" {
		t.Errorf("GET %s: Cache-Control %q, want no-store", path, cc)
	}
	return resp.StatusCode, string(body)
}

func wantProbe(t *testing.T, addr, path string, code int, body string) {
	t.Helper()
	if c, b := probe(t, addr, path); c != code || !strings.Contains(b, body) {
		t.Fatalf("GET %s: %d %q, want %d with %q", path, c, b, code, body)
	}
}

// The node's own listener answers while the store recovers (alive, not ready), while the
// node serves (ready), and while it closes (neither), and is gone once Close returns.
func TestHTTPListenerLifecycle(t *testing.T) {
	httpAddr := freeAddr(t)
	o := haOpts(t, storage.AsyncMaster)
	o.HTTP.Listen = httpAddr
	sawStarting := false
	n, err := start(o, func(*storage.Options) {
		// The broker is about to open (and recover) its store.
		wantProbe(t, httpAddr, "/readyz", http.StatusServiceUnavailable, "not ready: starting")
		wantProbe(t, httpAddr, "/healthz", http.StatusOK, "ok: starting")
		wantProbe(t, httpAddr, "/", http.StatusServiceUnavailable, "starting")
		sawStarting = true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawStarting {
		t.Fatal("the store hook did not run")
	}
	if n.HTTPAddr() != httpAddr {
		t.Fatalf("HTTPAddr %q, want %q", n.HTTPAddr(), httpAddr)
	}
	wantProbe(t, httpAddr, "/readyz", http.StatusOK, "ready")
	wantProbe(t, httpAddr, "/healthz", http.StatusOK, "ok: serving")
	wantProbe(t, httpAddr, "/metrics", http.StatusNotFound, "metrics are off")
	wantProbe(t, httpAddr, "/no-such-page", http.StatusNotFound, "")

	sawClosing := false
	n.testHookClosed = func() {
		// Everything but the HTTP listener has closed.
		wantProbe(t, httpAddr, "/readyz", http.StatusServiceUnavailable, "not ready: closing")
		wantProbe(t, httpAddr, "/healthz", http.StatusServiceUnavailable, "closing")
		sawClosing = true
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if !sawClosing {
		t.Fatal("the close hook did not run")
	}
	if c, err := net.DialTimeout("tcp", httpAddr, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the HTTP listener still accepts after Close")
	}
}

// A start that fails closes the HTTP listener it opened; one whose address is taken fails
// saying which setting.
func TestHTTPListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o := haOpts(t, storage.AsyncMaster)
	o.HTTP.Listen = ln.Addr().String()
	if n, err := Start(o); err == nil {
		n.Close()
		t.Fatal("Start on a taken HTTP address succeeded")
	} else if !strings.Contains(err.Error(), "HTTP.Listen") {
		t.Fatalf("error %q does not name HTTP.Listen", err)
	}
}

// A slave is ready only while it follows its master: /readyz turns 503 when the master
// stops, naming the master's HA address, and 200 again once the master is back on it.
func TestReadyzSlaveFollowsMaster(t *testing.T) {
	mo := haOpts(t, storage.SyncMaster)
	mo.Listen = freeAddr(t)
	mo.HA.Listen = freeAddr(t)
	mo.HTTP.Listen = "127.0.0.1:0"
	m, err := Start(mo)
	if err != nil {
		t.Fatal(err)
	}
	masterUp := true
	t.Cleanup(func() {
		if masterUp {
			m.Close()
		}
	})
	s := startSlave(t, m, func(o *Options) {
		o.HA.MasterAddr = mo.HA.Listen
		o.HTTP.Listen = "127.0.0.1:0"
	})
	ready := func(n *Node) func() bool {
		return func() bool { c, _ := probe(t, n.HTTPAddr(), "/readyz"); return c == http.StatusOK }
	}
	eventually(t, "the slave ready", ready(s))
	wantProbe(t, m.HTTPAddr(), "/readyz", http.StatusOK, "ready")

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	masterUp = false
	eventually(t, "the slave not ready without its master", func() bool { return !ready(s)() })
	wantProbe(t, s.HTTPAddr(), "/readyz", http.StatusServiceUnavailable,
		"not ready: slave not connected to its master at "+mo.HA.Listen)
	wantProbe(t, s.HTTPAddr(), "/healthz", http.StatusOK, "ok: serving")

	m, err = Start(mo)
	if err != nil {
		t.Fatal(err)
	}
	masterUp = true
	eventually(t, "the slave ready again with its master back", ready(s))
	wantProbe(t, m.HTTPAddr(), "/readyz", http.StatusOK, "ready")
}

// While a role change swaps the broker the node is not ready; once the new broker serves it is.
func TestReadyzDuringBrokerRestart(t *testing.T) {
	o := haOpts(t, storage.AsyncMaster)
	o.HTTP.Listen = "127.0.0.1:0"
	n := startNode(t, o)
	wantProbe(t, n.HTTPAddr(), "/readyz", http.StatusOK, "ready")
	swapped := false
	if err := n.RestartBroker(func(*broker.Options) {
		wantProbe(t, n.HTTPAddr(), "/readyz", http.StatusServiceUnavailable, "not ready: broker restarting for a role change")
		wantProbe(t, n.HTTPAddr(), "/healthz", http.StatusOK, "ok: serving")
		swapped = true
	}); err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the edit did not run")
	}
	wantProbe(t, n.HTTPAddr(), "/readyz", http.StatusOK, "ready")
}
