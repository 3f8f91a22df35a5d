package remoting

import (
	"sync"
	"time"
)

// responseFuture is one request waiting for its response. Futures are reused: a request makes
// none of its own. Whoever removes a future from the table (take, complete, failOwner, scan,
// failAll) owns its completion, and only that one completes it, so it completes exactly once;
// once completed, or taken back by its requester, it is released for the next request.
type responseFuture struct {
	opaque   int32
	owner    uint64 // channel or connection id, so a closing connection fails only its own
	deadline time.Time
	// cb receives an async request's outcome; nil for a sync request, whose outcome goes to
	// done, where its requester waits.
	cb   func(*Command, error)
	done chan futureResult // buffered: completing never waits for the requester
	// timer bounds a sync wait whose context has no deadline; made on first need and kept.
	timer *time.Timer
}

type futureResult struct {
	resp *Command
	err  error
}

// responseTable matches responses to requests by opaque (the seeds' responseTable). A periodic
// scan fails requests whose deadline passed, so async callers hear of a timeout.
type responseTable struct {
	mu sync.Mutex
	m  map[int32]*responseFuture

	// futures are this table's released futures. The pool is the table's own, not global, so
	// that a future's channel and timer stay with the transport that made them: inside a
	// testing/synctest bubble, a wait on a channel made outside it would never let the fake
	// clock advance.
	futures sync.Pool
}

func newResponseTable() *responseTable {
	t := &responseTable{m: make(map[int32]*responseFuture)}
	t.futures.New = func() any { return &responseFuture{done: make(chan futureResult, 1)} }
	return t
}

// acquire returns a future for a request about to be added; cb nil makes it a sync one.
func (t *responseTable) acquire(opaque int32, owner uint64, deadline time.Time, cb func(*Command, error)) *responseFuture {
	f := t.futures.Get().(*responseFuture)
	f.opaque, f.owner, f.deadline, f.cb = opaque, owner, deadline, cb
	return f
}

// release makes f reusable. Only f's owner calls it, once nothing else can reach f: it is out
// of the table and its done channel is empty.
func (t *responseTable) release(f *responseFuture) {
	f.cb = nil
	t.futures.Put(f)
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

// finish delivers the outcome of f, which the caller removed from the table. An async future
// is released before its callback runs (the callback may take long); a sync one goes to its
// requester, and the send is the last use of f here: the requester may reuse it at once.
func (t *responseTable) finish(f *responseFuture, resp *Command, err error) {
	if cb := f.cb; cb != nil {
		t.release(f)
		cb(resp, err)
		return
	}
	f.done <- futureResult{resp, err}
}

// complete delivers resp to its waiter; it reports false for an unknown opaque (a late answer,
// or one to a one-way request), which callers drop.
func (t *responseTable) complete(resp *Command) bool {
	f := t.take(resp.Opaque)
	if f == nil {
		return false
	}
	t.finish(f, resp, nil)
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
		t.finish(f, nil, err)
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
		t.finish(f, nil, ErrTimeout)
	}
}

func (t *responseTable) failAll(err error) {
	t.mu.Lock()
	all := t.m
	t.m = make(map[int32]*responseFuture)
	t.mu.Unlock()
	for _, f := range all {
		t.finish(f, nil, err)
	}
}
