package remoting

import (
	"context"
	"time"
)

// DefaultInvokeTimeout bounds a request whose context has no deadline.
const DefaultInvokeTimeout = 3 * time.Second

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultInvokeTimeout)
}

// invokeSync sends req with send and waits for the response registered in table under owner.
func invokeSync(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command) (*Command, error) {
	type result struct {
		resp *Command
		err  error
	}
	done := make(chan result, 1)
	f := &responseFuture{opaque: req.Opaque, owner: owner, deadline: deadlineOf(ctx),
		cb: func(resp *Command, err error) { done <- result{resp, err} }}
	table.add(f)
	if err := send(req); err != nil {
		table.take(req.Opaque)
		return nil, err
	}
	var timer <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(DefaultInvokeTimeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		table.take(req.Opaque)
		if ctx.Err() == context.DeadlineExceeded {
			return nil, ErrTimeout
		}
		return nil, ctx.Err()
	case <-timer:
		table.take(req.Opaque)
		return nil, ErrTimeout
	}
}

// invokeAsync sends req and arranges for cb to run once with the response or an error; the
// table's periodic scan delivers timeouts.
func invokeAsync(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command, cb func(*Command, error)) error {
	f := &responseFuture{opaque: req.Opaque, owner: owner, deadline: deadlineOf(ctx), cb: cb}
	table.add(f)
	if err := send(req); err != nil {
		// A failed write closes the connection, which may fail f before we take it back: cb
		// has its outcome then, and an error here too would finish the request twice.
		if table.take(req.Opaque) == nil {
			return nil
		}
		return err
	}
	return nil
}

// runScanner calls table.scan every interval until stop is closed.
func runScanner(table *responseTable, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			table.scan(now)
		}
	}
}
