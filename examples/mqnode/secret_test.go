package main

import (
	"slices"
	"strings"
	"testing"
)

// A controller started without a cluster secret says, in one warning, which ports must stay
// private; with $MQ_CLUSTER_SECRET it does not, and a broker in controller mode with the same
// secret joins it from another process.
func TestBinaryClusterSecretWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and runs three processes")
	}
	bin := buildMqnode(t)
	controller := func() []string {
		raft := reserveAddr(t)
		return append([]string{"-no-broker", "-listen", "127.0.0.1:0", "-store", t.TempDir(),
			"-controller-id", "n0", "-controller-listen", raft, "-controller-peers", "n0=" + raft}, ctlControllerArgs...)
	}
	isWarning := func(rec map[string]any) bool {
		msg, _ := rec["message"].(string)
		return rec["level"] == "warn" && strings.HasPrefix(msg, "controller mode without -cluster-secret")
	}

	t.Setenv(clusterSecretEnv, "")
	args := controller()
	open := startLoggedNode(t, bin, args...)
	rec := open.await(t, 0, "the warning about the ports", isWarning)
	var private []string
	for _, p := range rec["keep_private"].([]any) {
		private = append(private, p.(string))
	}
	raft := args[slices.Index(args, "-controller-listen")+1]
	if !slices.Contains(private, open.namesrv) || !slices.Contains(private, raft) {
		t.Fatalf("keep_private %v, want the name service %s and Raft %s", private, open.namesrv, raft)
	}

	t.Setenv(clusterSecretEnv, "the-deployment's-cluster-secret")
	closed := startLoggedNode(t, bin, controller()...)
	broker := startLoggedNode(t, bin, append([]string{"-no-namesrv", "-namesrv", closed.namesrv, "-controller", closed.namesrv,
		"-listen", "127.0.0.1:0", "-ha-listen", "127.0.0.1:0", "-store", t.TempDir()}, ctlBrokerArgs...)...)
	broker.await(t, 0, "the broker serving as master", func(rec map[string]any) bool { return rec["message"] == "serving as master" })
	for _, n := range []*loggedNode{closed, broker} {
		n.mu.Lock()
		for _, line := range n.lines {
			if strings.Contains(line, "without -cluster-secret") {
				t.Errorf("mqnode %v warned with a secret: %s", n.args, line)
			}
		}
		n.mu.Unlock()
	}
}
