package broker

import (
	"sync"
	"unsafe"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// maxPooledPullBuf is the largest pull body buffer kept for reuse.
const maxPooledPullBuf = 1 << 20

var pullBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// setPullBody makes the stored records the response body. Records that lie back to back in one
// mapping (the usual case for a queue written by one producer) are lent as they are and the
// result is released once the transport wrote them; otherwise they are copied into one pooled
// buffer and the result is released at once.
func setPullBody(resp *remoting.Command, r *storage.GetResult) {
	if body, ok := contiguous(r.Messages, r.TotalBytes); ok {
		resp.Body = body
		resp.OnWritten = r.Release
		return
	}
	bp := pullBufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, m := range r.Messages {
		buf = append(buf, m...)
	}
	r.Release()
	*bp = buf
	resp.Body = buf
	resp.OnWritten = func() {
		if cap(*bp) <= maxPooledPullBuf {
			pullBufPool.Put(bp)
		}
	}
}

// contiguous returns msgs as one slice when each begins where the previous ends. The records
// are held (mapped and referenced) by the GetResult, so the joined slice covers only memory
// the result keeps valid; it is never Go heap memory.
func contiguous(msgs [][]byte, total int) ([]byte, bool) {
	switch len(msgs) {
	case 0:
		return nil, false
	case 1:
		return msgs[0], true
	}
	for i := 1; i < len(msgs); i++ {
		prev, cur := msgs[i-1], msgs[i]
		if len(prev) == 0 || len(cur) == 0 ||
			uintptr(unsafe.Pointer(unsafe.SliceData(prev)))+uintptr(len(prev)) != uintptr(unsafe.Pointer(unsafe.SliceData(cur))) {
			return nil, false
		}
	}
	return unsafe.Slice(unsafe.SliceData(msgs[0]), total), true
}
