package storage

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// EpochFileName is the epoch file in the store root, where RocketMQ 5 keeps it
// (storePathRootDir/epochFileCheckpoint), in RocketMQ's CheckpointFile text format:
//
//	<number of entries>
//	<CRC-32 of the entry lines & 0x7FFFFFFF, decimal>
//	<epoch>-<start offset>      one line per entry, oldest first
//
// The previous version is kept as EpochFileName.bak and read when the file is damaged.
const EpochFileName = "epochFileCheckpoint"

// maxEpochEntries bounds a history (one entry per master change), so that a history taken from
// the network cannot grow the file without limit; maxEpochFileBytes, what reading the file
// allocates, holds that many of the longest entry lines (31 bytes) and the two header lines.
const (
	maxEpochEntries   = 1 << 16
	maxEpochFileBytes = 32*maxEpochEntries + 64
)

// ErrEpochOrder is returned when an epoch entry would break the history's order: epochs must
// increase, and each epoch must start at or after the previous one.
var ErrEpochOrder = errors.New("storage: epoch entries out of order")

// EpochEntry says that the master of epoch Epoch wrote the CommitLog from StartOffset on. An
// entry ends where the next one starts; the last one ends at the log's end.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochFile is the in-memory copy of the epoch file. Every change is written before it is
// visible, so a reader never sees a history the disk does not have.
type epochFile struct {
	mu      sync.Mutex
	path    string
	entries []EpochEntry // mu guards
	// pending are entries of a master's history that start past the log's end (SetEpochs):
	// AppendRaw adds each to entries before it writes the first byte of its epoch, so that no
	// replicated byte is ever counted in the epoch before its own. Not on disk: a replica that
	// restarts takes its master's history again before it follows it. mu guards.
	pending []EpochEntry
}

// ConsistentPoint is RocketMQ's findConsistentPoint: the CommitLog offset up to which a
// replica with history local (log end localMax) and a master with history remote (log end
// remoteMax) hold the same bytes. It takes the greatest epoch both histories have with the same
// start offset, and returns the smaller of that epoch's two ends (an entry ends where the next
// starts, the last at its log's end). false means they share no epoch: RocketMQ's slave then
// refuses to follow (the handshake fails and is retried) rather than guess, and the caller
// should too. An empty local history is a new replica, which RocketMQ lets follow from its own
// end without cutting; that decision is the caller's, and this function answers false for it.
func ConsistentPoint(local, remote []EpochEntry, localMax, remoteMax int64) (int64, bool) {
	for i := len(local) - 1; i >= 0; i-- {
		j := slices.IndexFunc(remote, func(e EpochEntry) bool { return e.Epoch == local[i].Epoch })
		if j < 0 || remote[j].StartOffset != local[i].StartOffset {
			continue
		}
		return max(0, min(epochEnd(local, i, localMax), epochEnd(remote, j, remoteMax))), true
	}
	return 0, false
}

// epochEnd is where entry i of h ends in a log ending at logEnd. An entry's data never lies
// past the log's end, whatever a stale file says about later epochs.
func epochEnd(h []EpochEntry, i int, logEnd int64) int64 {
	if i+1 < len(h) {
		return min(h[i+1].StartOffset, logEnd)
	}
	return logEnd
}

// checkEpochOrder checks that h is a valid history.
func checkEpochOrder(h []EpochEntry) error {
	if len(h) > maxEpochEntries {
		return fmt.Errorf("%w: %d entries, at most %d", ErrEpochOrder, len(h), maxEpochEntries)
	}
	for i, e := range h {
		if e.StartOffset < 0 || e.Epoch < 0 {
			return fmt.Errorf("%w: entry %d (epoch %d, start %d) is negative", ErrEpochOrder, i, e.Epoch, e.StartOffset)
		}
		if i > 0 && (e.Epoch <= h[i-1].Epoch || e.StartOffset < h[i-1].StartOffset) {
			return fmt.Errorf("%w: epoch %d at %d follows epoch %d at %d", ErrEpochOrder,
				e.Epoch, e.StartOffset, h[i-1].Epoch, h[i-1].StartOffset)
		}
	}
	return nil
}

// loadEpochs reads the epoch file, or its backup when it is damaged. A missing file is an
// empty history; a file damaged with no sound backup fails Open, naming it. (RocketMQ logs and
// starts from an empty history instead, which a returning old master would take for a new
// replica's and follow without cutting its divergent tail.)
func (s *Store) loadEpochs() error {
	s.epochs.path = filepath.Join(s.opts.Dir, EpochFileName)
	entries, errMain := readEpochFile(s.epochs.path)
	if errMain == nil {
		s.epochs.entries = entries
		return nil
	}
	entries, errBak := readEpochFile(s.epochs.path + ".bak")
	switch {
	case errBak == nil:
		if !errors.Is(errMain, os.ErrNotExist) {
			s.log.Warn().Err(errMain).Str("file", s.epochs.path).Msg("epoch file damaged, using its backup")
			s.report.action("epoch file damaged (%v): using its backup", errMain)
		}
		s.epochs.entries = entries
		return nil
	case errors.Is(errMain, os.ErrNotExist) && errors.Is(errBak, os.ErrNotExist):
		return nil
	case errors.Is(errMain, os.ErrNotExist):
		return fmt.Errorf("storage: epoch file %s is missing and its backup is damaged: %w", s.epochs.path, errBak)
	default:
		return fmt.Errorf("storage: epoch file %s is damaged (%w) and has no sound backup (%v); "+
			"remove both only if this store will never follow another master", s.epochs.path, errMain, errBak)
	}
}

func readEpochFile(path string) ([]EpochEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEpochFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxEpochFileBytes {
		return nil, corrupt(path, maxEpochFileBytes, errors.New("epoch file too large"))
	}
	return decodeEpochFile(path, b)
}

func decodeEpochFile(path string, b []byte) ([]EpochEntry, error) {
	line := func() (string, bool) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return "", false
		}
		l := string(b[:i])
		b = b[i+1:]
		return l, true
	}
	countLine, ok1 := line()
	crcLine, ok2 := line()
	if !ok1 || !ok2 {
		return nil, corrupt(path, 0, errors.New("epoch file header truncated"))
	}
	count, err := strconv.Atoi(countLine)
	if err != nil || count < 0 || count > maxEpochEntries {
		return nil, corrupt(path, 0, fmt.Errorf("entry count %q", countLine))
	}
	wantCRC, err := strconv.ParseUint(crcLine, 10, 31)
	if err != nil {
		return nil, corrupt(path, int64(len(countLine)+1), fmt.Errorf("crc %q", crcLine))
	}
	body := b
	if got := crc32.ChecksumIEEE(body) & 0x7FFFFFFF; uint64(got) != wantCRC {
		return nil, corrupt(path, int64(len(countLine)+len(crcLine)+2), fmt.Errorf("crc %d, entries have %d", wantCRC, got))
	}
	if c := bytes.Count(body, []byte{'\n'}); c != count || (len(body) > 0 && body[len(body)-1] != '\n') {
		return nil, corrupt(path, 0, fmt.Errorf("file says %d entries, has %d lines", count, c))
	}
	entries := make([]EpochEntry, 0, count)
	for l, ok := line(); ok; l, ok = line() {
		ep, start, found := cutDash(l)
		if !found {
			return nil, corrupt(path, 0, fmt.Errorf("entry %q", l))
		}
		epoch, err1 := strconv.ParseInt(ep, 10, 32)
		off, err2 := strconv.ParseInt(start, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, corrupt(path, 0, fmt.Errorf("entry %q", l))
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: off})
	}
	if err := checkEpochOrder(entries); err != nil {
		return nil, corrupt(path, 0, err)
	}
	return entries, nil
}

func cutDash(l string) (string, string, bool) {
	for i := 0; i < len(l); i++ {
		if l[i] == '-' {
			return l[:i], l[i+1:], i > 0 && i+1 < len(l)
		}
	}
	return "", "", false
}

func encodeEpochFile(entries []EpochEntry) []byte {
	var body []byte
	for _, e := range entries {
		body = strconv.AppendInt(body, int64(e.Epoch), 10)
		body = append(body, '-')
		body = strconv.AppendInt(body, e.StartOffset, 10)
		body = append(body, '\n')
	}
	out := strconv.AppendInt(nil, int64(len(entries)), 10)
	out = append(out, '\n')
	out = strconv.AppendUint(out, uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)
	out = append(out, '\n')
	return append(out, body...)
}

// writeFileAtomic writes b to path as WriteJSONFile writes JSON: a temp file of its own in
// path's directory (created if missing), fsynced, the current file kept as path.bak, a rename,
// and the directory fsynced.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	tmp := f.Name()
	ops := metaOps(path)
	_, err = ops.writeAt(f, b, 0)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = ops.sync(f)
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: write %s: %w", tmp, err)
	}
	mu := metaLock(path)
	mu.Lock()
	err = replaceKeepingBackup(tmp, path)
	mu.Unlock()
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes renames and removals in dir durable. Some file systems cannot sync a
// directory; those changes are then as durable as they make them.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	d.Sync()
	return d.Close()
}

// setEpochsLocked writes h and then makes it current. The caller holds s.epochs.mu.
func (s *Store) setEpochsLocked(h []EpochEntry) error {
	if slices.Equal(h, s.epochs.entries) {
		return nil
	}
	if err := writeFileAtomic(s.epochs.path, encodeEpochFile(h)); err != nil {
		return err
	}
	s.epochs.entries = h
	return nil
}

// Epochs returns the store's epoch history, oldest first.
func (s *Store) Epochs() []EpochEntry {
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	return slices.Clone(s.epochs.entries)
}

// AppendEpoch records that the master of epoch wrote the log from startOffset on (a broker
// becoming master appends its epoch and MaxPhyOffset). The epoch must be greater than the last
// one and start at or after it; appending the last epoch again, at or after its start, is a
// no-op: the master of that epoch restarted, and what it wrote since the entry's start is still
// its epoch's (RocketMQ's changeToMaster replaces the entry with one starting at the log's end,
// which gives that data to the epoch before). An epoch starting where the last one starts
// replaces it, since the last one then holds no data (RocketMQ's changeToMaster drops such an
// entry by truncating at the log's end before appending).
func (s *Store) AppendEpoch(epoch int32, startOffset int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	s.epochs.pending = nil // a master writes its own epoch from now on
	h := slices.Clone(s.epochs.entries)
	if n := len(h); n > 0 {
		last := h[n-1]
		if last.Epoch == epoch && startOffset >= last.StartOffset {
			return nil
		}
		if epoch > last.Epoch && startOffset == last.StartOffset {
			h = h[:n-1]
		}
	}
	h = append(h, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	if err := checkEpochOrder(h); err != nil {
		return err
	}
	if err := s.setEpochsLocked(h); err != nil {
		return err
	}
	s.log.Info().Int32("epoch", epoch).Int64("start_offset", startOffset).Msg("epoch appended")
	return nil
}

// SetEpochs replaces the history with h (a slave adopts its master's history). The entries that
// start past MaxPhyOffset hold none of this log's data yet: they wait, and AppendRaw adds each
// before it writes the first byte past its start.
func (s *Store) SetEpochs(h []EpochEntry) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkEpochOrder(h); err != nil {
		return err
	}
	end := s.MaxPhyOffset()
	keep := slices.Clone(h)
	var pending []EpochEntry
	for len(keep) > 0 && keep[len(keep)-1].StartOffset > end {
		pending = append([]EpochEntry{keep[len(keep)-1]}, pending...)
		keep = keep[:len(keep)-1]
	}
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	if err := s.setEpochsLocked(keep); err != nil {
		return err
	}
	s.epochs.pending = pending
	return nil
}

// epochsBefore adds to the history the pending entries that start before to, the end of bytes
// about to be written.
func (s *Store) epochsBefore(to int64) error {
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	for len(s.epochs.pending) > 0 && s.epochs.pending[0].StartOffset < to {
		h := append(slices.Clone(s.epochs.entries), s.epochs.pending[0])
		if err := checkEpochOrder(h); err != nil {
			return err
		}
		if err := s.setEpochsLocked(h); err != nil {
			return err
		}
		s.log.Info().Int32("epoch", s.epochs.pending[0].Epoch).Int64("start_offset", s.epochs.pending[0].StartOffset).Msg("epoch reached by replication")
		s.epochs.pending = s.epochs.pending[1:]
	}
	return nil
}

// TruncateEpochs drops the entries starting at or after endOffset, as RocketMQ's
// truncateSuffixByOffset: a log cut at endOffset holds no data of theirs.
func (s *Store) TruncateEpochs(endOffset int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.epochs.mu.Lock()
	defer s.epochs.mu.Unlock()
	return s.truncateEpochsLocked(endOffset)
}

func (s *Store) truncateEpochsLocked(endOffset int64) error {
	s.epochs.pending = nil
	h := s.epochs.entries
	n := len(h)
	for n > 0 && h[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(h) {
		return nil
	}
	return s.setEpochsLocked(slices.Clone(h[:n]))
}
