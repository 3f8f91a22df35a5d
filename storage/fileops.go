package storage

import (
	"os"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/mqgo/mq/internal/storagehook"
)

// fileOps are the file operations the store uses for its mapped files. Tests replace them to
// count fsyncs, block a flush, or inject a full disk or a failed mmap.
type fileOps struct {
	// sync makes f's written pages durable (fdatasync).
	sync func(f *os.File) error
	// allocate reserves the blocks of [off, off+n) of f so writes through the mapping there
	// cannot hit a full disk.
	allocate func(f *os.File, off, n int64) error
	// mmap maps size bytes of f read-write; unmap undoes it before f is closed.
	mmap  func(f *os.File, size int) (mmap.MMap, error)
	unmap func(f *os.File, m mmap.MMap) error
	// zero clears [off, off+n) of a mapped file (punching a hole where possible).
	zero func(f *os.File, data []byte, off, n int64) error
	// zeroFill writes zeros over [off, off+n) of f with write calls, which reserve the
	// blocks (segment.reserveTo).
	zeroFill func(f *os.File, off, n int64) error
	// prefault brings the pages of part of a mapping into the page cache and the page
	// tables without dirtying them (segment.prefault); a no-op where it cannot.
	prefault func(data []byte) error
	// writeAt is every write outside a mapping: checkpoint, manifest, metadata files,
	// journals, zero fills, and the SyncFlush CommitLog's appends (commitLog.writeLocked).
	writeAt func(f *os.File, b []byte, off int64) (int, error)
	// sharedMap reports that mmap maps the kernel's page cache (MAP_SHARED), so that a write
	// to the file shows in the mapping at once; false under a hook's mapping.
	sharedMap bool
}

func defaultFileOps() *fileOps {
	o := &fileOps{
		sync:     datasync,
		allocate: preallocate,
		mmap: func(f *os.File, size int) (mmap.MMap, error) {
			return mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
		},
		unmap:     func(_ *os.File, m mmap.MMap) error { return m.Unmap() },
		zero:      zeroRange,
		prefault:  populateRead,
		writeAt:   (*os.File).WriteAt,
		sharedMap: true,
	}
	o.zeroFill = func(f *os.File, off, n int64) error { return writeZeros(o.writeAt, f, off, n) }
	return o
}

// hookedFileOps are the operations of a store or metadata file at path: storage's own, with
// whatever internal/storagehook has installed for a directory above path in their place (the
// simulation's faulty disk), and the clock it installed (nil: none).
func hookedFileOps(path string) (*fileOps, func() time.Time) {
	o := defaultFileOps()
	h := storagehook.Lookup(path)
	if h == nil {
		return o, nil
	}
	if h.Sync != nil {
		o.sync = h.Sync
	}
	if h.Allocate != nil {
		o.allocate = h.Allocate
	}
	if h.Map != nil {
		// The hook's mapping is not the kernel's: there are no page tables to fill ahead.
		o.mmap, o.prefault, o.sharedMap = h.Map, func([]byte) error { return nil }, false
	}
	if h.Unmap != nil {
		o.unmap = h.Unmap
	}
	if h.Zero != nil {
		o.zero = h.Zero
	}
	if h.WriteAt != nil {
		o.writeAt = h.WriteAt
	}
	return o, h.Clock
}

// metaOps are the operations for a metadata file at path, written without a store at hand
// (WriteJSONFile, the journals): storage's own unless a hook is installed above path.
func metaOps(path string) *fileOps {
	if storagehook.Lookup(path) == nil {
		return plainOps
	}
	o, _ := hookedFileOps(path)
	return o
}

// plainOps are storage's own operations, shared by metadata writes outside any hooked
// directory.
var plainOps = defaultFileOps()

// zeroPage is what writeZeros writes, a chunk at a time.
var zeroPage = make([]byte, 64<<10)

// writeZeros writes n zero bytes at off with write.
func writeZeros(write func(*os.File, []byte, int64) (int, error), f *os.File, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroPage)))
		if _, err := write(f, zeroPage[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// zeroBytes clears data[off:off+n] through the mapping.
func zeroBytes(data []byte, off, n int64) {
	clear(data[off : off+n])
}

// extendTo makes f at least size bytes long (never shorter).
func extendTo(f *os.File, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= size {
		return nil
	}
	return f.Truncate(size)
}
