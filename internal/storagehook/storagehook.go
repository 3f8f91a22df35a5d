// Package storagehook is the seam between the store's file operations and the module's
// deterministic simulation (internal/sim), which runs stores on a disk that fails, stalls and
// loses power on purpose. It keeps that machinery out of storage's public API: the simulation
// installs Hooks for a directory, and a store opened there (and every metadata file written
// under it through storage's helpers) uses them instead of the operating system's calls.
//
// With nothing installed, Lookup costs one atomic load.
package storagehook

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edsrzf/mmap-go"
)

// Hooks replace the store's file operations. A nil field keeps storage's own. Each must be
// safe for concurrent use.
type Hooks struct {
	// Clock is the store's wall clock (store timestamps, the index, retention).
	Clock func() time.Time
	// Sync makes what was written to f durable: the data of a mapped file written through its
	// mapping, and what WriteAt wrote.
	Sync func(f *os.File) error
	// Allocate reserves the blocks of [off, off+n) of f.
	Allocate func(f *os.File, off, n int64) error
	// Map maps size bytes of f read-write; Unmap undoes it (the store calls it once per Map,
	// before closing f).
	Map   func(f *os.File, size int) (mmap.MMap, error)
	Unmap func(f *os.File, m mmap.MMap) error
	// Zero clears [off, off+n) of a mapped file whose mapping is data.
	Zero func(f *os.File, data []byte, off, n int64) error
	// WriteAt writes b at off of f, as os.File.WriteAt: every write of the store outside a
	// mapping (checkpoint, manifest, metadata files, journals, zero fills) goes through it.
	WriteAt func(f *os.File, b []byte, off int64) (int, error)
}

var installed struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[string]*Hooks // cleaned directory -> hooks
}

// Install makes stores opened in dir, and metadata files written under it, use h until remove
// is called. dir must not be installed already.
func Install(dir string, h *Hooks) (remove func()) {
	dir = filepath.Clean(dir)
	installed.mu.Lock()
	defer installed.mu.Unlock()
	if installed.m == nil {
		installed.m = make(map[string]*Hooks)
	}
	installed.m[dir] = h
	installed.n.Add(1)
	return func() {
		installed.mu.Lock()
		defer installed.mu.Unlock()
		if installed.m[dir] == h {
			delete(installed.m, dir)
			installed.n.Add(-1)
		}
	}
}

// Lookup returns the hooks installed for path or the nearest directory above it, or nil.
func Lookup(path string) *Hooks {
	if installed.n.Load() == 0 {
		return nil
	}
	p := filepath.Clean(path)
	installed.mu.Lock()
	defer installed.mu.Unlock()
	for {
		if h := installed.m[p]; h != nil {
			return h
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
