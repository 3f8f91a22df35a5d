package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// Store is the message store: a CommitLog, its ConsumeQueues and key index, and the services
// that flush, dispatch, checkpoint and delete old data.
//
// All methods are safe for concurrent use. Open recovers and starts nothing; Run runs the
// background services; Close stops them and closes the files.
type Store struct {
	opts Options
	log  zerolog.Logger

	cl  *commitLog
	cqs queueTable
	idx *indexService // nil when the index is disabled
	gc  groupCommit

	// reputFrom is the CommitLog offset the dispatcher reads next. dispatchMu serialises
	// dispatching (the dispatcher goroutine, recovery and Close).
	reputFrom atomic.Int64
	// confirmed bounds dispatching (SetConfirmOffset): records ending past it stay invisible
	// to consumers. math.MaxInt64 when nothing bounds it.
	confirmed atomic.Int64
	// flushBound bounds dispatching by the flushed offset too: SyncFlush without
	// ReadUnCommitted. The flusher dispatches what each fsync makes durable.
	flushBound bool
	dispatchMu sync.Mutex
	// dispatchStopped is set, under dispatchMu, before Close unmaps the files: an appender
	// that wrote before Close must not dispatch after it.
	dispatchStopped bool
	// idxFailed counts records whose keys could not be indexed since idxFailLoggedAt, when
	// that was last logged. dispatchMu guards both.
	idxFailed       int64
	idxFailLoggedAt time.Time
	lastCQTs        atomic.Int64 // store time of the last dispatched message
	dispatched      atomic.Int64 // records dispatched since Open
	badUnits        atomic.Int64 // ConsumeQueue units skipped by reads because they disagree with the log
	ckptMu          sync.Mutex
	flushedTs       atomic.Int64 // store time of the last message in the flushed CommitLog
	// The manifest being built, its encoding and the last one written (manifest.go). ckptMu
	// guards them.
	manifestScratch manifest
	manifestBuf     []byte
	manifestLast    []byte

	// memBytes is AccessMessageInMemoryMaxRatio percent of physical memory (0: unknown).
	memBytes int64

	report      RecoveryReport
	epochs      epochFile
	deleteHours map[int]bool
	manualClean atomic.Int32
	// diskFull is RocketMQ's DISK_FULL running flag: set by a retention round that measured
	// the disk above DiskSpaceWarningLevelRatio, cleared by one that measured it at or below.
	// diskUsed is that round's measure (float64 bits), for the refusal's remark.
	diskFull atomic.Bool
	diskUsed atomic.Uint64
	lockFile *os.File

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	runMu     sync.Mutex
	runCancel context.CancelFunc // runMu guards
	runDone   chan struct{}      // runMu guards; closed when Run returns
	running   bool               // runMu guards
}

func (s *Store) abortPath() string      { return filepath.Join(s.opts.Dir, "abort") }
func (s *Store) checkpointPath() string { return filepath.Join(s.opts.Dir, "checkpoint") }

// ConfigPath returns the path of a metadata file in the store's config directory
// (<store>/config/<name>), for use with WriteJSONFile and ReadJSONFile.
func (s *Store) ConfigPath(name string) string { return filepath.Join(s.opts.Dir, "config", name) }

// Open opens (creating if needed) the store in opts.Dir and recovers it: after a clean
// shutdown it loads quickly; after a crash (the abort marker is present) it validates the
// CommitLog from the last checkpoint, cuts a torn or garbage tail, and makes every
// ConsumeQueue and the index agree with the CommitLog. RecoveryReport says what it did.
// Open starts no goroutines.
func Open(opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	hours, _ := parseDeleteWhen(opts.DeleteWhen)
	log := opts.Logger.With().Str("component", "storage").Logger()
	s := &Store{opts: opts, log: log, deleteHours: hours}
	s.confirmed.Store(math.MaxInt64)
	s.flushBound = opts.FlushDiskType == SyncFlush && !opts.ReadUnCommitted
	s.cl = newCommitLog(&s.opts, log)
	s.cqs = queueTable{root: filepath.Join(opts.Dir, "consumequeue"), units: opts.ConsumeQueueUnits,
		ops: opts.ops, queues: make(map[string]map[int32]*consumeQueue)}
	if !opts.DisableIndex {
		s.idx = &indexService{dir: filepath.Join(opts.Dir, "index"), slotNum: opts.MaxHashSlotNum,
			entryNum: opts.MaxIndexNum, ops: opts.ops, log: log, clock: opts.clock}
	}
	s.gc.init()
	if total := physicalMemory(); total > 0 {
		s.memBytes = total / 100 * int64(opts.AccessMessageInMemoryMaxRatio)
	}
	for _, d := range []string{opts.Dir, filepath.Join(opts.Dir, "config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	lf, err := lockDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s (is another store using it?): %w", opts.Dir, err)
	}
	s.lockFile = lf
	start := time.Now()
	if err := s.loadEpochs(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := os.WriteFile(s.abortPath(), nil, 0o644); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.report.Duration = time.Since(start)
	ev := log.Info()
	if !s.report.Clean {
		ev = log.Warn()
	}
	ev.Bool("clean", s.report.Clean).Int64("min_phy_offset", s.cl.minPhy.Load()).
		Int64("max_phy_offset", s.cl.maxPhy.Load()).Int("queues", len(s.cqs.all())).
		Strs("actions", s.report.Actions).Int64("took_ms", s.report.Duration.Milliseconds()).Msg("store opened")
	return s, nil
}

// closeFiles releases every mapping and the directory lock.
func (s *Store) closeFiles() {
	s.cl.close()
	for _, q := range s.cqs.all() {
		q.segs.closeAll()
	}
	if s.idx != nil {
		s.idx.close()
	}
	if s.lockFile != nil {
		s.lockFile.Close()
	}
}

// RecoveryReport returns what Open found and did.
func (s *Store) RecoveryReport() RecoveryReport { return s.report }

// Run runs the background services (CommitLog flusher or group commit, dispatcher,
// ConsumeQueue flush and checkpoint, retention) until ctx ends or Close is called, and returns
// after all of them have exited. It returns nil on a normal stop. Call it at most once.
func (s *Store) Run(ctx context.Context) error {
	s.runMu.Lock()
	if s.running || s.closed.Load() {
		s.runMu.Unlock()
		return errors.New("storage: Run called twice or after Close")
	}
	ctx, cancel := context.WithCancel(ctx)
	s.running = true
	s.runCancel = cancel
	s.runDone = make(chan struct{})
	done := s.runDone
	s.runMu.Unlock()
	defer close(done)
	defer cancel()

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.runFlusher(ctx) })
	g.Go(func() error { return s.runDispatcher(ctx) })
	g.Go(func() error { return s.runCheckpointer(ctx) })
	g.Go(func() error { return s.runRetention(ctx) })
	g.Go(func() error { return s.runAllocator(ctx) })
	s.log.Info().Str("flush", string(s.opts.FlushDiskType)).Msg("store services started")
	err := g.Wait()
	s.log.Info().Msg("store services stopped")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Close stops Run (if running) and waits for it, dispatches what is left, flushes everything,
// writes the checkpoint, removes the abort marker and releases the files. Mapped bytes held by
// readers (GetResult, CommitLogView) stay valid until they are released. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.runMu.Lock()
		cancel, done := s.runCancel, s.runDone
		s.runMu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
		// Wait for appends in flight, then refuse new ones.
		s.cl.mu.Lock()
		s.cl.closed = true
		s.cl.mu.Unlock()
		var errs []error
		// Flush first: with flushBound only what the flush made durable is dispatched.
		if _, err := s.cl.flush(); err != nil {
			errs = append(errs, err)
		}
		if _, err := s.dispatchAvailable(nil); err != nil {
			errs = append(errs, err)
		}
		s.gc.close(s.cl.flushedPhy.Load())
		if err := s.flushQueuesAndCheckpoint(true); err != nil {
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			if err := os.Remove(s.abortPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		s.cl.dropNext()
		s.dispatchMu.Lock()
		s.dispatchStopped = true
		s.dispatchMu.Unlock()
		s.closeFiles()
		s.closeErr = errors.Join(errs...)
		s.log.Info().Err(s.closeErr).Msg("store closed")
	})
	return s.closeErr
}

// flushQueuesAndCheckpoint flushes ConsumeQueues and the index, then records in the
// checkpoint, and in the manifest, what is now durable. Unless thorough, a queue with less than
// FlushConsumeQueueLeastPages written since its last flush is left for a later one, and the
// checkpoint's dispatched offset stays at or before its first unflushed unit: recovery
// dispatches that unit again.
func (s *Store) flushQueuesAndCheckpoint(thorough bool) error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	dispatched := s.reputFrom.Load()
	cqTs := s.lastCQTs.Load()
	least := int64(s.opts.FlushConsumeQueueLeastPages) * cqPageBytes
	if thorough || least < 0 {
		least = 0
	}
	var errs []error
	var idx []manifestIndex
	m := &s.manifestScratch
	m.queues = m.queues[:0]
	for _, q := range s.cqs.all() {
		floor, err := q.flushLeast(least)
		if err != nil {
			errs = append(errs, err)
		}
		if floor >= 0 {
			dispatched = min(dispatched, floor)
		}
		m.addQueue(q)
	}
	if s.idx != nil {
		var err error
		if idx, err = s.idx.flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c := checkpoint{
		PhysicMsgTimestamp: s.flushedTs.Load(),
		LogicsMsgTimestamp: cqTs,
		IndexMsgTimestamp:  cqTs,
		PhysicOffset:       s.cl.flushedPhy.Load(),
		DispatchedOffset:   dispatched,
	}
	if err := writeCheckpoint(s.checkpointPath(), c, s.opts.ops); err != nil {
		return err
	}
	m.index = idx
	return s.writeManifestLocked(false)
}

// cqPageBytes is the page FlushConsumeQueueLeastPages counts (RocketMQ's OS_PAGE_SIZE).
const cqPageBytes = 4 << 10

// runAllocator creates the next CommitLog segment ahead of need and prefaults ahead of the
// writer (commitLog.warm): woken by the appenders (a roll, a prefaultChunk crossed), and on a
// tick (the segment loaded at Open, a retry after a failure).
func (s *Store) runAllocator(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var lastErr time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.cl.allocWake:
		case <-t.C: // retries after a failure (a full disk)
		}
		if err := s.cl.preallocate(); err != nil && time.Since(lastErr) > 10*time.Second {
			// The appender will try again itself and report the failure.
			s.log.Warn().Err(err).Msg("cannot create the next commitlog segment ahead")
			lastErr = time.Now()
		}
		s.cl.warm(ctx)
	}
}

// runCheckpointer flushes ConsumeQueues and the index and writes the checkpoint every
// FlushIntervalConsumeQueue, thoroughly every FlushConsumeQueueThoroughInterval.
func (s *Store) runCheckpointer(ctx context.Context) error {
	t := time.NewTicker(s.opts.FlushIntervalConsumeQueue)
	defer t.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			thorough := now.Sub(lastThorough) >= s.opts.FlushConsumeQueueThoroughInterval
			if thorough {
				lastThorough = now
			}
			if err := s.flushQueuesAndCheckpoint(thorough); err != nil {
				s.log.Error().Err(err).Msg("consume queue flush or checkpoint failed")
			}
		}
	}
}

// MaxPhyOffset returns the CommitLog offset one past the last complete record.
func (s *Store) MaxPhyOffset() int64 { return s.cl.maxPhy.Load() }

// MinPhyOffset returns the offset of the first CommitLog byte still on disk.
func (s *Store) MinPhyOffset() int64 { return s.cl.minPhy.Load() }

// FlushedPhyOffset returns the CommitLog offset up to which data is known durable.
func (s *Store) FlushedPhyOffset() int64 { return s.cl.flushedPhy.Load() }

// DispatchedPhyOffset returns the CommitLog offset up to which messages are in the
// ConsumeQueues.
func (s *Store) DispatchedPhyOffset() int64 { return s.reputFrom.Load() }

// Stats are counters and positions for monitoring (RocketMQ's runtime info).
type Stats struct {
	MinPhyOffset, MaxPhyOffset int64
	FlushedPhyOffset           int64
	DispatchedPhyOffset        int64
	CommitLogSegments          int
	ConsumeQueues              int
	// CommitLogFsyncs counts flush rounds that synced CommitLog data since Open.
	CommitLogFsyncs int64
	// SyncFlushReleased counts sync-flush appenders released by group commit since Open.
	SyncFlushReleased int64
	// DispatchedRecords counts records dispatched since Open.
	DispatchedRecords int64
	// BadUnitsSkipped counts ConsumeQueue units GetMessage skipped because the record they
	// point to does not match them (a damaged ConsumeQueue; non-zero calls for a rebuild).
	BadUnitsSkipped int64
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		MinPhyOffset:        s.cl.minPhy.Load(),
		MaxPhyOffset:        s.cl.maxPhy.Load(),
		FlushedPhyOffset:    s.cl.flushedPhy.Load(),
		DispatchedPhyOffset: s.reputFrom.Load(),
		CommitLogSegments:   s.cl.segs.len(),
		ConsumeQueues:       len(s.cqs.all()),
		CommitLogFsyncs:     s.cl.fsyncs.Load(),
		SyncFlushReleased:   s.gc.released.Load(),
		DispatchedRecords:   s.dispatched.Load(),
		BadUnitsSkipped:     s.badUnits.Load(),
	}
}
