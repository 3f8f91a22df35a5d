package remoting

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// outFrame is one encoded frame on its way to a connection: the pooled header buffer and the body
// as the handler gave it (possibly lent from mapped storage, so never copied here).
type outFrame struct {
	hdr  *[]byte
	body []byte
	done func() // the command's OnWritten
}

func (f *outFrame) size() int { return len(*f.hdr) + len(f.body) }

func (f *outFrame) bufs() [][]byte {
	if len(f.body) == 0 {
		return [][]byte{*f.hdr}
	}
	return [][]byte{*f.hdr, f.body}
}

// release gives the header buffer back and tells the lender of the body that it is free.
func (f *outFrame) release() { releaseFrame(f.hdr, f.done) }

func releaseFrame(hdr *[]byte, done func()) {
	if cap(*hdr) <= 64<<10 { // do not pin a buffer grown by one huge header
		framePool.Put(hdr)
	}
	if done != nil {
		done()
	}
}

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// outbox bounds the bytes of one connection that gnet holds but has not sent. gnet's
// AsyncWritev queues without limit and copies whatever the socket does not take at once into
// the connection's outbound buffer, so a peer that never reads would grow it by every response.
// The outbox counts bytes handed to AsyncWritev whose callback has not run (queued) and the
// outbound buffer as last seen on the loop (outbound; it only shrinks between looks, so the sum
// never undercounts). Once the sum reaches the limit, frames wait here, uncopied and in order,
// and the server stops taking the connection's requests (over); the loop hands them to gnet as
// the outbound buffer drains, so gnet never holds more than the limit plus one frame.
type outbox struct {
	over atomic.Bool // frames wait, or the backlog is at the limit: take no more requests

	mu        sync.Mutex
	limit     int
	queued    int
	outbound  int
	held      []outFrame
	heldBytes int
	peak      int // the largest queued+outbound ever reached, for tests
	closed    bool

	// loopVec backs the buffers of a write on the loop (sendOnLoop, drain), which gnet does not
	// keep, so that such a write allocates nothing. Loop-only.
	loopVec [2][]byte
}

// loopBufs returns f's buffers in loopVec; doneLoopBufs lets go of them after the write.
// Loop-only.
func (o *outbox) loopBufs(f *outFrame) [][]byte {
	bufs := append(o.loopVec[:0], *f.hdr)
	if len(f.body) > 0 {
		bufs = append(bufs, f.body)
	}
	return bufs
}

func (o *outbox) doneLoopBufs() { o.loopVec = [2][]byte{} }

// send hands f to gnet, or holds it while the backlog is at the limit. Any goroutine.
func (o *outbox) send(sc *serverConn, f outFrame) error {
	n := f.size()
	o.mu.Lock()
	if done, err := o.refuseOrHoldLocked(sc, f); done {
		return err
	}
	o.queued += n
	o.peak = max(o.peak, o.queued+o.outbound)
	if o.queued+o.outbound >= o.limit {
		o.over.Store(true)
	}
	o.mu.Unlock()
	// The callback keeps only what it needs: it is allocated for every frame.
	hdr, done := f.hdr, f.done
	err := sc.c.AsyncWritev(f.bufs(), func(c gnet.Conn, err error) error {
		releaseFrame(hdr, done)
		sc.out.written(sc, c, n, err)
		return nil
	})
	if err != nil {
		o.mu.Lock()
		o.queued -= n
		o.mu.Unlock()
		f.release()
		return fmt.Errorf("%w: %v", ErrConnClosed, err)
	}
	return nil
}

// refuseOrHoldLocked takes f when it cannot go to gnet now: refused once the outbox is closed,
// held while frames are held or the backlog is at the limit. When it took f (done) it unlocked
// o.mu; otherwise o.mu is still held and f is the caller's to send.
func (o *outbox) refuseOrHoldLocked(sc *serverConn, f outFrame) (done bool, err error) {
	if o.closed {
		o.mu.Unlock()
		f.release()
		return true, ErrConnClosed
	}
	if len(o.held) > 0 || o.queued+o.outbound >= o.limit {
		o.holdLocked(sc, f)
		return true, nil
	}
	return false, nil
}

// holdLocked keeps f until the backlog drains, and unlocks o.mu.
func (o *outbox) holdLocked(sc *serverConn, f outFrame) {
	o.held = append(o.held, f)
	o.heldBytes += f.size()
	o.over.Store(true)
	o.mu.Unlock()
	// The callbacks that could drain the outbox may all have run already: only the poller is
	// sure to come back.
	sc.s.stalls.add(sc)
}

// sendOnLoop is send from the connection's own loop, where gnet takes the frame at once (into
// the socket, and what the socket does not take into the outbound buffer) with no task queued
// and no loop woken. While frames are held, f joins them instead. Loop-only.
func (o *outbox) sendOnLoop(sc *serverConn, c gnet.Conn, f outFrame) error {
	o.mu.Lock()
	if done, err := o.refuseOrHoldLocked(sc, f); done {
		return err
	}
	o.mu.Unlock()
	// A failed write closes the connection and runs OnClose: o.mu is not held.
	_, err := c.Writev(o.loopBufs(&f))
	o.doneLoopBufs()
	f.release()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConnClosed, err)
	}
	o.mu.Lock()
	if !o.closed {
		o.outbound = c.OutboundBuffered()
		o.peak = max(o.peak, o.queued+o.outbound)
		if o.queued+o.outbound >= o.limit {
			o.over.Store(true)
		}
	}
	o.mu.Unlock()
	return nil
}

// written accounts for a finished AsyncWritev of n bytes and, while over, moves held frames on
// and resumes reading once the backlog is under the limit. Loop-only (gnet runs the callback on
// the connection's loop).
func (o *outbox) written(sc *serverConn, c gnet.Conn, n int, err error) {
	o.mu.Lock()
	o.queued -= n
	if err != nil || o.closed {
		o.mu.Unlock()
		return
	}
	o.outbound = c.OutboundBuffered()
	o.mu.Unlock()
	if !o.over.Load() {
		return
	}
	if !o.drain(c) {
		sc.s.stalls.add(sc)
	} else if sc.paused {
		_ = c.Wake(nil) // OnTraffic takes the requests left unread
	}
}

// drain refreshes the outbound count, writes held frames while the backlog is under the limit,
// and reports whether it is under the limit with nothing held. Loop-only.
func (o *outbox) drain(c gnet.Conn) bool {
	o.mu.Lock()
	for !o.closed {
		o.outbound = c.OutboundBuffered()
		if len(o.held) == 0 || o.queued+o.outbound >= o.limit {
			break
		}
		f := o.held[0]
		o.held[0] = outFrame{}
		o.held = o.held[1:]
		if len(o.held) == 0 {
			o.held = nil // let the drained backing array go
		}
		o.heldBytes -= f.size()
		o.peak = max(o.peak, o.queued+o.outbound+f.size())
		o.mu.Unlock()
		// On the loop, Writev takes the frame at once (into the socket or the outbound
		// buffer). It may fail and close the connection, running OnClose: o.mu is not held.
		_, err := c.Writev(o.loopBufs(&f))
		o.doneLoopBufs()
		f.release()
		if err != nil {
			return false
		}
		o.mu.Lock()
	}
	over := o.closed || len(o.held) > 0 || o.queued+o.outbound >= o.limit
	o.over.Store(over)
	o.mu.Unlock()
	return !over
}

// close fails later sends and releases the held frames. Loop-only (OnClose).
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	held := o.held
	o.held, o.heldBytes = nil, 0
	o.mu.Unlock()
	for i := range held {
		held[i].release()
	}
}

// outboxStats is a snapshot of an outbox, for tests.
type outboxStats struct {
	queued, outbound, held, heldBytes, peak int
}

func (o *outbox) stats() outboxStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return outboxStats{o.queued, o.outbound, len(o.held), o.heldBytes, o.peak}
}

// Stalled connections are woken with a doubling period from stallPollMin to stallPollMax, so a
// briefly slow reader resumes at once while one that never reads costs a wake-up a tenth of a
// second.
const (
	stallPollMin = time.Millisecond
	stallPollMax = 100 * time.Millisecond
)

// stallPoller wakes connections whose outbox is over its limit. gnet tells nobody when a
// connection's outbound buffer drains, so the loop has to look: each wake-up runs OnTraffic,
// which drains the outbox and, once under the limit, takes the requests left unread.
type stallPoller struct {
	kick chan struct{}

	mu    sync.Mutex
	conns map[*serverConn]*stallState
}

type stallState struct {
	next  time.Time
	every time.Duration
}

func newStallPoller() stallPoller {
	return stallPoller{kick: make(chan struct{}, 1), conns: make(map[*serverConn]*stallState)}
}

// add starts polling sc; adding twice is a no-op. Any goroutine.
func (p *stallPoller) add(sc *serverConn) {
	if sc.stalled.Load() {
		return
	}
	p.mu.Lock()
	if _, ok := p.conns[sc]; !ok && !sc.closed.Load() {
		p.conns[sc] = &stallState{next: time.Now().Add(stallPollMin), every: stallPollMin}
		sc.stalled.Store(true)
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	p.mu.Unlock()
}

// remove stops polling sc. Cheap when sc is not polled, as OnTraffic calls it each time.
func (p *stallPoller) remove(sc *serverConn) {
	if !sc.stalled.Load() {
		return
	}
	p.mu.Lock()
	delete(p.conns, sc)
	sc.stalled.Store(false)
	p.mu.Unlock()
}

// run wakes due connections until stop is closed. The Server runs it for the length of Run.
func (p *stallPoller) run(stop <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		t.Reset(p.wakeDue(time.Now()))
		select {
		case <-stop:
			return
		case <-p.kick:
		case <-t.C:
		}
	}
}

// wakeDue wakes the connections whose turn came and returns how long until the next one.
func (p *stallPoller) wakeDue(now time.Time) time.Duration {
	var due []*serverConn
	wait := time.Hour // until add kicks
	p.mu.Lock()
	for sc, st := range p.conns {
		if sc.closed.Load() {
			delete(p.conns, sc)
			continue
		}
		if !now.Before(st.next) {
			due = append(due, sc)
			st.every = min(2*st.every, stallPollMax)
			st.next = now.Add(st.every)
		}
		wait = min(wait, st.next.Sub(now))
	}
	p.mu.Unlock()
	for _, sc := range due {
		_ = sc.c.Wake(nil)
	}
	return wait
}
