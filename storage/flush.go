package storage

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// groupCommit lets many sync-flush appenders wait on one fsync. An appender enqueues a waiter
// for its end offset and wakes the flusher; the flusher takes every queued waiter, fsyncs the
// log once up to at least the highest of their offsets, and then releases them. A waiter is
// therefore released only after the fsync that covers its offset has returned.
type groupCommit struct {
	mu      sync.Mutex
	waiters []*flushWaiter // mu guards
	spare   []*flushWaiter // mu guards; the flusher's other buffer
	wake    chan struct{}
	pool    sync.Pool
	// released counts waiters released as durable.
	released atomic.Int64

	// callbacks counts the goroutines running waitAsync callbacks; closed (under mu) stops new
	// ones, so that close can wait for them.
	callbacks sync.WaitGroup
	closed    bool
}

type flushWaiter struct {
	offset int64
	done   chan bool // buffered 1: true = durable, false = failed
	timer  *time.Timer
	// cb, for waitAsync, receives the outcome instead of done; claimed makes it run once
	// whether the release or the timeout comes first.
	cb      func(durable bool)
	claimed atomic.Bool
}

// finish delivers an async waiter's outcome unless it was delivered already.
func (w *flushWaiter) finish(durable bool) {
	if w.claimed.CompareAndSwap(false, true) {
		w.timer.Stop()
		w.cb(durable)
	}
}

func (g *groupCommit) init() {
	g.wake = make(chan struct{}, 1)
	g.pool.New = func() any { return &flushWaiter{done: make(chan bool, 1)} }
}

// wait blocks until offset is durable (true), the flush failed or the store closed (false),
// or timeout passes (false).
func (g *groupCommit) wait(offset int64, timeout time.Duration) bool {
	w := g.pool.Get().(*flushWaiter)
	w.offset = offset
	g.mu.Lock()
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	if w.timer == nil {
		w.timer = time.NewTimer(timeout)
	} else {
		w.timer.Reset(timeout)
	}
	select {
	case ok := <-w.done:
		w.timer.Stop()
		g.pool.Put(w)
		return ok
	case <-w.timer.C:
		// The flusher may still signal w.done (it is buffered); w is not reused.
		return false
	}
}

// waitAsync is wait for a caller that must not block: cb runs once with the outcome, on a
// goroutine of the store's, once the fsync covering offset returned, or the flush failed for
// good or the store closed (false), or timeout passed (false). A send served this way holds no
// worker while its fsync is pending, so one fsync covers every sender waiting, however few the
// workers (RocketMQ 4.9 answers a SYNC_FLUSH send from the flush's future the same way).
func (g *groupCommit) waitAsync(offset int64, timeout time.Duration, cb func(durable bool)) {
	w := &flushWaiter{offset: offset, cb: cb}
	w.timer = time.AfterFunc(timeout, func() {
		if g.track() {
			defer g.callbacks.Done()
			w.finish(false)
		}
	})
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.waiters = append(g.waiters, w)
	}
	g.mu.Unlock()
	if closed {
		w.finish(false)
		return
	}
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// track counts one more callback goroutine, unless close has begun.
func (g *groupCommit) track() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.callbacks.Add(1)
	return true
}

// close releases every waiter for good (durable up to flushed) and waits for the async
// callbacks still running.
func (g *groupCommit) close(flushed int64) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.release(flushed, true, false)
	g.callbacks.Wait()
}

// take swaps out the queued waiters.
func (g *groupCommit) take() []*flushWaiter {
	g.mu.Lock()
	ws := g.waiters
	g.waiters = g.spare[:0]
	g.mu.Unlock()
	return ws
}

func (g *groupCommit) give(ws []*flushWaiter) {
	clear(ws)
	g.mu.Lock()
	g.spare = ws[:0]
	g.mu.Unlock()
}

// release releases the queued waiters whose offset is at most flushed. The others stay
// queued for the next flush (and the flusher is woken again if rewake), or, if final, are
// released as failed.
func (g *groupCommit) release(flushed int64, final, rewake bool) (released int) {
	ws := g.take()
	var keep []*flushWaiter
	var async []asyncOutcome
	for _, w := range ws {
		switch {
		case w.offset <= flushed:
			released++
			if w.cb != nil {
				async = append(async, asyncOutcome{w, true})
			} else {
				w.done <- true
			}
		case final:
			if w.cb != nil {
				async = append(async, asyncOutcome{w, false})
			} else {
				w.done <- false
			}
		default:
			keep = append(keep, w)
		}
	}
	g.give(ws)
	g.finishAsync(async, final)
	g.released.Add(int64(released))
	if len(keep) > 0 {
		g.mu.Lock()
		g.waiters = append(g.waiters, keep...)
		g.mu.Unlock()
		if rewake {
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
	}
	return released
}

type asyncOutcome struct {
	w       *flushWaiter
	durable bool
}

// finishAsync runs the callbacks of async waiters released by one flush, off the flusher's
// goroutine (a callback answers a send, which in-process may run the caller's own callback),
// or on this one at close.
func (g *groupCommit) finishAsync(outs []asyncOutcome, final bool) {
	if len(outs) == 0 {
		return
	}
	run := func() {
		for _, o := range outs {
			o.w.finish(o.durable)
		}
	}
	if final || !g.track() {
		run()
		return
	}
	go func() {
		defer g.callbacks.Done()
		run()
	}()
}

// queued returns the number of waiters queued.
func (g *groupCommit) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// runFlusher flushes the CommitLog: in AsyncFlush mode every FlushIntervalCommitLog; in
// SyncFlush mode whenever appenders wait (group commit), and on the same period otherwise.
func (s *Store) runFlusher(ctx context.Context) error {
	t := time.NewTicker(s.opts.FlushIntervalCommitLog)
	defer t.Stop()
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	var active int              // sync appenders seen at the end of the last round
	var lastFsync time.Duration // how long the last fsync took
	for {
		select {
		case <-ctx.Done():
			_, err := s.flushCommitLog()
			s.gc.release(s.cl.flushedPhy.Load(), true, false)
			if err != nil {
				s.log.Error().Err(err).Msg("final commitlog flush failed")
			}
			return nil
		case <-s.gc.wake:
			s.gatherBatch(ctx, gather, active, lastFsync)
		case <-t.C:
		}
		start := time.Now()
		_, err := s.flushCommitLog()
		lastFsync = time.Since(start)
		if err != nil {
			// Waiters beyond the durable offset wait for a later round (or time out).
			s.log.Error().Err(err).Msg("commitlog flush failed")
		} else if s.flushBound {
			// What the fsync made durable becomes visible before its appenders are answered,
			// as an append is visible before its answer without the bound.
			s.dispatchAfterAppend()
		}
		active = s.gc.release(s.cl.flushedPhy.Load(), false, err == nil)
		active += s.gc.queued()
	}
}

// gatherBatch delays a group commit briefly so that it covers every active appender: the
// appenders released by the previous fsync need a moment to append again, and an fsync
// started at once would cover only those that arrived during the last one, so batches would
// alternate between large and small. It waits until want waiters are queued, or a quarter of
// the last fsync's duration (at most 1 ms) has passed; a lone appender does not wait.
func (s *Store) gatherBatch(ctx context.Context, timer *time.Timer, want int, lastFsync time.Duration) {
	runtime.Gosched()
	if want <= 1 || s.gc.queued() >= want {
		return
	}
	timer.Reset(min(lastFsync/4, time.Millisecond))
	defer timer.Stop()
	for s.gc.queued() < want {
		select {
		case <-s.gc.wake:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// flushCommitLog fsyncs the CommitLog and records the store time of the flushed data.
func (s *Store) flushCommitLog() (int64, error) {
	off, err := s.cl.flush()
	if err == nil {
		if sg := s.cl.segs.last(); sg != nil {
			if ts := sg.lastTimestamp.Load(); ts > 0 {
				s.flushedTs.Store(ts)
			}
		}
	}
	return off, err
}
