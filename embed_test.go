package mq_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/optional"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// embedModules are the modules `import "github.com/mqgo/mq"` may link, each with why: the
// design's required dependencies and what they bring. The controller (hashicorp/raft and its
// log store), the Prometheus client and the YAML parser of plain_acl.yml are left out: an
// application links them by importing github.com/mqgo/mq/controller, /metrics or /aclfile.
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

// A node given Controller.ID without Options.Controller.Impl refuses to start, naming the package
// that provides one, instead of running without the controller its peers expect.
func TestEmbedControllerNeedsImplementation(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{
		Listen: "127.0.0.1:0",
		Logger: &l,
		Store:  config.Store{Dir: t.TempDir()},
		Controller: config.Controller{
			ID:         "n0",
			Peers:      map[string]string{"n0": "127.0.0.1:1"},
			RaftListen: "127.0.0.1:1",
		},
	})
	if err == nil {
		n.Close()
		t.Fatal("StartNode with ControllerID and no Controller succeeded")
	}
	if !strings.Contains(err.Error(), "github.com/mqgo/mq/controller") {
		t.Fatalf("error %q does not name the package to import", err)
	}
}

// Without Options.HTTP.Metrics, /metrics answers 404 saying how to turn it on, while /healthz and
// the dashboard still serve.
func TestMetricsOffWithoutOption(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()}})
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
		t.Fatalf("/metrics without Options.HTTP.Metrics: %d %q; want 404 naming the package to import", code, body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok: serving\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(strings.ToLower(body), "<html") {
		t.Fatalf("dashboard: %d, %d bytes", code, len(body))
	}
}

// The YAML reader is an optional part: a node given an ACL file through aclfile.Watch loads it
// and reloads it when it changes, and a path that reached Options.Security.ACLFile any other way (a
// value the application built itself) is refused, naming the package that reads such files,
// as are an ACL given twice and a file that is missing.
func TestEmbedACLFileNeedsPackage(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	write := func(admin string) {
		t.Helper()
		yml := "accounts:\n  - accessKey: " + admin + "\n    secretKey: " + secAdmin.SecretKey + "\n    admin: true\n"
		if err := os.WriteFile(path+".tmp", []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(secAdmin.AccessKey)
	for name, o := range map[string]mq.Options{
		"a path without the package": {Security: config.Security{ACLFile: optional.NewACLFile(path)}},
		"ACL and ACLFile":            {Security: config.Security{ACLFile: aclfile.Watch(path), ACL: &mq.ACLConfig{}}},
		"a missing file":             {Security: config.Security{ACLFile: aclfile.Watch(filepath.Join(dir, "missing.yml"))}},
	} {
		o.Listen, o.Store.Dir, o.Logger = "127.0.0.1:0", t.TempDir(), &l
		n, err := mq.StartNode(o)
		if err == nil {
			n.Close()
			t.Fatalf("%s: StartNode succeeded", name)
		}
		if name == "a path without the package" && !strings.Contains(err.Error(), "github.com/mqgo/mq/aclfile") {
			t.Fatalf("%s: error %q does not name the package to import", name, err)
		}
		t.Logf("%s: %v", name, err)
	}

	n, err := mq.StartNode(mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		HA:       config.HA{Listen: "127.0.0.1:0"},
		Security: config.Security{ACLFile: aclfile.Watch(path), ACLWatchInterval: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if resp := adminRequest(t, n, nil, secAdmin, createTopicRequest("embed-acl-a")); resp.Code != remoting.Success {
		t.Fatalf("admin from the file: code %d %q", resp.Code, resp.Remark)
	}
	if resp := adminRequest(t, n, nil, secRW, createTopicRequest("embed-acl-b")); resp.Code != remoting.NoPermission {
		t.Fatalf("account not in the file: code %d %q", resp.Code, resp.Remark)
	}
	write("someone-else")
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := adminRequest(t, n, nil, secAdmin, createTopicRequest("embed-acl-c"))
		if resp.Code == remoting.NoPermission {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin removed from the file still creates topics: code %d", resp.Code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
