package interop

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// buildMqadmin builds the mqadmin CLI into a temporary directory, as a user would run it.
func buildMqadmin(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build mqadmin: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mqadmin")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/mqgo/mq/examples/mqadmin").CombinedOutput()
	if err != nil {
		t.Fatalf("go build mqadmin: %v\n%s", err, out)
	}
	return bin
}

// The mqadmin CLI's resetOffsetByTime moves the official push consumer back in time, and it
// consumes the topic again.
func TestMqadminResetsOfficialPushConsumer(t *testing.T) {
	t.Parallel() // waits for the official client's 5 s offset persist: side by side with the other waiting tests
	bin := buildMqadmin(t)
	n := startNode(t)
	const topic, group, queues = "MqadminResetOfficial", "mqadmin-reset-official-cg", 2
	start, consumed := consumedOnceByOfficial(t, n, topic, group, queues)

	// The official client persists offsets every 5 s: until then the broker has none, refuses
	// the reset and mqadmin exits 1.
	var table []struct {
		BrokerName string `json:"brokerName"`
		QueueID    int    `json:"queueId"`
		Offset     int64  `json:"offset"`
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "resetOffsetByTime", "-n", n.Addr(), "-g", group, "-t", topic,
			"-s", strconv.FormatInt(start, 10), "-f", "true", "-json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil {
			if err := json.Unmarshal(stdout.Bytes(), &table); err != nil {
				t.Fatalf("mqadmin -json output: %v\n%s", err, stdout.String())
			}
			break
		}
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || time.Now().After(deadline) {
			t.Fatalf("mqadmin resetOffsetByTime: %v\n%s", err, stderr.String())
		}
	}
	if len(table) != queues {
		t.Fatalf("reset table %+v, want %d queues", table, queues)
	}
	for _, r := range table {
		if r.Offset != 0 {
			t.Fatalf("%+v reset to %d, want 0", r, r.Offset)
		}
	}

	consumed.waitAgain(t)
}
