package controller

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

const (
	testSecret      = "raft-test-cluster-secret"
	testOtherSecret = "another-cluster-secret!!"
)

// logLines collects a logger's output, one JSON object a line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// matching returns the lines that contain every one of parts.
func (l *logLines) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
lines:
	for _, line := range strings.Split(l.buf.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue lines
			}
		}
		out = append(out, line)
	}
	return out
}

// newTestStream starts an authStream on a loopback port; tune changes its limits before it
// accepts anything.
func newTestStream(t *testing.T, secret string, tune ...func(*authStream)) (*authStream, *logLines) {
	t.Helper()
	logs := &logLines{}
	s, err := newAuthStream(raftNet{}, "127.0.0.1:0", nil, []byte(secret), zerolog.New(logs).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tune {
		f(s)
	}
	s.start()
	t.Cleanup(func() { s.Close() })
	return s, logs
}

// goroutineIDs returns the ids of the goroutines running now.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for _, m := range goroutineHeader.FindAllStringSubmatch(allStacks(), -1) {
		ids[m[1]] = true
	}
	return ids
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine (\d+) \[`)

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// checkNoGoroutinesSince fails the test if goroutines started after before are still running
// once they had waitFor to end.
func checkNoGoroutinesSince(t *testing.T, before map[string]bool) {
	t.Helper()
	var left []string
	poll := func() bool {
		left = left[:0]
		for _, stack := range strings.Split(allStacks(), "\n\n") {
			if m := goroutineHeader.FindStringSubmatch(stack); m != nil && !before[m[1]] {
				left = append(left, stack)
			}
		}
		return len(left) == 0
	}
	deadline := time.Now().Add(waitFor)
	for !poll() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines outlived Close:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveRPCs answers every RPC trans receives with success until stop is closed, and reports
// what each InstallSnapshot streamed: its size and SHA-256.
func serveRPCs(trans *raft.NetworkTransport, stop <-chan struct{}, snapshots chan<- [sha256.Size]byte) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case rpc := <-trans.Consumer():
				switch req := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
				case *raft.InstallSnapshotRequest:
					h := sha256.New()
					_, err := io.Copy(h, rpc.Reader)
					rpc.Respond(&raft.InstallSnapshotResponse{Term: req.Term, Success: err == nil}, err)
					snapshots <- [sha256.Size]byte(h.Sum(nil))
				default:
					rpc.Respond(nil, fmt.Errorf("unexpected %T", req))
				}
			}
		}
	})
	return &wg
}

// TestAuthStreamCarriesRaft: two transports on streams with the same secret exchange an
// AppendEntries and a 4 MiB InstallSnapshot, which streams over an authenticated connection
// like every other RPC; closing them leaves no goroutine behind, Raft's connection handlers
// included.
func TestAuthStreamCarriesRaft(t *testing.T) {
	before := goroutineIDs()
	a, aLogs := newTestStream(t, testSecret)
	b, bLogs := newTestStream(t, testSecret)
	ta := raft.NewNetworkTransportWithLogger(a, 2, 10*time.Second, hclog.NewNullLogger())
	tb := raft.NewNetworkTransportWithLogger(b, 2, 10*time.Second, hclog.NewNullLogger())
	stop := make(chan struct{})
	snapshots := make(chan [sha256.Size]byte, 1)
	served := serveRPCs(tb, stop, snapshots)
	target := raft.ServerAddress(b.Addr().String())

	var ae raft.AppendEntriesResponse
	if err := ta.AppendEntries("b", target, &raft.AppendEntriesRequest{Term: 3}, &ae); err != nil || !ae.Success || ae.Term != 3 {
		t.Fatalf("AppendEntries: %+v, %v", ae, err)
	}
	data := make([]byte, 4<<20)
	rand.Read(data)
	var is raft.InstallSnapshotResponse
	err := ta.InstallSnapshot("b", target, &raft.InstallSnapshotRequest{Term: 3, Size: int64(len(data))}, &is, bytes.NewReader(data))
	if err != nil || !is.Success {
		t.Fatalf("InstallSnapshot: %+v, %v", is, err)
	}
	if got := <-snapshots; got != sha256.Sum256(data) {
		t.Fatal("the snapshot arrived changed")
	}
	// A connection left in ta's pool, which NetworkTransport.Close does not close: the
	// streams' Close must, or tb's handler of it would wait on it for ever.
	if err := ta.AppendEntries("b", target, &raft.AppendEntriesRequest{Term: 4}, &ae); err != nil || !ae.Success {
		t.Fatalf("AppendEntries: %+v, %v", ae, err)
	}

	close(stop)
	served.Wait()
	for _, tr := range []*raft.NetworkTransport{ta, tb} {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checkNoGoroutinesSince(t, before)
	for _, l := range []*logLines{aLogs, bLogs} {
		if got := l.matching(`"level"`); len(got) > 0 {
			t.Errorf("honest peers logged %q", got)
		}
	}
}

// TestAuthStreamRefusesStrangers: a Raft transport without the handshake, a peer with another
// secret and a stranger speaking something else are refused before Raft reads a byte, each with
// a warning naming the peer and why; a dialer refuses a listener that cannot prove the secret.
func TestAuthStreamRefusesStrangers(t *testing.T) {
	noLimit := func(s *authStream) { s.refused.period = 0 }
	victim, logs := newTestStream(t, testSecret, noLimit)
	vt := raft.NewNetworkTransportWithLogger(victim, 2, 10*time.Second, hclog.NewNullLogger())
	stop := make(chan struct{})
	var reached sync.WaitGroup
	reached.Go(func() {
		for {
			select {
			case <-stop:
				return
			case rpc := <-vt.Consumer():
				t.Errorf("an unauthenticated %T reached Raft", rpc.Command)
				rpc.Respond(nil, errors.New("refused by the test"))
			}
		}
	})
	defer func() {
		close(stop)
		reached.Wait()
		vt.Close()
	}()
	target := raft.ServerAddress(victim.Addr().String())

	plain, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var resp raft.AppendEntriesResponse
	if err := plain.AppendEntries("v", target, &raft.AppendEntriesRequest{Term: 99}, &resp); err == nil {
		t.Fatal("an AppendEntries without the handshake was answered")
	}
	waitLog(t, logs, "raft peer refused", "without the handshake")

	wrong, _ := newTestStream(t, testOtherSecret)
	if _, err := wrong.Dial(target, 5*time.Second); err == nil {
		t.Fatal("a peer with another secret was accepted")
	}
	waitLog(t, logs, "raft peer refused", "wrong proof: the peer does not know the cluster secret")

	stranger, err := net.Dial("tcp", string(target))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	stranger.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	io.Copy(io.Discard, stranger) // until the victim hangs up (a reset: it left bytes unread)
	waitLog(t, logs, "raft peer refused", `"addr":"`+stranger.LocalAddr().String()+`"`, `the peer sent \"GET / HT\"`)

	// An impostor at a peer's address that answers with a proof it made up.
	impostor, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	go func() {
		c, err := impostor.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		hello := make([]byte, len(raftMagic)+raftNonceBytes)
		if _, err := io.ReadFull(c, hello); err != nil {
			return
		}
		c.Write(append([]byte(raftMagic), make([]byte, raftNonceBytes)...))
		io.ReadFull(c, make([]byte, raftProofBytes))
		guess := make([]byte, raftProofBytes)
		rand.Read(guess)
		c.Write(guess)
		io.Copy(io.Discard, c)
	}()
	if _, err := victim.Dial(raft.ServerAddress(impostor.Addr().String()), 5*time.Second); err == nil ||
		!strings.Contains(err.Error(), "wrong proof from the peer") {
		t.Fatalf("dialing an impostor: %v, want a wrong proof", err)
	}
}

// waitLog waits for a log line with every one of parts.
func waitLog(t *testing.T, logs *logLines, parts ...string) {
	t.Helper()
	poll(t, fmt.Sprintf("log line with %q", parts), func() bool { return len(logs.matching(parts...)) > 0 })
}

// TestAuthStreamSilentConnections: connections that never finish the handshake hold no one up:
// honest peers connect past them, those over the bounds are closed at once, and the bounds
// free up when they go.
func TestAuthStreamSilentConnections(t *testing.T) {
	const maxShakes = 4
	victim, _ := newTestStream(t, testSecret, func(s *authStream) {
		s.timeout = time.Hour // silent connections stay until the test closes them
		s.maxShakes = maxShakes
		s.maxPerHost = maxShakes - 1
	})
	peer, _ := newTestStream(t, testSecret)
	target := raft.ServerAddress(victim.Addr().String())
	dialFrom := func(ip string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", string(target))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	honest := func(ip string) error {
		c := dialFrom(ip)
		defer c.Close()
		return dialerHandshake(c, []byte(testSecret), waitFor)
	}
	closedAtOnce := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(waitFor))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}

	silent := []net.Conn{dialFrom("127.0.0.1")}
	silent[0].Write([]byte(raftMagic)) // half a hello, then nothing
	if c, err := peer.Dial(target, 5*time.Second); err != nil {
		t.Fatalf("an honest peer behind a silent connection: %v", err)
	} else {
		c.Close()
	}

	// One host may hold maxShakes-1 handshakes; its next connection is closed at once.
	for len(silent) < maxShakes-1 {
		silent = append(silent, dialFrom("127.0.0.1"))
	}
	poll(t, "handshakes in progress", func() bool {
		victim.mu.Lock()
		defer victim.mu.Unlock()
		return victim.shaking == maxShakes-1
	})
	if !closedAtOnce(dialFrom("127.0.0.1")) {
		t.Fatal("a connection over the per-host bound was kept")
	}
	// Another host still gets in, up to the bound on all handshakes.
	if err := honest("127.0.0.2"); err != nil {
		t.Fatalf("a peer on another host: %v", err)
	}
	silent = append(silent, dialFrom("127.0.0.2"))
	poll(t, "every handshake slot taken", func() bool {
		victim.mu.Lock()
		defer victim.mu.Unlock()
		return victim.shaking == maxShakes
	})
	if !closedAtOnce(dialFrom("127.0.0.3")) {
		t.Fatal("a connection over the bound on all handshakes was kept")
	}
	if _, err := peer.Dial(target, 5*time.Second); err == nil {
		t.Fatal("an honest dial got a handshake slot that was not free")
	}

	// The strangers leave: their slots are free again.
	for _, c := range silent {
		c.Close()
	}
	poll(t, "an honest peer admitted once the strangers left", func() bool {
		c, err := peer.Dial(target, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// TestAuthStreamRefusalLogIsBounded: a flood of strangers costs one warning per period, and the
// next one counts those not logged.
func TestAuthStreamRefusalLogIsBounded(t *testing.T) {
	victim, logs := newTestStream(t, testSecret, func(s *authStream) { s.refused.period = time.Hour })
	const flood = 20
	for range flood {
		c, err := net.Dial("tcp", victim.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}) // an AppendEntries, in short
		io.Copy(io.Discard, c)
		c.Close()
	}
	poll(t, "every refusal counted", func() bool {
		victim.refused.mu.Lock()
		defer victim.refused.mu.Unlock()
		return victim.refused.suppressed == flood-1
	})
	if got := logs.matching("raft peer refused"); len(got) != 1 {
		t.Fatalf("%d warnings for %d refused connections, want 1:\n%s", len(got), flood, strings.Join(got, "\n"))
	}
	victim.refused.mu.Lock()
	victim.refused.last = time.Time{} // the period is over
	victim.refused.mu.Unlock()
	victim.refused.warn("192.0.2.1:1", errHandshake)
	if got := logs.matching("raft peer refused", `"refused_unlogged":19`); len(got) != 1 {
		t.Fatalf("the warning after the period does not count the %d refusals not logged: %q", flood-1, logs.matching("raft peer refused"))
	}
}

func TestAuthStreamOptions(t *testing.T) {
	_, err := New(Options{ID: "n0", Peers: map[string]string{"n0": "127.0.0.1:1"}, RaftListen: "127.0.0.1:0", Secret: "short"})
	if err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("a 5-byte secret: %v", err)
	}
	if _, err := newAuthStream(raftNet{}, "127.0.0.1:0", &net.TCPAddr{IP: net.IPv4zero, Port: 1}, []byte(testSecret), zerolog.Nop()); err == nil {
		t.Fatal("an unspecified advertised address was accepted")
	}
}
