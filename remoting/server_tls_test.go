package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"
)

// tlsNode serves an echo processor with TLS in the given mode.
func tlsNode(t *testing.T, mode TLSMode, opts ServerOptions) (*testNode, *tls.Config) {
	t.Helper()
	certs := testCerts(t)
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 2, 64))
	opts.TLSMode, opts.TLSConfig = mode, certs.Server()
	return startNode(t, d, opts), certs.Client()
}

func tlsEcho(t *testing.T, c *Client, addr string) (*Command, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.InvokeSync(ctx, addr, NewRequest(SendMessage, map[string]string{"k": "v"}, []byte("body")))
}

// expectClosed reads from c until the server closes it; a timeout means it was left open.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: connection left open", what)
		}
		return
	}
}

// Enforcing mode serves TLS and closes plaintext connections at their first byte, without
// disturbing the TLS ones.
func TestTLSEnforcingRefusesPlaintext(t *testing.T) {
	n, clientTLS := tlsNode(t, TLSEnforcing, ServerOptions{})
	secure := NewClient(ClientOptions{TLSConfig: clientTLS})
	defer secure.Close()
	if resp, err := tlsEcho(t, secure, n.addr); err != nil || string(resp.Body) != "body" {
		t.Fatalf("TLS request: %v %+v", err, resp)
	}
	plain := NewClient(ClientOptions{})
	defer plain.Close()
	if _, err := tlsEcho(t, plain, n.addr); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("plaintext request under enforcing: %v, want the connection closed", err)
	}
	raw, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(AppendFrame(nil, NewRequest(SendMessage, nil, nil))); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, raw, "plaintext frame under enforcing")
	if resp, err := tlsEcho(t, secure, n.addr); err != nil || string(resp.Body) != "body" {
		t.Fatalf("the TLS connection suffered: %v %+v", err, resp)
	}
}

// A server without TLS takes a handshake for a malformed frame; a client that does not trust
// the server's certificate never sends a request.
func TestTLSClientAgainstPlainServerAndUntrustedCert(t *testing.T) {
	certs := testCerts(t)
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 1, 8))
	plainNode := startNode(t, d, ServerOptions{})
	c := NewClient(ClientOptions{TLSConfig: certs.Client(), DialTimeout: 5 * time.Second})
	defer c.Close()
	if _, err := tlsEcho(t, c, plainNode.addr); err == nil {
		t.Fatal("TLS client got an answer from a plaintext-only server")
	}

	n, _ := tlsNode(t, TLSPermissive, ServerOptions{})
	stranger := NewClient(ClientOptions{TLSConfig: testCerts(t).Client()}) // another CA
	defer stranger.Close()
	var unknownCA x509UnknownAuthority
	if _, err := tlsEcho(t, stranger, n.addr); err == nil || !errors.As(err, &unknownCA) {
		t.Fatalf("client trusting another CA: %v, want an unknown authority error", err)
	}
}

type x509UnknownAuthority = *tls.CertificateVerificationError

// A handshake that never completes, or garbage after the TLS record byte, costs only its own
// connection.
func TestTLSBadHandshakeClosesOnlyThatConnection(t *testing.T) {
	n, clientTLS := tlsNode(t, TLSPermissive, ServerOptions{})
	good := NewClient(ClientOptions{TLSConfig: clientTLS})
	defer good.Close()
	if _, err := tlsEcho(t, good, n.addr); err != nil {
		t.Fatal(err)
	}
	bad, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, bad, "garbage handshake")
	if _, err := tlsEcho(t, good, n.addr); err != nil {
		t.Fatalf("the good connection suffered: %v", err)
	}
}

// An idle TLS connection is closed like a plaintext one, with the same events.
func TestTLSIdleConnectionClosed(t *testing.T) {
	certs := testCerts(t)
	events := make(chan ConnEvent, 16)
	d := NewDispatcher(testLogger(t))
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 1, 8))
	d.AddConnListener(func(ev ConnEvent) { events <- ev })
	n := startNode(t, d, ServerOptions{TLSMode: TLSEnforcing, TLSConfig: certs.Server(),
		IdleTimeout: 50 * time.Millisecond, ScanInterval: 10 * time.Millisecond})
	c := NewClient(ClientOptions{TLSConfig: certs.Client()})
	defer c.Close()
	if _, err := tlsEcho(t, c, n.addr); err != nil {
		t.Fatal(err)
	}
	var seen []ConnEventType
	for ev := range events {
		seen = append(seen, ev.Type)
		if ev.Type == ConnClose {
			break
		}
	}
	if len(seen) != 3 || seen[0] != ConnConnect || seen[1] != ConnIdle {
		t.Fatalf("events %v, want CONNECT IDLE CLOSE", seen)
	}
	if got := n.srv.ConnCount(); got != 0 {
		t.Fatalf("%d connections left", got)
	}
}

// Stopping the server closes its TLS connections: a request waiting on one fails at once.
func TestTLSConnectionsCloseWithServer(t *testing.T) {
	certs := testCerts(t)
	d := NewDispatcher(testLogger(t))
	held := make(chan struct{})
	d.Register(SendMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
		close(held)
		return nil, nil // never answers
	}), NewExecutor("s", 1, 8))
	d.Start()
	defer d.Close()
	srv := NewServer(d, ServerOptions{TLSMode: TLSEnforcing, TLSConfig: certs.Server(), Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	c := NewClient(ClientOptions{TLSConfig: certs.Client()})
	defer c.Close()
	failed := make(chan error, 1)
	go func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		_, err := c.InvokeSync(rctx, srv.Addr(), NewRequest(SendMessage, nil, nil))
		failed <- err
	}()
	<-held
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-failed; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("request on a closed TLS connection: %v", err)
	}
	if got := srv.ConnCount(); got != 0 {
		t.Fatalf("%d connections left after Run returned", got)
	}
}

func TestParseTLSMode(t *testing.T) {
	for in, want := range map[string]TLSMode{"": TLSDisabled, "disabled": TLSDisabled,
		"permissive": TLSPermissive, "enforcing": TLSEnforcing} {
		if got, err := ParseTLSMode(in); err != nil || got != want {
			t.Errorf("ParseTLSMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseTLSMode("strict"); err == nil {
		t.Error("unknown mode accepted")
	}
}
