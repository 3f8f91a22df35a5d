package client

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mqgo/mq/remoting"
)

// An account as plain_acl.yml writes one; the secret is also what signatures are checked with.
const (
	testAccessKey = "RocketMQ"
	testSecretKey = "12345678"
)

var testCredentials = remoting.Credentials{AccessKey: testAccessKey, SecretKey: testSecretKey}

// signedByTestAccount reports whether req names the test account and carries the signature of
// what it holds now, checked as a broker checks it.
func signedByTestAccount(req *remoting.Command) bool {
	return req.Ext(remoting.ExtAccessKey) == testAccessKey &&
		remoting.SignatureEqual(req.Ext(remoting.ExtSignature), remoting.RequestSignature([]byte(testSecretKey), req))
}

// checkingTransport answers every request at once and records, per call, whether the request
// was signed when it arrived and with what signature.
type checkingTransport struct {
	mu    sync.Mutex
	calls []checkedCall
}

type checkedCall struct {
	how       string
	signed    bool
	signature string
}

func (c *checkingTransport) record(how string, req *remoting.Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, checkedCall{how: how, signed: signedByTestAccount(req), signature: req.Ext(remoting.ExtSignature)})
}

func (c *checkingTransport) InvokeSync(_ context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	c.record("sync", req)
	return remoting.NewResponse(remoting.Success, ""), nil
}

func (c *checkingTransport) InvokeAsync(_ context.Context, _ string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	c.record("async", req)
	cb(remoting.NewResponse(remoting.Success, ""), nil)
	return nil
}

func (c *checkingTransport) InvokeOneway(_ context.Context, _ string, req *remoting.Command) error {
	c.record("oneway", req)
	return nil
}

func (c *checkingTransport) RegisterProcessor(int32, remoting.Processor) {}
func (c *checkingTransport) Close() error                                { return nil }

// TestSignTransportSignsEachAttempt: each way of sending signs the request as it is when it
// goes, so a request sent again after a change (a retry's new header) carries the signature of
// its new content, not the first one.
func TestSignTransportSignsEachAttempt(t *testing.T) {
	inner := &checkingTransport{}
	tr := signTransport(inner, testCredentials)
	ctx := context.Background()
	send := map[string]func(*remoting.Command) error{
		"sync": func(req *remoting.Command) error { _, err := tr.InvokeSync(ctx, "b:1", req); return err },
		"async": func(req *remoting.Command) error {
			return tr.InvokeAsync(ctx, "b:1", req, func(*remoting.Command, error) {})
		},
		"oneway": func(req *remoting.Command) error { return tr.InvokeOneway(ctx, "b:1", req) },
	}
	for _, how := range []string{"sync", "async", "oneway"} {
		req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "T", "e": "0"}, []byte("body"))
		if err := send[how](req); err != nil {
			t.Fatal(err)
		}
		req.ExtFields["e"] = "1" // the retry goes to another queue
		if err := send[how](req); err != nil {
			t.Fatal(err)
		}
	}
	if len(inner.calls) != 6 {
		t.Fatalf("%d calls reached the transport, want 6", len(inner.calls))
	}
	for i := 0; i < len(inner.calls); i += 2 {
		first, retry := inner.calls[i], inner.calls[i+1]
		if !first.signed || !retry.signed {
			t.Fatalf("%s: first attempt signed %v, retry signed %v; want both signed over what they carried",
				first.how, first.signed, retry.signed)
		}
		if first.signature == retry.signature {
			t.Fatalf("%s: the retry kept the first attempt's signature", first.how)
		}
	}
}

// TestSignTransportKeepsReconnectNotifier: the wrapper reports reconnects exactly when the
// transport it wraps does, since the instance's reconnect heartbeats type-assert on it; no
// account means no wrapper at all.
func TestSignTransportKeepsReconnectNotifier(t *testing.T) {
	inproc := remoting.NewInProcTransport(func(string) *remoting.Dispatcher { return nil }, nil, 0)
	defer inproc.Close()
	if _, ok := signTransport(inproc, testCredentials).(remoting.ReconnectNotifier); !ok {
		t.Fatal("signing an in-process transport lost its ReconnectNotifier")
	}
	plain := &checkingTransport{}
	if _, ok := signTransport(plain, testCredentials).(remoting.ReconnectNotifier); ok {
		t.Fatal("signing a transport without reconnect reports made one up")
	}
	for _, c := range []remoting.Credentials{{}, {AccessKey: testAccessKey}, {SecretKey: testSecretKey}} {
		if tr := signTransport(plain, c); tr != remoting.Transport(plain) {
			t.Fatalf("credentials %q wrapped the transport, though they sign nothing", c.AccessKey)
		}
	}
}

// signatureGuard is a broker's ACL reduced to its signature check: it records every request's
// code and refuses those the test account did not sign.
type signatureGuard struct {
	mu       sync.Mutex
	codes    map[int32]int
	unsigned []int32
}

func newSignatureGuard() *signatureGuard { return &signatureGuard{codes: make(map[int32]int)} }

func (g *signatureGuard) check(_ remoting.Channel, req *remoting.Command) *remoting.Command {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.codes[req.Code]++
	if !signedByTestAccount(req) {
		g.unsigned = append(g.unsigned, req.Code)
		return remoting.NewResponse(remoting.NoPermission, "not signed by "+testAccessKey)
	}
	return nil
}

// install puts g in front of a test broker's processors, and answers the codes it has none
// for, which a dispatcher would otherwise refuse before any guard saw them.
func (g *signatureGuard) install(d *remoting.Dispatcher) {
	d.SetGuard(g.check)
	d.RegisterDefault(remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(remoting.Success, ""), nil
	}), remoting.NewExecutor("default", 1, 64))
}

func (g *signatureGuard) verify(t *testing.T, want ...int32) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.unsigned) > 0 {
		t.Errorf("requests of codes %v arrived without the account's signature", g.unsigned)
	}
	for _, code := range want {
		if g.codes[code] == 0 {
			t.Errorf("no request of code %d arrived (seen %v)", code, g.codes)
		}
	}
}

// TestInstanceSignsEveryRequest: with credentials, the instance's own requests (route query,
// heartbeats, the heartbeat after a reconnect, unregistering) and those handles send through
// Transport arrive signed; the reconnect heartbeat proves the signing transport still reports
// reconnects.
func TestInstanceSignsEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := startRestartableBroker(t)
		g := newSignatureGuard()
		rb.ns.Load().SetGuard(g.check)
		g.install(rb.broker.Load())
		i, err := Acquire(Options{NameServers: []string{memNameServer}, Transport: rb.tr, InstanceName: "signing",
			Credentials: testCredentials})
		if err != nil {
			t.Fatal(err)
		}
		defer i.Release() // a failure must not leave the loops running in the bubble
		c := &countingConsumer{rb: rb}
		if err := i.RegisterConsumer("cg", c); err != nil {
			t.Fatal(err)
		}
		if err := i.RegisterProducer("pg"); err != nil {
			t.Fatal(err)
		}
		if _, err := i.TopicRoute(context.Background(), "T"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		rb.restart()
		g.install(rb.broker.Load())
		resp, err := i.Transport().InvokeSync(context.Background(), memBroker, remoting.NewRequest(remoting.GetMaxOffset, nil, nil))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("a handle's request: %v %+v", err, resp)
		}
		synctest.Wait()
		if n := rb.heartbeats.Load(); n != 1 {
			t.Fatalf("%d heartbeats after the reconnect, want 1 at once", n)
		}
		i.UnregisterConsumer("cg")
		i.UnregisterProducer("pg")
		if err := i.Release(); err != nil {
			t.Fatal(err)
		}
		g.verify(t, remoting.GetRouteInfoByTopic, remoting.HeartBeat, remoting.GetMaxOffset, remoting.UnregisterClient)
	})
}

// TestInstanceKeySeparatesAccountsAndTLS: handles share an instance only with the same account
// and the same TLS config, and the registry's key holds no secret.
func TestInstanceKeySeparatesAccountsAndTLS(t *testing.T) {
	tlsA, tlsB := &tls.Config{}, &tls.Config{}
	acquire := func(creds remoting.Credentials, cfg *tls.Config) *Instance {
		t.Helper()
		i, err := Acquire(Options{NameServers: []string{"127.0.0.1:9876"}, InstanceName: "key",
			Credentials: creds, TLSConfig: cfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { i.Release() })
		return i
	}
	other := remoting.Credentials{AccessKey: testAccessKey, SecretKey: "87654321"}
	signed, signedAgain := acquire(testCredentials, nil), acquire(testCredentials, nil)
	if signed != signedAgain {
		t.Fatal("two handles with one account got two instances")
	}
	for name, i := range map[string]*Instance{
		"no account":               acquire(remoting.Credentials{}, nil),
		"another secret":           acquire(other, nil),
		"the account over TLS":     acquire(testCredentials, tlsA),
		"another TLS config":       acquire(testCredentials, tlsB),
		"TLS config, no account":   acquire(remoting.Credentials{}, tlsA),
		"another config, no accnt": acquire(remoting.Credentials{}, tlsB),
	} {
		if i == signed {
			t.Errorf("%s shares the signed plaintext instance", name)
		}
	}
	first, second := acquire(testCredentials, tlsA), acquire(testCredentials, tlsA)
	if first != second {
		t.Error("two handles with one account and one TLS config got two instances")
	}
	registry.Lock()
	defer registry.Unlock()
	for key := range registry.m {
		if strings.Contains(key, testSecretKey) || strings.Contains(key, other.SecretKey) {
			t.Errorf("instance key %q holds a secret", key)
		}
	}
}

// TestAcquireRefusesHalfAccountsAndTLSOverAGivenTransport: an account missing a key would
// sign nothing, and a TLS config cannot change how a given transport dials; both are errors,
// and neither names the secret.
func TestAcquireRefusesHalfAccountsAndTLSOverAGivenTransport(t *testing.T) {
	for name, opts := range map[string]Options{
		"no secret":       {Credentials: remoting.Credentials{AccessKey: testAccessKey}},
		"no access key":   {Credentials: remoting.Credentials{SecretKey: testSecretKey}},
		"TLS, transport":  {TLSConfig: &tls.Config{}, Transport: &checkingTransport{}},
		"TLS, owned one":  {TLSConfig: &tls.Config{}, Transport: &checkingTransport{}, OwnTransport: true},
		"both, transport": {TLSConfig: &tls.Config{}, Transport: &checkingTransport{}, Credentials: testCredentials},
	} {
		opts.NameServers = []string{"127.0.0.1:9876"}
		i, err := Acquire(opts)
		if err == nil {
			i.Release()
			t.Errorf("%s: Acquire accepted it", name)
			continue
		}
		if strings.Contains(err.Error(), testSecretKey) {
			t.Errorf("%s: the error names the secret: %v", name, err)
		}
	}
}
