package consumer

import (
	"context"
	"errors"
	"github.com/mqgo/mq/internal/client"
	"os"
	"path/filepath"
	"testing"
)

func TestLocalOffsetStore(t *testing.T) {
	dir := t.TempDir()
	q0 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	s, err := newLocalOffsetStore(dir, "1.2.3.4@x/y", "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.fetch(context.Background(), q0); !errors.Is(err, ErrOffsetNotFound) {
		t.Fatalf("fetch of a new store: %v, want ErrOffsetNotFound", err)
	}
	s.update(q0, 10, false)
	s.update(q0, 5, true) // ignored: increase only
	s.update(q1, 3, false)
	if err := s.persist(context.Background(), []MessageQueue{q0, q1}, false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "1.2.3.4@x_y", "g", "offsets.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("offsets file: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only offsets.json (no temp files left)", len(entries))
	}

	// A new store reads what was persisted; persisting a subset keeps the other entries.
	s2, err := newLocalOffsetStore(dir, "1.2.3.4@x/y", "g")
	if err != nil {
		t.Fatal(err)
	}
	for mq, want := range map[MessageQueue]int64{q0: 10, q1: 3} {
		if got, err := s2.fetch(context.Background(), mq); err != nil || got != want {
			t.Errorf("fetch %v = %d, %v; want %d", mq, got, err, want)
		}
	}
	s2.update(q1, 4, true)
	if err := s2.persist(context.Background(), []MessageQueue{q1}, false); err != nil {
		t.Fatal(err)
	}
	s3, _ := newLocalOffsetStore(dir, "1.2.3.4@x/y", "g")
	if got, _ := s3.fetch(context.Background(), q0); got != 10 {
		t.Errorf("q0 after partial persist = %d, want 10", got)
	}
	if got, _ := s3.fetch(context.Background(), q1); got != 4 {
		t.Errorf("q1 = %d, want 4", got)
	}

	// A corrupt file is an error, not silently offset 0, once no .bak can stand in for it
	// (TestLocalOffsetStoreFallsBackToBak covers the fallback).
	os.Remove(path + ".bak")
	os.WriteFile(path, []byte("{"), 0o644)
	if _, err := newLocalOffsetStore(dir, "1.2.3.4@x/y", "g"); err == nil {
		t.Error("corrupt offsets file accepted")
	}
}

// The file is the Java client's LocalFileOffsetStore format (OffsetSerializeWrapper in
// fastjson's object-key form), so a service can move between the Java client and this one on
// the same file, and the previous content is kept in offsets.json.bak.
func TestLocalOffsetStoreJavaFormat(t *testing.T) {
	dir := t.TempDir()
	q0 := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	path := filepath.Join(dir, "10.0.0.1@DEFAULT", "g", "offsets.json")
	// As the Java client writes it (fastjson PrettyFormat).
	java := "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":0,\n\t\t\t\"topic\":\"T\"\n" +
		"\t\t}:250,{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":1,\n\t\t\t\"topic\":\"T\"\n\t\t}:249\n\t}\n}"
	writeFile(t, path, java)
	s, err := newLocalOffsetStore(dir, "10.0.0.1@DEFAULT", "g")
	if err != nil {
		t.Fatal(err)
	}
	for mq, want := range map[MessageQueue]int64{q0: 250, q1: 249} {
		if got, err := s.fetch(context.Background(), mq); err != nil || got != want {
			t.Errorf("fetch %v = %d, %v; want %d from the Java client's file", mq, got, err, want)
		}
	}
	s.update(q0, 260, true)
	if err := s.persist(context.Background(), []MessageQueue{q0}, false); err != nil {
		t.Fatal(err)
	}
	want := `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:260,` +
		`{"brokerName":"broker-a","queueId":1,"topic":"T"}:249}}`
	if got := readFile(t, path); got != want {
		t.Errorf("offsets.json\n got %s\nwant %s", got, want)
	}
	if got := readFile(t, path+".bak"); got != java {
		t.Errorf("offsets.json.bak holds %q, want the previous content", got)
	}
}

// Like the Java client, a missing, empty or unreadable offsets.json falls back to
// offsets.json.bak; with neither usable the store is an error, not a silent start from zero.
func TestLocalOffsetStoreFallsBackToBak(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	bak := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}`
	for name, main := range map[string]*string{"missing": nil, "empty": ptr(""), "corrupt": ptr("{\"offsetTable\":{{")} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c", "g", "offsets.json")
			writeFile(t, path+".bak", bak)
			if main != nil {
				writeFile(t, path, *main)
			}
			s, err := newLocalOffsetStore(dir, "c", "g")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.fetch(context.Background(), mq); err != nil || got != 42 {
				t.Errorf("fetch = %d, %v; want 42 from the .bak file", got, err)
			}
		})
	}
	t.Run("both corrupt", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c", "g", "offsets.json")
		writeFile(t, path, "{")
		writeFile(t, path+".bak", "[")
		if _, err := newLocalOffsetStore(dir, "c", "g"); err == nil {
			t.Error("corrupt offsets file and .bak accepted")
		}
	})
}

// A file in the array form earlier versions wrote is read once and rewritten at once in the
// Java client's form (the old content kept in .bak).
func TestLocalOffsetStoreMigratesArrayForm(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c", "g", "offsets.json")
	old := `{"offsetTable":[{"topic":"T","brokerName":"b","queueId":0,"offset":10},{"topic":"T","brokerName":"b","queueId":1,"offset":3}]}`
	writeFile(t, path, old)
	s, err := newLocalOffsetStore(dir, "c", "g")
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[int]int64{0: 10, 1: 3} {
		if got, err := s.fetch(context.Background(), MessageQueue{Topic: "T", BrokerName: "b", QueueID: q}); err != nil || got != want {
			t.Errorf("queue %d: %d, %v; want %d", q, got, err, want)
		}
	}
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:10,{"brokerName":"b","queueId":1,"topic":"T"}:3}}`
	if got := readFile(t, path); got != want {
		t.Errorf("migrated file\n got %s\nwant %s", got, want)
	}
	if got := readFile(t, path+".bak"); got != old {
		t.Errorf(".bak = %s, want the old array form", got)
	}
}

func ptr[T any](v T) *T { return &v }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A broadcasting consumer's offsets directory is keyed as a Java consumer's, ip@DEFAULT with the
// default instance name, not by the pid-bearing client id: a restart must find the file.
func TestOffsetFileClientID(t *testing.T) {
	ip := client.LocalIPv4()
	for in, want := range map[string]string{"": ip + "@DEFAULT", "DEFAULT": ip + "@DEFAULT", "svc": ip + "@svc"} {
		if got := offsetFileClientID(in); got != want {
			t.Errorf("offsetFileClientID(%q) = %q, want %q", in, got, want)
		}
	}
}
