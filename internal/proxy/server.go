package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/addon"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
)

// Factory starts the endpoint; proxy.Service hands it out as an optional.GRPC.
type Factory struct{}

// tlsRecordHandshake is the first byte of every TLS connection; an HTTP/2 connection starts
// with "PRI * HTTP/2.0", so one byte tells them apart.
const tlsRecordHandshake = 0x16

// sniffTimeout bounds the wait for a new connection's first byte (Netty's SslHandler
// handshake timeout, 10 s, which the remoting listeners use too): a connection that sends
// nothing is closed instead of holding a goroutine.
const sniffTimeout = 10 * time.Second

// Server is a running endpoint.
type Server struct {
	ln   net.Listener
	srv  *grpc.Server
	svc  *service
	log  zerolog.Logger
	wg   sync.WaitGroup
	once sync.Once

	maxConns int // connections open at once, sniffing or served

	mu      sync.Mutex
	sniff   map[net.Conn]struct{}    // connections whose first byte is awaited
	served  map[*servedConn]struct{} // connections handed to grpc, until closed
	closed  bool
	handoff chan net.Conn // sniffed connections, to grpc's Serve through connListener
	done    chan struct{} // closed by Close
}

// StartGRPC implements addon.GRPCFactory.
func (Factory) StartGRPC(o addon.GRPCOptions) (addon.GRPCServer, error) {
	if o.TLSMode != remoting.TLSDisabled && o.TLSMode != "" && o.TLSConfig == nil {
		return nil, errors.New("proxy: TLS mode " + string(o.TLSMode) + " needs Security.TLSConfig")
	}
	l := zerolog.Nop()
	if o.Logger != nil {
		l = *o.Logger
	}
	log := l.With().Str("component", "grpc").Logger()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, log: log, sniff: make(map[net.Conn]struct{}), served: make(map[*servedConn]struct{}),
		handoff: make(chan net.Conn), done: make(chan struct{})}
	o.Listen = ln.Addr().String() // the bound port, which QueryRoute's endpoints name
	s.svc = newService(o, log)
	maxRecv := o.MaxRecvBytes
	if maxRecv <= 0 {
		maxRecv = DefaultMaxRecvBytes
	}
	s.maxConns = o.MaxConnections
	if s.maxConns <= 0 {
		s.maxConns = remoting.DefaultMaxConnections
	}
	sopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxRecv),
		grpc.MaxConcurrentStreams(DefaultMaxConcurrentStreams),
		grpc.MaxHeaderListSize(DefaultMaxHeaderListBytes),
		// A connection must finish its HTTP/2 preface (and TLS handshake) as soon as the
		// remoting listeners want a TLS handshake done.
		grpc.ConnectionTimeout(sniffTimeout),
		// Close returns only once every handler has: no goroutine of ours outlives the node.
		grpc.WaitForHandlers(true),
	}
	if o.ACL != nil {
		// Every call is checked against the node's ACL before its handler runs (auth.go).
		a := &auth{guard: o.ACL}
		sopts = append(sopts, grpc.UnaryInterceptor(a.unaryInterceptor), grpc.StreamInterceptor(a.streamInterceptor))
	}
	s.srv = grpc.NewServer(sopts...)
	apiv2.RegisterMessagingServiceServer(s.srv, s.svc)
	var tlsCfg *tls.Config
	if o.TLSConfig != nil && o.TLSMode != remoting.TLSDisabled && o.TLSMode != "" {
		tlsCfg = o.TLSConfig.Clone()
		// gRPC clients require HTTP/2 by ALPN over TLS.
		if !slices.Contains(tlsCfg.NextProtos, "h2") {
			tlsCfg.NextProtos = append(tlsCfg.NextProtos, "h2")
		}
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.accept(o.TLSMode, tlsCfg)
	}()
	go func() {
		defer s.wg.Done()
		// Serve returns when Close stops the server; its error then says only that.
		_ = s.srv.Serve(&connListener{s: s})
	}()
	return s, nil
}

// DefaultMaxRecvBytes is the largest gRPC message the endpoint reads when the node names no
// limit: the remoting listeners' default frame limit (16 MiB), not RocketMQ's proxy's
// grpcMaxInboundMessageSize (130 MiB), so a client can make the endpoint hold no more than a
// remoting client can (docs/rocketmq-differences.md).
const DefaultMaxRecvBytes = 16 << 20

// DefaultMaxConcurrentStreams bounds the calls one connection has open at once (ours: RocketMQ's
// proxy, on grpc-java, bounds none). It is RFC 9113's advised minimum, 100: an SDK keeps one
// connection per endpoint, and its long polls and Telemetry stream stay far below. With the
// message limit it bounds what one connection can make the endpoint hold while requests
// arrive: 100 partial messages.
const DefaultMaxConcurrentStreams = 100

// DefaultMaxHeaderListBytes bounds a call's metadata: grpc-java's default
// maxInboundMetadataSize (8 KiB), which RocketMQ's proxy runs with. The SDKs send well under
// 1 KiB (client id, date, authorization, request id, versions).
const DefaultMaxHeaderListBytes = 8 << 10

// accept takes connections and sniffs each on a goroutine of its own, so one that sends
// nothing holds up no other.
func (s *Server) accept(mode remoting.TLSMode, tlsCfg *tls.Config) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed by Close
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		if len(s.sniff)+len(s.served) >= s.maxConns {
			// As the remoting listeners do at Limits.MaxConnections: closed as it arrives.
			s.mu.Unlock()
			c.Close()
			s.log.Debug().Str("remote", c.RemoteAddr().String()).Int("max", s.maxConns).Msg("connection refused: too many open")
			continue
		}
		s.sniff[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			nc := s.classify(c, mode, tlsCfg)
			s.mu.Lock()
			delete(s.sniff, c)
			s.mu.Unlock()
			if nc == nil {
				c.Close()
				return
			}
			sc := &servedConn{Conn: nc, s: s}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				nc.Close()
				return
			}
			s.served[sc] = struct{}{}
			s.mu.Unlock()
			select {
			case s.handoff <- sc:
			case <-s.done:
				sc.Close()
			}
		}()
	}
}

// classify reads the first byte: a TLS handshake gets TLS (unless TLS is off), anything else
// plaintext (unless TLS is enforced). nil closes the connection.
func (s *Server) classify(c net.Conn, mode remoting.TLSMode, tlsCfg *tls.Config) net.Conn {
	if tlsCfg == nil {
		return c // TLS off: gRPC answers a TLS handshake as the malformed preface it is
	}
	br := bufio.NewReaderSize(c, 1)
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return nil
	}
	pc := &peekedConn{Conn: c, r: br}
	if b[0] == tlsRecordHandshake {
		return tls.Server(pc, tlsCfg)
	}
	if mode == remoting.TLSEnforcing {
		s.log.Debug().Str("remote", c.RemoteAddr().String()).Msg("plaintext connection refused: TLS is enforced")
		return nil
	}
	return pc
}

// peekedConn is a connection whose first bytes sit in r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// servedConn is a connection handed to grpc, tracked so Close can cut one that grpc still
// holds in its preface wait (grpc.Server.Stop waits for those).
type servedConn struct {
	net.Conn
	s    *Server
	once sync.Once
}

func (c *servedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.served, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// connListener hands grpc.Server the sniffed connections.
type connListener struct{ s *Server }

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.s.handoff:
		return c, nil
	case <-l.s.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error   { return nil } // Server.Close closes the real one
func (l *connListener) Addr() net.Addr { return l.s.ln.Addr() }

// Addr implements addon.GRPCServer.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close implements addon.GRPCServer: the listener closes, every call and stream ends (a
// Telemetry stream's Recv fails), the clients' connections to the broker close, and Close
// returns once every goroutine of the endpoint has.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		for c := range s.sniff {
			c.Close()
		}
		served := make([]*servedConn, 0, len(s.served))
		for c := range s.served {
			served = append(served, c)
		}
		s.mu.Unlock()
		for _, c := range served {
			c.Close()
		}
		err = s.ln.Close()
		s.srv.Stop()
		s.wg.Wait()
		s.svc.close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("proxy: %w", err)
		}
	})
	return err
}
