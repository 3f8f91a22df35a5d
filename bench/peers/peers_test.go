package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the child of split mode, as the command's binary is.
func TestMain(m *testing.M) {
	if child, err := ServeIfChild(); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestEveryCaseOnEveryPeer runs the whole matrix with a few messages: every peer must finish
// every case it offers with the counts asked for; only kfake may lack the in-process case and
// only NATS client batching.
func TestEveryCaseOnEveryPeer(t *testing.T) {
	cfg := Config{Msgs: 300, E2EMsgs: 50, StartRuns: 2, Dir: t.TempDir(), Timeout: time.Minute}
	runMatrix(t, Cases(), cfg)
}

// TestEveryCaseOnEveryPeerSplit is the matrix with each broker in a child process.
func TestEveryCaseOnEveryPeerSplit(t *testing.T) {
	cfg := Config{Msgs: 300, E2EMsgs: 50, Dir: t.TempDir(), Timeout: time.Minute, Split: true}
	runMatrix(t, SplitCases(), cfg)
}

func runMatrix(t *testing.T, cases []Case, cfg Config) {
	for _, c := range cases {
		for _, p := range All() {
			t.Run(c.ID+"/"+p.ID(), func(t *testing.T) {
				r := c.Run(context.Background(), p, cfg)
				if r.Peer != p.ID() || r.Case != c.ID {
					t.Fatalf("result names %s/%s", r.Peer, r.Case)
				}
				if r.Error != "" {
					t.Fatal(r.Error)
				}
				if r.Split != cfg.Split {
					t.Errorf("result says split %v, ran split %v", r.Split, cfg.Split)
				}
				if r.Skipped {
					if !(p.ID() == "kfake" && (c.ID == "sync-send-inproc" || c.ID == "consume-ack-tcp") || p.ID() == "nats" && c.ID == "async-send-batch-tcp" ||
						p.ID() == "mq-grpc" && (c.ID == "sync-send-inproc" || c.ID == "async-send-batch-tcp")) {
						t.Fatal("skipped")
					}
					return
				}
				if r.Durability == "" {
					t.Error("no durability stated")
				}
				switch {
				case c.ID == "node-start":
					if r.P50Micros <= 0 || r.P99Micros < r.P50Micros {
						t.Errorf("start p50 %v p99 %v", r.P50Micros, r.P99Micros)
					}
				case c.Latency:
					if r.Msgs != cfg.E2EMsgs || r.P50Micros <= 0 || r.P99Micros < r.P50Micros {
						t.Errorf("msgs %d p50 %v p99 %v", r.Msgs, r.P50Micros, r.P99Micros)
					}
				default:
					if r.Msgs != cfg.Msgs || r.MsgsPerSec <= 0 {
						t.Errorf("msgs %d rate %v", r.Msgs, r.MsgsPerSec)
					}
				}
			})
		}
	}
}

func TestSplitModeLeavesOutLocalCases(t *testing.T) {
	var local []string
	for _, c := range Cases() {
		if c.Local {
			local = append(local, c.ID)
		}
	}
	if strings.Join(local, ",") != "sync-send-inproc,node-start" {
		t.Fatalf("local cases %v", local)
	}
	if got, want := len(SplitCases()), len(Cases())-len(local); got != want {
		t.Fatalf("%d split cases, want %d", got, want)
	}
	r := Cases()[1].Run(context.Background(), MQ(), Config{Timeout: time.Minute, Split: true})
	if r.Error != errLocalCase.Error() || !r.Split {
		t.Fatalf("local case in split mode gave %+v", r)
	}
}

// TestChildServesUntilStdinCloses drives the child's side in this process: it must announce
// an address clients can use, keep serving while stdin is open, and stop when it closes.
func TestChildServesUntilStdinCloses(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	spec := fmt.Sprintf(`{"peer":"mq","dir":%q}`, t.TempDir())
	served := make(chan error, 1)
	go func() {
		served <- serveChild(spec, stdinR, stdoutW)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ready childReady
	if err := json.Unmarshal(line, &ready); err != nil || ready.Addr == "" {
		t.Fatalf("ready line %q: %v", line, err)
	}
	n, err := MQ().Connect(ready.Addr, NodeConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.Producer(ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), "child-test", payload(0)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		t.Fatalf("child stopped with stdin open: %v", err)
	default:
	}
	stdinW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestSplitChildFailureIsReported: a child that cannot serve must fail StartSplit with its
// reason, not leave the parent waiting.
func TestSplitChildFailureIsReported(t *testing.T) {
	_, err := StartSplit(context.Background(), unknownPeer{MQ()}, NodeConfig{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `unknown peer "unknown"`) {
		t.Fatalf("got %v", err)
	}
}

type unknownPeer struct{ Peer }

func (unknownPeer) ID() string { return "unknown" }

// TestInProcessNeedsLocalServer: a node whose server is elsewhere has no in-process producer.
func TestInProcessNeedsLocalServer(t *testing.T) {
	for _, p := range All() {
		addr := "127.0.0.1:1"
		if p.ID() == "mq-grpc" {
			addr += "|127.0.0.1:2" // its servers' addresses name both ports
		}
		n, err := p.Connect(addr, NodeConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Producer(ProducerConfig{InProcess: true}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: in-process producer without a local server: %v", p.ID(), err)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var r Result
	samples := make([]time.Duration, 0, 1000)
	for i := 1000; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Microsecond)
	}
	r.setLatency(samples)
	if r.P50Micros != 500 || r.P99Micros != 990 || r.P999Micros != 999 {
		t.Fatalf("p50 %v p99 %v p99.9 %v", r.P50Micros, r.P99Micros, r.P999Micros)
	}
}

func TestTableRatios(t *testing.T) {
	cases := []Case{{ID: "tp", Title: "throughput"}, {ID: "lat", Title: "latency", Latency: true}}
	results := []Result{
		{Peer: "nats", Case: "tp", MsgsPerSec: 20_000, P50Micros: 40, P99Micros: 1500},
		{Peer: "kfake", Case: "tp", Skipped: true},
		{Peer: "mq", Case: "tp", MsgsPerSec: 50_000},
		{Peer: "nats", Case: "lat", P50Micros: 200, P99Micros: 800},
		{Peer: "kfake", Case: "lat", Error: "boom"},
		{Peer: "mq", Case: "lat", P50Micros: 100, P99Micros: 1200},
	}
	var b strings.Builder
	if err := WriteTable(&b, cases, []Peer{NATS(), Kfake(), MQ()}, results); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| throughput | 20.0k/s, p50 40 µs, p99 1.50 ms | — | 50.0k/s | 2.50 |",
		"| latency | p50 200 µs, p99 800 µs | error (see its JSON line) | p50 100 µs, p99 1.20 ms | time: p50 0.50, p99 1.50 |",
	}
	for _, w := range want {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
}

// TestPayloadsDiffer guards the batches kgo compresses: a batch of equal bodies would shrink.
func TestPayloadsDiffer(t *testing.T) {
	seen := map[string]int{}
	for i := range 4000 {
		b := payload(i)
		if len(b) != BodyBytes || cap(b) != BodyBytes {
			t.Fatalf("payload %d: len %d cap %d", i, len(b), cap(b))
		}
		if j, ok := seen[string(b)]; ok {
			t.Fatalf("payloads %d and %d are equal", j, i)
		}
		seen[string(b)] = i
	}
}
