package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// registerRecorder is a transport to a name server that records the topic count of every
// REGISTER_BROKER it carries.
type registerRecorder struct {
	remoting.Transport
	mu     sync.Mutex
	counts []int
}

func (r *registerRecorder) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.RegisterBroker {
		var h protocol.RegisterBrokerRequestHeader
		n := -1
		if h.Decode(req.ExtFields) == nil {
			if body, err := route.DecodeRegisterBrokerBody(req.Body, h.Compressed); err == nil {
				n = len(body.TopicConfigSerializeWrapper.TopicConfigTable)
			}
		}
		r.mu.Lock()
		r.counts = append(r.counts, n)
		r.mu.Unlock()
	}
	return r.Transport.InvokeSync(ctx, addr, req)
}

// sent returns the registrations so far and the topics they carried in all.
func (r *registerRecorder) sent() (requests, topics, largest int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.counts {
		topics += n
		largest = max(largest, n)
	}
	return len(r.counts), topics, largest
}

// createTopics sends one message to each of n new topics over 8 concurrent senders on the
// broker's TCP client and fails on any refusal.
func createTopics(t *testing.T, tb *testBroker, prefix string, n int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				h := wiretest.SendHeader(fmt.Sprintf("%s%d", prefix, i), 0, nil)
				resp := invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON))
				if resp.Code != remoting.Success {
					t.Errorf("send to new topic %s%d: %d %q", prefix, i, resp.Code, resp.Remark)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestAutoCreateFloodCostsWhatItAdds: 2,000 topics created by sends are routable and on disk,
// and cost the name server and the disk about one entry each: the registrations carry each
// new topic about once, none more than registerSplitSize, and topics.json is written whole a
// few times, not once per pass (RocketMQ: the whole table, per topic, both ways).
func TestAutoCreateFloodCostsWhatItAdds(t *testing.T) {
	const n = 2000
	ns := startTestNameServer(t)
	rec := &registerRecorder{Transport: ns.tr}
	tb := startTestBroker(t, func(o *Options) {
		ns.withNameServer(o)
		o.Transport = rec
		o.Periods.RegisterNameServerPeriod = time.Hour
		o.Periods.RegisterNameServerPeriodMin = time.Hour
		o.Limits.AutoCreateTopicBurst = n
	})
	waitRegistered(t, tb)
	_, atStart, _ := rec.sent()
	createTopics(t, tb, "Flood", n)
	for i := 1; i <= n; i++ {
		if topic := fmt.Sprintf("Flood%d", i); !ns.routable(topic) {
			t.Fatalf("%s not routable once its send was answered", topic)
		}
	}
	requests, topics, largest := rec.sent()
	t.Logf("%d REGISTER_BROKER requests carried %d topics (largest %d); topics.json written whole %d times, journal appended %d times",
		requests, topics-atStart, largest, tb.topics.wholeWrites.Load(), tb.topics.appends.Load())
	if topics-atStart > 2*n {
		t.Errorf("registrations carried %d topics for %d new ones: the table, not what changed", topics-atStart, n)
	}
	if largest > registerSplitSize && largest != atStart {
		t.Errorf("a registration carried %d topics, above registerSplitSize %d", largest, registerSplitSize)
	}
	if w := tb.topics.wholeWrites.Load(); w > 5 {
		t.Errorf("topics.json written whole %d times for %d topics", w, n)
	}
	// What the next start reads: topics.json and its journal, written before the answers.
	got := loadTopics(t, tb.Dir)
	for i := 1; i <= n; i++ {
		if _, ok := got[fmt.Sprintf("Flood%d", i)]; !ok {
			t.Fatalf("Flood%d missing from topics.json and its journal", i)
		}
	}
}

// loadTopics reads the topic table of the store at dir as a broker starting on it would
// (topics.json, then its journal), from a copy of the two files taken now, while the broker
// runs: what a crash would leave.
func loadTopics(t *testing.T, dir string) map[string]TopicConfig {
	t.Helper()
	b, err := New(testOptionsFor(t, copyConfig(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.topics.snapshot().TopicConfigTable
}

// testOptionsFor is testOptions with a broker address, for a broker built but not served.
func testOptionsFor(t *testing.T, dir string) Options {
	o := testOptions(t, dir)
	o.BrokerAddr = "127.0.0.1:10911"
	o.HA = config.HA{}
	return o
}

// TestTopicChangesSurviveACrash: every topic change answered is in topics.json or its journal
// at once, in order: created by a send, updated and deleted by admin requests, and seen so by
// a broker starting on a copy of the files taken while the first still runs (a crash).
func TestTopicChangesSurviveACrash(t *testing.T) {
	tb := startTestBroker(t, nil)
	createTopics(t, tb, "Crash", 20)
	upd := goAdminCreate("Crash3")
	upd.ReadQueueNums, upd.WriteQueueNums = 2, 2
	if resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(upd), nil)); resp.Code != remoting.Success {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	del := remoting.EncodeHeader(&protocol.DeleteTopicRequestHeader{Topic: "Crash4"})
	if resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.DeleteTopicInBroker, del, nil)); resp.Code != remoting.Success {
		t.Fatalf("delete: %d %q", resp.Code, resp.Remark)
	}
	got := loadTopics(t, tb.Dir)
	for i := 1; i <= 20; i++ {
		tc, ok := got[fmt.Sprintf("Crash%d", i)]
		switch {
		case i == 4 && ok:
			t.Error("Crash4 deleted but back after the crash")
		case i != 4 && !ok:
			t.Errorf("Crash%d lost in the crash", i)
		case i == 3 && tc.WriteQueueNums != 2:
			t.Errorf("Crash3 has %d write queues after the crash, want the update's 2", tc.WriteQueueNums)
		}
	}
	want := tb.topics.snapshot().DataVersion
	b, err := New(testOptionsFor(t, copyConfig(t, tb.Dir)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := b.topics.snapshot().DataVersion; v != want {
		t.Errorf("data version after the crash %+v, want %+v", v, want)
	}
}

// copyConfig copies the store's config directory into a new store directory.
func copyConfig(t *testing.T, dir string) string {
	t.Helper()
	cp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cp, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"topics.json", topicJournalFile} {
		b, err := os.ReadFile(filepath.Join(dir, "config", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, "config", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// TestTopicJournalDamage: a journal cut short keeps its whole records; one that does not
// follow topics.json (a crash between writing topics.json and starting a new journal) is
// ignored; a damaged record ends the replay, and the first pass writes topics.json whole.
func TestTopicJournalDamage(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	base := route.DataVersion{Timestamp: 1700000000000, Counter: 5}
	if err := storage.WriteJSONFile(filepath.Join(cfg, "topics.json"), route.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{"Snap": {TopicName: "Snap", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		DataVersion:      base}); err != nil {
		t.Fatal(err)
	}
	line := func(r topicRecord) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	put := func(name string, counter int64) string {
		return line(topicRecord{Put: &TopicConfig{TopicName: name, ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6},
			Version: route.DataVersion{Timestamp: base.Timestamp, Counter: counter}})
	}
	journal := filepath.Join(cfg, topicJournalFile)
	open := func(content string) map[string]TopicConfig {
		t.Helper()
		if err := os.WriteFile(journal, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		o := testOptionsFor(t, dir)
		b, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		return b.topics.snapshot().TopicConfigTable
	}
	head := line(topicRecord{Base: &base})
	torn := put("Torn", 8)
	got := open(head + put("A", 6) + line(topicRecord{Delete: "Snap", Version: route.DataVersion{Counter: 7}}) + torn[:len(torn)/2])
	if _, ok := got["A"]; !ok {
		t.Error("a whole record before a torn one was not replayed")
	}
	if _, ok := got["Snap"]; ok {
		t.Error("a delete record was not replayed")
	}
	if _, ok := got["Torn"]; ok {
		t.Error("a torn record was replayed")
	}
	// The broker above closed cleanly: topics.json holds A now and the journal starts anew.
	if got := open(line(topicRecord{Base: &route.DataVersion{Counter: 99}}) + put("Stale", 100)); got["Stale"].TopicName != "" {
		t.Error("a journal that does not follow topics.json was replayed")
	} else if _, ok := got["A"]; !ok {
		t.Error("topics.json lost A")
	}
	var tw route.TopicConfigSerializeWrapper
	if _, err := storage.ReadJSONFile(filepath.Join(cfg, "topics.json"), &tw); err != nil {
		t.Fatal(err)
	}
	got = open(line(topicRecord{Base: &tw.DataVersion}) + put("B", tw.DataVersion.Counter+1) + "{not json}\n" +
		put("C", tw.DataVersion.Counter+2))
	if _, ok := got["B"]; !ok {
		t.Error("a record before a damaged one was not replayed")
	}
	if _, ok := got["C"]; ok {
		t.Error("a record after a damaged one was replayed")
	}
	if w := readTopicsFile(t, dir); w["B"].TopicName == "" || w["C"].TopicName != "" {
		t.Error("after a damaged journal, topics.json was not written whole with what was replayed")
	}
}

// TestIncrementsRepairedByTheWholeRound: a name server that restarts between incremental
// registrations meets the broker through an increment, which holds only the newest topic;
// the next periodic round sends the whole table under a new version, so the name server
// learns the topics it missed rather than ignoring a version it has.
func TestIncrementsRepairedByTheWholeRound(t *testing.T) {
	for _, force := range []bool{true, false} {
		t.Run(fmt.Sprintf("forceRegister=%v", force), func(t *testing.T) {
			ns := startRestartableNameServer(t)
			tb := startTestBroker(t, func(o *Options) {
				ns.withNameServer(o)
				o.Periods.RegisterNameServerPeriod = 200 * time.Millisecond
				o.Periods.RegisterNameServerPeriodMin = 200 * time.Millisecond
				o.Broker.DisableForceRegister = !force
			})
			<-tb.Ready()
			if _, err := tb.topics.createIfAbsent("Before", 1, route.PermReadWrite, 0); err != nil {
				t.Fatal(err)
			}
			ns.restart()
			if _, err := tb.topics.createIfAbsent("After", 1, route.PermReadWrite, 0); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the restarted name server to learn the topic it missed", func() bool {
				return ns.knows(tb.Addr, "Before") && ns.knows(tb.Addr, "After")
			})
		})
	}
}

// TestMaxTopics: past MaxTopics a send that would create a topic is answered TOPIC_NOT_EXIST
// naming the limit, and so is every other way of creating one; sends to existing topics, and
// updates of them, go on.
func TestMaxTopics(t *testing.T) {
	tb := startTestBroker(t, nil)
	limit := tb.topics.count() + 2
	tb.Stop(t)
	tb = startTestBroker(t, func(o *Options) { o.Limits.MaxTopics = limit })
	send := func(topic string) *remoting.Command {
		h := wiretest.SendHeader(topic, 0, nil)
		return invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("x"), remoting.SerializeJSON))
	}
	for _, topic := range []string{"Cap1", "Cap2"} {
		if resp := send(topic); resp.Code != remoting.Success {
			t.Fatalf("%s: %d %q", topic, resp.Code, resp.Remark)
		}
	}
	resp := send("Cap3")
	if resp.Code != remoting.TopicNotExist || !strings.Contains(resp.Remark, "MaxTopics") || !strings.Contains(resp.Remark, "Cap3") {
		t.Errorf("send past MaxTopics: %d %q, want TOPIC_NOT_EXIST naming the topic and MaxTopics", resp.Code, resp.Remark)
	}
	if resp := send("Cap1"); resp.Code != remoting.Success {
		t.Errorf("send to an existing topic at the cap: %d %q", resp.Code, resp.Remark)
	}
	create := remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(goAdminCreate("Cap3")), nil)
	if resp := invoke(t, tb.TCP, tb.Addr, create); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "MaxTopics") {
		t.Errorf("admin create past MaxTopics: %d %q", resp.Code, resp.Remark)
	}
	update := remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(goAdminCreate("Cap1")), nil)
	if resp := invoke(t, tb.TCP, tb.Addr, update); resp.Code != remoting.Success {
		t.Errorf("admin update at the cap: %d %q", resp.Code, resp.Remark)
	}
	if _, err := tb.topics.createIfAbsent("%RETRY%capped", 1, route.PermReadWrite, 0); err == nil {
		t.Error("a retry topic created past MaxTopics")
	}
	tb.topics.addSystemTopic("SYSTEM_ONLY", 1)
	if _, ok := tb.topics.get("SYSTEM_ONLY"); !ok {
		t.Error("a system topic refused by MaxTopics")
	}
}

// TestCreateLimiter: a connection creates a burst, then at the rate; connections are apart;
// buckets that refilled are swept, so the table stays about as large as the connections
// creating topics lately.
func TestCreateLimiter(t *testing.T) {
	l := newCreateLimiter(3, 2)
	t0 := time.Unix(1700000000, 0)
	for i := range 3 {
		if !l.allow(1, t0) {
			t.Fatalf("creation %d of the burst refused", i+1)
		}
	}
	if l.allow(1, t0) {
		t.Error("a fourth creation in the same instant allowed")
	}
	if !l.allow(2, t0) {
		t.Error("another connection refused")
	}
	if !l.allow(1, t0.Add(500*time.Millisecond)) || l.allow(1, t0.Add(500*time.Millisecond)) {
		t.Error("half a second at 2 a second should give exactly one creation")
	}
	if !strings.Contains(l.remark, "AutoCreateTopicRate 2") || !strings.Contains(l.remark, "AutoCreateTopicBurst 3") {
		t.Errorf("remark %q does not name the limits", l.remark)
	}
	for id := range uint64(5000) {
		l.allow(100+id, t0)
	}
	later := t0.Add(time.Minute) // every bucket has refilled
	for id := range uint64(5000) {
		l.allow(100000+id, later)
	}
	l.mu.Lock()
	n := len(l.buckets)
	l.mu.Unlock()
	if n > 5000+createLimiterMinSweep {
		t.Errorf("%d buckets kept for 5,000 connections creating now", n)
	}
}

// TestSlaveRefusesTooManyTopics: a master's table above MaxTopics (and the system topics'
// allowance) is not installed; the slave keeps what it held.
func TestSlaveRefusesTooManyTopics(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxTopics = 10 })
	w := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{},
		DataVersion: route.DataVersion{Timestamp: 1, Counter: 1}}
	for i := range 10 + maxUncappedTopics + 1 {
		name := fmt.Sprintf("M%d", i)
		w.TopicConfigTable[name] = TopicConfig{TopicName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	}
	before := tb.topics.count()
	if err := tb.Topics().InstallMaster(w); err == nil || !strings.Contains(err.Error(), "MaxTopics") {
		t.Errorf("install of %d topics: %v, want an error naming MaxTopics", len(w.TopicConfigTable), err)
	}
	if n := tb.topics.count(); n != before {
		t.Errorf("the slave holds %d topics after a refused install, had %d", n, before)
	}
}
