package storage

import (
	"os/exec"
	"strings"
	"testing"
)

// TestForbiddenImports guards the package boundary: storage may import internal/... and its
// chosen dependencies, never the network or the clients (STYLE.md §1).
func TestForbiddenImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"/remoting", "/route", "/producer", "/consumer", "/rebalance", "gnet", "mqgo/mq/internal/broker"} {
			if strings.HasPrefix(dep, "github.com/") && strings.Contains(dep, bad) {
				t.Errorf("storage depends on %s", dep)
			}
		}
	}
}
