package tables

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// TestTopicJournalDamage: a journal cut short keeps its whole records; one that does not
// follow topics.json (a crash between writing topics.json and starting a new journal) is
// ignored; a damaged record ends the replay, and the first pass writes topics.json whole.
func TestTopicJournalDamage(t *testing.T) {
	dir := t.TempDir()
	base := route.DataVersion{Timestamp: 1700000000000, Counter: 5}
	if err := storage.WriteJSONFile(filepath.Join(dir, "topics.json"), route.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]route.TopicConfig{"Snap": {TopicName: "Snap", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		DataVersion:      base}); err != nil {
		t.Fatal(err)
	}
	line := func(r topicRecord) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	put := func(name string, counter int64) string {
		return line(topicRecord{Put: &route.TopicConfig{TopicName: name, ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6},
			Version: route.DataVersion{Timestamp: base.Timestamp, Counter: counter}})
	}
	journal := filepath.Join(dir, topicJournalFile)
	// open loads the tables over content as the journal, then writes them as a broker's
	// clean close does (FlushAll).
	open := func(content string) map[string]route.TopicConfig {
		t.Helper()
		if err := os.WriteFile(journal, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tb := load(t, testConfig(t, dir))
		defer func() {
			if err := tb.Writer.FlushAll(); err != nil {
				t.Fatal(err)
			}
		}()
		return tb.Topics.Snapshot().TopicConfigTable
	}
	readTopicsFile := func() map[string]route.TopicConfig {
		var w route.TopicConfigSerializeWrapper
		if _, err := storage.ReadJSONFile(filepath.Join(dir, "topics.json"), &w); err != nil {
			t.Fatal(err)
		}
		return w.TopicConfigTable
	}
	head := line(topicRecord{Base: &base})
	torn := put("Torn", 8)
	got := open(head + put("A", 6) + line(topicRecord{Delete: "Snap", Version: route.DataVersion{Counter: 7}}) + torn[:len(torn)/2])
	if _, ok := got["A"]; !ok {
		t.Error("a whole record before a torn one was not replayed")
	}
	if _, ok := got["Snap"]; ok {
		t.Error("a delete record was not replayed")
	}
	if _, ok := got["Torn"]; ok {
		t.Error("a torn record was replayed")
	}
	// The tables above were written as at a clean close: topics.json holds A now and the
	// journal starts anew.
	if got := open(line(topicRecord{Base: &route.DataVersion{Counter: 99}}) + put("Stale", 100)); got["Stale"].TopicName != "" {
		t.Error("a journal that does not follow topics.json was replayed")
	} else if _, ok := got["A"]; !ok {
		t.Error("topics.json lost A")
	}
	var tw route.TopicConfigSerializeWrapper
	if _, err := storage.ReadJSONFile(filepath.Join(dir, "topics.json"), &tw); err != nil {
		t.Fatal(err)
	}
	got = open(line(topicRecord{Base: &tw.DataVersion}) + put("B", tw.DataVersion.Counter+1) + "{not json}\n" +
		put("C", tw.DataVersion.Counter+2))
	if _, ok := got["B"]; !ok {
		t.Error("a record before a damaged one was not replayed")
	}
	if _, ok := got["C"]; ok {
		t.Error("a record after a damaged one was replayed")
	}
	if w := readTopicsFile(); w["B"].TopicName == "" || w["C"].TopicName != "" {
		t.Error("after a damaged journal, topics.json was not written whole with what was replayed")
	}
}
