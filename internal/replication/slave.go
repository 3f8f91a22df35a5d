package replication

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Slave follows a master: it keeps a slave store's CommitLog (storage.Options.Slave) a
// byte-for-byte copy of the master's, appending received blocks at the same physical offsets
// with Store.AppendRaw; the store's dispatcher builds its ConsumeQueues. Build it with
// NewSlave, run it with Run. Every method is safe for concurrent use.
type Slave struct {
	store *storage.Store
	opts  SlaveOptions
	log   zerolog.Logger

	running atomic.Bool
	// connected is true from a session's handshake to its end: readiness (/readyz) reads it.
	connected atomic.Bool
	// lastRead and lastWrite are when the slave last read from and wrote to its master (unix
	// ms, 0 never); flow counts the block bytes received. The HA status reports them.
	lastRead, lastWrite atomic.Int64
	flow                flow
	// addrChanged (capacity 1) wakes Run when SetMasterAddr changes the address.
	addrChanged chan struct{}

	mu struct {
		sync.Mutex
		masterAddr string
		conn       net.Conn // the current HA connection, nil between connections
	}

	// testHookBeforeRead, if set, runs before each block header is read; a test blocks in
	// it to stall the slave (it stops reading, its heartbeats go on).
	testHookBeforeRead func()
	// dial opens an HA connection; a test replaces it with one that hands out net.Pipe ends,
	// so the slave can run on synctest's fake clock.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialFunc opens an HA connection, as net.Dialer.DialContext does.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// routedDials holds, by store, what RouteDials installed: the broker builds its slave, so a node
// reaches its slave's dials only through the store they share.
var routedDials sync.Map // *storage.Store -> *dialRoute

// dialRoute is a pointer so that remove deletes its own entry only (funcs do not compare).
type dialRoute struct{ wrap func(DialFunc) DialFunc }

// RouteDials makes the slave following into store dial through route(dial) from its next
// connection on, until remove is called: mqtest cuts and pauses HA links this way
// (internal/faults' Faults.Dialer).
func RouteDials(store *storage.Store, route func(DialFunc) DialFunc) (remove func()) {
	r := &dialRoute{wrap: route}
	routedDials.Store(store, r)
	return func() { routedDials.CompareAndDelete(store, r) }
}

// NewSlave builds a slave for store, which should be opened with storage.Options.Slave. It
// starts nothing; call Run.
func NewSlave(store *storage.Store, opts SlaveOptions) (*Slave, error) {
	if store == nil {
		return nil, errors.New("replication: nil store")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Slave{
		store:       store,
		opts:        opts,
		log:         opts.Logger.With().Str("component", "replication").Str("role", "slave").Logger(),
		addrChanged: make(chan struct{}, 1),
		dial:        (&net.Dialer{Timeout: opts.HousekeepingInterval}).DialContext,
	}
	s.mu.masterAddr = opts.MasterAddr
	return s, nil
}

// SetMasterAddr sets the master's HA address (RocketMQ updateHaMasterAddress: a slave learns
// it from the name service). If it differs from the current one, the current connection is
// dropped and Run dials the new address.
func (s *Slave) SetMasterAddr(addr string) {
	s.mu.Lock()
	changed := addr != s.mu.masterAddr
	s.mu.masterAddr = addr
	conn := s.mu.conn
	s.mu.Unlock()
	if !changed {
		return
	}
	s.log.Info().Str("addr", addr).Msg("master address changed")
	if conn != nil {
		conn.Close()
	}
	select {
	case s.addrChanged <- struct{}{}:
	default:
	}
}

// MasterAddr returns the master's HA address, "" if unknown.
func (s *Slave) MasterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.masterAddr
}

// Connected reports whether the slave has an HA connection to its master past its handshake.
func (s *Slave) Connected() bool { return s.connected.Load() }

// SlaveStatus is what a slave reports of its HA connection (RocketMQ's HAClientRuntimeInfo).
type SlaveStatus struct {
	MasterAddr string
	// LastRead and LastWrite are when it last read a block or heartbeat from its master and
	// last sent it a report; the zero time for never.
	LastRead, LastWrite time.Time
	// BytesPerSecond is what it received in the last whole second.
	BytesPerSecond int64
}

// Status reports the slave's HA connection.
func (s *Slave) Status() SlaveStatus {
	ms := func(v int64) time.Time {
		if v == 0 {
			return time.Time{}
		}
		return time.UnixMilli(v)
	}
	return SlaveStatus{MasterAddr: s.MasterAddr(), LastRead: ms(s.lastRead.Load()), LastWrite: ms(s.lastWrite.Load()),
		BytesPerSecond: s.flow.perSecond(time.Now())}
}

// Run follows the master until ctx ends, then returns nil after its goroutines have exited.
// After a break it dials again at once if the connection had carried a valid block, and
// after ReconnectInterval otherwise (failed dial, refused offset). It does not close the
// store. Call it at most once.
func (s *Slave) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("replication: Slave.Run called twice")
	}
	s.log.Info().Str("addr", s.MasterAddr()).Msg("slave started")
	defer s.log.Info().Msg("slave stopped")
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		addr := s.MasterAddr()
		if addr == "" {
			select {
			case <-ctx.Done():
				return nil
			case <-s.addrChanged:
				continue
			}
		}
		established, err := s.session(ctx, addr)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn().Str("addr", addr).Err(err).Int64("phy_offset", s.store.MaxPhyOffset()).
			Msg("HA connection to master broken")
		if established {
			continue
		}
		timer.Reset(s.opts.ReconnectInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-s.addrChanged:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// session runs one HA connection: with a Secret, the handshake first (a failure counts as a
// failed dial); then a reporter goroutine sends the store's end offset at
// start, after each block and every SendHeartbeatInterval; this goroutine receives blocks.
// established reports whether a valid block (or heartbeat) arrived.
func (s *Slave) session(ctx context.Context, addr string) (established bool, err error) {
	dial := s.dial
	if route, ok := routedDials.Load(s.store); ok {
		dial = route.(*dialRoute).wrap(dial)
	}
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	defer c.Close()
	s.mu.Lock()
	if s.mu.masterAddr != addr { // changed while dialing
		s.mu.Unlock()
		return false, errors.New("master address changed")
	}
	s.mu.conn = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.mu.conn = nil
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if s.opts.TLSConfig != nil {
		tc, err := tlsHandshake(tls.Client(c, clientTLSConfig(s.opts.TLSConfig, addr)), s.opts.HandshakeTimeout)
		if err != nil {
			return false, err
		}
		c = tc
	}
	if len(s.opts.Secret) > 0 {
		if err := slaveHandshake(c, s.opts.Secret, s.opts.HandshakeTimeout); err != nil {
			return false, err
		}
	}
	if s.opts.BrokerID > 0 {
		var id [identityBytes]byte
		putIdentity(id[:], s.opts.BrokerID)
		if err := writeAll(c, net.Buffers{id[:]}, s.opts.HandshakeTimeout); err != nil {
			return false, err
		}
	}
	s.log.Info().Str("addr", addr).Int64("phy_offset", s.store.MaxPhyOffset()).Msg("connected to master")
	s.connected.Store(true)
	defer s.connected.Store(false)

	progress := make(chan struct{}, 1)
	gone := make(chan struct{})
	var wg sync.WaitGroup
	var reportErr error
	wg.Go(func() {
		reportErr = s.report(c, progress, gone)
		c.Close() // the receiver may be blocked in a read
	})
	established, err = s.receive(c, progress)
	close(gone)
	c.Close()
	wg.Wait()
	if reportErr != nil && !established {
		err = errors.Join(err, reportErr)
	}
	return established, err
}

// report writes the store's end offset now, after each signal on progress and every
// SendHeartbeatInterval, until gone is closed or a write fails.
func (s *Slave) report(c net.Conn, progress <-chan struct{}, gone <-chan struct{}) error {
	var buf [reportBytes]byte
	t := time.NewTicker(s.opts.SendHeartbeatInterval)
	defer t.Stop()
	for {
		putReport(buf[:], s.store.MaxPhyOffset())
		if err := writeAll(c, net.Buffers{buf[:]}, s.opts.HousekeepingInterval); err != nil {
			return err
		}
		s.lastWrite.Store(time.Now().UnixMilli())
		select {
		case <-gone:
			return nil
		case <-progress:
		case <-t.C:
		}
	}
}

// receive reads blocks and appends them until the connection fails, the master is silent
// for HousekeepingInterval, or a block is invalid. A block is appended only once its whole
// body has arrived, so a broken connection never leaves part of one in the log.
//
// A slave that names itself (controller mode) reads its master's confirm offset after every
// header and bounds what its consumers see by it, once the block is appended.
func (s *Slave) receive(c net.Conn, progress chan<- struct{}) (established bool, err error) {
	n := headerBytes
	if s.opts.BrokerID > 0 {
		n += confirmBytes
	}
	hdr := make([]byte, n)
	var body []byte
	for {
		if h := s.testHookBeforeRead; h != nil {
			h()
		}
		if err := readFull(c, hdr, s.opts.HousekeepingInterval); err != nil {
			return established, err
		}
		read := time.Now()
		s.lastRead.Store(read.UnixMilli())
		off, size := parseHeader(hdr)
		if err := checkHeader(s.store.MaxPhyOffset(), off, size); err != nil {
			return established, err
		}
		confirm := int64(-1)
		if n > headerBytes {
			if confirm, err = parseConfirm(hdr[headerBytes:]); err != nil {
				return established, err
			}
		}
		established = true
		if size == 0 {
			if confirm >= 0 {
				s.store.SetConfirmOffset(confirm)
			}
			continue // heartbeat
		}
		if cap(body) < int(size) {
			body = make([]byte, max(int(size), config.DefaultHATransferBatchBytes))
		}
		if err := readFull(c, body[:size], s.opts.HousekeepingInterval); err != nil {
			return established, fmt.Errorf("block at %d (%d bytes): %w", off, size, err)
		}
		if err := s.store.AppendRaw(off, body[:size]); err != nil {
			// Not a network fault (a closed store, a full disk): back off before retrying.
			return false, fmt.Errorf("append block at %d: %w", off, err)
		}
		s.flow.add(int(size), read)
		if confirm >= 0 {
			s.store.SetConfirmOffset(confirm)
		}
		select {
		case progress <- struct{}{}:
		default:
		}
	}
}
