package client

import (
	"context"

	"github.com/mqgo/mq/remoting"
)

// signTransport returns tr signing every request with creds just before it goes, as RocketMQ's
// AclClientRPCHook does in doBeforeRequest: a retry is a new Invoke, so it is signed again over
// what it carries then. One remoting.Signer serves every request, so the HMAC key is set up
// once, not per request. Zero credentials return tr itself, so an instance without an account
// pays nothing.
//
// Code type-asserts a Transport on remoting.ReconnectNotifier (the instance's reconnect
// heartbeats), so the wrapper has it exactly when tr does. CloseConn is only asserted on an
// InProcTransport's fallback, which this wrapper never is.
func signTransport(tr remoting.Transport, creds remoting.Credentials) remoting.Transport {
	if creds.IsZero() {
		return tr
	}
	s := signingTransport{Transport: tr, signer: remoting.NewSigner(creds)}
	if n, ok := tr.(remoting.ReconnectNotifier); ok {
		return &signingNotifier{signingTransport: s, notifier: n}
	}
	return &s
}

// signingTransport signs, then hands the request to the transport it embeds, which also
// answers RegisterProcessor and Close.
type signingTransport struct {
	remoting.Transport
	signer *remoting.Signer
}

func (s *signingTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	s.signer.Sign(req)
	return s.Transport.InvokeSync(ctx, addr, req)
}

func (s *signingTransport) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	s.signer.Sign(req)
	return s.Transport.InvokeAsync(ctx, addr, req, cb)
}

func (s *signingTransport) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	s.signer.Sign(req)
	return s.Transport.InvokeOneway(ctx, addr, req)
}

// signingNotifier is a signingTransport over a transport that reports reconnects.
type signingNotifier struct {
	signingTransport
	notifier remoting.ReconnectNotifier
}

func (s *signingNotifier) OnReconnect(f func(addr string)) (remove func()) {
	return s.notifier.OnReconnect(f)
}
