package mq_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mqgo/mq"
	"github.com/rs/zerolog"
)

// embedModules are the modules `import "github.com/mqgo/mq"` may link, each with why. The
// controller (hashicorp/raft and its log store) and the Prometheus client are left out: an
// application links them by importing github.com/mqgo/mq/controller or /metrics.
var embedModules = map[string]string{
	"github.com/mqgo/mq":               "this module",
	"github.com/panjf2000/gnet/v2":     "the event-loop TCP server under remoting (a design dependency)",
	"github.com/panjf2000/ants/v2":     "gnet's goroutine pool",
	"go.uber.org/zap":                  "gnet's logger",
	"go.uber.org/multierr":             "zap's and gnet's error joining",
	"gopkg.in/natefinch/lumberjack.v2": "gnet's rolling log file",
	"github.com/rs/zerolog":            "structured logs (a design dependency)",
	"github.com/mattn/go-colorable":    "zerolog's console writer",
	"github.com/mattn/go-isatty":       "go-colorable's terminal check",
	"github.com/edsrzf/mmap-go":        "the CommitLog and ConsumeQueue mappings (a design dependency)",
	"golang.org/x/sync":                "errgroup (a design dependency; ants uses it too)",
	"golang.org/x/sys":                 "gnet's epoll/kqueue and mmap-go's system calls",
	"go.yaml.in/yaml/v3":               "RocketMQ's plain_acl.yml ACL files (package acl)",
}

// TestEmbedPullsOnlyAllowedModules lists the modules the root package links, as an
// application that embeds a node sees them, and fails on one outside embedModules: a new
// import that drags a dependency tree into every embedder must be a decision, not an accident.
func TestEmbedPullsOnlyAllowedModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "github.com/mqgo/mq").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var got []string
	for _, m := range strings.Fields(string(out)) {
		if !slices.Contains(got, m) {
			got = append(got, m)
		}
	}
	if !slices.Contains(got, "github.com/mqgo/mq") || !slices.Contains(got, "github.com/panjf2000/gnet/v2") {
		t.Fatalf("go list named neither this module nor gnet; it printed:\n%s", out)
	}
	for _, m := range got {
		if _, ok := embedModules[m]; !ok {
			t.Errorf("import \"github.com/mqgo/mq\" links module %s, not in embedModules: move what needs it "+
				"behind an optional package (as controller/ and metrics/ are), or add it with its reason", m)
		}
	}
	t.Logf("the root package links %d modules", len(got))
}

// A node given ControllerID without Options.Controller refuses to start, naming the package
// that provides one, instead of running without the controller its peers expect.
func TestEmbedControllerNeedsImplementation(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), Logger: &l,
		ControllerID: "n0", ControllerPeers: map[string]string{"n0": "127.0.0.1:1"}, ControllerRaftListen: "127.0.0.1:1"})
	if err == nil {
		n.Close()
		t.Fatal("StartNode with ControllerID and no Controller succeeded")
	}
	if !strings.Contains(err.Error(), "github.com/mqgo/mq/controller") {
		t.Fatalf("error %q does not name the package to import", err)
	}
}

// Without Options.Metrics, /metrics answers 404 saying how to turn it on, while /healthz and
// the dashboard still serve.
func TestMetricsOffWithoutOption(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	web := httptest.NewServer(n.Handler())
	t.Cleanup(web.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != http.StatusNotFound || !strings.Contains(body, "github.com/mqgo/mq/metrics") {
		t.Fatalf("/metrics without Options.Metrics: %d %q; want 404 naming the package to import", code, body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(strings.ToLower(body), "<html") {
		t.Fatalf("dashboard: %d, %d bytes", code, len(body))
	}
}
