package replication

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Master serves a store's CommitLog to slaves over the HA protocol (doc.go) and tracks what
// they acknowledged, for sync replication (WaitForAck). Build it with NewMaster, run it with
// Run. Every method is safe for concurrent use.
type Master struct {
	store *storage.Store
	opts  MasterOptions
	log   zerolog.Logger
	// peerLog is log, rate-limited: per-connection events, which a peer that connects in a
	// loop could otherwise turn into a flood.
	peerLog zerolog.Logger
	gt      groupTransfer
	// lastID numbers slave connections for gt.
	lastID atomic.Uint64

	// served counts the connections Run's accept loop handed to serve and that have not
	// ended: at most MaxConnections.
	served atomic.Int32

	running atomic.Bool
	ready   chan struct{}
	addr    atomic.Pointer[string]

	mu struct {
		sync.RWMutex
		conns map[*slaveConn]struct{}
	}
}

// slaveConn is one slave connection on the master.
type slaveConn struct {
	id   peerID
	conn net.Conn
	addr string
	// wake (capacity 1) is signalled by Notify: the log grew.
	wake chan struct{}
	// gone is closed when the report reader exits: the writer stops.
	gone chan struct{}
	// ack is the slave's latest report.
	ack atomic.Int64
	// sent is the end of what the writer has handed to this connection (its first report,
	// then each block's end, stored before the block is written). An honest slave never
	// reports more, since it holds only what it received; sent never exceeds bytes the
	// master has written.
	sent atomic.Int64
	// brokerID is the slave's identity (RequireIdentity), 0 without one.
	brokerID int64
	// from is the slave's first report, where the transfer began (transferFromWhere).
	from atomic.Int64
	// flow counts the block bytes written to the slave.
	flow flow
}

// SlaveInfo describes one connected slave.
type SlaveInfo struct {
	Addr      string // remote address of the HA connection
	AckOffset int64  // the slave's CommitLog end, as last reported
	BrokerID  int64  // the broker id it named (RequireIdentity), else 0
	// TransferFrom is the offset the transfer to it began at (its first report).
	TransferFrom int64
	// BytesPerSecond is what the master wrote to it in the last whole second.
	BytesPerSecond int64
}

// peerLogBurst and peerLogPeriod rate-limit per-connection logs: a few per period pass.
const (
	peerLogBurst  = 10
	peerLogPeriod = 10 * time.Second
)

// NewMaster builds a master for store. It starts nothing; call Run.
func NewMaster(store *storage.Store, opts MasterOptions) (*Master, error) {
	if store == nil {
		return nil, errors.New("replication: nil store")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := &Master{
		store: store,
		opts:  opts,
		log:   opts.Logger.With().Str("component", "replication").Str("role", "master").Logger(),
		ready: make(chan struct{}),
	}
	m.peerLog = m.log.Sample(&zerolog.BurstSampler{Burst: peerLogBurst, Period: peerLogPeriod})
	m.gt.onAck = opts.OnAck
	m.mu.conns = make(map[*slaveConn]struct{})
	return m, nil
}

// Run listens on ListenAddr and serves slaves until ctx ends; then it closes the listener
// and every slave connection and returns nil once all of its goroutines have exited. It
// returns an error if it cannot listen or the listener fails. Call it at most once.
func (m *Master) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("replication: Master.Run called twice")
	}
	ln, err := m.listen(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("replication: listen %s: %w", m.opts.ListenAddr, err)
	}
	addr := ln.Addr().String()
	m.addr.Store(&addr)
	close(m.ready)
	m.log.Info().Str("addr", addr).Bool("secret", len(m.opts.Secret) > 0).Msg("HA listener started")
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	// One warning per period for refused connections: a peer that connects in a loop must
	// not flood the log (refused counts them all).
	refusedLog := m.log.Sample(&zerolog.BurstSampler{Burst: 1, Period: peerLogPeriod})
	var refused int64
	var wg sync.WaitGroup
	var runErr error
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				runErr = fmt.Errorf("replication: accept on %s: %w", addr, err)
			}
			break
		}
		// Only this loop adds to served, so the check cannot be raced past the cap.
		if int(m.served.Load()) >= m.opts.MaxConnections {
			refused++
			refusedLog.Warn().Str("addr", c.RemoteAddr().String()).Int("max_connections", m.opts.MaxConnections).
				Int64("refused", refused).Msg("HA connection refused: too many connections")
			c.Close()
			continue
		}
		m.served.Add(1)
		wg.Go(func() {
			defer m.served.Add(-1)
			m.serve(ctx, c)
		})
	}
	ln.Close()
	m.closeSlaveConns()
	wg.Wait()
	m.log.Info().Str("addr", addr).Err(runErr).Msg("HA listener stopped")
	return runErr
}

// ListenFunc opens the HA listener on addr, as net.ListenConfig.Listen does for "tcp".
type ListenFunc = func(ctx context.Context, addr string) (net.Listener, error)

// routedListens holds, by store, what RouteListen installed.
var routedListens sync.Map // *storage.Store -> *listenRoute

// listenRoute is a pointer so that remove deletes its own entry only (funcs do not compare).
type listenRoute struct{ listen ListenFunc }

// RouteListen makes the master serving store listen through listen instead of TCP, until
// remove is called: the simulation (internal/sim) serves HA over its in-memory network this
// way, since a socket cannot run on a testing/synctest bubble's clock. Install it before Run.
func RouteListen(store *storage.Store, listen ListenFunc) (remove func()) {
	r := &listenRoute{listen: listen}
	routedListens.Store(store, r)
	return func() { routedListens.CompareAndDelete(store, r) }
}

// listen opens the HA listener: through RouteListen's route for the store, else TCP.
func (m *Master) listen(ctx context.Context) (net.Listener, error) {
	if r, ok := routedListens.Load(m.store); ok {
		return r.(*listenRoute).listen(ctx, m.opts.ListenAddr)
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", m.opts.ListenAddr)
}

// Ready is closed once the listener is bound; Addr is valid from then on.
func (m *Master) Ready() <-chan struct{} { return m.ready }

// Addr returns the bound HA address (host:port), or "" before Ready.
func (m *Master) Addr() string {
	if p := m.addr.Load(); p != nil {
		return *p
	}
	return ""
}

// Notify tells the connection writers that the log grew, so they send at once instead of at
// their next TransferWaitInterval check (RocketMQ notifyTransferSome). It never blocks; the
// broker may call it after every append. WaitForAck calls it.
func (m *Master) Notify() {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for sc := range m.mu.conns {
		select {
		case sc.wake <- struct{}{}:
		default:
		}
	}
}

// WaitForAck blocks until a connected slave has acknowledged the CommitLog up to offset (the
// end offset of a sender's message): group transfer, one acknowledgement releases every
// waiter it covers. Only the latest report of a slave connected now counts, and a report is
// only taken if it is within what the master sent that slave. It returns nil at once if a
// connected slave already has offset; ErrNoSlave if no slave is connected (even if one that
// left had acknowledged offset) or the best one is more than SlaveFallBehindMax behind
// (SLAVE_NOT_AVAILABLE); an error wrapping ErrSlaveTimeout after SyncFlushTimeout
// (FLUSH_SLAVE_TIMEOUT); ctx.Err() if ctx ends first.
func (m *Master) WaitForAck(ctx context.Context, offset int64) error {
	w, err := m.gt.add(offset, m.opts.SlaveFallBehindMax)
	if err != nil || w == nil {
		return err
	}
	m.Notify()
	t := time.NewTimer(m.opts.SyncFlushTimeout)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
		if m.gt.remove(w) {
			return nil
		}
		return fmt.Errorf("%w: offset %d not acknowledged within %v", ErrSlaveTimeout, offset, m.opts.SyncFlushTimeout)
	case <-ctx.Done():
		if m.gt.remove(w) {
			return nil
		}
		return ctx.Err()
	}
}

// SetSyncStateSet makes WaitForAck wait for every slave of ids (broker ids, the master's own
// left out) instead of the best one: RocketMQ 5's allAckInSyncStateSet over a SyncStateSet.
// With an empty set every offset counts as acknowledged (the master alone is the set); nil
// goes back to the best connected slave. Slaves must name themselves (RequireIdentity).
func (m *Master) SetSyncStateSet(ids []int64) { m.gt.setRequired(ids) }

// SlaveAckOffset returns the acknowledgement WaitForAck goes by: the highest latest report
// among the slaves connected now, 0 with none. Unlike RocketMQ's push2SlaveMaxOffset it goes
// down when the best slave leaves or reports less.
func (m *Master) SlaveAckOffset() int64 { return m.gt.acked() }

// Slaves lists the connected slaves.
func (m *Master) Slaves() []SlaveInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SlaveInfo, 0, len(m.mu.conns))
	for sc := range m.mu.conns {
		out = append(out, SlaveInfo{Addr: sc.addr, AckOffset: sc.ack.Load(), BrokerID: sc.brokerID,
			TransferFrom: sc.from.Load(), BytesPerSecond: sc.flow.perSecond(time.Now())})
	}
	return out
}

// closeSlaveConns closes every slave connection; their goroutines exit and the slaves
// reconnect. Run uses it on shutdown; tests use it to cut the network.
func (m *Master) closeSlaveConns() {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for sc := range m.mu.conns {
		sc.conn.Close()
	}
}

// serve runs one slave connection: with a Secret it runs the handshake first; it reads the
// slave's first report, then runs a report reader (a goroutine) and the block writer (here)
// until either fails or ctx ends.
func (m *Master) serve(ctx context.Context, raw net.Conn) {
	defer raw.Close()
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	c := raw
	if m.opts.TLSConfig != nil {
		tc, err := tlsHandshake(tls.Server(raw, m.opts.TLSConfig), m.opts.HandshakeTimeout)
		if err != nil {
			if ctx.Err() == nil {
				m.peerLog.Warn().Err(err).Str("addr", raw.RemoteAddr().String()).Msg("HA peer refused: TLS handshake failed")
			}
			return
		}
		c = tc
	}
	sc := &slaveConn{
		id:   peerID(m.lastID.Add(1)),
		conn: c, addr: c.RemoteAddr().String(),
		wake: make(chan struct{}, 1), gone: make(chan struct{}),
	}
	log := m.peerLog.With().Str("addr", sc.addr).Logger()

	if len(m.opts.Secret) > 0 {
		if err := masterHandshake(c, m.opts.Secret, m.opts.HandshakeTimeout); err != nil {
			if ctx.Err() == nil {
				log.Warn().Err(err).Msg("HA peer refused")
			}
			return
		}
	}
	if m.opts.RequireIdentity {
		var id [identityBytes]byte
		err := readFull(c, id[:], m.opts.HandshakeTimeout)
		if err == nil {
			sc.brokerID, err = parseIdentity(id[:])
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn().Err(err).Msg("HA peer refused: no broker id")
			}
			return
		}
		log = log.With().Int64("broker_id", sc.brokerID).Logger()
	}
	var buf [reportBytes]byte
	if err := readFull(c, buf[:], m.opts.HousekeepingInterval); err != nil {
		if ctx.Err() == nil {
			log.Warn().Err(err).Msg("slave sent no offset report")
		}
		return
	}
	from := parseReport(buf[:])
	if err := checkReport(from, m.store.MinPhyOffset(), m.store.MaxPhyOffset()); err != nil {
		log.Error().Err(err).Int64("phy_offset", from).Msg("cannot serve slave")
		return
	}
	sc.ack.Store(from)
	sc.sent.Store(from)
	sc.from.Store(from)
	m.mu.Lock()
	m.mu.conns[sc] = struct{}{}
	m.mu.Unlock()
	m.gt.connect(sc.id, sc.brokerID, from)
	log.Info().Int64("phy_offset", from).Msg("slave connected")

	var wg sync.WaitGroup
	var readErr error
	wg.Go(func() {
		defer close(sc.gone)
		readErr = m.readReports(sc)
		c.Close() // the writer may be blocked in a write
	})
	writeErr := m.writeBlocks(ctx, sc, from)
	c.Close()
	wg.Wait()

	m.gt.disconnect(sc.id)
	m.mu.Lock()
	delete(m.mu.conns, sc)
	m.mu.Unlock()
	if ctx.Err() != nil {
		log.Info().Int64("phy_offset", sc.ack.Load()).Msg("slave disconnected at shutdown")
		return
	}
	if errors.Is(readErr, ErrProtocol) {
		log.Error().Err(readErr).Msg("slave closed: its report cannot be true")
		return
	}
	log.Warn().AnErr("read_err", readErr).AnErr("write_err", writeErr).
		Int64("phy_offset", sc.ack.Load()).Msg("slave disconnected")
}

// readReports reads the slave's offset reports until the connection fails or the slave is
// silent for HousekeepingInterval (it reports at least every SendHeartbeatInterval).
func (m *Master) readReports(sc *slaveConn) error {
	var buf [reportBytes]byte
	for {
		if err := readFull(sc.conn, buf[:], m.opts.HousekeepingInterval); err != nil {
			return err
		}
		off := parseReport(buf[:])
		if err := checkAck(off, sc.sent.Load()); err != nil {
			return err
		}
		sc.ack.Store(off)
		m.gt.report(sc.id, off)
	}
}

// writeBlocks streams the CommitLog from offset next in blocks of at most
// TransferBatchBytes, and an empty block after SendHeartbeatInterval without one. It
// returns when a write fails, the report reader exits or ctx ends.
//
// A slave that named itself (controller mode) gets the master's confirm offset after every
// header, and an empty block as soon as it moved, so that it shows its consumers no more than
// the master does.
func (m *Master) writeBlocks(ctx context.Context, sc *slaveConn, next int64) error {
	n := headerBytes
	if sc.brokerID > 0 {
		n += confirmBytes
	}
	hdr := make([]byte, n)
	lastWrite := time.Now()
	lastConfirm := int64(-1)
	timer := time.NewTimer(m.opts.TransferWaitInterval)
	defer timer.Stop()
	for {
		if next < m.store.MaxPhyOffset() {
			n, err := m.sendBlock(sc, hdr, next)
			if err != nil {
				return err
			}
			next += int64(n)
			lastWrite = time.Now()
			sc.flow.add(n, lastWrite)
			continue
		}
		idle := time.Since(lastWrite)
		confirm := m.store.ConfirmOffset()
		if idle >= m.opts.SendHeartbeatInterval || sc.brokerID > 0 && confirm != lastConfirm {
			putHeader(hdr, next, 0)
			if sc.brokerID > 0 {
				putConfirm(hdr[headerBytes:], confirm)
				lastConfirm = confirm
			}
			if err := writeAll(sc.conn, net.Buffers{hdr}, m.opts.HousekeepingInterval); err != nil {
				return err
			}
			lastWrite = time.Now()
			continue
		}
		timer.Reset(min(m.opts.TransferWaitInterval, m.opts.SendHeartbeatInterval-idle))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sc.gone:
			return nil
		case <-sc.wake:
		case <-timer.C:
		}
	}
}

// sendBlock writes one block from offset and returns its body size.
func (m *Master) sendBlock(sc *slaveConn, hdr []byte, offset int64) (int, error) {
	v, err := m.store.ReadCommitLog(offset, m.opts.TransferBatchBytes)
	if err != nil {
		return 0, fmt.Errorf("read CommitLog at %d: %w", offset, err)
	}
	defer v.Release()
	if len(v.Data) == 0 {
		return 0, fmt.Errorf("%w: CommitLog empty at %d below its end %d", ErrProtocol, offset, m.store.MaxPhyOffset())
	}
	putHeader(hdr, offset, len(v.Data))
	if len(hdr) > headerBytes {
		putConfirm(hdr[headerBytes:], m.store.ConfirmOffset())
	}
	// Before the write: a fast slave may report the block before writeAll returns.
	sc.sent.Store(offset + int64(len(v.Data)))
	return len(v.Data), writeAll(sc.conn, net.Buffers{hdr, v.Data}, m.opts.HousekeepingInterval)
}

// readFull reads len(b) bytes within timeout.
func readFull(c net.Conn, b []byte, timeout time.Duration) error {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := io.ReadFull(c, b)
	return err
}

// writeAll writes bufs (writev) within timeout.
func writeAll(c net.Conn, bufs net.Buffers, timeout time.Duration) error {
	if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := bufs.WriteTo(c)
	return err
}
