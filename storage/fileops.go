package storage

import (
	"os"

	"github.com/edsrzf/mmap-go"
)

// fileOps are the file operations the store uses for its mapped files. Tests replace them to
// count fsyncs, block a flush, or inject a full disk or a failed mmap.
type fileOps struct {
	// sync makes f's written pages durable (fdatasync).
	sync func(f *os.File) error
	// allocate reserves the blocks of [off, off+n) of f so writes through the mapping there
	// cannot hit a full disk.
	allocate func(f *os.File, off, n int64) error
	// mmap maps size bytes of f read-write.
	mmap func(f *os.File, size int) (mmap.MMap, error)
	// zero clears [off, off+n) of a mapped file (punching a hole where possible).
	zero func(f *os.File, data []byte, off, n int64) error
	// zeroFill writes zeros over [off, off+n) of f with write calls, which reserve the
	// blocks (segment.reserveTo).
	zeroFill func(f *os.File, off, n int64) error
	// prefault brings the pages of part of a mapping into the page cache and the page
	// tables without dirtying them (segment.prefault); a no-op where it cannot.
	prefault func(data []byte) error
}

func defaultFileOps() *fileOps {
	return &fileOps{
		sync:     datasync,
		allocate: preallocate,
		mmap: func(f *os.File, size int) (mmap.MMap, error) {
			return mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
		},
		zero:     zeroRange,
		zeroFill: writeZeros,
		prefault: populateRead,
	}
}

// zeroPage is what writeZeros writes, a chunk at a time.
var zeroPage = make([]byte, 64<<10)

// writeZeros writes n zero bytes at off.
func writeZeros(f *os.File, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroPage)))
		if _, err := f.WriteAt(zeroPage[:k], off); err != nil {
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
