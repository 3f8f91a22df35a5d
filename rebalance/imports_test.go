package rebalance

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly guards the package boundary in STYLE.md: rebalance imports only
// the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != "github.com/mqgo/mq/rebalance" {
			t.Errorf("rebalance depends on %s; it may use the standard library only", pkg)
		}
	}
}
