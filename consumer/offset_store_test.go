package consumer

import (
	"context"
	"errors"
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

	// A corrupt file is an error, not silently offset 0.
	os.WriteFile(path, []byte("{"), 0o644)
	if _, err := newLocalOffsetStore(dir, "1.2.3.4@x/y", "g"); err == nil {
		t.Error("corrupt offsets file accepted")
	}
}
