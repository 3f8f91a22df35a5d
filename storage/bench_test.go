package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/rs/zerolog"
)

// Benchmarks write under MQ_BENCH_DIR if set (a real disk for fsync numbers), else a temp
// dir. MQ_BENCH_RECOVERY_MB sizes BenchmarkRecovery's log (default 64).

const benchSegBytes = 64 << 20

func benchDir(b *testing.B) string {
	if d := os.Getenv("MQ_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchOptions(b *testing.B) Options {
	nop := zerolog.Nop()
	return Options{Dir: benchDir(b), SegmentBytes: benchSegBytes, Logger: &nop,
		DeleteWhen: "04", CleanResourceInterval: time.Hour}
}

func reportRate(b *testing.B, msgs int, start time.Time) {
	el := time.Since(start).Seconds()
	if el > 0 {
		b.ReportMetric(float64(msgs)/el, "msgs/s")
	}
}

// BenchmarkRawMmapWrite is the baseline: sequential copies into a mapped file, rolling to a new
// file when full, nothing else.
func BenchmarkRawMmapWrite(b *testing.B) {
	for _, size := range []int{100, 1024, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			dir := benchDir(b)
			buf := make([]byte, size)
			var m mmap.MMap
			var f *os.File
			pos, n := benchSegBytes, 0
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if pos+size > benchSegBytes {
					if m != nil {
						m.Unmap()
						f.Close()
					}
					var err error
					f, err = os.Create(filepath.Join(dir, strconv.Itoa(n)))
					if err != nil {
						b.Fatal(err)
					}
					n++
					if err := preallocate(f, 0, benchSegBytes); err != nil {
						b.Fatal(err)
					}
					if m, err = mmap.MapRegion(f, benchSegBytes, mmap.RDWR, 0, 0); err != nil {
						b.Fatal(err)
					}
					pos = 0
				}
				copy(m[pos:], buf)
				pos += size
			}
			b.StopTimer()
			reportRate(b, b.N, start)
			if m != nil {
				m.Unmap()
				f.Close()
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkAppend measures async-flush appends (flusher and dispatcher running).
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024, 4096} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/appenders=%d", sizeName(size), writers), func(b *testing.B) {
				benchAppend(b, benchOptions(b), size, writers)
			})
		}
	}
}

// BenchmarkAppendSyncFlush measures sync-flush appends with group commit. appenders=1 is one
// fsync per message: the baseline for the group-commit gain.
func BenchmarkAppendSyncFlush(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("1KiB/appenders=%d", writers), func(b *testing.B) {
			opts := benchOptions(b)
			opts.FlushDiskType = SyncFlush
			benchAppend(b, opts, 1024, writers)
		})
	}
}

func benchAppend(b *testing.B, opts Options, size, writers int) {
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	runStore(b, s)
	defer s.Close()
	msgs := make([]*Message, writers)
	for i := range msgs {
		msgs[i] = testMsg("BenchTopic", int32(i%4), string(make([]byte, size)), map[string]string{"TAGS": "TagA", "KEYS": "k1"})
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := msgs[w]
			for range n {
				if _, err := s.PutMessage(m); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportRate(b, b.N, start)
	if st := s.Stats(); opts.FlushDiskType == SyncFlush && st.CommitLogFsyncs > 0 {
		b.ReportMetric(float64(b.N)/float64(st.CommitLogFsyncs), "msgs/fsync")
	}
}

// BenchmarkGetMessage reads 32-message batches of 1 KiB messages.
func BenchmarkGetMessage(b *testing.B) {
	s, err := Open(benchOptions(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 20000
	m := testMsg("BenchTopic", 0, string(make([]byte, 1024)), map[string]string{"TAGS": "TagA"})
	for range n {
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	off, bytes := int64(0), 0
	for range b.N {
		r := s.GetMessage("g", "BenchTopic", 0, off, 32, 0, nil)
		if r.Status != Found || len(r.Messages) != 32 {
			b.Fatalf("status %v, %d messages", r.Status, len(r.Messages))
		}
		bytes += r.TotalBytes
		off = r.NextBeginOffset
		if off+32 > n {
			off = 0
		}
		r.Release()
	}
	b.StopTimer()
	reportRate(b, b.N*32, start)
	b.ReportMetric(float64(bytes)/time.Since(start).Seconds()/(1<<20), "MB/s")
}

// BenchmarkRecovery measures Open of a log of MQ_BENCH_RECOVERY_MB (default 64 MiB) of 1 KiB
// messages: after a clean close, and after a crash (abort marker; scan from the checkpoint,
// and with no checkpoint, the whole log).
func BenchmarkRecovery(b *testing.B) {
	mb := 64
	if v := os.Getenv("MQ_BENCH_RECOVERY_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	opts := benchOptions(b)
	opts.SegmentBytes = 64 << 20
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	m := testMsg("BenchTopic", 0, string(make([]byte, 1024)), map[string]string{"TAGS": "TagA"})
	for s.MaxPhyOffset() < int64(mb)<<20 {
		m.QueueID = int32(s.MaxPhyOffset() % 8)
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("log of %d MiB", s.MaxPhyOffset()>>20)
	b.Run("clean", func(b *testing.B) {
		for range b.N {
			s, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	for _, noCkpt := range []bool{false, true} {
		name := "crash"
		if noCkpt {
			name = "crash-no-checkpoint"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				os.WriteFile(filepath.Join(opts.Dir, "abort"), nil, 0o644)
				if noCkpt {
					os.Remove(filepath.Join(opts.Dir, "checkpoint"))
				}
				b.StartTimer()
				s, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if rep := s.RecoveryReport(); rep.Clean {
					b.Fatal("not a crash recovery")
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkManyQueues measures, with 10,000 queues of one message each (MQ_BENCH_QUEUES),
// one checkpoint after one message was appended: "periodic" (the queue under
// FlushConsumeQueueLeastPages is left unsynced), "thorough" (it is synced, and the manifest
// rewritten); "manifest" the manifest's share of that (including the sort of the queues);
// and "open" a clean Open of the store.
func BenchmarkManyQueues(b *testing.B) {
	n := 10000
	if v := os.Getenv("MQ_BENCH_QUEUES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	opts := benchOptions(b)
	opts.ConsumeQueueUnits = 1024
	opts.FlushIntervalConsumeQueue = time.Hour // the benchmark checkpoints
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := s.PutMessage(testMsg(fmt.Sprintf("T%d", i/8), int32(i%8), "x", nil)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.dispatchAvailable(nil); err != nil {
		b.Fatal(err)
	}
	if err := s.flushQueuesAndCheckpoint(true); err != nil {
		b.Fatal(err)
	}
	for _, thorough := range []bool{false, true} {
		name := "periodic"
		if thorough {
			name = "thorough"
		}
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				if _, err := s.PutMessage(testMsg("T0", int32(i%8), "x", nil)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.dispatchAvailable(nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.flushQueuesAndCheckpoint(thorough); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// What the manifest alone costs a checkpoint that changed it: gathering the entries,
	// encoding, writing and syncing the file.
	b.Run("manifest", func(b *testing.B) {
		s.ckptMu.Lock()
		defer s.ckptMu.Unlock()
		for range b.N {
			s.manifestLast = s.manifestLast[:0]
			m := &s.manifestScratch
			m.queues = m.queues[:0]
			for _, q := range s.cqs.all() {
				m.addQueue(q)
			}
			if err := s.writeManifestLocked(false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(s.manifestLast)), "bytes")
	})
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("open", func(b *testing.B) {
		for range b.N {
			s, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if rep := s.RecoveryReport(); len(rep.Actions) != 0 {
				b.Fatalf("actions %q", rep.Actions)
			}
			s.Close()
			b.StartTimer()
		}
	})
}

// BenchmarkAppendRoll appends 1 KiB messages from one goroutine into 4 MiB segments, so a run
// crosses many segment boundaries, and reports the page faults the appending thread took per
// million bytes appended and its CPU time per append, user and system (getrusage
// RUSAGE_THREAD, Linux only): what the allocator does ahead of the writer on its own goroutine
// is not counted, nor time the appender waits for a CPU on a busy machine.
func BenchmarkAppendRoll(b *testing.B) {
	opts := benchOptions(b)
	opts.SegmentBytes = 4 << 20
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	runStore(b, s)
	defer s.Close()
	const size = 1024
	m := testMsg("BenchTopic", 0, string(make([]byte, size)), map[string]string{"TAGS": "TagA", "KEYS": "k1"})
	// Give the allocator its first chance, as a running broker has had.
	if _, err := s.PutMessage(m); err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	f0, ok := threadFaults()
	start := time.Now()
	for range b.N {
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRate(b, b.N, start)
	if f1, _ := threadFaults(); ok {
		mb := float64(b.N) * size / 1e6
		b.ReportMetric(float64(f1.min-f0.min)/mb, "minflt/MB")
		b.ReportMetric(float64(f1.maj-f0.maj)/mb, "majflt/MB")
		b.ReportMetric(float64(f1.cpu-f0.cpu)/float64(b.N), "cpu-ns/op")
	}
}
