package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The binary starts on a free port, logs where it listens, and exits 0 on SIGINT and SIGTERM;
// the second run also serves -http, whose /metrics and /healthz answer.
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
		go func() {
			for lines.Scan() {
			}
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after %v: %v", sig, err)
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
	for url, want := range map[string]string{metrics: "rocketmq_topic_number", dash + "healthz": "ok", dash: "<html"} {
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

// buildMqnode builds the binary into a temporary directory of the test.
func buildMqnode(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mqnode")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build: %v", err)
	}
	return bin
}
