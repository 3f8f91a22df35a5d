package pop

import (
	"sync"
	"unsafe"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// A POP answer's body is its messages as stored, as RocketMQ 5's PopMessageProcessor hands
// them out: the records of the topic itself are lent from the store, the way a pull's are,
// and only those read from the pop retry topic or by a FIFO pop are re-encoded, with their
// receipt handle as the POP_CK property. A client builds the others' handles from the answer's
// header (startOffsetInfo, popTime, invisibleTime, reviveQid), as 5.x's clients do.

// maxPooledPopBuf is the largest answer buffer kept for reuse.
const maxPooledPopBuf = 1 << 20

var popBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// lend adds res's records to the answer as they are stored; res is released once the answer
// is written (or by release).
func (o *popOut) lend(res *storage.GetResult) {
	o.held = append(o.held, res)
	o.pieces = append(o.pieces, res.Messages...)
	o.size += res.TotalBytes
}

// addEncoded adds re-encoded records to the answer.
func (o *popOut) addEncoded(b []byte) {
	if len(b) > 0 {
		o.pieces = append(o.pieces, b)
		o.size += len(b)
		o.encoded = true
	}
}

// release gives back the store results the answer lends from.
func (o *popOut) release() {
	for _, r := range o.held {
		r.Release()
	}
	o.held = nil
}

// setBody makes the answer's pieces resp's body: lent as they lie when they are one run of
// one mapping, else copied into a pooled buffer.
func (o *popOut) setBody(resp *remoting.Command) {
	if !o.encoded {
		if b, ok := oneRun(o.pieces, o.size); ok {
			resp.Body = b
			resp.OnWritten = o.release
			return
		}
	}
	bp := popBufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, p := range o.pieces {
		buf = append(buf, p...)
	}
	o.release()
	*bp = buf
	resp.Body = buf
	resp.OnWritten = func() {
		if cap(*bp) <= maxPooledPopBuf {
			popBufPool.Put(bp)
		}
	}
}

// oneRun returns pieces as one slice when each begins where the previous ends. Only records
// lent from the store are passed: a run never spans Go heap objects.
func oneRun(pieces [][]byte, total int) ([]byte, bool) {
	if len(pieces) == 0 {
		return nil, false
	}
	for i := 1; i < len(pieces); i++ {
		prev, cur := pieces[i-1], pieces[i]
		if len(prev) == 0 || len(cur) == 0 ||
			uintptr(unsafe.Pointer(unsafe.SliceData(prev)))+uintptr(len(prev)) != uintptr(unsafe.Pointer(unsafe.SliceData(cur))) {
			return nil, false
		}
	}
	return unsafe.Slice(unsafe.SliceData(pieces[0]), total), true
}
