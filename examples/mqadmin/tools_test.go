package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

// newProducer starts a producer of ours over TCP in group.
func newProducer(t *testing.T, n *mq.Node, group string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	p, err := producer.New(append([]producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup(group),
		producer.WithInstanceName(fmt.Sprintf("%s-%d", group, time.Now().UnixNano()))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newAdmin(t *testing.T, ns string) *admin.Admin {
	t.Helper()
	a, err := admin.New(admin.Options{NameServers: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestProducerConnectionAndAllocateMQ: producerConnection lists a producer group's client with
// RocketMQ's columns; allocateMQ shares a topic's queues among clients as the averaging
// strategy does.
func TestProducerConnectionAndAllocateMQ(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "PcT", "-r", "4", "-w", "4")
	p := newProducer(t, n, "pcGroup")
	if _, err := p.SendSync(context.Background(), producer.NewMessage("PcT", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	var conns []admin.Connection
	eventually(t, "the producer's heartbeat", func() bool {
		code, out, _ := runCmd(t, "producerConnection", "-n", ns, "-g", "pcGroup", "-t", "PcT", "-json")
		return code == exitOK && json.Unmarshal([]byte(out), &conns) == nil && len(conns) == 1
	})
	if conns[0].ClientID != p.ClientID() || conns[0].Language != "GO" {
		t.Errorf("producerConnection -json: %+v, want client %s", conns, p.ClientID())
	}
	out := mustRun(t, "producerConnection", "-n", ns, "-g", "pcGroup", "-t", "PcT")
	want := fmt.Sprintf("%04d  %-32s %-22s %-8s %s\n", 1, conns[0].ClientID, conns[0].ClientAddr, "GO", versionDesc(conns[0].Version))
	if out != want {
		t.Errorf("producerConnection printed %q, want %q", out, want)
	}
	if code, _, errOut := runCmd(t, "producerConnection", "-n", ns, "-g", "nobodyProduces", "-t", "PcT"); code != exitFailed ||
		!strings.Contains(errOut, "not found the producer group connection") {
		t.Errorf("unknown group: exit %d, %s", code, errOut)
	}

	out = mustRun(t, "allocateMQ", "-n", ns, "-t", "PcT", "-i", "10.0.0.2,10.0.0.1")
	var rr struct {
		Result map[string][]admin.MessageQueue `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &rr); err != nil {
		t.Fatalf("allocateMQ printed %q: %v", out, err)
	}
	seen := map[int]string{}
	for ip, qs := range rr.Result {
		if len(qs) != 2 {
			t.Errorf("%s got %d queues, want 2: %s", ip, len(qs), out)
		}
		for _, q := range qs {
			if other, dup := seen[q.QueueID]; dup || q.Topic != "PcT" || q.BrokerName != mq.DefaultBrokerName {
				t.Errorf("queue %+v given to %s and %q", q, ip, other)
			}
			seen[q.QueueID] = ip
		}
	}
	// The averaging strategy over the sorted clients, as consumers with those ids would share
	// the queues: the first gets the first block.
	if len(seen) != 4 || seen[0] != "10.0.0.1" || seen[3] != "10.0.0.2" {
		t.Errorf("allocation %v:\n%s", seen, out)
	}
}

// TestConsumerStatusAndSkipAccumulated: consumerStatus prints one member's running info, or
// every member's into files with the group's analysis; skipAccumulatedMessage moves a stopped
// group past its backlog.
func TestConsumerStatusAndSkipAccumulated(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "StatusT", "-r", "2", "-w", "2")
	mustRun(t, "sendMessage", "-n", ns, "-t", "StatusT", "-p", "s1")
	d, stop := startConsumer(t, n, "StatusT", "statusG")
	eventually(t, "the first delivery", func() bool { return d.count("s1") == 1 })
	var conn admin.ConsumerConnection
	runJSON(t, &conn, "consumerConnection", "-n", ns, "-g", "statusG")
	if len(conn.Connections) != 1 {
		t.Fatalf("consumerConnection: %+v", conn)
	}
	id := conn.Connections[0].ClientID

	out := mustRun(t, "consumerStatus", "-n", ns, "-g", "statusG", "-i", id)
	for _, want := range []string{"#Consumer Properties#\n", fmt.Sprintf("%-40s: CONSUME_PASSIVELY\n", "PROP_CONSUME_TYPE"),
		"\n\n#Consumer Subscription#\n001 Topic: " + fmt.Sprintf("%-40s ClassFilter: %-8t SubExpression: *\n", "%RETRY%statusG", false),
		"\n002 Topic: " + fmt.Sprintf("%-40s ClassFilter: %-8t SubExpression: *\n", "StatusT", false),
		"\n\n#Consumer Offset#\n", "\n\n#Consumer MQ Detail#\n", "ProcessQueueInfo [commitOffset=", "\n\n#Consumer RT&TPS#\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("consumerStatus -i lacks %q:\n%s", want, out)
		}
	}

	t.Chdir(t.TempDir()) // the files go under the working directory, as RocketMQ writes them
	out = mustRun(t, "consumerStatus", "-n", ns, "-g", "statusG", "-b", n.BrokerAddr())
	lines := strings.Split(out, "\n")
	if lines[0] != fmt.Sprintf("%-10s %-40s %-20s %s", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile") {
		t.Errorf("consumerStatus header %q", lines[0])
	}
	f := strings.Fields(lines[1])
	if len(f) != 4 || f[0] != "1" || f[1] != id {
		t.Fatalf("consumerStatus row %q", lines[1])
	}
	file, err := os.ReadFile(f[3])
	if err != nil || !strings.Contains(string(file), "#Consumer MQ Detail#") || filepath.Base(f[3]) != fileName(id) {
		t.Errorf("running info file %s: %v\n%s", f[3], err, file)
	}
	if !strings.Contains(out, "\n\nSame subscription in the same group of consumer\n\nRebalance OK\n") {
		t.Errorf("consumerStatus analysis:\n%s", out)
	}

	stop()
	for _, b := range []string{"s2", "s3", "s4"} {
		mustRun(t, "sendMessage", "-n", ns, "-t", "StatusT", "-p", b)
	}
	if p, ok := progressOf(t, ns, "statusG"); !ok || p.DiffTotal != 3 {
		t.Fatalf("backlog before the skip: %+v", p)
	}
	out = mustRun(t, "skipAccumulatedMessage", "-n", ns, "-g", "statusG", "-t", "StatusT")
	if !strings.HasPrefix(out, fmt.Sprintf("%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")) ||
		strings.Count(out, "\n") != 3 {
		t.Errorf("skipAccumulatedMessage:\n%s", out)
	}
	if p, ok := progressOf(t, ns, "statusG"); !ok || p.DiffTotal != 0 {
		t.Errorf("backlog after the skip: %+v", p)
	}
}

func TestFileNameKeepsClientIDsInTheirDirectory(t *testing.T) {
	for id, want := range map[string]string{"10.0.0.1@42": "10.0.0.1@42", "../../etc/passwd": ".._.._etc_passwd",
		"..": "_..", "": "_", "a b/c": "a_b_c", "é": "_"} {
		if got := fileName(id); got != want || filepath.Base(got) != got {
			t.Errorf("fileName(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestUniqueKeyTraceAndPrintCommands covers the message commands: a message found by its
// unique key with the groups that consumed it, its trace, a resend, and the topic and one
// queue printed.
func TestUniqueKeyTraceAndPrintCommands(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "UkT", "-r", "1", "-w", "1")
	p := newProducer(t, n, "ukProducer", producer.WithTrace(""))
	ctx := context.Background()
	var sent []*producer.SendResult
	for i, tag := range []string{"tagA", "tagB", "tagA"} {
		r, err := p.SendSync(ctx, producer.NewMessage("UkT", []byte(fmt.Sprintf("body-%d", i))).WithTags(tag))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r)
	}
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(ns), consumer.WithGroup("ukGroup"), consumer.WithTrace(""),
		consumer.WithInstanceName(fmt.Sprintf("uk-%d", time.Now().UnixNano())), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithPersistInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("UkT", "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, "ukGroup to commit past every message", func() bool {
		p, ok := progressOf(t, ns, "ukGroup")
		return ok && queuesOf(p, "UkT") == 1 && p.DiffTotal == 0
	})

	first := sent[0]
	out := mustRun(t, "queryMsgByUniqueKey", "-n", ns, "-t", "UkT", "-i", first.MsgID)
	if !strings.HasPrefix(out, fmt.Sprintf("%-20s %s\n", "Topic:", "UkT")) || strings.Contains(out, "OffsetID:") ||
		!strings.Contains(out, fmt.Sprintf("%-20s %s\n", "Message Body:", "body-0")) ||
		!strings.Contains(out, "\n\nMessageTrack [consumerGroup=ukGroup, trackType=CONSUMED, exceptionDesc=null]\n") {
		t.Errorf("queryMsgByUniqueKey:\n%s", out)
	}

	// By id without a topic: a unique key is no offset id, and nothing is dialled.
	code, _, errOut := runCmd(t, "queryMsgById", "-n", ns, "-i", first.MsgID)
	if code != exitUsage || !strings.Contains(errOut, "is not an offset message id") || !strings.Contains(errOut, "-t TOPIC") {
		t.Errorf("queryMsgById of a unique key without -t: exit %d, %s", code, errOut)
	}
	out = mustRun(t, "queryMsgById", "-n", ns, "-i", first.OffsetMsgID)
	if !strings.Contains(out, "OffsetID:") || !strings.Contains(out, "trackType=CONSUMED") {
		t.Errorf("queryMsgById by offset id:\n%s", out)
	}

	// Resent: a second stored copy with the same unique key, which -a shows.
	out = mustRun(t, "queryMsgById", "-n", ns, "-i", first.OffsetMsgID, "-s", "true")
	if !strings.HasPrefix(out, "prepare resend msg. originalMsgId="+first.OffsetMsgID+"\nSendResult [sendStatus=SEND_OK, msgId="+first.MsgID) {
		t.Errorf("queryMsgById -s true:\n%s", out)
	}
	var copies []messageJSON
	runJSON(t, &copies, "queryMsgByUniqueKey", "-n", ns, "-t", "UkT", "-i", first.MsgID, "-a")
	if len(copies) != 2 || copies[0].Body != "body-0" || copies[1].Body != "body-0" || copies[0].QueueOffset == copies[1].QueueOffset {
		t.Errorf("queryMsgByUniqueKey -a after the resend: %+v", copies)
	}
	runJSON(t, &copies, "queryMsgByUniqueKey", "-n", ns, "-t", "UkT", "-i", first.MsgID)
	if len(copies) != 1 {
		t.Errorf("queryMsgByUniqueKey without -a: %d messages", len(copies))
	}
	if code, _, _ := runCmd(t, "queryMsgByUniqueKey", "-n", ns, "-t", "UkT", "-i", "0A0000000000000000000000000000FF"); code != exitFailed {
		t.Errorf("an unknown key: exit %d", code)
	}

	// The trace: the send and the consumption.
	eventually(t, "the trace of the first message", func() bool {
		code, out, _ := runCmd(t, "queryMsgTraceById", "-n", ns, "-i", first.MsgID)
		return code == exitOK && strings.Contains(out, "\nPub ") && strings.Contains(out, "\nSub ")
	})
	out = mustRun(t, "queryMsgTraceById", "-n", ns, "-i", first.MsgID)
	const tf = "%-10s %-20s %-20s %-20s %-10s %-10s\n"
	if !strings.HasPrefix(out, fmt.Sprintf(tf, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")) ||
		!strings.Contains(out, fmt.Sprintf(tf, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")) {
		t.Errorf("queryMsgTraceById:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && (f[0] == "Pub" || f[0] == "Sub") {
			wantGroup := map[string]string{"Pub": "ukProducer", "Sub": "ukGroup"}[f[0]]
			if len(f) != 7 || f[1] != wantGroup || f[6] != "success" || !strings.HasSuffix(f[5], "ms") {
				t.Errorf("trace row %q", l)
			}
		}
	}

	// printMsg: every message of the queue, then only tagA's, then without bodies.
	out = mustRun(t, "printMsg", "-n", ns, "-t", "UkT")
	if !strings.HasPrefix(out, "minOffset=0, maxOffset=4, MessageQueue [topic=UkT, brokerName="+mq.DefaultBrokerName+", queueId=0]\n") ||
		strings.Count(out, "\nMSGID: ") != 4 || !strings.Contains(out, "MSGID: "+first.MsgID+" MessageExt [brokerName=") ||
		!strings.Contains(out, "BODY: body-1\n") || !strings.HasSuffix(out, "--------------------------------------------------------\n") {
		t.Errorf("printMsg:\n%s", out)
	}
	out = mustRun(t, "printMsg", "-n", ns, "-t", "UkT", "-s", "tagA", "-d", "false")
	if strings.Count(out, "MSGID: ") != 3 || strings.Contains(out, "body-1") || !strings.Contains(out, "BODY: NOT PRINT BODY\n") {
		t.Errorf("printMsg -s tagA -d false:\n%s", out)
	}
	var printed []printedQueue
	runJSON(t, &printed, "printMsg", "-n", ns, "-t", "UkT", "-b", fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()))
	if len(printed) != 1 || len(printed[0].Messages) != 0 || printed[0].MinOffset != 4 {
		t.Errorf("printMsg from an hour ahead: %+v", printed)
	}
	if code, _, _ := runCmd(t, "printMsg", "-n", ns, "-t", "UkT", "-c", "GBK"); code != exitUsage {
		t.Errorf("printMsg -c GBK: exit %d", code)
	}

	out = mustRun(t, "printMsgByQueue", "-n", ns, "-t", "UkT", "-a", mq.DefaultBrokerName, "-i", "0", "-f", "true")
	if out != fmt.Sprintf("Tag: %-30s Count: 3\nTag: %-30s Count: 1\n", "tagA", "tagB") {
		t.Errorf("printMsgByQueue -f true printed %q", out)
	}
	out = mustRun(t, "printMsgByQueue", "-n", ns, "-t", "UkT", "-a", mq.DefaultBrokerName, "-i", "0", "-p", "true", "-d", "true")
	if strings.Count(out, "MSGID: ") != 4 || !strings.Contains(out, "BODY: body-2\n") || strings.Contains(out, "Tag: ") {
		t.Errorf("printMsgByQueue -p true:\n%s", out)
	}
	if code, _, _ := runCmd(t, "printMsgByQueue", "-n", ns, "-t", "UkT", "-a", mq.DefaultBrokerName, "-i", "7"); code != exitFailed {
		t.Errorf("printMsgByQueue of a queue the topic lacks: exit %d", code)
	}
}

// TestSendProbes: sendMsgStatus, checkMsgSendRT and clusterRT send what they say and print
// RocketMQ's lines.
func TestSendProbes(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	out := mustRun(t, "sendMsgStatus", "-n", ns, "-b", mq.DefaultBrokerName, "-c", "3", "-s", "20")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("sendMsgStatus printed %q", out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "rt=") || !strings.Contains(l, "ms, SendResult=SendResult [sendStatus=SEND_OK, msgId=") ||
			!strings.Contains(l, "messageQueue=MessageQueue [topic="+mq.DefaultBrokerName+", brokerName="+mq.DefaultBrokerName) {
			t.Errorf("sendMsgStatus line %q", l)
		}
	}
	var stored []consumed
	runJSON(t, &stored, "consumeMessage", "-n", ns, "-t", mq.DefaultBrokerName)
	if len(stored) != 1 || len(stored[0].Messages) != 4 || len(stored[0].Messages[3].Body) != 22 {
		t.Errorf("the broker's topic after sendMsgStatus (a warm-up and 3 of 22 bytes): %+v", stored)
	}

	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "RtT", "-r", "2", "-w", "2")
	out = mustRun(t, "checkMsgSendRT", "-n", ns, "-t", "RtT", "-a", "4", "-s", "10")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 6 || lines[0] != fmt.Sprintf("%-32s  %-4s  %-20s    %s", "#Broker Name", "#QID", "#Send Result", "#RT") ||
		!strings.HasPrefix(lines[5], "Avg RT: ") {
		t.Fatalf("checkMsgSendRT printed:\n%s", out)
	}
	for i, l := range lines[1:5] {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != mq.DefaultBrokerName || f[1] != fmt.Sprint(i%2) || f[2] != "true" {
			t.Errorf("checkMsgSendRT row %q", l)
		}
	}
	var rows []queueOffsetRow
	runJSON(t, &rows, "topicStatus", "-n", ns, "-t", "RtT")
	for _, r := range rows {
		if r.MaxOffset != 2 {
			t.Errorf("queue %d holds %d messages, want 2 (round robin)", r.QueueID, r.MaxOffset)
		}
	}
	if code, _, _ := runCmd(t, "checkMsgSendRT", "-n", ns, "-t", "RtT", "-a", "0"); code != exitUsage {
		t.Errorf("checkMsgSendRT -a 0: exit %d", code)
	}

	var rt []clusterRTRow
	runJSON(t, &rt, "clusterRT", "-n", ns, "-a", "3")
	if len(rt) != 1 || rt[0].Cluster != mq.DefaultClusterName || rt[0].Broker != mq.DefaultBrokerName || rt[0].OK != 3 || rt[0].Failed != 0 {
		t.Errorf("clusterRT -json: %+v", rt)
	}
	// Without -json it prints a round every -i seconds until interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelAfter{want: mq.DefaultBrokerName, cancel: cancel}
	code := run(ctx, []string{"clusterRT", "-n", ns, "-a", "2", "-i", "1"}, w, w)
	if code != exitOK || !strings.HasPrefix(w.String(), fmt.Sprintf("%-24s  %-24s  %-4s  %-8s  %-8s\n", "#Cluster Name", "#Broker Name", "#RT",
		"#successCount", "#failCount")) {
		t.Errorf("clusterRT: exit %d\n%s", code, w.String())
	}
	f := strings.Fields(strings.Split(w.String(), "\n")[1])
	if len(f) != 5 || f[0] != mq.DefaultClusterName || f[3] != "2" || f[4] != "0" {
		t.Errorf("clusterRT row %v", f)
	}
	if code, _, errOut := runCmd(t, "clusterRT", "-n", ns, "-c", "NoSuchCluster", "-json"); code != exitFailed || !strings.Contains(errOut, "not exist") {
		t.Errorf("clusterRT of an unknown cluster: exit %d %s", code, errOut)
	}
}

// cancelAfter is a writer that cancels once what was written holds want. (It has no
// WriteString: io.WriteString must come through Write.)
type cancelAfter struct {
	mu     sync.Mutex
	b      strings.Builder
	want   string
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.b.Write(p)
	if strings.Contains(c.b.String(), c.want) {
		c.cancel()
	}
	return n, err
}

func (c *cancelAfter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// TestKvConfigCommands: updateKvConfig and deleteKvConfig on the name servers, and an order
// topic's layout through updateOrderConf, which routes then carry.
func TestKvConfigCommands(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	a := newAdmin(t, ns)
	ctx := context.Background()
	out := mustRun(t, "updateKvConfig", "-n", ns, "-s", "CLI_NS", "-k", "k1", "-v", "v1")
	if out != "create or update kv config to namespace success.\n" {
		t.Errorf("updateKvConfig printed %q", out)
	}
	if v, err := a.GetKVConfig(ctx, "CLI_NS", "k1"); err != nil || v != "v1" {
		t.Errorf("after updateKvConfig: %q %v", v, err)
	}
	if out := mustRun(t, "deleteKvConfig", "-n", ns, "-s", "CLI_NS", "-k", "k1"); out != "delete kv config from namespace success.\n" {
		t.Errorf("deleteKvConfig printed %q", out)
	}
	if _, err := a.GetKVConfig(ctx, "CLI_NS", "k1"); !errors.Is(err, admin.ErrKVNotFound) {
		t.Errorf("after deleteKvConfig: %v", err)
	}

	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "OrdT", "-r", "4", "-w", "4", "-o", "true")
	conf := mq.DefaultBrokerName + ":4"
	if out := mustRun(t, "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "put", "-v", conf); out != "update orderConf success. topic=[OrdT], orderConf=["+conf+"]\n" {
		t.Errorf("updateOrderConf put printed %q", out)
	}
	if out := mustRun(t, "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "get"); out != "get orderConf success. topic=[OrdT], orderConf=["+conf+"] \n" {
		t.Errorf("updateOrderConf get printed %q", out)
	}
	r, err := a.TopicRoute(ctx, "OrdT")
	if err != nil || r.OrderTopicConf != conf {
		t.Errorf("route after updateOrderConf: %+v %v", r, err)
	}
	if out := mustRun(t, "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "delete"); out != "delete orderConf success. topic=[OrdT]\n" {
		t.Errorf("updateOrderConf delete printed %q", out)
	}
	if code, _, _ := runCmd(t, "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "get"); code != exitFailed {
		t.Errorf("get after delete: exit %d", code)
	}
	for _, args := range [][]string{{"-m", "put"}, {"-m", "list"}} {
		if code, _, _ := runCmd(t, append([]string{"updateOrderConf", "-n", ns, "-t", "OrdT"}, args...)...); code != exitUsage {
			t.Errorf("updateOrderConf %v: exit %d", args, code)
		}
	}
	// A malformed layout is the name server's refusal, not stored.
	if code, _, errOut := runCmd(t, "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "put", "-v", "broker-a"); code != exitFailed {
		t.Errorf("a malformed order conf: exit %d %s", code, errOut)
	}
}

// TestUpdateTopicPermAndCleanUps: updateTopicPerm on one master and on a cluster, and the
// clean-ups answered by the broker.
func TestUpdateTopicPermAndCleanUps(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	a := newAdmin(t, ns)
	ctx := context.Background()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "PermT", "-r", "3", "-w", "3")
	perm := func() int32 {
		r, err := a.TopicRoute(ctx, "PermT")
		if err != nil || len(r.QueueDatas) != 1 {
			t.Fatalf("route: %+v %v", r, err)
		}
		return r.QueueDatas[0].Perm
	}
	out := mustRun(t, "updateTopicPerm", "-n", ns, "-b", n.BrokerAddr(), "-t", "PermT", "-p", "4")
	if !strings.HasPrefix(out, "update topic perm from 6 to 4 in "+n.BrokerAddr()+" success.\n") ||
		!strings.Contains(out, "readQueueNums=3, writeQueueNums=3, perm=R--") {
		t.Errorf("updateTopicPerm -b:\n%s", out)
	}
	if perm() != 4 {
		t.Errorf("perm after the update: %d", perm())
	}
	if out := mustRun(t, "updateTopicPerm", "-n", ns, "-b", n.BrokerAddr(), "-t", "PermT", "-p", "4"); out != "new perm equals to the old one!\n" {
		t.Errorf("the same perm again printed %q", out)
	}
	out = mustRun(t, "updateTopicPerm", "-n", ns, "-c", mq.DefaultClusterName, "-t", "PermT", "-p", "6")
	if out != "update topic perm from 4 to 6 in "+n.BrokerAddr()+" success.\n" || perm() != 6 {
		t.Errorf("updateTopicPerm -c printed %q, perm %d", out, perm())
	}
	for _, args := range [][]string{{"-b", n.BrokerAddr(), "-p", "5"}, {"-b", n.BrokerAddr(), "-p", "x"}, {"-p", "6"}} {
		if code, _, _ := runCmd(t, append([]string{"updateTopicPerm", "-n", ns, "-t", "PermT"}, args...)...); code != exitUsage {
			t.Errorf("updateTopicPerm %v: exit %d", args, code)
		}
	}
	if code, _, errOut := runCmd(t, "updateTopicPerm", "-n", ns, "-t", "PermT", "-b", "127.0.0.1:1", "-p", "6"); code != exitFailed ||
		!strings.Contains(errOut, "broker not exit or broker is not master") {
		t.Errorf("updateTopicPerm on a broker of no route: exit %d %s", code, errOut)
	}

	for _, cmd := range []string{"cleanUnusedTopic", "deleteExpiredCommitLog"} {
		for _, args := range [][]string{{"-b", n.BrokerAddr()}, {"-c", mq.DefaultClusterName}, {}} {
			if out := mustRun(t, append([]string{cmd, "-n", ns}, args...)...); out != "success\n" {
				t.Errorf("%s %v printed %q", cmd, args, out)
			}
		}
		if code, out, _ := runCmd(t, cmd, "-n", ns, "-c", "NoSuchCluster"); code != exitFailed {
			t.Errorf("%s of an unknown cluster: exit %d %q", cmd, code, out)
		}
	}
}

// TestDeleteSubGroupRemovesOffsetsAndTopics is issue 31's: deleteSubGroup -r true also drops
// the group's offsets, and with -c its retry topic, so consumerProgress no longer lists it.
func TestDeleteSubGroupRemovesOffsetsAndTopics(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "updateTopic", "-n", ns, "-b", n.BrokerAddr(), "-t", "DelGT", "-r", "1", "-w", "1")
	mustRun(t, "sendMessage", "-n", ns, "-t", "DelGT", "-p", "m1")
	out := mustRun(t, "updateSubGroup", "-n", ns, "-b", n.BrokerAddr(), "-g", "delG", "-m", "false", "-a", "false")
	if !strings.Contains(out, "consumeFromMinEnable=false") || !strings.Contains(out, "notifyConsumerIdsChangedEnable=false]") {
		t.Errorf("updateSubGroup -m false -a false:\n%s", out)
	}
	if code, _, _ := runCmd(t, "updateSubGroup", "-n", ns, "-b", n.BrokerAddr(), "-g", "delG", "-m", "sometimes"); code != exitUsage {
		t.Errorf("updateSubGroup -m sometimes: exit %d", code)
	}
	d, stop := startConsumer(t, n, "DelGT", "delG")
	eventually(t, "delG to consume", func() bool {
		p, ok := progressOf(t, ns, "delG")
		return d.count("m1") == 1 && ok && queuesOf(p, "DelGT") == 1 && p.DiffTotal == 0
	})
	stop()
	a := newAdmin(t, ns)
	ctx := context.Background()
	topicsOf := func() int {
		st, err := a.ConsumeStats(ctx, "delG", "")
		if err != nil {
			return -1
		}
		return len(st.Offsets)
	}
	// Without -r the offsets stay, as in RocketMQ.
	mustRun(t, "deleteSubGroup", "-n", ns, "-b", n.BrokerAddr(), "-g", "delG")
	if topicsOf() == 0 {
		t.Fatal("deleteSubGroup without -r removed the offsets")
	}
	out = mustRun(t, "deleteSubGroup", "-n", ns, "-c", mq.DefaultClusterName, "-g", "delG", "-r", "true")
	for _, want := range []string{"delete subscription group [delG] from broker [" + n.BrokerAddr() + "] in cluster [" + mq.DefaultClusterName + "] success.\n",
		"delete topic [%RETRY%delG] from cluster [" + mq.DefaultClusterName + "] success.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("deleteSubGroup -c -r lacks %q:\n%s", want, out)
		}
	}
	groups, err := a.ConsumerGroups(ctx)
	if err != nil || slices.Contains(groups, "delG") {
		t.Errorf("consumer groups after the delete: %v %v", groups, err)
	}
	if code, _, _ := runCmd(t, "consumerProgress", "-n", ns, "-g", "delG"); code != exitFailed {
		t.Errorf("consumerProgress of the deleted group: exit %d", code)
	}
	// The offsets are gone from the broker: asked directly, the group has none.
	st, err := a.BrokerConsumeStats(ctx, n.BrokerAddr(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range st.Stats {
		if g.Group == "delG" {
			t.Errorf("broker still reports delG: %+v", g)
		}
	}
	if code, _, _ := runCmd(t, "deleteSubGroup", "-n", ns, "-b", n.BrokerAddr(), "-g", "delG", "-r", "maybe"); code != exitUsage {
		t.Errorf("-r maybe: exit %d", code)
	}
}

// TestClusterListColumns is issue 31's: every row splits into the header's ten columns (the
// version has no spaces, no figure is empty), and -m prints the day totals.
func TestClusterListColumns(t *testing.T) {
	n := startNode(t)
	ns := n.Addr()
	mustRun(t, "sendMessage", "-n", ns, "-t", "ClT", "-p", "x")
	out := mustRun(t, "clusterList", "-n", ns)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "#Cluster Name ") {
		t.Fatalf("clusterList:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if len(f) != 10 || f[3] != n.BrokerAddr() || f[4] != "V4_9_3" || strings.Contains(lines[1], "N/A") {
		t.Errorf("clusterList row %q: %d fields", lines[1], len(f))
	}
	out = mustRun(t, "clusterList", "-n", ns, "-m")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != fmt.Sprintf("%-16s  %-32s %14s %14s %14s %14s", "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
		"#InTotalToday", "#OutTotalToday") || len(lines) != 2 {
		t.Fatalf("clusterList -m:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[4] != "1" {
		t.Errorf("clusterList -m row %q: want 1 message in today", lines[1])
	}
	// A figure a broker did not report is N/A, still one field.
	var b strings.Builder
	printClusterBaseInfo(&b, []clusterRow{{Cluster: "c", BrokerName: "b", Addr: "10.0.0.1:10911", Runtime: map[string]string{
		"brokerVersionDesc": "some version"}}}, time.Now())
	if f := strings.Fields(strings.Split(b.String(), "\n")[1]); len(f) != 10 || f[4] != "some_version" || f[9] != "0.0000" {
		t.Errorf("a broker without figures: %q", f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelAfter{want: n.BrokerAddr(), cancel: cancel}
	if code := run(ctx, []string{"clusterList", "-n", ns, "-i", "1"}, w, w); code != exitOK || !strings.Contains(w.String(), "#Version") {
		t.Errorf("clusterList -i: exit %d\n%s", code, w.String())
	}
}
