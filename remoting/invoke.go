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

// InvokeSyncUntil sends req through tr bounded by the sooner of ctx's deadline and until (none
// when zero): with tr's InvokeSyncUntil when it is a DeadlineInvoker, else with a context
// derived for the call.
func InvokeSyncUntil(ctx context.Context, tr Transport, addr string, req *Command, until time.Time) (*Command, error) {
	if di, ok := tr.(DeadlineInvoker); ok {
		return di.InvokeSyncUntil(ctx, addr, req, until)
	}
	if d, ok := ctx.Deadline(); until.IsZero() || (ok && !d.After(until)) {
		return tr.InvokeSync(ctx, addr, req)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	return tr.InvokeSync(ctx, addr, req)
}

// InvokeAsyncUntil sends req through tr as InvokeAsync does, bounded by the sooner of ctx's
// deadline and until (none when zero): with tr's InvokeAsyncUntil when it is a
// DeadlineInvoker, else with a context derived for the call and cancelled with cb.
func InvokeAsyncUntil(ctx context.Context, tr Transport, addr string, req *Command, until time.Time, cb func(*Command, error)) error {
	if di, ok := tr.(DeadlineInvoker); ok {
		return di.InvokeAsyncUntil(ctx, addr, req, until, cb)
	}
	if d, ok := ctx.Deadline(); until.IsZero() || (ok && !d.After(until)) {
		return tr.InvokeAsync(ctx, addr, req, cb)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	err := tr.InvokeAsync(ctx, addr, req, func(resp *Command, err error) {
		cancel()
		cb(resp, err)
	})
	if err != nil {
		cancel()
	}
	return err
}

// invokeSync sends req with send and waits for the response registered in table under owner.
func invokeSync(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command) (*Command, error) {
	return invokeSyncUntil(ctx, table, owner, send, req, time.Time{})
}

// invokeSyncUntil is invokeSync bounded also by until, unless it is zero. A bound sooner than
// ctx's deadline (or with none) is kept by the future's pooled timer, so that a caller with a
// deadline of its own needs no derived context (InvokeSyncUntil).
func invokeSyncUntil(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command, until time.Time) (*Command, error) {
	deadline, hasDeadline := ctx.Deadline()
	var wait time.Duration // > 0: the timer, not ctx, ends the wait at deadline
	switch {
	case !until.IsZero() && (!hasDeadline || until.Before(deadline)):
		deadline, wait = until, max(time.Until(until), 1)
	case !hasDeadline:
		deadline, wait = time.Now().Add(DefaultInvokeTimeout), DefaultInvokeTimeout
	}
	f := table.acquire(req.Opaque, owner, deadline, nil)
	table.add(f)
	if err := send(req); err != nil {
		takeBack(table, f)
		return nil, err
	}
	var timeout <-chan time.Time
	if wait > 0 {
		if f.timer == nil {
			f.timer = time.NewTimer(wait)
		} else {
			f.timer.Reset(wait)
		}
		timeout = f.timer.C
	}
	var err error
	select {
	case r := <-f.done:
		f.stopTimer()
		table.release(f)
		return r.resp, r.err
	case <-ctx.Done():
		err = ctx.Err()
		if err == context.DeadlineExceeded {
			err = ErrTimeout
		}
	case <-timeout:
		err = ErrTimeout
	}
	f.stopTimer()
	takeBack(table, f)
	return nil, err
}

// takeBack removes the requester's own f from table after a failed send or a timeout, and
// releases it when it was still there. When it was not, a completion owns it and may still
// send to its done channel: f is left to the garbage collector, never reused.
func takeBack(table *responseTable, f *responseFuture) {
	if table.take(f.opaque) == f {
		table.release(f)
	}
}

// stopTimer stops the timer of a sync wait so that the pooled timer starts its next wait
// clean. Since Go 1.23 no tick can be received after Stop; the drain keeps that true under
// GODEBUG=asynctimerchan=1 too.
func (f *responseFuture) stopTimer() {
	if f.timer != nil && !f.timer.Stop() {
		select {
		case <-f.timer.C:
		default:
		}
	}
}

// invokeAsync sends req and arranges for cb to run once with the response or an error; the
// table's periodic scan delivers timeouts.
func invokeAsync(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command, cb func(*Command, error)) error {
	return invokeAsyncUntil(ctx, table, owner, send, req, time.Time{}, cb)
}

// invokeAsyncUntil is invokeAsync bounded also by until, unless it is zero: the table's scan
// fails the request past the sooner of until and ctx's deadline.
func invokeAsyncUntil(ctx context.Context, table *responseTable, owner uint64, send func(*Command) error,
	req *Command, until time.Time, cb func(*Command, error)) error {
	deadline := deadlineOf(ctx)
	if !until.IsZero() {
		if d, ok := ctx.Deadline(); !ok || until.Before(d) {
			deadline = until
		}
	}
	f := table.acquire(req.Opaque, owner, deadline, cb)
	table.add(f)
	if err := send(req); err != nil {
		// A failed write closes the connection, which may fail f before we take it back: cb
		// has its outcome then, and an error here too would finish the request twice.
		if table.take(req.Opaque) != f {
			return nil
		}
		table.release(f)
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
