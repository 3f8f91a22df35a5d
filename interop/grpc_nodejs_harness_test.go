package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The helpers here let grpc_nodejs_test.go run the official RocketMQ 5.x Node.js SDK (npm
// rocketmq-client-nodejs, pinned by nodejs5/package-lock.json; .ci/run installs it with npm ci)
// against the mqnode binary's gRPC endpoint, each in a process of its own as users run them:
// the scripts in nodejs5/ print one JSON line per event and exit non-zero on any failure.

// nodeSDKDir holds the scripts and their node_modules.
const nodeSDKDir = "nodejs5"

// mqnodeBinEnv names a prebuilt mqnode to test instead of building this module's.
const mqnodeBinEnv = "MQ_INTEROP_MQNODE"

// nodeJS returns the node binary. Without one the tests skip, unless $CI is set: CI installs
// node (.ci/run) and must not pass by skipping.
func nodeJS(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("node is not installed (apt-get install nodejs npm, then npm ci in interop/%s): %v", nodeSDKDir, err)
		}
		t.Fatalf("CI is set and node is missing: .ci/run installs nodejs and npm: %v", err)
	}
	if _, err := os.Stat(filepath.Join(nodeSDKDir, "node_modules", "rocketmq-client-nodejs", "package.json")); err != nil {
		t.Fatalf("the Node.js SDK is not installed: run npm ci in interop/%s (.ci/run does): %v", nodeSDKDir, err)
	}
	return bin
}

// grpcNode is an mqnode binary in a child process with its gRPC endpoint on.
type grpcNode struct {
	addr     string // name server and broker
	grpcAddr string
	mqadmin  string
	logs     func() string
}

// startGRPCNode builds and starts mqnode with -grpc-listen on a free port and waits for its
// "mqnode started" line, which names the gRPC address (grpc_addr; a "serving" line with role
// grpc is read too). Transaction checks come every second, a half message is checked after
// one: the transaction test waits for them.
func startGRPCNode(t *testing.T) *grpcNode {
	t.Helper()
	bin := os.Getenv(mqnodeBinEnv)
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "mqnode")
		// Built in the library's own module: the gRPC endpoint's dependencies are in its go.sum,
		// not in this module's, which links the library without them.
		build := exec.Command("go", "build", "-o", bin, "./examples/mqnode")
		build.Dir = ".."
		out, err := build.CombinedOutput()
		if err != nil {
			t.Fatalf("go build mqnode: %v\n%s", err, out)
		}
	}
	n := &grpcNode{mqadmin: buildMqadmin(t)}
	args := []string{"-listen", "127.0.0.1:0", "-ha-listen", "127.0.0.1:0", "-grpc-listen", "127.0.0.1:0",
		"-store", t.TempDir(), "-transaction-timeout", "1s", "-transaction-check-interval", "1s"}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tail := &lineTail{}
	n.logs = tail.String
	lines := bufio.NewScanner(stderr)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	stuck := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	started := false
	for !started && lines.Scan() {
		tail.add(lines.Text())
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) != nil {
			continue
		}
		switch {
		case rec["message"] == "mqnode started":
			started = true
			n.addr, _ = rec["addr"].(string)
			if a, ok := rec["grpc_addr"].(string); ok && a != "" {
				n.grpcAddr = a
			}
		case rec["message"] == "serving" && rec["role"] == "grpc":
			n.grpcAddr, _ = rec["addr"].(string)
		}
	}
	stuck.Stop()
	done := make(chan error, 1)
	go func() {
		// Keep draining: a node blocked on a full stderr pipe would look like a hung node.
		for lines.Scan() {
			tail.add(lines.Text())
		}
		_, _ = io.Copy(io.Discard, stderr)
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mqnode exit: %v\n%s", err, tail.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("mqnode still running 30s after SIGINT\n%s", tail.String())
		}
	})
	if n.addr == "" || n.grpcAddr == "" {
		t.Fatalf("mqnode %v logged no address (addr %q, grpc %q):\n%s", args, n.addr, n.grpcAddr, tail.String())
	}
	return n
}

// topic creates topic on every broker of the cluster with RocketMQ 5's message.type attribute
// (NORMAL, FIFO, DELAY or TRANSACTION), which the 5.x SDKs see in QueryRoute's
// accept_message_types.
func (n *grpcNode) topic(t *testing.T, topic, messageType string) {
	t.Helper()
	n.admin(t, "updateTopic", "-n", n.addr, "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4",
		"-a", "+message.type="+messageType)
}

// orderlyGroup creates a consumer group that consumes in order (FIFO through POP).
func (n *grpcNode) orderlyGroup(t *testing.T, group string) {
	t.Helper()
	n.admin(t, "updateSubGroup", "-n", n.addr, "-c", "DefaultCluster", "-g", group, "-o", "true")
}

func (n *grpcNode) admin(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(n.mqadmin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mqadmin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// nodeEvent is one JSON line of a script.
type nodeEvent map[string]any

func (e nodeEvent) str(k string) string { s, _ := e[k].(string); return s }
func (e nodeEvent) num(k string) int64  { f, _ := e[k].(float64); return int64(f) }

// nodeScript is a running script of nodejs5/.
type nodeScript struct {
	t      *testing.T
	name   string
	stderr *lineTail
	mu     sync.Mutex
	events []nodeEvent
	more   chan struct{}
	done   chan struct{}
	err    error
}

// startScript runs nodejs5/<script>.js against the node's gRPC endpoint. The script bounds
// its own time (--timeout-ms, at most 120 s by default); it is killed 30 s after that.
func startScript(t *testing.T, n *grpcNode, script string, args ...string) *nodeScript {
	t.Helper()
	node := nodeJS(t)
	timeout := 120 * time.Second
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--timeout-ms" {
			if d, err := time.ParseDuration(args[i+1] + "ms"); err == nil {
				timeout = d
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(nodeSDKDir, script+".js"), "--endpoint", n.grpcAddr}, args...)...)
	s := &nodeScript{t: t, name: script + " " + strings.Join(args, " "), stderr: &lineTail{}, more: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = s.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		lines := bufio.NewScanner(stdout)
		lines.Buffer(make([]byte, 64<<10), 4<<20)
		for lines.Scan() {
			var e nodeEvent
			if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
				e = nodeEvent{"event": "unparsed", "line": lines.Text()}
			}
			s.mu.Lock()
			s.events = append(s.events, e)
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
		}
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// runScript runs a script to its end and returns its events; it fails the test unless the
// script exits 0.
func runScript(t *testing.T, n *grpcNode, script string, args ...string) []nodeEvent {
	t.Helper()
	return startScript(t, n, script, args...).wait(n)
}

// runScriptFailing runs a script that must fail and returns its error event.
func runScriptFailing(t *testing.T, n *grpcNode, script string, args ...string) nodeEvent {
	t.Helper()
	s := startScript(t, n, script, args...)
	<-s.done
	errs := eventsOf(s.snapshot(), "error")
	if s.err == nil || len(errs) != 1 {
		t.Fatalf("node %s: exit %v, want exit 1 with one error line\nstdout:\n%s\nstderr:\n%s", s.name, s.err, s.dump(), s.stderr.String())
	}
	return errs[0]
}

// causeCodes returns the codes in an error event's cause chain.
func causeCodes(e nodeEvent) []int64 {
	var out []int64
	causes, _ := e["causes"].([]any)
	for _, c := range causes {
		if m, ok := c.(map[string]any); ok {
			if f, ok := m["code"].(float64); ok {
				out = append(out, int64(f))
			}
		}
	}
	return out
}

// wait waits for the script's end and fails the test unless it exited 0.
func (s *nodeScript) wait(n *grpcNode) []nodeEvent {
	s.t.Helper()
	<-s.done
	if s.err != nil {
		s.t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s\nmqnode:\n%s", s.name, s.err, s.dump(), s.stderr.String(), n.logs())
	}
	return s.snapshot()
}

func (s *nodeScript) snapshot() []nodeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]nodeEvent(nil), s.events...)
}

func (s *nodeScript) dump() string {
	var b strings.Builder
	for _, e := range s.snapshot() {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// waitEvent waits until the script printed an event that cond accepts; it fails the test if
// the script ends first.
func (s *nodeScript) waitEvent(n *grpcNode, what string, cond func(nodeEvent) bool) nodeEvent {
	s.t.Helper()
	for {
		for _, e := range s.snapshot() {
			if cond(e) {
				return e
			}
		}
		select {
		case <-s.more:
		case <-s.done:
			for _, e := range s.snapshot() {
				if cond(e) {
					return e
				}
			}
			s.t.Fatalf("node %s ended (%v) before %s\nstdout:\n%s\nstderr:\n%s\nmqnode:\n%s", s.name, s.err, what, s.dump(), s.stderr.String(), n.logs())
		}
	}
}

// eventsOf returns the events named name, in order.
func eventsOf(events []nodeEvent, name string) []nodeEvent {
	var out []nodeEvent
	for _, e := range events {
		if e.str("event") == name {
			out = append(out, e)
		}
	}
	return out
}

// bodiesOf returns the body field of events.
func bodiesOf(events []nodeEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.str("body"))
	}
	return out
}

// lineTail keeps the last lines written to it, for failure messages.
type lineTail struct {
	mu    sync.Mutex
	lines []string
	part  bytes.Buffer
}

const lineTailMax = 200

func (l *lineTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if len(l.lines) > lineTailMax {
		l.lines = l.lines[len(l.lines)-lineTailMax:]
	}
}

func (l *lineTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.part.Write(p)
	var full []string
	for {
		i := bytes.IndexByte(l.part.Bytes(), '\n')
		if i < 0 {
			break
		}
		full = append(full, string(l.part.Next(i + 1)[:i]))
	}
	l.mu.Unlock()
	for _, line := range full {
		l.add(line)
	}
	return len(p), nil
}

func (l *lineTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n" + l.part.String()
}

// consumeAfterWarmUp starts consumer (a script that acks or consumes count+1 messages), sends
// one warm-up message with warm and the rest with rest once the consumer had the warm-up one,
// and returns the consumer's events. A new group's first POP through RocketMQ's proxy starts
// at the queue's last message (ConsumeInitMode.MAX): the warm-up message makes sure the group
// has its place in the queue before the messages under test are sent.
func consumeAfterWarmUp(t *testing.T, n *grpcNode, consumer *nodeScript, consumedEvent string, warm, rest func()) []nodeEvent {
	t.Helper()
	consumer.waitEvent(n, "the consumer's start", func(e nodeEvent) bool { return e.str("event") == "started" })
	warm()
	consumer.waitEvent(n, "the warm-up message", func(e nodeEvent) bool {
		return e.str("event") == consumedEvent && strings.HasPrefix(e.str("body"), "warm")
	})
	rest()
	return consumer.wait(n)
}

// withoutWarmUp drops the warm-up messages' events.
func withoutWarmUp(events []nodeEvent) []nodeEvent {
	var out []nodeEvent
	for _, e := range events {
		if !strings.HasPrefix(e.str("body"), "warm") {
			out = append(out, e)
		}
	}
	return out
}

func wantBodies(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: bodies %q, want %q", what, got, want)
	}
}

func seqBodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// sortedBodies returns the bodies of events in sorted order (deliveries of a normal topic's
// queues interleave).
func sortedBodies(events []nodeEvent) []string {
	b := bodiesOf(events)
	slices.Sort(b)
	return b
}
