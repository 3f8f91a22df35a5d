package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers use errors.Is.
var (
	// ErrCorrupt marks every corruption found on disk; the wrapping *CorruptError names the
	// file and offset.
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrClosed is returned by calls on a closed store.
	ErrClosed = errors.New("storage: store closed")
	// ErrMessageTooLarge refuses a body over Options.MaxMessageBytes or a record that does not
	// fit in a segment.
	ErrMessageTooLarge = errors.New("storage: message too large")
	// ErrPropertiesTooLarge refuses properties over 32767 bytes.
	ErrPropertiesTooLarge = errors.New("storage: properties too large")
	// ErrIllegalMessage refuses a message whose fields do not fit the record format.
	ErrIllegalMessage = errors.New("storage: illegal message")
	// ErrFlushTimeout reports that a sync-flush append was stored but not known durable within
	// Options.SyncFlushTimeout.
	ErrFlushTimeout = errors.New("storage: flush disk timeout")
	// ErrCreateSegment reports that a new CommitLog segment could not be created or mapped
	// (full disk, failed mmap). The store stays readable.
	ErrCreateSegment = errors.New("storage: create mapped file failed")
	// ErrSlave refuses PutMessage on a slave store (Options.Slave); it takes AppendRaw only.
	ErrSlave = errors.New("storage: store is a slave")
	// ErrDiskFull refuses appends while the disk is fuller than
	// Options.DiskSpaceWarningLevelRatio (RocketMQ's DISK_FULL running flag); the last
	// retention round's measure lifts it.
	ErrDiskFull = errors.New("storage: disk full")
	// ErrPageCacheBusy refuses an append while another has held the append lock too long.
	ErrPageCacheBusy = errors.New("storage: os page cache busy")
	// ErrOffsetMismatch is returned by AppendRaw when the bytes do not start at the log's end.
	ErrOffsetMismatch = errors.New("storage: offset does not match the log end")
	// ErrNotFound is returned by lookups of offsets that hold no message.
	ErrNotFound = errors.New("storage: message not found")
)

// CorruptError names where corrupt data was found. It satisfies errors.Is(err, ErrCorrupt).
type CorruptError struct {
	File   string // path of the file
	Offset int64  // byte offset within the file
	Err    error  // what is wrong
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("storage: corrupt data in %s at byte %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

func corrupt(file string, off int64, err error) error {
	return &CorruptError{File: file, Offset: off, Err: err}
}
