package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/mqgo/mq/internal/storagehook"
)

// diskFaults are what a disk does wrong, as the schedule sets them. The zero value is a
// healthy disk.
type diskFaults struct {
	syncFail   float64       // chance a sync fails with EIO, writing nothing
	syncDelay  time.Duration // how long every CommitLog sync takes (a slow disk; isCommitLog)
	writeFail  float64       // chance a write fails with EIO before writing anything
	shortWrite float64       // chance a write stops part-way with ENOSPC
	allocFail  float64       // chance a block reservation fails with ENOSPC
}

func (f diskFaults) String() string {
	return fmt.Sprintf("syncFail=%.2f syncDelay=%v writeFail=%.2f shortWrite=%.2f allocFail=%.2f",
		f.syncFail, f.syncDelay, f.writeFail, f.shortWrite, f.allocFail)
}

// disk is a broker's disk under its store directory, installed through internal/storagehook.
// It keeps what a power cut would lose apart from what it would keep: mapped files are mapped
// copy-on-write, so the file holds only what a sync wrote back from the mapping, as a disk
// holds only what an fsync made durable while the page cache holds the rest. So the directory
// as it stands is the disk after a power cut, and the directory after writeBack is the disk
// after a process crash (the page cache survives a kill -9).
//
// Writes outside mappings (metadata files, the checkpoint) reach the file at once and count as
// durable from then on: a power cut that loses a write which was never synced is not
// modelled. A failed sync writes nothing back and a later one writes everything, so the lost
// writeback after an fsync error that Linux can cause is not modelled either.
type disk struct {
	dir  string
	seed uint64

	mu       sync.Mutex
	faults   diskFaults
	clockOff time.Duration
	maps     map[*os.File]mmap.MMap // live mappings
	rolls    map[string]uint64      // per operation and file: how many decisions were drawn
	injected int                    // faults injected so far
}

func newDisk(dir string, seed uint64) *disk {
	return &disk{dir: dir, seed: seed, maps: make(map[*os.File]mmap.MMap), rolls: make(map[string]uint64)}
}

// install makes stores opened in d.dir use d until remove.
func (d *disk) install() (remove func()) {
	return storagehook.Install(d.dir, &storagehook.Hooks{
		Clock:    d.now,
		Sync:     d.sync,
		Allocate: d.allocate,
		Map:      d.mapFile,
		Unmap:    d.unmapFile,
		Zero:     d.zero,
		WriteAt:  d.writeAt,
	})
}

func (d *disk) set(f diskFaults) {
	d.mu.Lock()
	d.faults = f
	d.mu.Unlock()
}

func (d *disk) jump(by time.Duration) {
	d.mu.Lock()
	d.clockOff += by
	d.mu.Unlock()
}

func (d *disk) now() time.Time {
	d.mu.Lock()
	off := d.clockOff
	d.mu.Unlock()
	return time.Now().Add(off)
}

// roll draws the next decision for op on the file at path, in [0, 1). The draws of one file
// follow from the seed alone, whatever order goroutines touch different files in.
func (d *disk) roll(op, path string) float64 {
	key := op + " " + relPath(d.dir, path)
	d.mu.Lock()
	n := d.rolls[key]
	d.rolls[key] = n + 1
	d.mu.Unlock()
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s %d", d.seed, key, n)
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// mix is splitmix64's finalizer: FNV's low bits are weak on their own.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func relPath(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return filepath.Base(path)
}

func (d *disk) current() diskFaults {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.faults
}

func (d *disk) count() {
	d.mu.Lock()
	d.injected++
	d.mu.Unlock()
}

func (d *disk) sync(f *os.File) error {
	fl := d.current()
	if fl.syncDelay > 0 && isCommitLog(f.Name()) {
		time.Sleep(fl.syncDelay)
	}
	if fl.syncFail > 0 && d.roll("sync", f.Name()) < fl.syncFail {
		d.count()
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EIO}
	}
	d.mu.Lock()
	m := d.maps[f]
	d.mu.Unlock()
	if m != nil {
		// Concurrent writers may be writing into the mapping: what this copies of their
		// records is whatever they wrote so far, as a real writeback takes pages as they are.
		if _, err := f.WriteAt(m, 0); err != nil {
			return err
		}
	}
	return nil
}

// isCommitLog reports whether path is a CommitLog segment. Only their syncs are slowed: the
// store syncs them holding no lock, while it syncs ConsumeQueues, the index and metadata files
// under locks (the checkpoint's, the epoch file's), and in a synctest bubble a goroutine
// waiting for a mutex held by one that sleeps stops the clock for good (a mutex wait is not a
// durable block), which a real slow disk would not do.
func isCommitLog(path string) bool {
	return filepath.Base(filepath.Dir(path)) == "commitlog"
}

func (d *disk) allocate(f *os.File, off, n int64) error {
	if p := d.current().allocFail; p > 0 && d.roll("allocate", f.Name()) < p {
		d.count()
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < off+n {
		return f.Truncate(off + n)
	}
	return nil
}

func (d *disk) mapFile(f *os.File, size int) (mmap.MMap, error) {
	m, err := mmap.MapRegion(f, size, mmap.COPY, 0, 0)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.maps[f] = m
	d.mu.Unlock()
	return m, nil
}

func (d *disk) unmapFile(f *os.File, m mmap.MMap) error {
	d.mu.Lock()
	delete(d.maps, f)
	d.mu.Unlock()
	return m.Unmap()
}

// zero clears the range in the mapping only: the file gets the zeros at the next sync, as it
// would get any other write through the mapping.
func (d *disk) zero(_ *os.File, data []byte, off, n int64) error {
	clear(data[off : off+n])
	return nil
}

func (d *disk) writeAt(f *os.File, b []byte, off int64) (int, error) {
	fl := d.current()
	if fl.writeFail > 0 && d.roll("write", f.Name()) < fl.writeFail {
		d.count()
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	if fl.shortWrite > 0 && len(b) > 1 {
		if r := d.roll("short", f.Name()); r < fl.shortWrite {
			d.count()
			k := 1 + int(r/fl.shortWrite*float64(len(b)-1))
			n, err := f.WriteAt(b[:k], off)
			if err == nil {
				err = &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
			}
			return n, err
		}
	}
	return f.WriteAt(b, off)
}

// writeBack writes every live mapping back to its file: what the kernel would write of its
// page cache after the process died.
func (d *disk) writeBack() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for f, m := range d.maps {
		if _, err := f.WriteAt(m, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// image copies the directory tree at from to to, which must not exist.
func image(from, to string) error {
	return filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		return copyFile(path, dst)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
