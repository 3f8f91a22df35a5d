package mq_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// archDoc is the architecture guide whose file references this test keeps honest: a doc that
// names a file the code no longer has sends the next engineer looking for nothing.
const archDoc = "docs/architecture.md"

// codeSpan is one `...` span of Markdown (no backquote inside, on one line).
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// repoPath is what a span must look like to be taken as a path in the repository: slash-separated
// elements of file-name characters (a * globs), and either a slash (`internal/broker`,
// `producer/`) or a file extension the repository holds (`mq.go`, `README.md`). Spans such as
// `%RETRY%<group>`, `<store>/config/topics.json`, `remoting.Client` or `ip@instance` are not
// paths and are left alone.
var repoPath = regexp.MustCompile(`^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*-]+)*/?$`)

var repoExts = []string{".go", ".md", ".mod", ".sh"}

// docPaths returns the repository paths cited in backquotes in doc, each once, in order.
func docPaths(doc string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		s := m[1]
		if !repoPath.MatchString(s) || strings.HasPrefix(s, ".") {
			continue
		}
		if !strings.Contains(s, "/") && !slices.Contains(repoExts, filepath.Ext(s)) {
			continue
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// pathExists reports whether p (relative to the repository root) names a file or directory, or
// as a glob matches at least one.
func pathExists(p string) bool {
	p = filepath.FromSlash(strings.TrimSuffix(p, "/"))
	if strings.Contains(p, "*") {
		m, err := filepath.Glob(p)
		return err == nil && len(m) > 0
	}
	_, err := os.Stat(p)
	return err == nil
}

func TestArchitectureDocPaths(t *testing.T) {
	b, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	paths := docPaths(string(b))
	// The doc walks a message through every layer; far fewer citations means the extraction
	// broke, not that the doc got shorter.
	if len(paths) < 40 {
		t.Fatalf("found only %d backquoted paths in %s: %q", len(paths), archDoc, paths)
	}
	for _, p := range paths {
		if !pathExists(p) {
			t.Errorf("%s cites `%s`, which does not exist", archDoc, p)
		}
	}
}

func TestArchitectureDocExtraction(t *testing.T) {
	doc := "Send: `internal/broker/send.go` calls `storage/put.go`; see `producer/` and `mq.go`,\n" +
		"`README.md`, `internal/broker/send*.go`. Not paths: `%RETRY%<group>`, `remoting.Client`,\n" +
		"`<store>/config/topics.json`, `ip@instance`, `SCHEDULE_TOPIC_XXXX`, `topics.json`, `./x`,\n" +
		"`internal/broker/send.go` again.\n"
	want := []string{"internal/broker/send.go", "storage/put.go", "producer/", "mq.go", "README.md",
		"internal/broker/send*.go"}
	if got := docPaths(doc); !slices.Equal(got, want) {
		t.Errorf("docPaths:\n got %q\nwant %q", got, want)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"internal/broker/send.go", true},
		{"internal/broker/", true},
		{"internal/broker/send*.go", true},
		{"internal/broker/sendd.go", false},
		{"internal/nowhere/", false},
		{"internal/broker/zz*.go", false},
	} {
		if got := pathExists(c.path); got != c.want {
			t.Errorf("pathExists(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}
