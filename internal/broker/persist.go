package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Metadata persistence.
//
// Subscription groups and consumer offsets are each one JSON file under
// <store>/config, rewritten whole (storage.WriteJSONFile); topics are topics.json and a
// journal of the changes since it was written (topic_journal.go). RocketMQ rewrites the file inside
// every request that changes a table; with thousands of new groups in one heartbeat that is
// thousands of whole-file writes and fsyncs of a growing file. Here a request changes the table
// in memory and marks it dirty; one writer goroutine per broker (metaWriter.run, one of the
// broker's runners) writes each dirty table once per pass, from a snapshot taken then. A pass
// runs when a change wakes the writer, at most once per metaPersistGap, so a burst of changes
// costs about one write per table; and every FlushConsumerOffsetInterval (RocketMQ's
// flushConsumerOffsetInterval), which is how consumer offsets, changed by every
// commit and marked dirty without a wake-up, reach the disk, and how a failed write is retried.
// The last pass runs when Run's context ends, and Close writes every table. The delay offsets
// (delayOffset.json) are internal/broker/schedule's, which writes them itself.
//
// Topic and group changes call changed (mark and wake); offset changes call markDirty. A
// request that changes many entries (a heartbeat bringing many groups) may mark them dirty one
// by one and call changed once at the end, so the burst is one pass.
//
// A change is thus on disk a few milliseconds after it is made, not before the request is
// answered, except for topic changes: those wait for the pass that writes them, and the name
// servers learn of them before the answer too (topicConfigManager.changed).

// metaTable names one metadata file.
type metaTable uint32

const (
	metaTopics metaTable = 1 << iota
	metaGroups
	metaOffsets

	metaAll = metaTopics | metaGroups | metaOffsets
)

// metaPersistGap is the least time between two passes of the writer woken by changes: changes
// made meanwhile share the next pass.
const metaPersistGap = 5 * time.Millisecond

// metaErrorLogEvery rate-limits the writer's error log while a write keeps failing (the
// table stays dirty and is retried every pass).
const metaErrorLogEvery = 10 * time.Second

// metaWriter is the broker's metadata writer.
type metaWriter struct {
	b     *Broker
	dirty atomic.Uint32 // metaTable bits changed since their last write
	wake  chan struct{} // capacity 1: a pending wake-up

	// writes counts files written: topics, groups, offsets (tests assert coalescing).
	writes [3]atomic.Int64
}

func newMetaWriter(b *Broker) *metaWriter {
	return &metaWriter{b: b, wake: make(chan struct{}, 1)}
}

// markDirty notes a change for the writer's next pass, at the latest the periodic one. It
// never blocks; hot paths (offset commits) call it.
func (w *metaWriter) markDirty(t metaTable) { w.dirty.Or(uint32(t)) }

// changed notes a change and wakes the writer. It never blocks.
func (w *metaWriter) changed(t metaTable) {
	w.dirty.Or(uint32(t))
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the writer: a pass whenever woken (at most every metaPersistGap) and every
// FlushConsumerOffsetInterval, and a last pass when ctx ends.
func (w *metaWriter) run(ctx context.Context) error {
	tick := time.NewTicker(w.b.opts.Periods.FlushConsumerOffsetInterval)
	defer tick.Stop()
	gap := time.NewTimer(metaPersistGap)
	defer gap.Stop()
	var lastErrLog time.Time
	w.b.topics.durable.Start()
	for {
		select {
		case <-ctx.Done():
			w.logError(w.flush(w.takeDirty()), &lastErrLog)
			w.b.topics.durable.Stop()
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
func (w *metaWriter) takeDirty() metaTable { return metaTable(w.dirty.Swap(0)) }

// logError logs a failed pass, at most once per metaErrorLogEvery while failures repeat (the
// tables stay dirty and every later pass retries them).
func (w *metaWriter) logError(err error, last *time.Time) {
	if err == nil || time.Since(*last) < metaErrorLogEvery {
		return
	}
	*last = time.Now()
	w.b.log.Error().Err(err).Msg("persist metadata failed, will retry")
}

// flush writes the tables in t and marks those that failed dirty again. Only the writer
// goroutine calls it while Run runs, and Close after Run has returned, so two flushes never
// overlap and a file is never replaced by an older snapshot of its table.
func (w *metaWriter) flush(t metaTable) error {
	var errs []error
	for i, table := range []metaTable{metaTopics, metaGroups, metaOffsets} {
		if t&table == 0 {
			continue
		}
		if err := w.b.persistTable(table); err != nil {
			w.markDirty(table)
			errs = append(errs, err)
			continue
		}
		w.writes[i].Add(1)
	}
	return errors.Join(errs...)
}

// fileWrites is the number of metadata files written so far (tests).
func (w *metaWriter) fileWrites() int64 {
	var n int64
	for i := range w.writes {
		n += w.writes[i].Load()
	}
	return n
}

// persistTable writes one table's file from a snapshot taken now.
func (b *Broker) persistTable(t metaTable) error {
	switch t {
	case metaTopics:
		return b.topics.persist()
	case metaGroups:
		return b.groups.persist()
	case metaOffsets:
		return b.offsets.persist()
	}
	return fmt.Errorf("broker: unknown metadata table %d", t)
}
