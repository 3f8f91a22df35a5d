package broker

import (
	"context"
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
	"github.com/mqgo/mq/internal/broker/registrar"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
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
// new topic about once, none more than registrar.SplitSize, and topics.json is written whole a
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
	whole, appends := tb.topics.FileWrites()
	t.Logf("%d REGISTER_BROKER requests carried %d topics (largest %d); topics.json written whole %d times, journal appended %d times",
		requests, topics-atStart, largest, whole, appends)
	if topics-atStart > 2*n {
		t.Errorf("registrations carried %d topics for %d new ones: the table, not what changed", topics-atStart, n)
	}
	if largest > registrar.SplitSize && largest != atStart {
		t.Errorf("a registration carried %d topics, above registrar.SplitSize %d", largest, registrar.SplitSize)
	}
	if whole > 5 {
		t.Errorf("topics.json written whole %d times for %d topics", whole, n)
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
	return b.topics.Snapshot().TopicConfigTable
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
	want := tb.topics.Snapshot().DataVersion
	b, err := New(testOptionsFor(t, copyConfig(t, tb.Dir)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v := b.topics.Snapshot().DataVersion; v != want {
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
	for _, name := range []string{"topics.json", "topics.journal"} {
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
			if _, err := tb.topics.CreateIfAbsent("Before", 1, route.PermReadWrite, 0); err != nil {
				t.Fatal(err)
			}
			ns.restart()
			if _, err := tb.topics.CreateIfAbsent("After", 1, route.PermReadWrite, 0); err != nil {
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
	limit := tb.topics.Count() + 2
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
	if _, err := tb.topics.CreateIfAbsent("%RETRY%capped", 1, route.PermReadWrite, 0); err == nil {
		t.Error("a retry topic created past MaxTopics")
	}
	tb.topics.AddSystemTopic("SYSTEM_ONLY", 1)
	if _, ok := tb.topics.Get("SYSTEM_ONLY"); !ok {
		t.Error("a system topic refused by MaxTopics")
	}
}
