package acl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/aclfile"
	"github.com/rs/zerolog"
)

// aclFile is a plain_acl.yml whose one account has perm on topic payments.
func aclFile(perm string) string {
	return "accounts:\n  - accessKey: Producer01\n    secretKey: " + testSecret + "\n    defaultGroupPerm: SUB\n" +
		"    topicPerms:\n      - payments=" + perm + "\n"
}

// writeFile replaces path whole, as an operator should (rename over it).
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects log lines from the watcher's goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(s string) int { return strings.Count(b.String(), s) }

func sendAllowed(g *Guard) bool {
	return g.Check(peer{addr: elsewhere}, sendV2(producer, "payments", "pg")) == nil
}

// TestWatcherPoll walks one watcher through a file's life, a poll at a time.
func TestWatcherPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	var logs logBuffer
	var g Guard
	w := newWatcher(path, aclfile.Parse, &g, zerolog.New(&logs))

	writeFile(t, path, aclFile("PUB"))
	w.poll()
	first := g.checker.Load()
	if first == nil || !sendAllowed(&g) || logs.count("ACL loaded") != 1 {
		t.Fatalf("first load: checker %v, logs %s", first, logs.String())
	}

	w.poll()
	writeFile(t, path, aclFile("PUB")) // rewritten, same content
	w.poll()
	if g.checker.Load() != first || logs.count("ACL loaded") != 1 {
		t.Fatal("reloaded an unchanged file")
	}

	for _, broken := range []string{"accounts: [\n", aclFile("PUBLISH"), "accounts:\n  - accessKey: Producer01\n    secretKey: short\n"} {
		writeFile(t, path, broken)
		before := logs.count("ACL file rejected")
		w.poll()
		w.poll()
		if g.checker.Load() != first || !sendAllowed(&g) {
			t.Fatalf("broken file %q replaced the rules", broken)
		}
		if logs.count("ACL file rejected") != before+1 {
			t.Fatalf("broken file %q: want one error log, got:\n%s", broken, logs.String())
		}
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.poll()
	w.poll()
	if g.checker.Load() != first || logs.count("cannot read the ACL file") != 1 {
		t.Fatalf("removed file: logs:\n%s", logs.String())
	}

	writeFile(t, path, aclFile("SUB"))
	w.poll()
	if g.checker.Load() == first || sendAllowed(&g) || logs.count("ACL loaded") != 2 {
		t.Fatalf("changed file not loaded: logs:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), testSecret) || strings.Contains(logs.String(), "short") {
		t.Errorf("a log shows a secret:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"component":"acl"`) {
		t.Errorf("logs lack the component:\n%s", logs.String())
	}
}

// TestWatch runs the real loop: an edit of the file takes effect without anyone calling
// anything, a broken edit does not, and Watch returns once ctx ends.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, aclFile("PUB"))
	var logs logBuffer
	var g Guard
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, path, aclfile.Parse, 5*time.Millisecond, &g, zerolog.New(&logs)) }()

	eventually(t, "the file is loaded", func() bool { return sendAllowed(&g) })
	writeFile(t, path, aclFile("DENY"))
	eventually(t, "the edit takes effect", func() bool { return !sendAllowed(&g) })
	writeFile(t, path, "accounts: {\n")
	eventually(t, "the broken edit is reported", func() bool { return logs.count("ACL file rejected") == 1 })
	if sendAllowed(&g) {
		t.Fatal("the broken edit changed the rules")
	}
	writeFile(t, path, aclFile("PUB|SUB"))
	eventually(t, "the fixed file takes effect", func() bool { return sendAllowed(&g) })

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch: %v", err)
	}
}

func TestWatchArguments(t *testing.T) {
	ctx := context.Background()
	if err := Watch(ctx, "x.yml", aclfile.Parse, 0, nil, zerolog.Nop()); err == nil {
		t.Error("nil Guard accepted")
	}
	if err := Watch(ctx, "", aclfile.Parse, 0, &Guard{}, zerolog.Nop()); err == nil {
		t.Error("empty path accepted")
	}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
