package tables

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// The topic table on disk is two files in <store>/config:
//
//   - topics.json, the whole table in RocketMQ's form (TopicConfigSerializeWrapper), what
//     RocketMQ's tools read;
//   - topics.journal, the changes made since topics.json was written, one JSON record a line
//     (storage.ReadJournal): first {"base":<dataVersion>}, the version of the topics.json it
//     follows, then {"put":<topicConfig>,"dataVersion":...}, {"delete":"<topic>","dataVersion":...}
//     or, for a version bump alone, {"dataVersion":...}.
//
// RocketMQ rewrites topics.json inside every request that creates a topic, so a flood of new
// names costs a growing file per name. Here each metadata writer pass appends the records of
// the changes made since the last pass and fsyncs once (writer.go coalesces the passes); when
// the journal has grown past both topicJournalMinCompact and the last topics.json, the pass
// writes topics.json whole and starts the journal again. Each change is thus written O(1)
// times, amortised.
//
// At load the journal is replayed over topics.json when its base is topics.json's version;
// otherwise topics.json was written after the journal began (a crash between writing it and
// starting the journal again) and already holds every change the journal has. A journal cut
// short by a crash loses only the records of the pass that was writing, whose changes were not
// yet answered (Changed waits for the pass).

// topicJournalFile is the journal's name in <store>/config.
const topicJournalFile = "topics.journal"

// topicJournalMinCompact is the journal length below which a pass appends rather than write
// topics.json whole, so that a small table is not rewritten every few changes.
const topicJournalMinCompact = 256 << 10

// topicJournalMaxPending caps the changes kept for the next pass; past it (a writer that
// cannot keep up, or keeps failing) they are dropped and the next pass writes topics.json
// whole, which holds them all.
const topicJournalMaxPending = 1 << 16

// topicRecord is one line of the journal.
type topicRecord struct {
	Base    *route.DataVersion `json:"base,omitempty"`
	Put     *route.TopicConfig `json:"put,omitempty"`
	Delete  string             `json:"delete,omitempty"`
	Version route.DataVersion  `json:"dataVersion"`
}

// journalLocked queues r, under the table's current version, for the writer's next pass.
// m.mu must be held.
func (m *Topics) journalLocked(r topicRecord) {
	if m.jCompact {
		return // the next pass writes the whole table
	}
	if len(m.jPending) >= topicJournalMaxPending {
		m.jPending, m.jCompact = nil, true
		return
	}
	r.Version = m.version
	m.jPending = append(m.jPending, r)
}

// compactNext makes the next pass write topics.json whole (FlushAll, so that a clean shutdown
// leaves the table in one file).
func (m *Topics) compactNext() {
	m.mu.Lock()
	m.jPending, m.jCompact = nil, true
	m.mu.Unlock()
}

// persist writes what changed since the last pass: the pending records appended to the
// journal, or topics.json whole when the journal is too long, was never started, or a pass
// failed. It then releases the changes waiting for it (Changed). Only the metadata writer and
// FlushAll call it (writer.go), so passes never overlap.
func (m *Topics) persist() error {
	upTo := m.durable.Begin()
	long := m.jSize >= max(topicJournalMinCompact, m.snapSize)
	m.mu.Lock()
	whole := m.jCompact || long || m.jSize == 0
	recs := m.jPending
	m.jPending, m.jCompact = nil, false
	var snap route.TopicConfigSerializeWrapper
	if whole {
		snap = m.snapshotLocked()
	}
	m.mu.Unlock()
	var err error
	switch {
	case whole:
		err = m.writeWhole(snap)
		m.wholeWrites.Add(1)
	case len(recs) > 0:
		err = m.appendRecords(recs)
		m.appends.Add(1)
	}
	if err != nil {
		// What this pass took is lost to the journal: the next pass writes everything.
		m.compactNext()
		return err
	}
	m.durable.Finish(upTo)
	return nil
}

// writeWhole writes topics.json from snap and starts the journal again on its version.
func (m *Topics) writeWhole(snap route.TopicConfigSerializeWrapper) error {
	m.jSize = 0
	if err := storage.WriteJSONFile(m.path, snap); err != nil {
		return err
	}
	if fi, err := os.Stat(m.path); err == nil {
		m.snapSize = fi.Size()
	}
	base, err := json.Marshal(topicRecord{Base: &snap.DataVersion})
	if err != nil {
		return err
	}
	size, err := storage.ResetJournal(m.journalPath, base)
	if err != nil {
		return err
	}
	m.jSize = size
	return nil
}

// appendRecords appends recs to the journal.
func (m *Topics) appendRecords(recs []topicRecord) error {
	lines := make([][]byte, len(recs))
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return err
		}
		lines[i] = b
	}
	size, err := storage.AppendJournal(m.journalPath, m.jSize, lines)
	m.jSize = size
	return err
}

// replayJournal applies the journal to the table just loaded from topics.json, when the
// journal follows that file. Records that do not decode, or name a topic no request may
// carry, end the replay: what follows them is not trusted. Called by loadTopics
// before anything else sees the table.
func (m *Topics) replayJournal() error {
	lines, size, err := storage.ReadJournal(m.journalPath)
	if err != nil {
		return fmt.Errorf("broker: load topics: %w", err)
	}
	if len(lines) == 0 {
		return nil
	}
	var base topicRecord
	if json.Unmarshal(lines[0], &base) != nil || base.Base == nil || *base.Base != m.version {
		// topics.json is newer than the journal, or the journal is damaged from its start:
		// the first pass writes topics.json whole and starts a new one.
		m.log.Info().Str("file", m.journalPath).Msg("topics journal does not follow topics.json; ignored")
		return nil
	}
	applied := 0
	for i, line := range lines[1:] {
		var r topicRecord
		ok := json.Unmarshal(line, &r) == nil && r.Base == nil
		switch {
		case !ok:
		case r.Put != nil:
			ok = names.ValidTopic(r.Put.TopicName)
			if ok {
				m.table[r.Put.TopicName] = *r.Put
			}
		case r.Delete != "":
			delete(m.table, r.Delete)
		}
		if !ok {
			m.log.Error().Str("file", m.journalPath).Int("record", i+1).Int("ignored", len(lines)-1-i).
				Msg("topics journal record damaged; it and the records after it are ignored")
			return nil // jSize stays 0: the first pass writes topics.json whole
		}
		m.version = r.Version
		applied++
	}
	m.jSize = size
	if applied > 0 {
		m.log.Info().Int("records", applied).Msg("topics journal replayed")
	}
	return nil
}
