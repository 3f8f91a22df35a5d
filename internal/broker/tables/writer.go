package tables

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Metadata persistence.
//
// Subscription groups and consumer offsets are each one JSON file under
// <store>/config, rewritten whole (storage.WriteJSONFile); topics are topics.json and a
// journal of the changes since it was written (journal.go). RocketMQ rewrites the file inside
// every request that changes a table; with thousands of new groups in one heartbeat that is
// thousands of whole-file writes and fsyncs of a growing file. Here a request changes the table
// in memory and marks it dirty; one writer goroutine per broker (Writer.Run, one of the
// broker's runners) writes each dirty table once per pass, from a snapshot taken then. A pass
// runs when a change wakes the writer, at most once per metaPersistGap, so a burst of changes
// costs about one write per table; and every FlushConsumerOffsetInterval (RocketMQ's
// flushConsumerOffsetInterval), which is how consumer offsets, changed by every
// commit and marked dirty without a wake-up, reach the disk, and how a failed write is retried.
// The last pass runs when Run's context ends, and the broker's Close writes every table
// (FlushAll). The delay offsets (delayOffset.json) are internal/broker/schedule's, which writes
// them itself.
//
// Topic and group changes call changed (mark and wake); offset changes call markDirty. A
// request that changes many entries (a heartbeat bringing many groups) may mark them dirty one
// by one and call changed once at the end, so the burst is one pass.
//
// A change is thus on disk a few milliseconds after it is made, not before the request is
// answered, except for topic changes: those wait for the pass that writes them, and the name
// servers learn of them before the answer too (Topics.Changed).

// file names one metadata file.
type file uint32

const (
	fileTopics file = 1 << iota
	fileGroups
	fileOffsets

	fileAll = fileTopics | fileGroups | fileOffsets
)

// metaPersistGap is the least time between two passes of the writer woken by changes: changes
// made meanwhile share the next pass.
const metaPersistGap = 5 * time.Millisecond

// metaErrorLogEvery rate-limits the writer's error log while a write keeps failing (the
// table stays dirty and is retried every pass).
const metaErrorLogEvery = 10 * time.Second

// Writer is the broker's metadata writer.
type Writer struct {
	log      zerolog.Logger
	interval time.Duration // FlushConsumerOffsetInterval
	dirty    atomic.Uint32 // file bits changed since their last write
	wake     chan struct{} // capacity 1: a pending wake-up

	// The tables it writes, set by Load once they are loaded.
	topics  *Topics
	groups  *Groups
	offsets *Offsets

	// writes counts files written: topics, groups, offsets (tests assert coalescing).
	writes [3]atomic.Int64
}

func newWriter(cfg Config) *Writer {
	return &Writer{log: cfg.Log, interval: cfg.FlushInterval, wake: make(chan struct{}, 1)}
}

// markDirty notes a change for the writer's next pass, at the latest the periodic one. It
// never blocks; hot paths (offset commits) call it.
func (w *Writer) markDirty(t file) { w.dirty.Or(uint32(t)) }

// changed notes a change and wakes the writer. It never blocks.
func (w *Writer) changed(t file) {
	w.dirty.Or(uint32(t))
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start makes topic changes wait for the pass that writes them from now on, before Run's
// goroutine is under way: the broker calls it when it starts taking requests, so that a topic
// created between then and Run's first instruction is on disk before it is answered. Changes
// made before (loading, services attaching) do not wait: nothing would write them yet.
func (w *Writer) Start() { w.topics.durable.Start() }

// Run is the writer: a pass whenever woken (at most every metaPersistGap) and every
// FlushConsumerOffsetInterval, and a last pass when ctx ends. It calls Start itself.
func (w *Writer) Run(ctx context.Context) error {
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	gap := time.NewTimer(metaPersistGap)
	defer gap.Stop()
	var lastErrLog time.Time
	w.Start()
	for {
		select {
		case <-ctx.Done():
			w.logError(w.flush(w.takeDirty()), &lastErrLog)
			w.topics.durable.Stop()
			return nil
		case <-w.wake:
		case <-tick.C:
		}
		w.logError(w.flush(w.takeDirty()), &lastErrLog)
		// Changes made while we pause are written together by the next pass.
		gap.Reset(metaPersistGap)
		select {
		case <-ctx.Done():
		case <-gap.C:
		}
	}
}

// takeDirty returns the dirty tables and clears them. A change made after this is marked again
// and written by a later pass; a change made before is in the snapshot flush takes next.
func (w *Writer) takeDirty() file { return file(w.dirty.Swap(0)) }

// logError logs a failed pass, at most once per metaErrorLogEvery while failures repeat (the
// tables stay dirty and every later pass retries them).
func (w *Writer) logError(err error, last *time.Time) {
	if err == nil || time.Since(*last) < metaErrorLogEvery {
		return
	}
	*last = time.Now()
	w.log.Error().Err(err).Msg("persist metadata failed, will retry")
}

// FlushAll writes every metadata table, dirty or not, topics.json whole: a table loaded from
// disk and never changed is rewritten whole, as RocketMQ's shutdown persists every
// ConfigManager. Call it only after Run has returned (the broker's Close).
func (w *Writer) FlushAll() error {
	w.topics.compactNext()
	return w.flush(fileAll | w.takeDirty())
}

// flush writes the tables in t and marks those that failed dirty again. Only the writer
// goroutine calls it while Run runs, and FlushAll after Run has returned, so two flushes never
// overlap and a file is never replaced by an older snapshot of its table.
func (w *Writer) flush(t file) error {
	var errs []error
	for i, table := range []file{fileTopics, fileGroups, fileOffsets} {
		if t&table == 0 {
			continue
		}
		if err := w.persist(table); err != nil {
			w.markDirty(table)
			errs = append(errs, err)
			continue
		}
		w.writes[i].Add(1)
	}
	return errors.Join(errs...)
}

// FileWrites is the number of times each metadata file was written so far (tests assert
// that a burst of changes costs about one write per file).
func (w *Writer) FileWrites() (topics, groups, offsets int64) {
	return w.writes[0].Load(), w.writes[1].Load(), w.writes[2].Load()
}

// persist writes one table's file from a snapshot taken now.
func (w *Writer) persist(t file) error {
	switch t {
	case fileTopics:
		return w.topics.persist()
	case fileGroups:
		return w.groups.persist()
	case fileOffsets:
		return w.offsets.persist()
	}
	return fmt.Errorf("broker: unknown metadata table %d", t)
}
