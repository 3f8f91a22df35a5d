package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// Every name that becomes part of a path under the store directory goes through pathElement
// (today: the topic and queue id of a ConsumeQueue directory). The broker refuses bad names at
// the wire already; this is the wall behind it, so a record from any source (a send path that
// forgot to check, a master's replicated log, an old file) cannot make the store create or
// remove anything outside its directory.

// ErrUnsafeName refuses a name that cannot be one path element under the store directory.
var ErrUnsafeName = errors.New("storage: name is not a safe path element")

// maxPathElementBytes is the longest file name Linux file systems take (NAME_MAX).
const maxPathElementBytes = 255

// pathElement returns nil when name can be exactly one file or directory name inside its
// parent: not empty, not "." or "..", no separator ('/' or '\', whichever the OS uses), no NUL,
// not absolute or a reserved device name (filepath.IsLocal), at most NAME_MAX bytes. It does
// not allocate for a good name.
func pathElement(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxPathElementBytes {
		return unsafeName(name)
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '/', '\\', 0:
			return unsafeName(name)
		}
	}
	if !filepath.IsLocal(name) {
		return unsafeName(name)
	}
	return nil
}

func unsafeName(name string) error {
	q := name[:min(len(name), 64)]
	return fmt.Errorf("%w: %s (%d bytes)", ErrUnsafeName, strconv.QuoteToASCII(q), len(name))
}

// queueDir is a ConsumeQueue's directory, <root>/<topic>/<queueId>; a negative queue id is
// refused along with an unsafe topic.
func queueDir(root, topic string, queueID int32) (string, error) {
	if err := pathElement(topic); err != nil {
		return "", err
	}
	if queueID < 0 {
		return "", fmt.Errorf("%w: queue id %d", ErrUnsafeName, queueID)
	}
	return filepath.Join(root, topic, strconv.Itoa(int(queueID))), nil
}

// unsafeLogEvery spaces the warnings about skipped records: a hostile log may hold millions.
const unsafeLogEvery = 10 * time.Second

// skipUnsafeRecord accounts for a record the dispatcher cannot give a ConsumeQueue because its
// topic or queue id is not a safe path. The record stays in the CommitLog (offsets and
// replication are unaffected); it is just never readable by queue. Logs at most every
// unsafeLogEvery, with the count so far. Called with s.dispatchMu held.
func (s *Store) skipUnsafeRecord(rec *message.Record, err error) {
	n := s.cqs.unsafeSkipped.Add(1)
	now := time.Now()
	if last := s.cqs.unsafeLoggedAt; !last.IsZero() && now.Sub(last) < unsafeLogEvery {
		return
	}
	s.cqs.unsafeLoggedAt = now
	s.log.Warn().Err(err).Int64("phy_offset", rec.PhysicalOffset).Int32("queue_id", rec.QueueID).
		Int64("skipped", n).Msg("record with an unsafe topic not dispatched to a consume queue")
}

// UnsafeRecordsSkipped counts the records the dispatcher left out of every ConsumeQueue because
// their topic or queue id could not be a path (see skipUnsafeRecord).
func (s *Store) UnsafeRecordsSkipped() int64 { return s.cqs.unsafeSkipped.Load() }
