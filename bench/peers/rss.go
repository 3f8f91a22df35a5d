package peers

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"time"
)

// rssIdle is how long a started node idles before its resident memory is read: long enough
// for its first periodic work (registrations, scans) to have run once.
const rssIdle = 2 * time.Second

// residentBytes is this process's resident set from /proc (Linux), after the garbage
// collector returned what it could to the OS, so that the difference between two readings
// is memory something still holds. ok is false where /proc is missing.
func residentBytes() (n int64, ok bool) {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, found := bytes.CutPrefix(line, []byte("VmRSS:")); found {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// idleRSSGrowth starts one node on an empty store, lets it idle for rssIdle and returns how
// much the process's resident set grew meanwhile, the node's clients included. ok is false
// where it cannot be read.
func idleRSSGrowth(p Peer, parent string) (growth int64, ok bool, err error) {
	dir, err := os.MkdirTemp(parent, p.ID()+"-rss-")
	if err != nil {
		return 0, false, err
	}
	defer os.RemoveAll(dir)
	before, ok := residentBytes()
	if !ok {
		return 0, false, nil
	}
	n, err := Start(p, NodeConfig{Dir: dir})
	if err != nil {
		return 0, false, err
	}
	time.Sleep(rssIdle)
	after, ok := residentBytes()
	if err := n.Close(); err != nil {
		return 0, false, err
	}
	return after - before, ok, nil
}

// formatBytes shows a signed size: a start followed by a collection of earlier garbage can
// leave the process smaller than before.
func formatBytes(n int64) string {
	return fmt.Sprintf("%+.1f MB", float64(n)/1e6)
}
