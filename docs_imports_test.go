package mq_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// importMapHeading introduces the import map of docs/architecture.md: the fenced block after
// it lists, per package of the module, what it imports. The map is the first thing a new
// engineer reads about the house, so the test keeps it exactly as `go list` sees the code.
const importMapHeading = "Imports as they are today"

// mqModule is the module's import path; its packages are named without it in the map.
const mqModule = "github.com/mqgo/mq"

// importMap is the map as the code has it: one line per package of the module (the root as
// "mq", commands under examples/ and code generators left out), its imports of the module's
// packages in order, then in brackets the third-party ones with "github.com/" dropped; the
// standard library is left out.
func importMap(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(l, "|")
		name := shortPackage(path)
		if strings.HasPrefix(name, "examples/") || strings.HasSuffix(name, "/headergen") {
			continue
		}
		var own, outside []string
		for _, imp := range strings.Split(imports, ",") {
			switch {
			case imp == "":
			case imp == mqModule || strings.HasPrefix(imp, mqModule+"/"):
				own = append(own, shortPackage(imp))
			case strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
				outside = append(outside, strings.TrimPrefix(imp, "github.com/"))
			}
		}
		slices.Sort(own)
		slices.Sort(outside)
		line := name + " ->"
		if len(own) > 0 {
			line += " " + strings.Join(own, ", ")
		}
		if len(outside) > 0 {
			line += " [" + strings.Join(outside, ", ") + "]"
		}
		if len(own)+len(outside) == 0 {
			line += " standard library only"
		}
		lines = append(lines, line)
	}
	return lines
}

func shortPackage(path string) string {
	if path == mqModule {
		return "mq"
	}
	return strings.TrimPrefix(path, mqModule+"/")
}

// docImportMap is the fenced block after importMapHeading in doc.
func docImportMap(t *testing.T, doc string) []string {
	t.Helper()
	_, after, ok := strings.Cut(doc, importMapHeading)
	if !ok {
		t.Fatalf("%s has no %q", archDoc, importMapHeading)
	}
	_, block, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatalf("%s: no fenced block after %q", archDoc, importMapHeading)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: the import map's block does not end", archDoc)
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

func TestArchitectureImportMap(t *testing.T) {
	b, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, got := importMap(t), docImportMap(t, string(b))
	if slices.Equal(got, want) {
		return
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("%s's import map lacks or misstates: %s", archDoc, l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("%s's import map has a line the code does not: %s", archDoc, l)
		}
	}
	t.Logf("the map as the code has it:\n%s", strings.Join(want, "\n"))
}
