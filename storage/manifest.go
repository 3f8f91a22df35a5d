package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The manifest records what the ConsumeQueues and the index held, durably, when it was
// written: each queue's unit count and the CommitLog end of its last unit, and each index
// file's entry count. The checkpointer writes it after flushing them (when it changed), and
// Close writes it last. Open compares the files it finds with it, after a clean shutdown as
// after a crash, so that a queue file or index file deleted or cut behind the store's back is
// rebuilt from the CommitLog instead of losing its messages silently. Every count in it is a
// lower bound of what the files hold, so a manifest older than the files (a crash before the
// next write) is still true; a manifest missing or damaged makes Open check everything as
// after a crash.
//
// Layout (big-endian):
//
//	 0 magic        uint32 manifestMagic
//	 4 version      uint16 manifestVersion
//	 6 reserved     uint16 0
//	 8 queues       uint32 number of queue entries
//	12 indexFiles   uint32 number of index entries
//	16 queue entries: topicLen uint16, topic, queueId int32, units int64, phyEnd int64
//	   index entries: nameLen uint8, name, count int32, endPhy int64
//	   crc          uint32 CRC-32 (IEEE) of every byte before it
const (
	manifestFile    = "manifest"
	manifestMagic   = 0x4D514D46 // "MQMF"
	manifestVersion = 1
	manifestHeader  = 16
)

// manifestQueue says queue topic/queueID had units durable units, the last of them ending
// at CommitLog offset phyEnd.
type manifestQueue struct {
	topic   string
	queueID int32
	units   int64
	phyEnd  int64
}

// manifestIndex says index file name had count entries (header count, starting at 1), the
// last pointing at CommitLog offset endPhy.
type manifestIndex struct {
	name   string
	count  int32
	endPhy int64
}

type manifest struct {
	queues []manifestQueue
	index  []manifestIndex
}

func (s *Store) manifestPath() string { return filepath.Join(s.opts.Dir, manifestFile) }

// appendManifestQueue appends one queue entry to b.
func appendManifestQueue(b []byte, e manifestQueue) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.topic)))
	b = append(b, e.topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(e.queueID))
	b = binary.BigEndian.AppendUint64(b, uint64(e.units))
	return binary.BigEndian.AppendUint64(b, uint64(e.phyEnd))
}

func (m *manifest) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b[:0], manifestMagic)
	b = binary.BigEndian.AppendUint16(b, manifestVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.queues)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.index)))
	for _, e := range m.queues {
		b = appendManifestQueue(b, e)
	}
	for _, e := range m.index {
		b = append(b, byte(len(e.name)))
		b = append(b, e.name...)
		b = binary.BigEndian.AppendUint32(b, uint32(e.count))
		b = binary.BigEndian.AppendUint64(b, uint64(e.endPhy))
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeManifest checks and decodes b. Every count is checked against the bytes present
// before anything is allocated for it.
func decodeManifest(path string, b []byte) (*manifest, error) {
	be := binary.BigEndian
	if len(b) < manifestHeader+4 {
		return nil, corrupt(path, int64(len(b)), errors.New("manifest truncated"))
	}
	if be.Uint32(b) != manifestMagic {
		return nil, corrupt(path, 0, errors.New("bad manifest magic"))
	}
	body := b[:len(b)-4]
	if be.Uint32(b[len(b)-4:]) != crc32.ChecksumIEEE(body) {
		return nil, corrupt(path, int64(len(body)), errors.New("manifest CRC mismatch"))
	}
	if v := be.Uint16(b[4:]); v != manifestVersion {
		return nil, corrupt(path, 4, fmt.Errorf("manifest version %d, this build reads %d", v, manifestVersion))
	}
	nq, ni := int64(be.Uint32(b[8:])), int64(be.Uint32(b[12:]))
	// The smallest entries: a queue with a 1-byte topic is 23 bytes, an index entry 13.
	if nq*23+ni*13 > int64(len(body)-manifestHeader) {
		return nil, corrupt(path, 8, fmt.Errorf("manifest claims %d queues and %d index files in %d bytes", nq, ni, len(body)))
	}
	m := &manifest{queues: make([]manifestQueue, 0, nq), index: make([]manifestIndex, 0, ni)}
	p := body[manifestHeader:]
	short := func() error {
		return corrupt(path, int64(len(body)-len(p)), errors.New("manifest entry runs past the end"))
	}
	for range nq {
		if len(p) < 2 {
			return nil, short()
		}
		n := int(be.Uint16(p))
		if len(p) < 2+n+20 {
			return nil, short()
		}
		e := manifestQueue{topic: string(p[2 : 2+n])}
		p = p[2+n:]
		e.queueID = int32(be.Uint32(p))
		e.units = int64(be.Uint64(p[4:]))
		e.phyEnd = int64(be.Uint64(p[12:]))
		p = p[20:]
		if e.queueID < 0 || e.units <= 0 || e.units > maxQueueOffset || e.phyEnd <= 0 {
			return nil, corrupt(path, int64(len(body)-len(p)-20), fmt.Errorf("manifest entry %s/%d: %d units ending at %d", e.topic, e.queueID, e.units, e.phyEnd))
		}
		m.queues = append(m.queues, e)
	}
	for range ni {
		if len(p) < 1 {
			return nil, short()
		}
		n := int(p[0])
		if len(p) < 1+n+12 {
			return nil, short()
		}
		e := manifestIndex{name: string(p[1 : 1+n])}
		p = p[1+n:]
		e.count = int32(be.Uint32(p))
		e.endPhy = int64(be.Uint64(p[4:]))
		p = p[12:]
		if pathElement(e.name) != nil || e.count < 1 {
			return nil, corrupt(path, int64(len(body)-len(p)-12), fmt.Errorf("manifest index entry %q count %d", e.name, e.count))
		}
		m.index = append(m.index, e)
	}
	if len(p) != 0 {
		return nil, corrupt(path, int64(len(body)-len(p)), fmt.Errorf("%d bytes after the last manifest entry", len(p)))
	}
	return m, nil
}

func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeManifest(path, b)
}

// durableUnits returns how many of the queue's units are durable (a prefix: a file not yet
// flushed ends it) and the CommitLog end of the last of them; 0, 0 when none is a real unit.
func (q *consumeQueue) durableUnits() (units, phyEnd int64) {
	end := q.segs.flushedPrefix()
	if end < CQUnitBytes {
		return 0, 0
	}
	units = end / CQUnitBytes
	u, err := q.unit(units - 1)
	if err != nil || u.Size == blankUnitSize {
		return 0, 0
	}
	return units, u.PhyOffset + int64(u.Size)
}

// addQueue adds the queue's entry, when it has durable units.
func (m *manifest) addQueue(q *consumeQueue) {
	if units, phyEnd := q.durableUnits(); units > 0 {
		m.queues = append(m.queues, manifestQueue{topic: q.topic, queueID: q.queueID, units: units, phyEnd: phyEnd})
	}
}

// writeManifestLocked writes s.manifestScratch, unless it says what the last manifest
// written said. syncParent makes the rename durable too (a deletion must not be undone by an
// older manifest). The caller holds ckptMu.
func (s *Store) writeManifestLocked(syncParent bool) error {
	m := &s.manifestScratch
	b := m.encode(s.manifestBuf)
	s.manifestBuf = b
	if bytes.Equal(b, s.manifestLast) && !syncParent {
		return nil
	}
	if err := writeManifestFile(s.manifestPath(), b, s.opts.ops, syncParent); err != nil {
		s.manifestLast = s.manifestLast[:0] // unknown what is on disk: write next time
		return err
	}
	s.manifestLast = append(s.manifestLast[:0], b...)
	return nil
}

// writeManifestFile replaces path with b through a fsynced temp file, so that a crash
// leaves the old manifest or the new one, whole.
func writeManifestFile(path string, b []byte, ops *fileOps, syncParent bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = ops.writeAt(f, b, 0)
	if err == nil {
		err = ops.sync(f)
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	if syncParent {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// checkQueueManifest compares every queue the manifest names with its entry, after the
// queues are loaded and before recovery dispatches from offset from. A queue behind its
// entry (a file deleted or cut, its directory gone) or whose unit at the entry's end points
// elsewhere is marked for rebuilding from the CommitLog, unless what it lacks is legitimately
// gone: records deleted by retention (the queue restarts at the entry's count, returned), or
// records past a CommitLog cut. It returns the queues to restart at the offset given.
func (s *Store) checkQueueManifest(entries []manifestQueue, minPhy, maxPhy, from int64, rebuild, cutPast map[*consumeQueue]bool) map[*consumeQueue]int64 {
	r := &s.report
	expired := make(map[*consumeQueue]int64)
	mark := func(q *consumeQueue, why string) {
		rebuild[q] = true
		r.action("consume queue %s/%d %s: rebuilding from the commitlog", q.topic, q.queueID, why)
		s.log.Warn().Str("topic", q.topic).Int32("queue_id", q.queueID).Str("reason", why).Msg("consume queue disagrees with the manifest, rebuilding")
	}
	for _, e := range entries {
		q := s.cqs.get(e.topic, e.queueID)
		missing := q == nil
		if missing {
			var err error
			if q, err = s.cqs.getOrCreate(e.topic, e.queueID); err != nil {
				r.action("manifest names queue %q/%d, which cannot be a queue directory: ignored", e.topic, e.queueID)
				continue
			}
		}
		if rebuild[q] {
			continue
		}
		max := q.maxOffset.Load()
		behind := fmt.Sprintf("ends at offset %d, the manifest says %d", max, e.units)
		if missing {
			behind = fmt.Sprintf("directory is missing, the manifest says %d units", e.units)
		}
		switch {
		case max >= e.units:
			if e.phyEnd > maxPhy || e.units-1 < q.minOffset.Load() {
				continue
			}
			u, err := q.unit(e.units - 1)
			if err == nil && u.Size != blankUnitSize && u.PhyOffset+int64(u.Size) == e.phyEnd {
				continue
			}
			mark(q, fmt.Sprintf("unit %d does not end at commitlog offset %d as the manifest says", e.units-1, e.phyEnd))
		case e.phyEnd <= minPhy:
			// Retention deleted every record the lost units pointed to: nothing to rebuild,
			// but the queue must not hand out its offsets again.
			expired[q] = e.units
			r.action("consume queue %s/%d %s; their records are deleted: restarting it at offset %d", q.topic, q.queueID, behind, e.units)
			s.log.Warn().Str("topic", q.topic).Int32("queue_id", q.queueID).Int64("offset", e.units).Msg("consume queue behind the manifest, records expired: restarting at its offset")
		case e.phyEnd <= maxPhy:
			mark(q, behind)
		case cutPast[q]:
			// The CommitLog was cut below the entry's end, and the queue's files reached
			// past the cut: what it lost lay past the cut.
		case !missing && q.maxPhyEnd.Load() >= from:
			// Every record of the queue after its last unit is dispatched again from from.
		default:
			mark(q, behind+" (the commitlog was cut at "+fmt.Sprint(maxPhy)+")")
		}
	}
	return expired
}

// checkManifest says what is wrong when an index file the manifest lists, and retention has
// not deleted (its last entry at or after minPhy), is missing or holds fewer entries than
// listed; "" when nothing is. Called by recovery before services run.
func (x *indexService) checkManifest(entries []manifestIndex, minPhy int64) string {
	have := make(map[string]int32, len(x.files))
	for _, f := range x.files {
		have[filepath.Base(f.seg.path)] = f.count
	}
	for _, e := range entries {
		if e.endPhy < minPhy {
			continue
		}
		switch c, ok := have[e.name]; {
		case !ok:
			return fmt.Sprintf("file %s is missing", e.name)
		case c < e.count:
			return fmt.Sprintf("file %s holds %d entries, the manifest says %d", e.name, c-1, e.count-1)
		}
	}
	return ""
}
