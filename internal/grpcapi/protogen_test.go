package grpcapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the API into a temporary directory with
// scripts/protogen.sh and compares it with the committed internal/grpcapi/apiv2, so an edit of
// proto/ without regenerating (or a hand edit of the generated code) fails here.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		// CI installs protobuf-compiler (.ci/run); there a missing protoc is a broken setup,
		// not a reason to let stale code through.
		if os.Getenv("CI") != "" {
			t.Fatalf("protoc not found with CI=%q: install Debian's protobuf-compiler (.ci/run does)", os.Getenv("CI"))
		}
		t.Skip("protoc not found: apt-get install protobuf-compiler to check the generated code")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "protogen.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/protogen.sh: %v\n%s", err, b)
	}
	committed := filepath.Join(root, "internal", "grpcapi", "apiv2")
	fresh := filepath.Join(out, "internal", "grpcapi", "apiv2")
	want := generatedFiles(t, fresh)
	have := generatedFiles(t, committed)
	if len(want) == 0 {
		t.Fatal("scripts/protogen.sh generated no .pb.go files")
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("internal/grpcapi/apiv2/%s is committed but no longer generated: delete it or run scripts/protogen.sh", name)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		got, ok := have[name]
		if !ok {
			t.Errorf("internal/grpcapi/apiv2/%s is generated but not committed: run scripts/protogen.sh", name)
			continue
		}
		if !bytes.Equal(got, want[name]) {
			t.Errorf("internal/grpcapi/apiv2/%s is stale: run scripts/protogen.sh and commit the result", name)
		}
	}
}

func generatedFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	return files
}
