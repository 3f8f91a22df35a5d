package remoting

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"
)

// clientWriteTimeout bounds one write to a server; a server that reads nothing for this long
// loses the connection.
const clientWriteTimeout = 30 * time.Second

// connWriter serializes the frames of one client connection and coalesces them: one goroutine
// at a time writes, and frames sent meanwhile wait in pending, copied, to leave with the
// writer's next write. A synchronous request writes at once when nobody is writing, so a lone
// caller pays one write and no hand-off; an asynchronous or one-way one only queues its frame
// and wakes the connection's flusher, so a caller sending in a loop fills whole writes
// instead of paying a write each (the server then reads them, and answers them, together).
type connWriter struct {
	nc       net.Conn
	maxBytes int // pending bytes over which senders wait for the writer
	// noWait makes senders queue past maxBytes instead of waiting: a server's workers must
	// not wait for a peer, and its reader stops reading instead (waitRoom).
	noWait bool
	// oneBuffer writes a frame's header and body as one buffer: on a TLS connection each
	// buffer of a vectored write is a record and a system call of its own.
	oneBuffer bool

	mu      sync.Mutex
	drained sync.Cond // signalled when pending is taken or the writer stops
	pending []byte
	spare   []byte
	hdr     []byte // the writer's header buffer for a frame written at once
	vec     [2][]byte
	bufs    net.Buffers // what the writer is writing, backed by vec
	writing bool        // a sender or the flusher is writing; others append to pending
	closed  bool
	err     error // why the connection failed, once it has

	kick chan struct{} // wakes the flusher
}

func newConnWriter(nc net.Conn, maxBytes int) *connWriter {
	w := &connWriter{nc: nc, maxBytes: maxBytes, kick: make(chan struct{}, 1)}
	_, w.oneBuffer = nc.(*tls.Conn)
	w.drained.L = &w.mu
	return w
}

// send writes cmd's frame, or queues it behind the write in progress. deferred queues it for
// the flusher even when nobody writes. It returns an error only when the connection is closed
// or the write failed; a queued frame is lost with the connection, and the requests waiting
// for answers are failed by its close.
func (w *connWriter) send(cmd *Command, deferred bool) error {
	w.mu.Lock()
	for !w.noWait && w.writing && len(w.pending) >= w.maxBytes && !w.closed {
		w.drained.Wait()
	}
	if w.closed {
		err := w.err
		w.mu.Unlock()
		if err == nil {
			return ErrConnClosed
		}
		return err
	}
	if w.writing || deferred {
		w.pending = AppendFrame(w.pending, cmd)
		if !w.writing {
			w.writing = true
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	if w.oneBuffer {
		w.hdr = AppendFrame(w.hdr[:0], cmd)
		w.bufs = append(w.vec[:0], w.hdr)
	} else {
		w.hdr = AppendFrameHeader(w.hdr[:0], cmd)
		w.bufs = append(w.vec[:0], w.hdr)
		if len(cmd.Body) > 0 {
			w.bufs = append(w.bufs, cmd.Body)
		}
	}
	w.mu.Unlock()
	err := w.write()
	w.mu.Lock()
	if cap(w.hdr) > 64<<10 {
		w.hdr = nil // do not pin a buffer grown by one huge header
	}
	return w.drainLocked(err)
}

// waitRoom waits while the frames queued behind the write in progress are over maxBytes; it
// reports false once the connection is closed.
func (w *connWriter) waitRoom() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing && len(w.pending) >= w.maxBytes && !w.closed {
		w.drained.Wait()
	}
	return !w.closed
}

// flush writes what is pending; the flusher calls it when kicked. An error means the
// connection failed.
func (w *connWriter) flush() error {
	w.mu.Lock()
	return w.drainLocked(nil)
}

// drainLocked writes pending until it is empty, then gives up the writer's part and unlocks
// w.mu. err is the outcome of the caller's own write.
func (w *connWriter) drainLocked(err error) error {
	for err == nil && len(w.pending) > 0 && !w.closed {
		// Two buffers take turns: the writer's, and pending, which senders fill meanwhile.
		buf := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.drained.Broadcast()
		w.mu.Unlock()
		w.bufs = append(w.vec[:0], buf)
		err = w.write()
		w.mu.Lock()
		if cap(buf) <= 2*w.maxBytes {
			w.spare = buf[:0]
		}
	}
	if err != nil && !w.closed {
		w.closed, w.err = true, err
		w.pending, w.spare = nil, nil
	}
	w.writing = false
	w.drained.Broadcast()
	w.mu.Unlock()
	return err
}

// write writes w.bufs, which only the writer touches; they point into w.vec, so that a write
// allocates nothing.
func (w *connWriter) write() error {
	_ = w.nc.SetWriteDeadline(time.Now().Add(clientWriteTimeout))
	_, err := w.bufs.WriteTo(w.nc)
	w.vec = [2][]byte{} // the frames are written: do not keep a caller's body
	if err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrConnClosed, w.nc.RemoteAddr(), err)
	}
	return nil
}

// close fails later sends and drops what is pending; it reports whether it was open.
func (w *connWriter) close() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.closed = true
	w.pending, w.spare = nil, nil
	w.drained.Broadcast()
	return true
}

func (w *connWriter) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}
