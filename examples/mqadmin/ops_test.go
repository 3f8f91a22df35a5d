package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// sendsTo sends n messages and counts where they went, by broker name.
func sendsTo(t *testing.T, p *producer.Producer, topic string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for i := range n {
		r, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(fmt.Sprintf("m%d", i))))
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		seen[r.Queue.BrokerName]++
	}
	return seen
}

// drained waits until n sends in a row all avoid broker, then checks that the next n do too.
func drained(t *testing.T, p *producer.Producer, topic, broker string) {
	t.Helper()
	mqtest.Eventually(t, "producers to leave "+broker, func() bool { return sendsTo(t, p, topic, 20)[broker] == 0 })
	if seen := sendsTo(t, p, topic, 40); seen[broker] != 0 {
		t.Fatalf("after the drain %d of 40 sends went to %s", seen[broker], broker)
	}
}

// TestWipeAndAddWritePerm is issue 31's acceptance: wipeWritePerm drains a broker (the producer
// moves to the other broker of the cluster) and addWritePerm restores it; updateBrokerConfig
// brokerPermission does the same from the broker's side.
func TestWipeAndAddWritePerm(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2})
	const topic = "DrainMe"
	c.CreateTopic(topic, 4)
	ns := c.NameServerAddrs()[0]
	p := c.NewProducer()
	mqtest.Eventually(t, "sends to reach both brokers", func() bool {
		seen := sendsTo(t, p, topic, 20)
		return seen["broker-a"] > 0 && seen["broker-b"] > 0
	})

	// A registration of a newer topic table lifts a wipe, as in RocketMQ; on a loaded machine
	// one of the start's may still be on its way, so a send that still reaches broker-a
	// wipes again (the command is idempotent) before the drain is checked.
	wipe := func() {
		out := mustRun(t, "wipeWritePerm", "-n", ns, "-b", "broker-a")
		if !strings.HasPrefix(out, "wipe write perm of broker[broker-a] in name server["+ns+"] OK, ") {
			t.Fatalf("wipeWritePerm printed %q", out)
		}
	}
	out := mustRun(t, "wipeWritePerm", "-n", ns, "-b", "broker-a")
	if !strings.HasPrefix(out, "wipe write perm of broker[broker-a] in name server["+ns+"] OK, ") || strings.HasSuffix(out, "OK, 0\n") {
		t.Fatalf("wipeWritePerm printed %q", out)
	}
	mqtest.Eventually(t, "producers to leave broker-a", func() bool {
		if sendsTo(t, p, topic, 20)["broker-a"] == 0 {
			return true
		}
		wipe()
		return false
	})
	drained(t, p, topic, "broker-a")
	out = mustRun(t, "topicRoute", "-n", ns, "-t", topic)
	if !strings.Contains(out, `"perm": 4`) && !strings.Contains(out, `"perm":4`) {
		t.Errorf("route after the wipe shows no read-only queue data:\n%s", out)
	}

	out = mustRun(t, "addWritePerm", "-n", ns, "-b", "broker-a")
	if !strings.HasPrefix(out, "add write perm of broker[broker-a] in name server["+ns+"] OK, ") {
		t.Fatalf("addWritePerm printed %q", out)
	}
	mqtest.Eventually(t, "sends to reach broker-a again", func() bool { return sendsTo(t, p, topic, 20)["broker-a"] > 0 })

	// The broker's own switch: brokerPermission=4 registers every topic read-only.
	addrA := c.Master(0).Addr()
	out = mustRun(t, "updateBrokerConfig", "-n", ns, "-b", addrA, "-k", "brokerPermission", "-v", "4")
	if out != "update broker config success, "+addrA+"\n" {
		t.Fatalf("updateBrokerConfig printed %q", out)
	}
	if out := mustRun(t, "getBrokerConfig", "-n", ns, "-b", addrA); !strings.Contains(out, fmt.Sprintf("%-50s=  4\n", "brokerPermission")) {
		t.Fatalf("getBrokerConfig after the update:\n%s", out)
	}
	drained(t, p, topic, "broker-a")
	mustRun(t, "updateBrokerConfig", "-n", ns, "-c", "DefaultCluster", "-k", "brokerPermission", "-v", "6")
	mqtest.Eventually(t, "sends to reach broker-a after brokerPermission=6", func() bool { return sendsTo(t, p, topic, 20)["broker-a"] > 0 })

	code, _, errOut := runCmd(t, "updateBrokerConfig", "-n", ns, "-b", addrA, "-k", "fileReservedTime", "-v", "1")
	if code != exitFailed || !strings.Contains(errOut, "cannot change \"fileReservedTime\" at run time") {
		t.Fatalf("a fixed key: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "wipeWritePerm", "-n", ns)
	if code != exitUsage || !strings.Contains(errOut, "-b") {
		t.Fatalf("wipeWritePerm without -b: exit %d, %s", code, errOut)
	}
}

// TestOpsCommands runs the other commands of issue 31 against a two-broker cluster and checks
// RocketMQ's output layout.
func TestOpsCommands(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2})
	const topic = "OpsTopic"
	c.CreateTopic(topic, 2)
	ns := c.NameServerAddrs()[0]
	addrA := c.Master(0).Addr()
	p := c.NewProducer()
	sendsTo(t, p, topic, 20)

	out := mustRun(t, "topicClusterList", "-n", ns, "-t", topic)
	if out != "DefaultCluster\n" {
		t.Errorf("topicClusterList printed %q", out)
	}

	out = mustRun(t, "getBrokerConfig", "-n", ns, "-c", "DefaultCluster")
	if !strings.Contains(out, "============Master: "+addrA+"============\n") ||
		!strings.Contains(out, fmt.Sprintf("%-50s=  %s\n", "brokerName", "broker-b")) {
		t.Errorf("getBrokerConfig -c:\n%s", out)
	}

	out = mustRun(t, "getNamesrvConfig", "-n", ns)
	if !strings.HasPrefix(out, "============"+ns+"============\n") || !strings.Contains(out, fmt.Sprintf("%-50s=  true\n", "orderMessageEnable")) {
		t.Errorf("getNamesrvConfig:\n%s", out)
	}
	out = mustRun(t, "updateNamesrvConfig", "-n", ns, "-k", "orderMessageEnable", "-v", "false")
	if out != "update name server config success!["+ns+"]\norderMessageEnable : false\n" {
		t.Errorf("updateNamesrvConfig printed %q", out)
	}
	if out := mustRun(t, "getNamesrvConfig", "-n", ns); !strings.Contains(out, fmt.Sprintf("%-50s=  false\n", "orderMessageEnable")) {
		t.Errorf("getNamesrvConfig after the update:\n%s", out)
	}
	if code, _, errOut := runCmd(t, "updateNamesrvConfig", "-n", ns, "-k", "kvConfigPath", "-v", "/x"); code != exitFailed ||
		!strings.Contains(errOut, "kvConfigPath") {
		t.Errorf("updateNamesrvConfig kvConfigPath: exit %d %s", code, errOut)
	}

	// A consumed group: its offsets, cloned, and the broker-wide consume stats.
	a, err := admin.New(admin.Options{NameServers: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, m := range c.Masters() {
		for _, g := range []string{"opsSrc", "opsDst"} { // brokerConsumeStats lists subscription groups
			if err := a.CreateSubscriptionGroup(context.Background(), m.Addr(), admin.NewSubscriptionGroupConfig(g)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons := c.NewPushConsumer(consumer.WithGroup("opsSrc"))
	if err := cons.Subscribe(topic, "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	mqtest.Eventually(t, "opsSrc to consume everything", func() bool {
		st, err := a.ConsumeStats(context.Background(), "opsSrc", topic)
		return err == nil && len(st.Offsets) == 4 && st.Diff() == 0
	})
	cons.Close()
	committed := sendsTo(t, p, topic, 10)["broker-a"] // opsSrc's lag on broker-a
	out = mustRun(t, "cloneGroupOffset", "-n", ns, "-s", "opsSrc", "-d", "opsDst", "-t", topic, "-o", "true")
	if out != "clone group offset success. srcGroup[opsSrc], destGroup=[opsDst], topic["+topic+"]\n" {
		t.Errorf("cloneGroupOffset printed %q", out)
	}
	out = mustRun(t, "brokerConsumeStats", "-n", ns, "-b", addrA)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], fmt.Sprintf("%-64s  %-64s  %-32s  %-4s  ", "#Topic", "#Group", "#Broker Name", "#QID")) ||
		!strings.HasSuffix(out, fmt.Sprintf("\nDiff Total: %d\n", 2*committed)) {
		t.Errorf("brokerConsumeStats:\n%s", out)
	}
	var srcRows, dstRows int
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) >= 7 && f[0] == topic && f[1] == "opsSrc" {
			srcRows += atoi(t, f[6])
		}
		if len(f) >= 7 && f[0] == topic && f[1] == "opsDst" {
			dstRows += atoi(t, f[6])
		}
	}
	if srcRows != committed || dstRows != committed {
		t.Errorf("brokerConsumeStats: opsSrc diff %d and opsDst diff %d, want %d each:\n%s", srcRows, dstRows, committed, out)
	}

	// statsAll: opsSrc's backlog is the 10 messages sent after it stopped; the day's counts are
	// at most what was sent (30) and pulled (20): the statistics began as the brokers started.
	out = mustRun(t, "statsAll", "-n", ns, "-t", topic)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], fmt.Sprintf("%-64s  %-64s %12s %11s", "#Topic", "#Consumer Group", "#Accumulation", "#InTPS")) {
		t.Errorf("statsAll header %q", lines[0])
	}
	found := false
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 7 && f[0] == topic && f[1] == "opsSrc" {
			found = true
			in, outMsgs := atoi(t, f[5]), atoi(t, f[6])
			if f[2] != "10" || in <= 0 || in > 30 || outMsgs <= 0 || outMsgs > 20 {
				t.Errorf("statsAll row %q: want accumulation 10, 1-30 in, 1-20 out", l)
			}
		}
	}
	if !found {
		t.Errorf("statsAll has no %s/opsSrc row:\n%s", topic, out)
	}

	out = mustRun(t, "queryCq", "-n", ns, "-b", addrA, "-t", topic, "-q", "0", "-i", "0", "-c", "2", "-g", "nobody")
	if !strings.Contains(out, "Filter data: \nnobody@"+topic+" is not online!\n") || !strings.Contains(out, "Queue data: \nmax: ") ||
		!strings.Contains(out, "idx: 0\nConsumeQueueData{physicOffset=") || !strings.Contains(out, "idx: 1\n") {
		t.Errorf("queryCq:\n%s", out)
	}
	if code, _, errOut := runCmd(t, "queryCq", "-n", ns, "-b", addrA, "-t", topic, "-q", "x", "-i", "0"); code != exitUsage {
		t.Errorf("queryCq -q x: exit %d %s", code, errOut)
	}

	out = mustRun(t, "cleanExpiredCQ", "-n", ns, "-c", "DefaultCluster")
	if out != "success\n" {
		t.Errorf("cleanExpiredCQ printed %q", out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}
