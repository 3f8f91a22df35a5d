package replication

import (
	"sync"
	"time"
)

// flow counts the bytes a connection carries by whole second, RocketMQ's FlowMonitor behind
// HARuntimeInfo's transferredByteInSecond. It is touched once per block, not per message.
type flow struct {
	mu   sync.Mutex
	sec  int64 // the unix second cur counts
	cur  int64
	last int64 // the bytes of second sec-1
}

// add counts n bytes at now.
func (f *flow) add(n int, now time.Time) {
	s := now.Unix()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case s == f.sec:
	case s == f.sec+1:
		f.last, f.cur, f.sec = f.cur, 0, s
	default: // a silent second or more: the last whole one carried nothing
		f.last, f.cur, f.sec = 0, 0, s
	}
	f.cur += int64(n)
}

// perSecond is what the last whole second before now carried.
func (f *flow) perSecond(now time.Time) int64 {
	s := now.Unix()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch s {
	case f.sec:
		return f.last
	case f.sec + 1:
		return f.cur
	}
	return 0
}
