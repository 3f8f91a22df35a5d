package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/rs/zerolog"
)

// runCmd runs mqadmin in process and returns its exit code, stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun runs mqadmin and fails unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCmd(t, args...)
	if code != exitOK {
		t.Fatalf("mqadmin %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// runJSON runs mqadmin with -json and decodes its one document into v.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := mustRun(t, append(args, "-json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("mqadmin %v -json: %v\n%s", args, err, out)
	}
	if dec.More() {
		t.Fatalf("mqadmin %v -json printed more than one document:\n%s", args, out)
	}
}

func startNode(t *testing.T) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveries counts what a push consumer received, by body.
type deliveries struct {
	mu   sync.Mutex
	seen map[string]int
}

func (d *deliveries) count(body string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[body]
}

// startConsumer starts a push consumer of ours over TCP, from the first offset; stop closes it
// (committing its offsets).
func startConsumer(t *testing.T, n *mq.Node, topic, group string) (d *deliveries, stop func()) {
	t.Helper()
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(n.Addr()), consumer.WithGroup(group),
		consumer.WithInstanceName(fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond),
		consumer.WithPersistInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	d = &deliveries{seen: map[string]int{}}
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		d.mu.Lock()
		for _, m := range msgs {
			d.seen[string(m.Body)]++
		}
		d.mu.Unlock()
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { c.Close() }) }
	t.Cleanup(stop)
	return d, stop
}

func TestHelpAndUsageErrors(t *testing.T) {
	t.Setenv(envNameSrv, "")
	code, out, _ := runCmd(t, "help")
	if code != exitOK || !strings.Contains(out, "resetOffsetByTime") || !strings.Contains(out, "consumeMessage") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "help", "updateTopic")
	if code != exitOK || !strings.Contains(out, "-t,--topic") || !strings.Contains(out, "-ak,--accessKey") {
		t.Errorf("help updateTopic: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"noSuchCommand", "-n", "127.0.0.1:9876"},
		{"help", "noSuchCommand"},
		{"topicList", "-n", "127.0.0.1:9876", "-bogus"},
		{"topicRoute", "-n", "127.0.0.1:9876"},                                   // -t missing
		{"topicList"},                                                            // no name server
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T"},                       // neither -b nor -c
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "C", "-r", "x"}, // not a number
		{"resetOffsetByTime", "-n", "127.0.0.1:9876", "-g", "G", "-t", "T", "-s", "yesterday"},
		{"sendMessage", "-n", "127.0.0.1:9876", "-t", "T", "-p", "x", "-i", "1"}, // -i without -b
	} {
		code, _, errOut := runCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "mqadmin") && !strings.Contains(errOut, "not exist") {
			t.Errorf("%v: exit %d, want %d; stderr: %s", args, code, exitUsage, errOut)
		}
	}
}

func TestUnreachableNameServerExits1(t *testing.T) {
	code, _, errOut := runCmd(t, "topicList", "-n", "127.0.0.1:1", "-timeout", "2s")
	if code != exitFailed || !strings.Contains(errOut, "topic list") {
		t.Errorf("exit %d, stderr %q; want %d naming the request", code, errOut, exitFailed)
	}
	// The name server also comes from the environment, as with mqadmin.
	t.Setenv(envNameSrv, "127.0.0.1:1")
	if code, _, _ := runCmd(t, "clusterList", "-timeout", "2s"); code != exitFailed {
		t.Errorf("clusterList with $%s: exit %d", envNameSrv, code)
	}
}

func TestTopicAndMessageCommands(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	out := mustRun(t, "updateTopic", "-n", ns, "-c", mq.DefaultClusterName, "-t", "CliT", "-r", "2", "-w", "2")
	if !strings.Contains(out, "create topic to "+n.BrokerAddr()+" success.") || !strings.Contains(out, "readQueueNums=2") {
		t.Errorf("updateTopic:\n%s", out)
	}
	// Global options may also come before the command.
	if out := mustRun(t, "-n", ns, "topicList"); !strings.Contains(out, "CliT\n") {
		t.Errorf("topicList does not show CliT:\n%s", out)
	}
	var topics []string
	runJSON(t, &topics, "topicList", "-n", ns)
	if !contains(topics, "CliT") {
		t.Errorf("topicList -json: %v", topics)
	}
	var route struct {
		QueueDatas []struct {
			BrokerName     string `json:"brokerName"`
			WriteQueueNums int    `json:"writeQueueNums"`
		} `json:"queueDatas"`
	}
	runJSON(t, &route, "topicRoute", "-n", ns, "-t", "CliT")
	if len(route.QueueDatas) != 1 || route.QueueDatas[0].WriteQueueNums != 2 {
		t.Errorf("topicRoute -json: %+v", route)
	}
	if out := mustRun(t, "topicRoute", "-n", ns, "-t", "CliT", "-l"); !strings.Contains(out, mq.DefaultBrokerName) || !strings.Contains(out, "Total:") {
		t.Errorf("topicRoute -l:\n%s", out)
	}
	if out := mustRun(t, "clusterList", "-n", ns); !strings.Contains(out, n.BrokerAddr()) || !strings.Contains(out, "#InTPS(LOAD)") {
		t.Errorf("clusterList:\n%s", out)
	}
	var status map[string]map[string]string
	runJSON(t, &status, "brokerStatus", "-n", ns, "-b", n.BrokerAddr())
	if len(status[n.BrokerAddr()]) == 0 {
		t.Errorf("brokerStatus -json: %v", status)
	}

	var sent sendRow
	runJSON(t, &sent, "sendMessage", "-n", ns, "-t", "CliT", "-p", "hello", "-k", "order-42", "-c", "tagA")
	if sent.Status != "SEND_OK" || sent.MsgID == "" || sent.OffsetMsgID == "" {
		t.Fatalf("sendMessage: %+v", sent)
	}
	var second sendRow
	runJSON(t, &second, "sendMessage", "-n", ns, "-t", "CliT", "-p", "second", "-b", mq.DefaultBrokerName, "-i", "1")
	if second.QueueID != 1 || second.Status != "SEND_OK" {
		t.Errorf("sendMessage to queue 1: %+v", second)
	}

	var rows []queueOffsetRow
	runJSON(t, &rows, "topicStatus", "-n", ns, "-t", "CliT")
	var total int64
	for _, r := range rows {
		total += r.MaxOffset - r.MinOffset
	}
	if len(rows) != 2 || total != 2 {
		t.Errorf("topicStatus -json: %+v", rows)
	}
	if out := mustRun(t, "topicStatus", "-n", ns, "-t", "CliT"); !strings.Contains(out, "#Last Updated") {
		t.Errorf("topicStatus:\n%s", out)
	}

	var byKey []messageJSON
	runJSON(t, &byKey, "queryMsgByKey", "-n", ns, "-t", "CliT", "-k", "order-42")
	if len(byKey) != 1 || byKey[0].MsgID != sent.MsgID || byKey[0].Body != "hello" {
		t.Errorf("queryMsgByKey -json: %+v", byKey)
	}
	if out := mustRun(t, "queryMsgByKey", "-n", ns, "-t", "CliT", "-k", "order-42"); !strings.Contains(out, sent.MsgID) {
		t.Errorf("queryMsgByKey:\n%s", out)
	}
	var byID []messageJSON
	runJSON(t, &byID, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID)
	if len(byID) != 1 || byID[0].Body != "hello" || byID[0].Tags != "tagA" {
		t.Errorf("queryMsgById by offset id: %+v", byID)
	}
	out = mustRun(t, "queryMsgById", "-n", ns, "-t", "CliT", "-i", sent.MsgID)
	if !strings.Contains(out, "hello") || !strings.Contains(out, "[order-42]") {
		t.Errorf("queryMsgById by unique key:\n%s", out)
	}
	var at messageJSON
	runJSON(t, &at, "queryMsgByOffset", "-n", ns, "-t", "CliT", "-b", sent.BrokerName, "-i", fmt.Sprint(sent.QueueID), "-o", fmt.Sprint(sent.QueueOffset))
	if at.Body != "hello" {
		t.Errorf("queryMsgByOffset: %+v", at)
	}
	var pulled []consumed
	runJSON(t, &pulled, "consumeMessage", "-n", ns, "-t", "CliT")
	bodies := map[string]bool{}
	for _, c := range pulled {
		for _, m := range c.Messages {
			bodies[m.Body] = true
		}
	}
	if !bodies["hello"] || !bodies["second"] || len(bodies) != 2 {
		t.Errorf("consumeMessage -json: %+v", pulled)
	}
	if out := mustRun(t, "consumeMessage", "-n", ns, "-t", "CliT", "-b", mq.DefaultBrokerName, "-i", "1",
		"-o", fmt.Sprint(second.QueueOffset), "-c", "1"); !strings.Contains(out, "BODY: second") || strings.Contains(out, "BODY: hello") {
		t.Errorf("consumeMessage of queue 1:\n%s", out)
	}
	if code, _, errOut := runCmd(t, "queryMsgByOffset", "-n", ns, "-t", "CliT", "-b", mq.DefaultBrokerName, "-i", "0", "-o", "99"); code != exitFailed {
		t.Errorf("queryMsgByOffset past the end: exit %d, %s", code, errOut)
	}

	if out := mustRun(t, "updateSubGroup", "-n", ns, "-b", n.BrokerAddr(), "-g", "cliG", "-r", "3"); !strings.Contains(out, "retryMaxTimes=3") {
		t.Errorf("updateSubGroup:\n%s", out)
	}
	if out := mustRun(t, "deleteSubGroup", "-n", ns, "-c", mq.DefaultClusterName, "-g", "cliG"); !strings.Contains(out, "delete subscription group [cliG]") {
		t.Errorf("deleteSubGroup:\n%s", out)
	}
	mustRun(t, "deleteTopic", "-n", ns, "-c", mq.DefaultClusterName, "-t", "CliT")
	if code, _, errOut := runCmd(t, "topicRoute", "-n", ns, "-t", "CliT"); code != exitFailed || !strings.Contains(errOut, "TOPIC_NOT_EXIST") {
		t.Errorf("route of a deleted topic: exit %d, %s", code, errOut)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// progressOf returns the group's progress as consumerProgress -g -json prints it.
func progressOf(t *testing.T, ns, group string) (progress, bool) {
	t.Helper()
	code, out, _ := runCmd(t, "consumerProgress", "-n", ns, "-g", group, "-json")
	var p progress
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil {
		return p, false
	}
	return p, true
}

func TestConsumerProgressAndResetOffsetByTime(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "ProgT", "-r", "2", "-w", "2")
	mark := time.Now().Add(-time.Second) // before every message, whatever the clock's resolution
	send := func(body string) { mustRun(t, "sendMessage", "-n", ns, "-t", "ProgT", "-p", body) }
	send("a1")
	send("a2")

	first, stopFirst := startConsumer(t, n, "ProgT", "progG")
	eventually(t, "the first consumer's progress at 0 lag", func() bool {
		p, ok := progressOf(t, ns, "progG")
		return ok && queuesOf(p, "ProgT") == 2 && p.DiffTotal == 0 && first.count("a1") == 1 && first.count("a2") == 1
	})
	stopFirst()
	for _, b := range []string{"b1", "b2", "b3"} {
		send(b)
	}
	p, ok := progressOf(t, ns, "progG")
	if !ok || p.DiffTotal != 3 {
		t.Fatalf("lag with nobody consuming: %+v, want 3", p)
	}
	out := mustRun(t, "consumerProgress", "-n", ns, "-g", "progG")
	if !strings.Contains(out, "Diff Total: 3") {
		t.Errorf("consumerProgress table:\n%s", out)
	}

	second, _ := startConsumer(t, n, "ProgT", "progG")
	eventually(t, "lag falling to 0", func() bool {
		p, ok := progressOf(t, ns, "progG")
		return ok && p.DiffTotal == 0
	})
	for _, b := range []string{"b1", "b2", "b3"} {
		if c := second.count(b); c != 1 {
			t.Errorf("%s delivered %d times before the reset", b, c)
		}
	}
	var groups []groupRow
	runJSON(t, &groups, "consumerProgress", "-n", ns)
	if i := indexOfGroup(groups, "progG"); i < 0 || groups[i].Count != 1 || groups[i].ConsumeType != "PUSH" || groups[i].DiffTotal != 0 {
		t.Errorf("consumerProgress without -g: %+v", groups)
	}
	out = mustRun(t, "consumerConnection", "-n", ns, "-g", "progG")
	if !strings.Contains(out, "ProgT") || !strings.Contains(out, "GO") || !strings.Contains(out, "MessageModel: CLUSTERING") {
		t.Errorf("consumerConnection:\n%s", out)
	}

	// Back to before the first message, in mqadmin's date form: the running consumer
	// re-consumes all five.
	stamp := mark.Format(goTimeLayout)
	stamp = stamp[:strings.LastIndexByte(stamp, '.')] + ":" + stamp[strings.LastIndexByte(stamp, '.')+1:]
	var reset []resetRow
	runJSON(t, &reset, "resetOffsetByTime", "-n", ns, "-g", "progG", "-t", "ProgT", "-s", stamp, "-f", "true")
	if len(reset) != 2 || reset[0].Offset != 0 || reset[1].Offset != 0 {
		t.Fatalf("reset table: %+v", reset)
	}
	eventually(t, "re-consumption after the reset", func() bool {
		return second.count("a1") == 1 && second.count("a2") == 1 &&
			second.count("b1") == 2 && second.count("b2") == 2 && second.count("b3") == 2
	})
}

// queuesOf counts the queues of topic in a group's progress (which lists its retry topic too).
func queuesOf(p progress, topic string) int {
	n := 0
	for _, q := range p.Queues {
		if q.Topic == topic {
			n++
		}
	}
	return n
}

func indexOfGroup(rows []groupRow, g string) int {
	for i, r := range rows {
		if r.Group == g {
			return i
		}
	}
	return -1
}

func TestParseTimestampForms(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.Local)
	for _, s := range []string{"2024-05-06#07:08:09:123", fmt.Sprint(at.UnixMilli())} {
		got, ms, err := parseTimestamp(s)
		if err != nil || !got.Equal(at) || ms != at.UnixMilli() {
			t.Errorf("%s: %v %d %v, want %v", s, got, ms, err, at)
		}
	}
	if got, ms, err := parseTimestamp("now"); err != nil || !got.IsZero() || ms != -1 {
		t.Errorf("now: %v %d %v", got, ms, err)
	}
}

func TestVersionDescLikeMQVersion(t *testing.T) {
	// RocketMQ 4.9.x's MQVersion.Version has 613 constants; a few ordinals pinned from it.
	for v, want := range map[int]string{0: "V3_0_0_SNAPSHOT", 16: "V3_0_1_SNAPSHOT", 211: "V3_9_9", 212: "V4_0_0_SNAPSHOT",
		399: "V4_9_3", 413: "V5_0_0", 612: "HIGHER_VERSION", 5000: "HIGHER_VERSION"} {
		if got := versionDesc(v); got != want {
			t.Errorf("versionDesc(%d) = %s, want %s", v, got, want)
		}
	}
	if n := protocol.VersionNames(); n != 613 {
		t.Errorf("%d version names, want 613", n)
	}
}

func TestCredentialsFlagsAndEnvironment(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	n, err := mq.StartNode(mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir()},
		Security: config.Security{ACL: &mq.ACLConfig{Accounts: []mq.ACLAccount{{AccessKey: "cliAccessKey", SecretKey: "cliSecret123", Admin: true}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	args := []string{"updateTopic", "-n", n.Addr(), "-b", n.BrokerAddr(), "-t", "AclCliT"}
	if code, _, errOut := runCmd(t, args...); code != exitFailed || !strings.Contains(errOut, "NO_PERMISSION") {
		t.Errorf("unsigned: exit %d, %s", code, errOut)
	}
	mustRun(t, append(args, "-ak", "cliAccessKey", "-sk", "cliSecret123")...)
	t.Setenv(envAK, "cliAccessKey")
	t.Setenv(envSK, "cliSecret123")
	mustRun(t, args...)
	if code, _, _ := runCmd(t, append(args, "-sk", "wrong-secret")...); code != exitFailed {
		t.Errorf("wrong secret: exit %d", code)
	}
}

// TestQueryMsgByIDConsumesDirectly is mqadmin queryMsgById -g -d: the consumer the client id
// names runs its listener on the message again (CONSUME_MESSAGE_DIRECTLY through the broker).
func TestQueryMsgByIDConsumesDirectly(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "DirectT", "-r", "1", "-w", "1")
	var sent struct {
		OffsetMsgID string `json:"offsetMsgId"`
	}
	runJSON(t, &sent, "sendMessage", "-n", ns, "-t", "DirectT", "-p", "again")
	d, _ := startConsumer(t, n, "DirectT", "directG")
	eventually(t, "the first delivery", func() bool { return d.count("again") == 1 })
	var conn struct {
		Connections []struct {
			ClientID string `json:"clientId"`
		} `json:"connections"`
	}
	runJSON(t, &conn, "consumerConnection", "-n", ns, "-g", "directG")
	if len(conn.Connections) != 1 {
		t.Fatalf("consumerConnection: %+v", conn)
	}
	out := mustRun(t, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "-g", "directG", "-d", conn.Connections[0].ClientID)
	if !strings.HasPrefix(out, "ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS, remark=null, spentTimeMills=") {
		t.Fatalf("queryMsgById -g -d printed %q", out)
	}
	if c := d.count("again"); c != 2 {
		t.Fatalf("delivered %d times, want twice (once pulled, once directly)", c)
	}
	if code, _, _ := runCmd(t, "queryMsgById", "-n", ns, "-i", sent.OffsetMsgID, "-g", "directG"); code != exitUsage {
		t.Fatalf("-g without -d: exit %d, want %d", code, exitUsage)
	}
}
