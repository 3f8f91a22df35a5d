package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"
)

// Split mode runs a node's Server in a child process and its clients in this one, as real
// deployments do. Within one process the Go runtime can run both ends of a loopback round trip
// on one thread, which favours brokers on Go's netpoller (nats-server, kfake) over one with
// its own event-loop threads (mq's gnet): measured here, an echo on the netpoller answers in
// about 16 µs in-process and 50-60 µs across processes, one on gnet in 37 µs and 31 µs.
//
// The child is this same executable, told by childEnv what to serve. It prints one
// childReady line on stdout and serves until its stdin closes, which also happens when the
// parent dies, so no child outlives its parent.

// childEnv names the environment variable that makes a process a split-mode child; its
// value is a JSON childSpec.
const childEnv = "MQ_BENCH_PEERS_SERVE"

const (
	// childStopTimeout bounds how long a child may take to close its server once told to;
	// then it is killed.
	childStopTimeout = 30 * time.Second
	// childStartTimeout bounds how long a child may take to report its address.
	childStartTimeout = time.Minute
)

type childSpec struct {
	Peer    string `json:"peer"`
	Dir     string `json:"dir"`
	Durable bool   `json:"durable"`
}

// childReady is the child's one line on stdout: the server's address, or why it has none.
type childReady struct {
	Addr  string `json:"addr,omitempty"`
	Error string `json:"error,omitempty"`
}

// ServeIfChild serves as a split-mode child when this process was started as one, and
// reports whether it was. A child returns once its stdin closes and its server stopped; the
// caller should then exit, with a failure if err is not nil. Every main that benchmarks in
// split mode (the command, the package's TestMain) calls it before anything else.
func ServeIfChild() (child bool, err error) {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return false, nil
	}
	return true, serveChild(v, os.Stdin, os.Stdout)
}

// ChildCPUProfileEnv names a directory where each split-mode child writes a CPU profile of
// its whole life (<peer>-<pid>.pprof), so that a broker can be profiled as it serves a case
// (run one case at a time to tell them apart).
const ChildCPUProfileEnv = "MQ_BENCH_CHILD_CPUPROFILE"

func serveChild(specJSON string, stdin io.Reader, stdout io.Writer) (err error) {
	if dir := os.Getenv(ChildCPUProfileEnv); dir != "" {
		stop, perr := startChildProfile(dir, specJSON)
		if perr != nil {
			return perr
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	s, err := startChildServer(specJSON)
	if err != nil {
		// The parent is waiting for this line; without it, it would only see an exit.
		return errors.Join(err, json.NewEncoder(stdout).Encode(childReady{Error: err.Error()}))
	}
	if err := json.NewEncoder(stdout).Encode(childReady{Addr: s.Addr()}); err != nil {
		return errors.Join(err, s.Close())
	}
	// Nothing is ever written to stdin: this returns when the parent closes it or dies.
	_, err = io.Copy(io.Discard, stdin)
	return errors.Join(err, s.Close())
}

func startChildServer(specJSON string) (Server, error) {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", childEnv, err)
	}
	all := All()
	i := slices.IndexFunc(all, func(p Peer) bool { return p.ID() == spec.Peer })
	if i < 0 {
		return nil, fmt.Errorf("%s: unknown peer %q", childEnv, spec.Peer)
	}
	return all[i].Serve(NodeConfig{Dir: spec.Dir, Durable: spec.Durable})
}

// StartSplit starts a node with its Server in a child process and its clients in this one;
// closing the Node stops the child. The node has no in-process connections.
func StartSplit(ctx context.Context, p Peer, cfg NodeConfig) (Node, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(childSpec{Peer: p.ID(), Dir: cfg.Dir, Durable: cfg.Durable})
	if err != nil {
		return nil, err
	}
	c, err := startChild(ctx, exe, string(spec))
	if err != nil {
		return nil, fmt.Errorf("%s child: %w", p.ID(), err)
	}
	n, err := p.Connect(c.addr, cfg, nil)
	if err != nil {
		return nil, errors.Join(err, c.stop())
	}
	return &splitNode{Node: n, child: c}, nil
}

type splitNode struct {
	Node
	child *child
}

func (n *splitNode) Close() error { return errors.Join(n.Node.Close(), n.child.stop()) }

func (n *splitNode) client() Node { return n.Node }

type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
	// exited is closed once the child exited, with err set to what Wait returned.
	exited chan struct{}
	err    error
}

// startChild runs exe as a child serving spec and waits for its address.
func startChild(ctx context.Context, exe, spec string) (*child, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	// The child's logs and panics belong with this process's.
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own rather than StdoutPipe: its reader may outlive Wait.
	out, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = outW
	err = cmd.Start()
	outW.Close()
	if err != nil {
		out.Close()
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	ready := make(chan childReady, 1)
	go readChildOutput(out, ready)
	ctx, cancel := context.WithTimeout(ctx, childStartTimeout)
	defer cancel()
	select {
	case r := <-ready:
		if r.Error != "" {
			return nil, errors.Join(errors.New(r.Error), c.stop())
		}
		c.addr = r.Addr
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("exited before serving: %v", c.err)
	case <-ctx.Done():
		return nil, errors.Join(fmt.Errorf("no address: %w", ctx.Err()), c.stop())
	}
}

// readChildOutput sends the child's ready line, then passes on whatever else the child
// writes, so that it never blocks on a full pipe. A child that ends without a ready line
// sends nothing: its exit reports it.
func readChildOutput(out *os.File, ready chan<- childReady) {
	defer out.Close()
	r := bufio.NewReader(out)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var cr childReady
	if err := json.Unmarshal(line, &cr); err != nil {
		cr.Error = fmt.Sprintf("ready line %q: %v", line, err)
	}
	ready <- cr
	_, _ = io.Copy(os.Stderr, r)
}

// stop closes the child's stdin, which tells it to close its server and exit, and kills it
// if it has not within childStopTimeout.
func (c *child) stop() error {
	c.stdin.Close()
	t := time.NewTimer(childStopTimeout)
	defer t.Stop()
	select {
	case <-c.exited:
		return c.err
	case <-t.C:
		err := c.cmd.Process.Kill()
		<-c.exited
		return errors.Join(fmt.Errorf("child did not stop within %v, killed", childStopTimeout), err)
	}
}

// startChildProfile starts the CPU profile ChildCPUProfileEnv asks for; stop ends and writes it.
func startChildProfile(dir, specJSON string) (stop func() error, err error) {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", childEnv, err)
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", spec.Peer, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
