package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The binary starts on a free port, logs where it listens, and exits 0 on SIGINT and SIGTERM;
// the second run also serves -http, whose /metrics, /healthz and /readyz answer. Every line is
// a JSON object with unique keys and a millisecond timestamp.
func TestBinaryStartsAndStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildMqnode(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		args := []string{"-listen", "127.0.0.1:0", "-store", t.TempDir()}
		web := sig == syscall.SIGTERM
		if web {
			args = append(args, "-http", "127.0.0.1:0")
		}
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stderr)
		var addr string
		for addr == "" && lines.Scan() {
			var rec map[string]any
			if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
				t.Fatalf("log line is not JSON: %q", lines.Text())
			}
			if err := checkLogLine(lines.Text()); err != nil {
				cmd.Process.Kill()
				t.Fatal(err)
			}
			if rec["message"] == "mqnode started" {
				addr, _ = rec["addr"].(string)
				// Where each part listens: name service, broker, and the master's HA port.
				for _, k := range []string{"namesrv_addr", "broker_addr", "ha_addr"} {
					if v, _ := rec[k].(string); v == "" || strings.HasSuffix(v, ":0") {
						cmd.Process.Kill()
						t.Fatalf("started line without a bound %s: %v", k, rec)
					}
				}
				if web {
					checkHTTP(t, cmd, rec)
				}
			}
		}
		if addr == "" || strings.HasSuffix(addr, ":0") {
			cmd.Process.Kill()
			t.Fatalf("no listen address logged (got %q)", addr)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		// The shutdown's lines too: their order is what milliseconds are for.
		bad := make(chan error, 1)
		go func() {
			var first error
			for lines.Scan() {
				if err := checkLogLine(lines.Text()); err != nil && first == nil {
					first = err
				}
			}
			bad <- first
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after %v: %v", sig, err)
			}
			if err := <-bad; err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("still running 30 s after %v", sig)
		}
	}
}

// checkHTTP fetches the dashboard, /metrics and /healthz the started line names.
func checkHTTP(t *testing.T, cmd *exec.Cmd, rec map[string]any) {
	t.Helper()
	dash, _ := rec["dashboard"].(string)
	metrics, _ := rec["metrics"].(string)
	if !strings.HasPrefix(dash, "http://127.0.0.1:") || strings.Contains(dash, ":0/") || metrics != dash+"metrics" {
		cmd.Process.Kill()
		t.Fatalf("started line names dashboard %q and metrics %q", dash, metrics)
	}
	if ready, _ := rec["readyz"].(string); ready != dash+"readyz" {
		cmd.Process.Kill()
		t.Fatalf("started line names readyz %q", ready)
	}
	for url, want := range map[string]string{metrics: "rocketmq_topic_number", dash + "healthz": "ok",
		dash + "readyz": "ready", dash: "<html"} {
		resp, err := http.Get(url)
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			cmd.Process.Kill()
			t.Fatalf("GET %s: %s, body without %q", url, resp.Status, want)
		}
	}
}

// logTime is the timestamp mqnode writes: RFC 3339 with milliseconds, in UTC or an offset.
var logTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`)

// checkLogLine fails a line that is not a JSON object, repeats a key (strict ingesters refuse
// it) or has no millisecond timestamp.
func checkLogLine(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("log line is not a JSON object: %q", line)
	}
	seen := map[string]bool{}
	var ts string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("log line %q: %v", line, err)
		}
		k := tok.(string)
		if seen[k] {
			return fmt.Errorf("log line repeats key %q: %s", k, line)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("log line %q: %v", line, err)
		}
		if k == "time" {
			_ = json.Unmarshal(v, &ts)
		}
	}
	if !logTime.MatchString(ts) {
		return fmt.Errorf("log line's time %q is not RFC 3339 with milliseconds: %s", ts, line)
	}
	return nil
}

// mqnodeBin is the binary the tests run, built once per test binary run: a build links for
// seconds, and most tests here need one.
var mqnodeBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildMqnode builds the binary into a temporary directory (the first call) that TestMain
// removes, and returns its path.
func buildMqnode(t *testing.T) string {
	t.Helper()
	mqnodeBin.once.Do(func() {
		mqnodeBin.dir, mqnodeBin.err = os.MkdirTemp("", "mqnode-test-")
		if mqnodeBin.err != nil {
			return
		}
		mqnodeBin.path = filepath.Join(mqnodeBin.dir, "mqnode")
		build := exec.Command("go", "build", "-o", mqnodeBin.path, ".")
		build.Stderr = os.Stderr
		mqnodeBin.err = build.Run()
	})
	if mqnodeBin.err != nil {
		t.Fatalf("build: %v", mqnodeBin.err)
	}
	return mqnodeBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mqnodeBin.dir != "" {
		os.RemoveAll(mqnodeBin.dir)
	}
	os.Exit(code)
}
