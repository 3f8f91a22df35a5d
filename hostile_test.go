package mq_test

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// The hostile-client suite (issue 10): one table of attacks (hostile_attacks_test.go), run
// against an in-process node and against the mqnode binary in a process of its own. Every row
// asserts, besides its own refusals, that
//
//   - the node stays up;
//   - nothing appears outside its store directory: the store sits four directories below a
//     sentinel root that the suite walks after each attack;
//   - its memory stays within hsMemBound of what it was before the attack, measured while the
//     attack is still in progress (its connections open): RssAnon of the binary, HeapInuse
//     after a GC for the in-process node;
//   - an honest producer and consumer (our packages, over TCP, on their own connections) keep
//     working: one send and its delivery during the attack and one after it.

// hsMemBound is how much an attack may grow the node's memory. It is generous: the
// unbounded behaviours the defences remove grew it by 300 MiB and more (issue 10), while a
// bounded attack costs a few frames of at most 16 MiB and the garbage they leave.
const hsMemBound = 128 << 20

// hsTimeout bounds every wait for an answer. It is far above what a healthy node needs, so
// the suite never asserts speed, only that an answer comes.
const hsTimeout = 30 * time.Second

// Topics and groups of the honest clients and of the attacks that need stored messages.
const (
	hsHonestTopic = "HostileHonest"
	hsHonestPG    = "hostile_honest_pg"
	hsHonestCG    = "hostile_honest_cg"
	hsBigTopic    = "HostileBig"
)

// hsNodeConfig selects the node an attack needs.
type hsNodeConfig struct {
	syncMaster bool
	haSecret   string // HASecret / -ha-secret
	maxConns   int    // MaxConnections / -max-connections (0: the default)
	// hostile_reads_test.go: ACL from a plain_acl.yml (-acl), the account the node's own
	// clients sign with (-access-key, the dashboard's), the dashboard on 127.0.0.1:0 (-http)
	// and the names it also answers under (-http-allowed-hosts).
	aclFile      string
	creds        remoting.Credentials
	http         bool
	allowedHosts []string
	cluster      hsClusterConfig // the cluster suite's roles and secrets (hostile_cluster_test.go)
	maxTopics    int             // MaxTopics / -max-topics (0: the default)
	maxGroups    int             // MaxSubscriptionGroups / -max-subscription-groups (0: the default)
	grpc         bool            // the 5.x SDKs' endpoint on 127.0.0.1:0 (-grpc-listen; hostile_grpc_test.go)
}

// hsNode is one running node, in-process or a child process, with what the suite checks.
type hsNode struct {
	addr   string // name service and broker share one listener
	haAddr string
	root   string // sentinel: the store is root/d1/d2/d3/store
	store  string
	// memory returns the bytes an attack could grow: RssAnon or HeapInuse after a GC.
	memory func() (uint64, error)
	// alive returns an error once the node has gone.
	alive func() error
	// logs returns the node's last log lines (binary only) for failure messages.
	logs func() string
	// storeTop is the store's top-level entries once the node served its first messages.
	storeTop map[string]bool
	// reported are the paths checkStore complained about: the attack that made them fails,
	// the rows after it do not fail again for them.
	reported map[string]bool
	// httpAddr is the dashboard's host:port, with hsNodeConfig.http.
	httpAddr string
	// grpcAddr is the gRPC endpoint's host:port, with hsNodeConfig.grpc.
	grpcAddr string
}

// hsEnv is one run of the table: a mode ("inproc" or "binary"), its main node and the honest
// clients on it.
type hsEnv struct {
	mode   string
	bin    string // binary mode: the built mqnode
	main   *hsNode
	honest *hsHonest
	// bigQueue and bigOffset locate the one 1 MiB message of hsBigTopic.
	bigQueue  int32
	bigOffset int64
	// phyOffset is the CommitLog offset of a stored message, for CONSUMER_SEND_MSG_BACK.
	phyOffset int64
}

// TestHostileClients runs the attack table against an in-process node and against the mqnode
// binary, each with an honest producer and consumer on it throughout. Once everything is
// closed, no goroutine of the module is left.
func TestHostileClients(t *testing.T) {
	for _, mode := range []string{"inproc", "binary"} {
		t.Run(mode, func(t *testing.T) {
			e := hsNewEnv(t, mode)
			for _, row := range hsRows() {
				t.Run(row.name, func(t *testing.T) { e.run(t, row) })
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		var leaked []string
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "github.com/mqgo/mq/") && !strings.Contains(g, "testing.tRunner") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines outlived the nodes and clients:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	}
}

// hsRow is one attack of the table.
type hsRow struct {
	name string
	// attack runs the attack and asserts its own outcome. It leaves the attack in progress
	// (connections open, requests unanswered) and returns a function that ends it, called
	// after the memory check; the attack also registers that function with t.Cleanup.
	attack func(t *testing.T, e *hsEnv) (end func())
}

// run runs one row with the checks every row shares.
func (e *hsEnv) run(t *testing.T, row hsRow) {
	before := e.main.mustMemory(t)
	end := row.attack(t, e)
	peak := e.main.mustMemory(t)
	e.honest.roundTrip(t, row.name+" (during)")
	// The node may still be working through what the attack sent: sample until its memory
	// stops growing (for at most a second).
	last := e.main.mustMemory(t)
	for i := range 40 {
		time.Sleep(25 * time.Millisecond)
		m := e.main.mustMemory(t)
		peak = max(peak, last, m)
		if i >= 3 && m < last+1<<20 {
			break
		}
		last = m
	}
	if end != nil {
		end()
	}
	if peak > before+hsMemBound {
		t.Errorf("memory grew from %d MiB to %d MiB during the attack (bound +%d MiB)",
			before>>20, peak>>20, hsMemBound>>20)
	}
	e.honest.roundTrip(t, row.name+" (after)")
	e.main.checkAlive(t)
	e.main.checkStore(t)
	e.main.checkNames(t)
}

func hsNewEnv(t *testing.T, mode string) *hsEnv {
	t.Helper()
	e := &hsEnv{mode: mode}
	if mode == "binary" {
		e.bin = filepath.Join(t.TempDir(), "mqnode")
		build := exec.Command("go", "build", "-o", e.bin, "./examples/mqnode")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build mqnode: %v\n%s", err, out)
		}
	}
	e.main = e.start(t, hsNodeConfig{})
	e.honest = hsStartHonest(t, e.main.addr)

	// One 1 MiB message alone in its queue, for the pull attacks; random, so the producer's
	// compression leaves it 1 MiB.
	big := make([]byte, 1<<20)
	_, _ = crand.Read(big)
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	res, err := e.honest.p.SendSync(ctx, producer.NewMessage(hsBigTopic, big))
	if err != nil {
		t.Fatalf("send the 1 MiB message: %v", err)
	}
	e.bigQueue, e.bigOffset = int32(res.Queue.QueueID), res.QueueOffset
	if _, e.phyOffset, err = message.ParseOffsetMsgID(res.OffsetMsgID); err != nil {
		t.Fatalf("offset message id %q: %v", res.OffsetMsgID, err)
	}
	e.honest.roundTrip(t, "warm-up")
	e.main.snapshotStore(t)
	return e
}

// start runs a node of the env's mode until the test ends.
func (e *hsEnv) start(t *testing.T, cfg hsNodeConfig) *hsNode {
	t.Helper()
	root := t.TempDir()
	n := &hsNode{root: root, store: filepath.Join(root, "d1", "d2", "d3", "store")}
	if err := os.MkdirAll(n.store, 0o755); err != nil {
		t.Fatal(err)
	}
	if e.mode == "binary" {
		hsStartBinary(t, e.bin, n, cfg)
	} else {
		hsStartInProc(t, n, cfg)
	}
	return n
}

func hsStartInProc(t *testing.T, n *hsNode, cfg hsNodeConfig) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := mq.Options{
		Listen: "127.0.0.1:0",
		Logger: &l,
		Store:  config.Store{Dir: n.store, SegmentBytes: 64 << 20},
		Limits: config.Limits{
			// Row 4 waits for a pull asking 2^50 ms to come back after this cap.
			MaxLongPollingSuspend: time.Second,
			MaxConnections:        cfg.maxConns,
			MaxTopics:             cfg.maxTopics,
			MaxSubscriptionGroups: cfg.maxGroups,
		},
		HA: config.HA{
			Listen: "127.0.0.1:0",
			// A sync master without a slave answers at once or after this.
			SyncFlushTimeout: 500 * time.Millisecond,
			Secret:           cfg.haSecret,
		},
		Security: config.Security{Credentials: cfg.creds},
		HTTP:     config.HTTP{AllowedHosts: cfg.allowedHosts},
	}
	if cfg.aclFile != "" {
		opts.Security.ACLFile = aclfile.Watch(cfg.aclFile)
	}
	if cfg.grpc {
		opts.GRPC = hsGRPC()
	}
	cfg.cluster.options(&opts)
	if cfg.syncMaster {
		opts.Broker.Role = mq.SyncMaster
	}
	node, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	n.addr, n.haAddr = node.Addr(), node.HAAddr()
	if cfg.http {
		n.httpAddr = hsServeHTTP(t, node.Handler())
	}
	n.grpcAddr = node.GRPCAddr()
	n.memory = func() (uint64, error) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse, nil
	}
	n.alive = func() error { return nil } // a crash of the node ends the test process
}

// hsStartBinary runs bin as a child process and waits for its "mqnode started" line. It is
// stopped with SIGINT (SIGKILL after hsTimeout) when the test ends and must exit 0.
func hsStartBinary(t *testing.T, bin string, n *hsNode, cfg hsNodeConfig) {
	t.Helper()
	args := []string{"-listen", "127.0.0.1:0", "-store", n.store, "-ha-listen", "127.0.0.1:0"}
	if cfg.maxConns > 0 {
		args = append(args, "-max-connections", strconv.Itoa(cfg.maxConns))
	}
	if cfg.maxTopics > 0 {
		args = append(args, "-max-topics", strconv.Itoa(cfg.maxTopics))
	}
	if cfg.maxGroups > 0 {
		args = append(args, "-max-subscription-groups", strconv.Itoa(cfg.maxGroups))
	}
	if cfg.syncMaster {
		args = append(args, "-role", "sync-master")
	}
	if cfg.grpc {
		args = append(args, "-grpc-listen", "127.0.0.1:0")
	}
	if cfg.haSecret != "" {
		args = append(args, "-ha-secret", cfg.haSecret)
	}
	args = append(args, hsReadsArgs(cfg)...)
	args = append(args, cfg.cluster.args()...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), cfg.cluster.env()...)
	if cfg.creds.SecretKey != "" {
		cmd.Env = append(cmd.Env, "MQ_SECRET_KEY="+cfg.creds.SecretKey)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tail := &hsTail{}
	lines := bufio.NewScanner(stderr)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	stuck := time.AfterFunc(hsTimeout, func() { _ = cmd.Process.Kill() })
	for n.addr == "" && lines.Scan() {
		tail.add(lines.Text())
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) != nil {
			continue
		}
		switch {
		case rec["message"] == "mqnode started":
			n.addr, _ = rec["addr"].(string)
			n.httpAddr = hsDashboardAddr(rec)
			n.grpcAddr, _ = rec["grpc_addr"].(string)
		case rec["message"] == "serving" && rec["role"] == "ha":
			n.haAddr, _ = rec["addr"].(string)
		}
	}
	stuck.Stop()
	done := make(chan struct{})
	var exitErr error
	go func() {
		// Keep draining: a node blocked on a full stderr pipe would look like a hung node.
		for lines.Scan() {
			tail.add(lines.Text())
		}
		_, _ = io.Copy(io.Discard, stderr)
		exitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
			if exitErr != nil {
				t.Errorf("mqnode exit: %v\n%s", exitErr, tail.String())
			}
		case <-time.After(hsTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("mqnode still running %v after SIGINT\n%s", hsTimeout, tail.String())
		}
	})
	if n.addr == "" {
		t.Fatalf("mqnode %v logged no address:\n%s", args, tail.String())
	}
	pid := cmd.Process.Pid
	n.memory = func() (uint64, error) { return hsRSSAnon(pid) }
	n.alive = func() error {
		select {
		case <-done:
			return fmt.Errorf("mqnode exited: %v", exitErr)
		default:
			return nil
		}
	}
	n.logs = tail.String
}

// hsRSSAnon reads a process's resident anonymous memory: the heap and stacks, not the mapped
// store files.
func hsRSSAnon(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("RssAnon line %q", line)
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no RssAnon in /proc/<pid>/status")
}

// hsTail keeps a child's last log lines.
type hsTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *hsTail) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	l.lines = append(l.lines, s)
	if len(l.lines) > 20 {
		l.lines = l.lines[len(l.lines)-20:]
	}
}

func (l *hsTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (n *hsNode) mustMemory(t *testing.T) uint64 {
	t.Helper()
	m, err := n.memory()
	if err != nil {
		n.checkAlive(t)
		t.Fatalf("node memory: %v", err)
	}
	return m
}

func (n *hsNode) checkAlive(t *testing.T) {
	t.Helper()
	if err := n.alive(); err != nil {
		msg := ""
		if n.logs != nil {
			msg = "\n" + n.logs()
		}
		t.Fatalf("node is down: %v%s", err, msg)
	}
}

// hsStoreTop are the store's top-level entries a node may create at any time.
var hsStoreTop = []string{"abort", "checkpoint", "commitlog", "config", "consumequeue", "index", "lock", "namesrv"}

var hsQueueDir = regexp.MustCompile(`^[0-9]{1,4}$`)

func (n *hsNode) snapshotStore(t *testing.T) {
	t.Helper()
	n.storeTop = map[string]bool{}
	for _, name := range hsStoreTop {
		n.storeTop[name] = true
	}
	entries, err := os.ReadDir(n.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		n.storeTop[de.Name()] = true
	}
	// The store's own file, written by its checkpointer once a queue holds durable units:
	// whenever that happens, not when an attack made it.
	n.storeTop["manifest"] = true
}

// checkStore walks the sentinel root: everything in it is the store or one of its ancestors;
// the store's top level has only what it had before the attacks, and every ConsumeQueue
// directory is a valid topic name holding queue-id directories.
func (n *hsNode) checkStore(t *testing.T) {
	t.Helper()
	if n.reported == nil {
		n.reported = map[string]bool{}
	}
	bad := func(key, format string, args ...any) {
		if !n.reported[key] {
			n.reported[key] = true
			t.Errorf(format, args...)
		}
	}
	ancestors := map[string]bool{}
	for p := n.store; len(p) > len(n.root); p = filepath.Dir(p) {
		ancestors[filepath.Dir(p)] = true
	}
	err := filepath.WalkDir(n.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a temporary file renamed while we walked
			}
			return err
		}
		switch {
		case p == n.store:
			return filepath.SkipDir
		case ancestors[p]:
			return nil
		}
		bad(p, "%s appeared outside the store %s", p, n.store)
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", n.root, err)
	}
	entries, err := os.ReadDir(n.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if n.storeTop != nil && !n.storeTop[de.Name()] && !strings.HasSuffix(de.Name(), ".tmp") {
			bad(de.Name(), "unexpected %q at the top of the store", de.Name())
		}
	}
	cq := filepath.Join(n.store, "consumequeue")
	topics, err := os.ReadDir(cq)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Error(err)
		}
		return
	}
	for _, tde := range topics {
		if !tde.IsDir() || !hsTopicName.MatchString(tde.Name()) {
			bad("cq/"+tde.Name(), "ConsumeQueue entry %q is not a topic", tde.Name())
			continue
		}
		queues, err := os.ReadDir(filepath.Join(cq, tde.Name()))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, qde := range queues {
			if !qde.IsDir() || !hsQueueDir.MatchString(qde.Name()) {
				bad("cq/"+tde.Name()+"/"+qde.Name(), "ConsumeQueue entry %q/%q is not a queue", tde.Name(), qde.Name())
			}
		}
	}
}

var (
	hsTopicName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]{1,127}$`)
	hsGroupName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]{1,255}$`)
)

// checkNames reads the broker's topic, subscription group and consumer offset tables and the
// name service's topic list: whatever the attacks sent, every name in them is valid, and
// every offset key is one topic and one group joined by '@'.
func (n *hsNode) checkNames(t *testing.T) {
	t.Helper()
	if n.reported == nil {
		n.reported = map[string]bool{}
	}
	bad := func(table, name string) {
		if key := table + "/" + name; !n.reported[key] {
			n.reported[key] = true
			t.Errorf("invalid name %q in the %s", name, table)
		}
	}
	c := hsDial(t, n.addr, 0)
	defer c.close()
	get := func(code int32) []byte {
		resp, err := c.invoke(remoting.NewRequest(code, nil, nil))
		if err != nil {
			t.Fatalf("request %d: %v", code, err)
		}
		if resp.Code != remoting.Success {
			t.Fatalf("request %d: %s %q", code, remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
		return resp.Body
	}
	var topics route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(get(remoting.GetAllTopicConfig), &topics); err != nil {
		t.Fatalf("topic table: %v", err)
	}
	for name := range topics.TopicConfigTable {
		if !hsTopicName.MatchString(name) {
			bad("broker's topic table", name)
		}
	}
	var groups struct {
		Table map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if err := json.Unmarshal(get(remoting.GetAllSubscriptionGroupConfig), &groups); err != nil {
		t.Fatalf("subscription group table: %v", err)
	}
	for name := range groups.Table {
		if !hsGroupName.MatchString(name) {
			bad("broker's subscription group table", name)
		}
	}
	offsets, err := protocol.DecodeConsumerOffsetSerializeWrapper(get(remoting.GetAllConsumerOffset))
	if err != nil {
		t.Fatalf("consumer offset table: %v", err)
	}
	for key := range offsets.OffsetTable {
		topic, group, ok := strings.Cut(key, "@")
		if !ok || !hsTopicName.MatchString(topic) || !hsGroupName.MatchString(group) {
			bad("broker's consumer offset table", key)
		}
	}
	list, err := route.DecodeTopicList(get(remoting.GetAllTopicListFromNameServer))
	if err != nil {
		t.Fatalf("name service topic list: %v", err)
	}
	for _, name := range list.TopicList {
		if !hsTopicName.MatchString(name) {
			bad("name service's topic list", name)
		}
	}
}

// hsHonest is an honest producer and lite pull consumer, over TCP, on hsHonestTopic.
type hsHonest struct {
	p   *producer.Producer
	c   *consumer.PullConsumer
	seq atomic.Int64

	mu     sync.Mutex
	seen   map[string]bool
	notify chan struct{} // closed and replaced when a batch arrives
}

func hsStartHonest(t *testing.T, addr string, creds ...remoting.Credentials) *hsHonest {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	name := "hostile-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var cred remoting.Credentials // with ACL on, the account both sign with
	if len(creds) > 0 {
		cred = creds[0]
	}
	p, err := producer.New(producer.WithNameServers(addr), producer.WithGroup(hsHonestPG),
		producer.WithInstanceName(name), producer.WithSendTimeout(hsTimeout), producer.WithLogger(&l),
		producer.WithPollNameServerInterval(100*time.Millisecond),
		producer.WithHeartbeatInterval(500*time.Millisecond), producer.WithCredentials(cred))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h := &hsHonest{p: p, seen: map[string]bool{}, notify: make(chan struct{})}
	// The topic exists before the consumer looks for its route.
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	if _, err := p.SendSync(ctx, producer.NewMessage(hsHonestTopic, []byte("create"))); err != nil {
		t.Fatalf("honest producer: first send: %v", err)
	}
	h.c, err = consumer.NewPullConsumer(consumer.WithNameServers(addr), consumer.WithGroup(hsHonestCG),
		consumer.WithInstanceName(name), consumer.WithLogger(&l),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithRebalanceInterval(100*time.Millisecond),
		consumer.WithPollNameServerInterval(100*time.Millisecond),
		consumer.WithHeartbeatInterval(500*time.Millisecond), consumer.WithCredentials(cred))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Subscribe(hsHonestTopic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Start(); err != nil {
		t.Fatal(err)
	}
	pollCtx, stop := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			msgs, err := h.c.Poll(pollCtx)
			if err != nil {
				return // stopped, or the consumer closed
			}
			h.mu.Lock()
			for _, m := range msgs {
				h.seen[string(m.Body)] = true
			}
			close(h.notify)
			h.notify = make(chan struct{})
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stop()
		<-polled
		h.c.Close()
	})
	return h
}

// roundTrip sends one message and waits until the consumer has it.
func (h *hsHonest) roundTrip(t *testing.T, when string) {
	t.Helper()
	body := fmt.Sprintf("honest-%d-%s", h.seq.Add(1), when)
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	if _, err := h.p.SendSync(ctx, producer.NewMessage(hsHonestTopic, []byte(body))); err != nil {
		t.Errorf("honest send %s: %v", when, err)
		return
	}
	for {
		h.mu.Lock()
		ok, ch := h.seen[body], h.notify
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Errorf("honest consumer never received the message sent %s", when)
			return
		}
	}
}

// hsConn is a raw connection to a node: frames in, frames out, nothing else.
type hsConn struct {
	net.Conn
	buf  []byte
	once sync.Once
}

// hsDial connects to addr; rcvBuf > 0 shrinks the socket's receive buffer before the
// handshake, so the kernel holds little of what the peer sends. The connection is closed
// when the test ends.
func hsDial(t *testing.T, addr string, rcvBuf int) *hsConn {
	t.Helper()
	d := net.Dialer{Timeout: hsTimeout}
	if rcvBuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &hsConn{Conn: nc}
	t.Cleanup(c.close)
	return c
}

func (c *hsConn) close() { c.once.Do(func() { _ = c.Conn.Close() }) }

// write writes bufs within hsTimeout.
func (c *hsConn) write(bufs ...[]byte) error {
	if err := c.SetWriteDeadline(time.Now().Add(hsTimeout)); err != nil {
		return err
	}
	nb := net.Buffers(bufs)
	_, err := nb.WriteTo(c.Conn)
	return err
}

// read returns the next frame from the node, waiting at most timeout.
func (c *hsConn) read(timeout time.Duration) (*remoting.Command, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	chunk := make([]byte, 64<<10)
	for {
		frame, n, err := remoting.SplitFrame(c.buf, remoting.DefaultMaxFrameBytes)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			owned := bytes.Clone(frame)
			c.buf = c.buf[n:]
			return remoting.DecodeFrame(owned)
		}
		k, err := c.Conn.Read(chunk)
		c.buf = append(c.buf, chunk[:k]...)
		if err != nil {
			return nil, err
		}
	}
}

// invoke writes req and returns the response with its opaque.
func (c *hsConn) invoke(req *remoting.Command) (*remoting.Command, error) {
	if err := c.write(remoting.AppendFrame(nil, req)); err != nil {
		return nil, err
	}
	for {
		resp, err := c.read(hsTimeout)
		if err != nil {
			return nil, err
		}
		if resp.IsResponse() && resp.Opaque == req.Opaque {
			return resp, nil
		}
	}
}

// waitClosed reads and discards until the node closes the connection; it fails if the
// connection is still open after timeout.
func (c *hsConn) waitClosed(timeout time.Duration) error {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil // closed already
	}
	_, err := io.Copy(io.Discard, c.Conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open after %v", timeout)
	}
	return nil // EOF (nil from io.Copy) or a reset
}

// hsInvoke sends req on the client's connection to addr and returns the answer.
func hsInvoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("request %d to %s: %v", req.Code, addr, err)
	}
	return resp
}

// hsClient is a remoting client of its own (its own connections), closed when the test ends.
func hsClient(t *testing.T) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { c.Close() })
	return c
}

// hsSendRequest is a SEND_MESSAGE as the Go client writes it, auto-creating topic from TBW102.
func hsSendRequest(topic string, queueID int32, body []byte) *remoting.Command {
	h := &protocol.SendMessageRequestHeader{ProducerGroup: "hostile_pg", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		MaxReconsumeTimes: -1}
	return remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), body)
}

// hsPullRequest pulls one message of topic's queue at offset, with the subscription in the
// header; suspend > 0 asks the broker to hold it that long.
func hsPullRequest(group, topic string, queueID int32, offset, suspendMillis int64) *remoting.Command {
	h := &protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID,
		QueueOffset: offset, MaxMsgNums: 1, SuspendTimeoutMillis: suspendMillis, Subscription: "*",
		SysFlag: protocol.BuildPullSysFlag(false, suspendMillis > 0, true, false)}
	return remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(h), nil)
}
