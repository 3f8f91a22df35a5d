package producer

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/client"
)

// Unique message ids (UNIQ_KEY, docs/protocol.md §9.5): 32 hex characters,
//
//	upper-case hex of [IPv4 (4 bytes, random when none) | pid int16 | 0 int32]   20 chars
//	lower-case hex of [ms since the start of the month (local time) int32 | counter int16]  12 chars
//
// The official Go client writes seconds*1000 and a counter under a mutex, so more than 65,536
// ids in one second repeat. Java writes milliseconds. Here the (milliseconds, counter) pair is
// one 64-bit state advanced with compare-and-swap to max(previous+1, now<<16): ids of one
// process are strictly increasing and never repeat, without a lock, and the time part runs
// ahead of the clock only while more than 65,536 ids are made in one millisecond.

var uniqPrefix = sync.OnceValue(func() string {
	var b [10]byte
	ip := client.LocalIPv4Bytes()
	if ip == nil {
		binary.BigEndian.PutUint32(b[:4], rand.Uint32())
	} else {
		copy(b[:4], ip)
	}
	binary.BigEndian.PutUint16(b[4:], uint16(os.Getpid()))
	return strings.ToUpper(hex.EncodeToString(b[:]))
})

var uniqState atomic.Uint64 // unix ms << 16 | counter

// monthSpan is [start, next) of a month in unix ms; month caches the current one.
type monthSpan struct{ start, next int64 }

var month atomic.Pointer[monthSpan]

func monthStart(ms int64) int64 {
	if m := month.Load(); m != nil && ms >= m.start && ms < m.next {
		return m.start
	}
	t := time.UnixMilli(ms)
	s := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.Local)
	m := &monthSpan{start: s.UnixMilli(), next: s.AddDate(0, 1, 0).UnixMilli()}
	month.Store(m)
	return m.start
}

// uniqIDBytes is the length of a UNIQ_KEY.
const uniqIDBytes = 32

// newUniqID returns a new UNIQ_KEY.
func newUniqID() string { return uniqIDAt(time.Now().UnixMilli()) }

func uniqIDAt(nowMS int64) string {
	var b [uniqIDBytes]byte
	return string(appendUniqIDAt(b[:0], nowMS))
}

// appendUniqID appends a new UNIQ_KEY to dst, for a caller that writes it into a longer string.
func appendUniqID(dst []byte) []byte { return appendUniqIDAt(dst, time.Now().UnixMilli()) }

func appendUniqIDAt(dst []byte, nowMS int64) []byte {
	var s uint64
	for {
		old := uniqState.Load()
		s = max(old+1, uint64(nowMS)<<16)
		if uniqState.CompareAndSwap(old, s) {
			break
		}
	}
	ms := int64(s >> 16)
	diff := uint32(ms - monthStart(ms))
	dst = append(dst, uniqPrefix()...)
	var tail [6]byte
	binary.BigEndian.PutUint32(tail[:4], diff)
	binary.BigEndian.PutUint16(tail[4:], uint16(s))
	return hex.AppendEncode(dst, tail[:])
}
