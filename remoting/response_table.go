package remoting

import (
	"sync"
	"time"
)

// responseFuture is one request waiting for its response.
type responseFuture struct {
	opaque   int32
	owner    uint64 // channel or connection id, so a closing connection fails only its own
	deadline time.Time
	once     sync.Once
	cb       func(*Command, error)
}

func (f *responseFuture) complete(resp *Command, err error) {
	f.once.Do(func() { f.cb(resp, err) })
}

// responseTable matches responses to requests by opaque (the seeds' responseTable). A periodic
// scan fails requests whose deadline passed, so async callers hear of a timeout.
type responseTable struct {
	mu sync.Mutex
	m  map[int32]*responseFuture
}

func newResponseTable() *responseTable {
	return &responseTable{m: make(map[int32]*responseFuture)}
}

func (t *responseTable) add(f *responseFuture) {
	t.mu.Lock()
	t.m[f.opaque] = f
	t.mu.Unlock()
}

// take removes and returns the future for opaque, or nil.
func (t *responseTable) take(opaque int32) *responseFuture {
	t.mu.Lock()
	f := t.m[opaque]
	if f != nil {
		delete(t.m, opaque)
	}
	t.mu.Unlock()
	return f
}

// complete delivers resp to its waiter; it reports false for an unknown opaque (a late answer,
// or one to a one-way request), which callers drop.
func (t *responseTable) complete(resp *Command) bool {
	f := t.take(resp.Opaque)
	if f == nil {
		return false
	}
	f.complete(resp, nil)
	return true
}

// failOwner fails every request sent on the given connection.
func (t *responseTable) failOwner(owner uint64, err error) {
	var failed []*responseFuture
	t.mu.Lock()
	for op, f := range t.m {
		if f.owner == owner {
			delete(t.m, op)
			failed = append(failed, f)
		}
	}
	t.mu.Unlock()
	for _, f := range failed {
		f.complete(nil, err)
	}
}

// scan fails requests whose deadline is before now.
func (t *responseTable) scan(now time.Time) {
	var expired []*responseFuture
	t.mu.Lock()
	for op, f := range t.m {
		if !f.deadline.IsZero() && now.After(f.deadline) {
			delete(t.m, op)
			expired = append(expired, f)
		}
	}
	t.mu.Unlock()
	for _, f := range expired {
		f.complete(nil, ErrTimeout)
	}
}

func (t *responseTable) failAll(err error) {
	t.mu.Lock()
	all := t.m
	t.m = make(map[int32]*responseFuture)
	t.mu.Unlock()
	for _, f := range all {
		f.complete(nil, err)
	}
}
