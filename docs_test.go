package mq_test

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// protocolDoc is the protocol reference that comments cite as "docs/protocol.md §N.M".
const protocolDoc = "docs/protocol.md"

var (
	// sectionHeading matches "## 5. Broker ...", "### 5.6 PULL_MESSAGE" and "#### 3.1.2 Parser".
	sectionHeading = regexp.MustCompile(`^#{2,6} (\d+(?:\.\d+)*)\.? `)
	// appendixHeading matches "## Appendix A. Example frames".
	appendixHeading = regexp.MustCompile(`^#{2,6} Appendix ([A-Z])\b`)
	// citation is one cited section: "§5.6" or "Appendix A".
	citation = regexp.MustCompile(`^(?:§(\d+(?:\.\d+)*)|Appendix ([A-Z])\b)`)
	// citationGap is what may stand between "protocol.md" and its first citation, or between two
	// citations of a list ("§5.6, §5.7", "§4.1–§4.3", "§5.1 and §10.4"), including a line break
	// inside a Go comment.
	citationGap = regexp.MustCompile(`^(?:[ \t\r\n]|//|,|;|–|-|\band\b|\bor\b)*`)
)

// TestProtocolReferences keeps every "docs/protocol.md §N.M" (and "Appendix X") cited in the
// repository's Go and Markdown files pointing at a heading of docs/protocol.md, and keeps the
// document's own "§" cross-references true, so renumbering a section cannot leave a stale
// reference behind. It also fails on any reference to the retired external file name, which
// does not exist in the repository.
func TestProtocolReferences(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatalf("read the protocol reference: %v", err)
	}
	sections := protocolSections(doc)
	if len(sections) < 10 {
		t.Fatalf("%s: found only %d section headings; the heading format changed?", protocolDoc, len(sections))
	}

	for _, ref := range bareSectionRefs(doc) {
		if !sections[ref.section] {
			t.Errorf("%s:%d: cross-reference §%s has no heading", protocolDoc, ref.line, ref.section)
		}
	}

	retired := "REMOTING" + ".md" // spelled apart so this file does not cite it
	cited := 0
	for _, path := range repoTextFiles(t) {
		if path == "docs_test.go" {
			continue // its citations are test data
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted in the work tree
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if i := bytes.Index(b, []byte(retired)); i >= 0 {
			t.Errorf("%s:%d: cites %s, which is not in the repository; cite %s §N instead",
				path, lineOf(b, i), retired, protocolDoc)
		}
		for _, ref := range protocolRefs(b) {
			cited++
			if !sections[ref.section] {
				t.Errorf("%s:%d: cites %s %s, which has no heading there", path, ref.line, protocolDoc, ref.label())
			}
		}
	}
	// The code cites the reference often; finding none means the scan, not the code, broke.
	if cited == 0 {
		t.Fatalf("found no %q references in the repository's files", protocolDoc+" §")
	}
}

// TestProtocolReferenceParsing pins what the scanner reads as citations, so that a change to
// it cannot quietly stop checking lists, wrapped comments or appendices.
func TestProtocolReferenceParsing(t *testing.T) {
	src := []byte("// see docs/protocol.md §5.6, §5.7 and §10.4.\n" +
		"// the client (docs/protocol.md\n// §7.4) and docs/protocol.md §4.1–§4.3\n" +
		"pinned to docs/protocol.md Appendix A; STYLE.md §1 is not ours; protocol.md (no section)\n")
	var got []string
	for _, r := range protocolRefs(src) {
		got = append(got, r.label())
	}
	want := "§5.6 §5.7 §10.4 §7.4 §4.1 §4.3 Appendix A"
	if strings.Join(got, " ") != want {
		t.Fatalf("protocolRefs = %q, want %q", strings.Join(got, " "), want)
	}

	doc := []byte("# Title\n## 0. Quick\n### 1.2 Frame layout\n#### 3.1.2 Parser quirks\n## Appendix B. HA\n")
	s := protocolSections(doc)
	for _, k := range []string{"0", "1.2", "3.1.2", "Appendix B"} {
		if !s[k] {
			t.Errorf("protocolSections misses %q (got %v)", k, s)
		}
	}
	if s["1"] || s["3.1"] {
		t.Errorf("protocolSections invents parents: %v", s)
	}
}

// sectionRef is one cited section and the line that cites it.
type sectionRef struct {
	section string // "5.6" or "Appendix A"
	line    int
}

func (r sectionRef) label() string {
	if strings.HasPrefix(r.section, "Appendix ") {
		return r.section
	}
	return "§" + r.section
}

// protocolSections returns the section numbers and appendix names headed in doc.
func protocolSections(doc []byte) map[string]bool {
	s := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		if m := sectionHeading.FindSubmatch(sc.Bytes()); m != nil {
			s[string(m[1])] = true
		} else if m := appendixHeading.FindSubmatch(sc.Bytes()); m != nil {
			s["Appendix "+string(m[1])] = true
		}
	}
	return s
}

// protocolRefs returns the sections cited after each "protocol.md" in b: the citation that
// follows it and every further one chained to it by a list separator.
func protocolRefs(b []byte) []sectionRef {
	var refs []sectionRef
	name := []byte("protocol.md")
	for off := 0; ; {
		i := bytes.Index(b[off:], name)
		if i < 0 {
			return refs
		}
		pos := off + i + len(name)
		off = pos
		for {
			gap := citationGap.Find(b[pos:])
			m := citation.FindSubmatchIndex(b[pos+len(gap):])
			if m == nil {
				break
			}
			start := pos + len(gap)
			var sec string
			if m[2] >= 0 {
				sec = string(b[start+m[2] : start+m[3]])
			} else {
				sec = "Appendix " + string(b[start+m[4]:start+m[5]])
			}
			refs = append(refs, sectionRef{section: sec, line: lineOf(b, start)})
			pos = start + m[1]
		}
	}
}

// bareSectionRefs returns every "§N.M" in doc (the document cites itself without its name).
func bareSectionRefs(doc []byte) []sectionRef {
	var refs []sectionRef
	re := regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	for _, m := range re.FindAllSubmatchIndex(doc, -1) {
		refs = append(refs, sectionRef{section: string(doc[m[2]:m[3]]), line: lineOf(doc, m[0])})
	}
	return refs
}

func lineOf(b []byte, i int) int { return bytes.Count(b[:i], []byte("\n")) + 1 }

// repoTextFiles lists the .go and .md files git knows of (tracked, and new ones not ignored),
// or, without git, every such file under the repository root.
func repoTextFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	keep := func(p string) bool { return strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md") }
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err == nil {
		for _, p := range strings.Split(string(out), "\n") {
			if keep(p) {
				files = append(files, filepath.FromSlash(p))
			}
		}
		return files
	}
	t.Logf("git ls-files: %v; walking the tree instead", err)
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && keep(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the repository: %v", err)
	}
	return files
}
