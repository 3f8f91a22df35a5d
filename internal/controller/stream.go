package controller

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// Raft's NetworkTransport trusts every byte on its port: an AppendEntries from anyone with a
// higher term rewrites the log. With a cluster secret the controller gives it authStream, which
// hands Raft only connections whose peer proved the secret (docs/protocol.md, Appendix C, draws
// the exchange). Every Raft connection, InstallSnapshot's included, is made by Dial or returned
// by Accept, so the handshake gates all of them.

// Handshake format; part of the wire, do not change.
const (
	// raftMagic opens each side's first message. Its first byte is above every Raft RPC type
	// (0-4), so each side can tell a peer without a secret from a stranger.
	raftMagic = "MQRAFT01"
	// raftProofDomain starts every proof, so that no other use of the cluster secret can
	// produce one.
	raftProofDomain = "mq-raft-handshake-v1"
	raftNonceBytes  = 32
	raftProofBytes  = sha256.Size
	// The role byte of a proof: the dialer's can never be replayed as the listener's.
	roleDialer   byte = 'D'
	roleListener byte = 'L'
	// highestRaftRPCType is hashicorp/raft's last RPC type byte (rpcRequestPreVote).
	highestRaftRPCType = 4
)

// Limits of the authenticated transport (ours: RocketMQ's controller port has no handshake).
const (
	// MinSecretBytes is the shortest cluster secret the controller accepts (as
	// mq.Options.Security.ClusterSecret documents): the proofs can be attacked offline by whoever saw
	// one exchange, so a short secret would be guessed.
	MinSecretBytes = 16
	// raftHandshakeTimeout bounds the whole handshake, as replication's HandshakeTimeout does.
	raftHandshakeTimeout = 3 * time.Second
	// maxRaftHandshakes bounds the handshakes in progress on one controller; a connection over
	// it is closed at once. A controller group has a handful of peers with a few connections
	// each, so only strangers ever come near it.
	maxRaftHandshakes = 64
	// maxRaftHandshakesPerHost bounds those of one remote IP, so that a single host holding
	// silent connections leaves room for the real peers.
	maxRaftHandshakesPerHost = 16
	// refusedLogPeriod: at most one warning per period for refused connections, with a count
	// of those not logged, so a flood of strangers does not flood the log.
	refusedLogPeriod = 10 * time.Second
)

// errHandshake marks every handshake failure.
var errHandshake = errors.New("raft handshake failed")

// newTransport builds Raft's transport on authStream. With a secret every connection runs the
// handshake first; without one the bytes are hashicorp/raft's plain TCP protocol, which trusts
// whoever reaches the port, but the stream still closes every connection at Close (raft's own
// TCP stream layer leaves pooled connections open, and the peers' handlers of them running).
func (c *Controller) newTransport(advertise *net.TCPAddr, hl hclog.Logger) (*raft.NetworkTransport, error) {
	if c.opts.Secret != "" && len(c.opts.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("controller: the cluster secret is %d bytes; it must have at least %d", len(c.opts.Secret), MinSecretBytes)
	}
	s, err := newAuthStream(raftNet{listen: c.opts.Listen, dial: c.opts.Dial}, c.opts.RaftListen, advertise, []byte(c.opts.Secret), c.log)
	if err != nil {
		return nil, fmt.Errorf("controller: raft listen %s: %w", c.opts.RaftListen, err)
	}
	s.start()
	return raft.NewNetworkTransportWithLogger(s, transportPool, transportTimeout, hl), nil
}

// authStream is a raft.StreamLayer over TCP that runs the handshake on every connection when
// it has a secret.
// Accepted connections are authenticated off the accept loop, so a silent stranger delays
// nobody; Close closes every connection it made or accepted, which ends Raft's handlers of
// them, and returns once its own goroutines have.
type authStream struct {
	ln        net.Listener
	dial      func(addr string, timeout time.Duration) (net.Conn, error)
	advertise net.Addr
	secret    []byte
	log       zerolog.Logger

	// Set by newAuthStream; tests lower them.
	timeout    time.Duration
	maxShakes  int
	maxPerHost int

	accepted chan net.Conn
	done     chan struct{}
	wg       sync.WaitGroup // the accept loop and the handshakes of accepted connections
	refused  refusalLog

	mu      sync.Mutex
	closed  bool
	conns   map[*authConn]struct{}
	shaking int
	perHost map[string]int
}

// raftNet is how Raft's stream listens and dials: TCP, or what Options.Listen and Options.Dial
// give (the simulation's in-memory network).
type raftNet struct {
	listen func(addr string) (net.Listener, error)
	dial   func(addr string, timeout time.Duration) (net.Conn, error)
}

func (nw raftNet) withDefaults() raftNet {
	if nw.listen == nil {
		nw.listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	if nw.dial == nil {
		nw.dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	return nw
}

// newAuthStream listens on listen; peers dial advertise (nil: the bound address). It accepts
// nothing until start.
func newAuthStream(nw raftNet, listen string, advertise *net.TCPAddr, secret []byte, log zerolog.Logger) (*authStream, error) {
	nw = nw.withDefaults()
	ln, err := nw.listen(listen)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr().(*net.TCPAddr)
	}
	if advertise.IP == nil || advertise.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("%s is not an address peers can dial", advertise)
	}
	s := &authStream{
		ln: ln, dial: nw.dial, advertise: advertise, secret: bytes.Clone(secret), log: log,
		timeout: raftHandshakeTimeout, maxShakes: maxRaftHandshakes, maxPerHost: maxRaftHandshakesPerHost,
		accepted: make(chan net.Conn), done: make(chan struct{}),
		refused: refusalLog{log: log, period: refusedLogPeriod},
		conns:   map[*authConn]struct{}{}, perHost: map[string]int{},
	}
	return s, nil
}

func (s *authStream) start() {
	s.wg.Add(1)
	go s.acceptLoop()
}

// Accept returns the next authenticated connection.
func (s *authStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.accepted:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Addr is the address peers dial, as raft.TCPStreamLayer's.
func (s *authStream) Addr() net.Addr { return s.advertise }

// Dial connects to a peer and authenticates both ends before Raft writes anything.
func (s *authStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	raw, err := s.dial(string(address), timeout)
	if err != nil {
		return nil, err
	}
	c := s.track(raw)
	if c == nil {
		raw.Close()
		return nil, raft.ErrTransportShutdown
	}
	if len(s.secret) == 0 {
		return c, nil
	}
	if err := dialerHandshake(c, s.secret, s.timeout); err != nil {
		c.Close()
		return nil, fmt.Errorf("raft peer %s: %w", address, err)
	}
	return c, nil
}

// Close stops accepting, closes every connection and waits for the handshakes in progress.
func (s *authStream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*authConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	close(s.done)
	err := s.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	s.wg.Wait()
	return err
}

func (s *authStream) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *authStream) acceptLoop() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() {
				return
			}
			// Out of descriptors and the like: back off as net/http does, up to a second.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn().Err(err).Msg("raft accept failed")
			t := time.NewTimer(delay)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		delay = 0
		host := remoteHost(raw)
		c, why := s.admit(raw, host)
		if c == nil {
			raw.Close()
			if why != "" {
				s.refused.warn(raw.RemoteAddr().String(), fmt.Errorf("%w: %s", errHandshake, why))
			}
			continue
		}
		go s.authenticate(c, host)
	}
}

// admit tracks an accepted connection and takes a handshake slot for it, or says why not ("" when
// the stream is closed).
func (s *authStream) admit(raw net.Conn, host string) (*authConn, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ""
	case s.shaking >= s.maxShakes:
		return nil, fmt.Sprintf("%d handshakes in progress already", s.shaking)
	case s.perHost[host] >= s.maxPerHost:
		return nil, fmt.Sprintf("%d handshakes from %s in progress already", s.perHost[host], host)
	}
	s.shaking++
	s.perHost[host]++
	s.wg.Add(1) // under mu, so never after Close began waiting
	c := &authConn{Conn: raw, s: s}
	s.conns[c] = struct{}{}
	return c, ""
}

// authenticate runs the listener's side of the handshake and hands the connection to Accept.
func (s *authStream) authenticate(c *authConn, host string) {
	defer s.wg.Done()
	var err error
	if len(s.secret) > 0 {
		err = listenerHandshake(c, s.secret, s.timeout)
	}
	s.mu.Lock()
	s.shaking--
	if s.perHost[host]--; s.perHost[host] == 0 {
		delete(s.perHost, host)
	}
	s.mu.Unlock()
	if err != nil {
		c.Close()
		if !s.isClosed() {
			s.refused.warn(c.RemoteAddr().String(), err)
		}
		return
	}
	select {
	case s.accepted <- c:
	case <-s.done:
		c.Close()
	}
}

// track wraps a dialed connection so that Close reaches it; nil once the stream is closed.
func (s *authStream) track(raw net.Conn) *authConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	c := &authConn{Conn: raw, s: s}
	s.conns[c] = struct{}{}
	return c
}

func (s *authStream) forget(c *authConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// authConn is a connection the stream closes on Close.
type authConn struct {
	net.Conn
	s *authStream
}

// Read reports a connection the stream closed as ended (io.EOF): Raft's connection handler
// logs every other read error at error level, and a controller closing is no error.
func (c *authConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.s.isClosed() {
		err = io.EOF
	}
	return n, err
}

func (c *authConn) Close() error {
	c.s.forget(c)
	return c.Conn.Close()
}

// raftProof is HMAC-SHA256(secret, domain | role | dialer's nonce | listener's nonce).
func raftProof(secret []byte, role byte, dialerNonce, listenerNonce []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(raftProofDomain))
	h.Write([]byte{role})
	h.Write(dialerNonce)
	h.Write(listenerNonce)
	return h.Sum(nil)
}

// dialerHandshake: send MAGIC and a nonce, read the listener's, prove the secret, then check
// the listener's proof, so Raft never talks to an impostor at a peer's address either.
func dialerHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	hello := make([]byte, len(raftMagic)+raftNonceBytes)
	copy(hello, raftMagic)
	dialerNonce := hello[len(raftMagic):]
	rand.Read(dialerNonce)
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("%w: send challenge: %w", errHandshake, err)
	}
	var answer [len(raftMagic) + raftNonceBytes]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil {
		return fmt.Errorf("%w: no challenge from the peer (has it the cluster secret? is it busy?): %w", errHandshake, err)
	}
	if string(answer[:len(raftMagic)]) != raftMagic {
		return fmt.Errorf("%w: the peer answered %q, not the handshake: it is not a controller with the cluster secret", errHandshake, answer[:len(raftMagic)])
	}
	listenerNonce := answer[len(raftMagic):]
	if _, err := c.Write(raftProof(secret, roleDialer, dialerNonce, listenerNonce)); err != nil {
		return fmt.Errorf("%w: send proof: %w", errHandshake, err)
	}
	var got [raftProofBytes]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("%w: the peer refused our proof (is its cluster secret the same?): %w", errHandshake, err)
	}
	if !hmac.Equal(got[:], raftProof(secret, roleListener, dialerNonce, listenerNonce)) {
		return fmt.Errorf("%w: wrong proof from the peer: it does not know the cluster secret", errHandshake)
	}
	return c.SetDeadline(time.Time{})
}

// listenerHandshake: read the dialer's MAGIC and nonce, send ours, check the dialer's proof and
// only then prove the secret in turn, so a stranger learns nothing but a random nonce.
func listenerHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var hello [len(raftMagic) + raftNonceBytes]byte
	if _, err := io.ReadFull(c, hello[:len(raftMagic)]); err != nil {
		return fmt.Errorf("%w: no handshake: %w", errHandshake, err)
	}
	if magic := hello[:len(raftMagic)]; string(magic) != raftMagic {
		if magic[0] <= highestRaftRPCType {
			return fmt.Errorf("%w: the peer sent a Raft RPC without the handshake: it has no cluster secret", errHandshake)
		}
		return fmt.Errorf("%w: the peer sent %q, not the handshake", errHandshake, magic)
	}
	if _, err := io.ReadFull(c, hello[len(raftMagic):]); err != nil {
		return fmt.Errorf("%w: no challenge: %w", errHandshake, err)
	}
	dialerNonce := hello[len(raftMagic):]
	answer := make([]byte, len(raftMagic)+raftNonceBytes)
	copy(answer, raftMagic)
	listenerNonce := answer[len(raftMagic):]
	rand.Read(listenerNonce)
	if _, err := c.Write(answer); err != nil {
		return fmt.Errorf("%w: send challenge: %w", errHandshake, err)
	}
	var got [raftProofBytes]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("%w: no proof: %w", errHandshake, err)
	}
	if !hmac.Equal(got[:], raftProof(secret, roleDialer, dialerNonce, listenerNonce)) {
		return fmt.Errorf("%w: wrong proof: the peer does not know the cluster secret", errHandshake)
	}
	if _, err := c.Write(raftProof(secret, roleListener, dialerNonce, listenerNonce)); err != nil {
		return fmt.Errorf("%w: send proof: %w", errHandshake, err)
	}
	return c.SetDeadline(time.Time{})
}

// refusalLog logs refused connections at warn: the first of each period with the remote
// address and why, and how many were refused since the previous line without one.
type refusalLog struct {
	log    zerolog.Logger
	period time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

func (r *refusalLog) warn(addr string, err error) {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < r.period {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.last = now
	n := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	r.log.Warn().Str("addr", addr).Err(err).Int64("refused_unlogged", n).Msg("raft peer refused")
}
