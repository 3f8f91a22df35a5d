package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mqgo/mq/mqtest"
)

// TestHAStatus: haStatus on a master lists its slave in sync with RocketMQ 5's layout, and on
// the slave shows its link to the master.
func TestHAStatus(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1})
	const topic = "HaT"
	c.CreateTopic(topic, 2)
	sendsTo(t, c.NewProducer(), topic, 20)
	c.WaitSlavesSynced()
	ns, master, slave := c.NameServerAddrs()[0], c.Master(0).Addr(), c.Slaves()[0].Addr()

	var rows []haStatusRow
	mqtest.Eventually(t, "the slave acknowledged everything", func() bool {
		code, out, _ := runCmd(t, "haStatus", "-n", ns, "-b", master, "-json")
		rows = nil
		return code == exitOK && jsonInto(out, &rows) && len(rows) == 1 && len(rows[0].Info.HAConnectionInfo) == 1 &&
			rows[0].Info.HAConnectionInfo[0].Diff == 0
	})
	info := rows[0].Info
	if !info.Master || info.InSyncSlaveNums != 1 || info.MasterCommitLogMaxOffset <= 0 ||
		info.HAConnectionInfo[0].SlaveAckOffset != info.MasterCommitLogMaxOffset || !info.HAConnectionInfo[0].InSync {
		t.Errorf("haStatus -json of the master: %+v", info)
	}
	out := mustRun(t, "haStatus", "-n", ns, "-b", master)
	want := fmt.Sprintf("\n#MasterAddr\t%s\n#MasterCommitLogMaxOffset\t%d\n#SlaveNum\t1\n#InSyncSlaveNum\t1\n%-32s  %-16s %16s %16s %16s %16s\n",
		master, info.MasterCommitLogMaxOffset, "#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status", "#TransferFromWhere")
	if !strings.HasPrefix(out, want) {
		t.Errorf("haStatus of the master:\n%s\nwant it to begin\n%s", out, want)
	}
	if f := strings.Fields(strings.Split(out, "\n")[6]); len(f) != 6 || f[2] != "0" || f[4] != "OK" {
		t.Errorf("slave row %q", f)
	}
	// -c: every master of the cluster, the same.
	if out2 := mustRun(t, "haStatus", "-n", ns, "-c", "DefaultCluster"); !strings.HasPrefix(out2, "\n#MasterAddr\t"+master+"\n") {
		t.Errorf("haStatus -c:\n%s", out2)
	}

	out = mustRun(t, "haStatus", "-n", ns, "-b", slave)
	lines := strings.Split(out, "\n")
	if len(lines) < 7 || !strings.HasPrefix(lines[1], "#MasterAddr\t") || lines[1] == "#MasterAddr\t" ||
		lines[2] != fmt.Sprintf("#CommitLogMaxOffset\t%d", info.MasterCommitLogMaxOffset) ||
		!strings.HasPrefix(lines[3], "#TransferSpeed(KB/s)\t") || !strings.HasPrefix(lines[4], "#LastReadTime\t20") ||
		!strings.HasPrefix(lines[5], "#LastWriteTime\t20") || lines[6] != "#MasterFlushOffset\t0" {
		t.Errorf("haStatus of the slave:\n%s", out)
	}
	if code, _, _ := runCmd(t, "haStatus", "-n", ns); code != exitUsage {
		t.Errorf("haStatus without -b or -c: exit %d", code)
	}
}

// jsonInto decodes one JSON document, reporting whether it did.
func jsonInto(s string, v any) bool { return json.Unmarshal([]byte(s), v) == nil }
