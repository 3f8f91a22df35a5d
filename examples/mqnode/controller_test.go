package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/freeport"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// Automatic failover as operators run it: three mqnode processes that are name service and
// controller (a Raft group), three brokers in controller mode with all-ack. The master is
// killed with SIGKILL; a member of the SyncStateSet takes over with every acknowledged
// message, and the killed broker, restarted on its store, returns as a slave and catches up.
// Periods are the test's, set through the flags named after RocketMQ's settings.

const (
	ctlTopic = "ControllerFailover"
	// ctlWait bounds each wait for the group: Raft elections, joins and catch-up take a few
	// periods each, and six processes share the machine with the race detector.
	ctlWait = 60 * time.Second
)

// Controller-side and broker-side test periods, each well below RocketMQ's default.
var (
	ctlControllerArgs = []string{"-controller-scan-interval", "50ms", "-controller-heartbeat-timeout", "1s"}
	ctlBrokerArgs     = []string{"-broker-heartbeat-interval", "100ms", "-sync-broker-metadata-period", "200ms",
		"-check-sync-state-set-period", "100ms", "-slave-sync-period", "100ms", "-all-ack-in-sync-state-set"}
)

func TestBinaryControllerFailover(t *testing.T) {
	t.Parallel() // child processes that mostly wait: side by side with the other binary tests
	if testing.Short() {
		t.Skip("builds a binary and runs six processes")
	}
	bin := buildMqnode(t)

	raft := make([]string, 3)
	var peers []string
	for i := range raft {
		raft[i] = reserveAddr(t)
		peers = append(peers, fmt.Sprintf("n%d=%s", i, raft[i]))
	}
	var namesrvs []string
	for i := range raft {
		c := startLoggedNode(t, bin, append([]string{"-no-broker", "-listen", "127.0.0.1:0", "-store", t.TempDir(),
			"-controller-id", fmt.Sprint("n", i), "-controller-listen", raft[i],
			"-controller-peers", strings.Join(peers, ";")}, ctlControllerArgs...)...)
		namesrvs = append(namesrvs, c.namesrv)
	}
	ns := strings.Join(namesrvs, ";")
	brokerArgs := func(id int, listen, store string) []string {
		return append([]string{"-no-namesrv", "-namesrv", ns, "-controller", ns, "-broker-id", strconv.Itoa(id),
			"-listen", listen, "-ha-listen", "127.0.0.1:0", "-store", store}, ctlBrokerArgs...)
	}
	brokers := make([]*loggedNode, 3)
	listens, stores := make([]string, 3), make([]string, 3)
	for i := range brokers {
		// A fixed port, so the killed broker returns on the address its group knows.
		listens[i], stores[i] = reserveAddr(t), t.TempDir()
		brokers[i] = startLoggedNode(t, bin, brokerArgs(i+1, listens[i], stores[i])...)
	}

	adm, err := admin.New(admin.Options{NameServers: namesrvs})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	client := remoting.NewClient(remoting.ClientOptions{})
	defer client.Close()
	p, err := producer.New(producer.WithNameServers(namesrvs...), producer.WithGroup("controller-failover-pg"),
		producer.WithSendTimeout(3*time.Second), producer.WithPollNameServerInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	// The first master takes both others into its SyncStateSet; only then is every
	// acknowledged message on each broker the controllers may elect.
	var acked []string
	sendOK := func(body string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := p.SendSync(ctx, producer.NewMessage(ctlTopic, []byte(body)))
		if err != nil || r.Status != producer.SendOK {
			return false
		}
		acked = append(acked, body)
		return true
	}
	deadline := time.Now().Add(ctlWait)
	for !sendOK("first") {
		if time.Now().After(deadline) {
			t.Fatal("no send acknowledged by the group")
		}
	}
	master := masterIndex(t, adm, brokers)
	brokers[master].await(t, 0, "a SyncStateSet of all three", func(rec map[string]any) bool {
		set, _ := rec["sync_state_set"].([]any)
		return rec["message"] == "SyncStateSet changed" && len(set) == 3
	})
	for i := range 40 {
		if body := fmt.Sprint("before-", i); !sendOK(body) {
			t.Fatalf("send %q not acknowledged by the full SyncStateSet", body)
		}
	}
	// The slaves have the topic (slave metadata sync) and every message before the kill.
	for i := range brokers {
		if i != master {
			waitSameMaxOffsets(t, client, brokers[master].broker, brokers[i].broker)
		}
	}

	killed := brokers[master]
	killed.kill(t)
	killedAt := time.Now()
	for i := 0; !sendOK(fmt.Sprint("after-", i)); i++ {
		if time.Since(killedAt) > ctlWait {
			t.Fatalf("no send acknowledged %v after the master was killed", ctlWait)
		}
	}
	failover := time.Since(killedAt)
	t.Logf("failover: first acknowledged send %v after the master's SIGKILL", failover.Round(time.Millisecond))

	// masterIndex skips the killed broker: this waits for the route to name its successor.
	next := masterIndex(t, adm, brokers)
	checkReadable(t, adm, acked)

	// The killed broker returns on its store: a slave of the new master that catches up.
	brokers[master] = startLoggedNode(t, bin, brokerArgs(master+1, listens[master], stores[master])...)
	brokers[master].await(t, 0, "the returning broker serving as slave", func(rec map[string]any) bool {
		return rec["message"] == "serving as slave"
	})
	for i := range 10 {
		if body := fmt.Sprint("back-", i); !sendOK(body) {
			t.Fatalf("send %q after the old master returned not acknowledged", body)
		}
	}
	if now := masterIndex(t, adm, brokers); now != next {
		t.Fatalf("master moved from broker %d to %d when the old master returned", next+1, now+1)
	}
	waitSameMaxOffsets(t, client, brokers[next].broker, brokers[master].broker)
	checkReadable(t, adm, acked)
}

// masterIndex returns which of brokers the route of ctlTopic names as master (id 0), waiting
// for the route to name a live one.
func masterIndex(t *testing.T, adm *admin.Admin, brokers []*loggedNode) int {
	t.Helper()
	return topicMasterIndex(t, adm, ctlTopic, brokers)
}

// topicMasterIndex is masterIndex for any topic.
func topicMasterIndex(t *testing.T, adm *admin.Admin, topic string, brokers []*loggedNode) int {
	t.Helper()
	deadline := time.Now().Add(ctlWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := adm.TopicRoute(ctx, topic)
		cancel()
		if err == nil {
			for _, bd := range r.BrokerDatas {
				for i, b := range brokers {
					if !b.isKilled() && bd.MasterAddr() == b.broker {
						return i
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live master in the route of %s after %v (last error: %v)", topic, ctlWait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkReadable pulls every queue of the topic from its master and checks that each
// acknowledged body is there.
func checkReadable(t *testing.T, adm *admin.Admin, acked []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlWait)
	defer cancel()
	stats, err := adm.TopicStats(ctx, ctlTopic)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for mq, o := range stats {
		for off := o.MinOffset; off < o.MaxOffset; {
			msgs, next, err := adm.PullMessages(ctx, mq, off, admin.MaxPullNums)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 || next <= off {
				t.Fatalf("%v: nothing read at offset %d of max %d", mq, off, o.MaxOffset)
			}
			for _, m := range msgs {
				stored[string(m.Body)] = true
			}
			off = next
		}
	}
	for _, body := range acked {
		if !stored[body] {
			t.Fatalf("acknowledged message %q is not on the master (%d acknowledged, %d stored)", body, len(acked), len(stored))
		}
	}
}

// waitSameMaxOffsets waits until the broker at addr has the topic, with each queue's max
// offset equal to the one of the broker at want.
func waitSameMaxOffsets(t *testing.T, c *remoting.Client, want, addr string) {
	t.Helper()
	deadline := time.Now().Add(ctlWait)
	for {
		w, werr := queueMaxOffsets(c, want)
		got, err := queueMaxOffsets(c, addr)
		if werr == nil && err == nil && maps.Equal(w, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %s: max offsets %v (%v), broker %s has %v (%v)", addr, got, err, want, w, werr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// queueMaxOffsets asks one broker, master or slave, for ctlTopic's max offsets by queue.
func queueMaxOffsets(c *remoting.Client, addr string) (map[int]int64, error) {
	return topicMaxOffsets(c, addr, ctlTopic)
}

// topicMaxOffsets asks one broker, master or slave, for a topic's max offsets by queue
// (GET_TOPIC_STATS_INFO; admin.TopicStats asks masters only).
func topicMaxOffsets(c *remoting.Client, addr, topic string) (map[int]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.GetTopicStatsInfo, remoting.EncodeHeader(&protocol.TopicHeader{Topic: topic}), nil)
	resp, err := c.InvokeSync(ctx, addr, req)
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return nil, err
	}
	table, err := protocol.DecodeTopicStatsTable(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	for mq, o := range table.OffsetTable {
		out[mq.QueueID] = o.MaxOffset
	}
	return out, nil
}

// reserveAddr returns a free loopback address for a listener whose address must be known
// before it starts (a Raft peer's, a broker's that returns on it).
func reserveAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// loggedNode is a running mqnode whose JSON log lines are kept, so the test can wait for one.
type loggedNode struct {
	args            []string
	cmd             *exec.Cmd
	namesrv, broker string

	mu      sync.Mutex
	lines   []string
	more    chan struct{} // closed and replaced when a line arrives or the log ends
	ended   bool
	killed  bool
	exited  chan struct{} // closed once the process is reaped
	exitErr error
}

// startLoggedNode runs bin with args, waits for its "mqnode started" line and stops it when
// the test ends: SIGINT, then SIGKILL after 30 s.
func startLoggedNode(t *testing.T, bin string, args ...string) *loggedNode {
	t.Helper()
	n := spawnLoggedNode(t, bin, args...)
	n.awaitStarted(t)
	return n
}

// spawnLoggedNode is startLoggedNode without the wait: the kill loops kill some nodes before
// they say they started.
func spawnLoggedNode(t *testing.T, bin string, args ...string) *loggedNode {
	t.Helper()
	n := &loggedNode{args: args, cmd: exec.Command(bin, args...), more: make(chan struct{}), exited: make(chan struct{})}
	dieWithParent(n.cmd)
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			n.mu.Lock()
			n.lines = append(n.lines, lines.Text())
			close(n.more)
			n.more = make(chan struct{})
			n.mu.Unlock()
		}
		n.mu.Lock()
		n.ended = true
		close(n.more)
		n.mu.Unlock()
		n.exitErr = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// awaitStarted waits for the "mqnode started" line and takes the addresses it names.
func (n *loggedNode) awaitStarted(t *testing.T) {
	t.Helper()
	started := n.await(t, 0, "mqnode started", func(rec map[string]any) bool { return rec["message"] == "mqnode started" })
	n.namesrv, _ = started["namesrv_addr"].(string)
	n.broker, _ = started["broker_addr"].(string)
	if n.broker == "" && !slices.Contains(n.args, "-no-broker") || n.namesrv == "" && !slices.Contains(n.args, "-no-namesrv") {
		t.Fatalf("mqnode %v started without its addresses: %v", n.args, started)
	}
}

// await returns the first JSON log line from index from on that match accepts, failing the
// test if none comes within ctlWait or the process ends first.
func (n *loggedNode) await(t *testing.T, from int, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.NewTimer(ctlWait)
	defer timeout.Stop()
	for {
		n.mu.Lock()
		for ; from < len(n.lines); from++ {
			var rec map[string]any
			if json.Unmarshal([]byte(n.lines[from]), &rec) == nil && match(rec) {
				n.mu.Unlock()
				return rec
			}
		}
		ended, more := n.ended, n.more
		n.mu.Unlock()
		if ended {
			t.Fatalf("mqnode %v ended before %s", n.args, what)
		}
		select {
		case <-more:
		case <-timeout.C:
			t.Fatalf("mqnode %v: no %s within %v", n.args, what, ctlWait)
		}
	}
}

// kill ends the process with SIGKILL and waits until it is reaped.
func (n *loggedNode) kill(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	n.killed = true
	n.mu.Unlock()
	if err := n.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-n.exited
}

func (n *loggedNode) isKilled() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killed
}

// stop ends a process the test did not kill with SIGINT, which must make it exit cleanly, and
// shows its last log lines when the test failed.
func (n *loggedNode) stop(t *testing.T) {
	if !n.isKilled() {
		_ = n.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-n.exited:
			if n.exitErr != nil {
				t.Errorf("mqnode %v: exit: %v", n.args, n.exitErr)
			}
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.exited
			t.Errorf("mqnode %v still running 30 s after SIGINT", n.args)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if *nodeLogDir != "" {
		name := filepath.Join(*nodeLogDir, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), n.cmd.Process.Pid))
		log := fmt.Sprintf("mqnode %v\n%s\n", n.args, strings.Join(n.lines, "\n"))
		if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
			t.Errorf("-nodelogs: %v", err)
		}
	}
	if t.Failed() {
		t.Logf("mqnode %v, last log lines:\n%s", n.args, strings.Join(n.lines[max(0, len(n.lines)-40):], "\n"))
	}
}

var nodeLogDir = flag.String("nodelogs", "", "write the whole log of every mqnode the tests started with startLoggedNode to this directory")
