package admin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/stats"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

func brokerConfig(t *testing.T, tr remoting.Transport, tb *env) (map[string]string, string) {
	t.Helper()
	resp := adminCall(t, tr, tb, remoting.GetBrokerConfig, nil, nil)
	wantOK(t, resp)
	kv, err := route.ParseProperties(string(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	return kv, resp.ExtFields["version"]
}

// TestAdminBrokerConfig: GET_BROKER_CONFIG answers RocketMQ's keys; UPDATE_BROKER_CONFIG
// changes brokerPermission, persists it for the next start, counts the change in the version,
// and refuses other keys and bad values without changing anything.
func TestAdminBrokerConfig(t *testing.T) {
	dir := t.TempDir()
	tb := startIn(t, dir)
	kv, version := brokerConfig(t, tb.TCP, tb)
	if kv["brokerName"] != tb.Options().Broker.Name || kv["brokerPermission"] != "6" || kv["storePathRootDir"] != dir ||
		kv["mappedFileSizeCommitLog"] != "65536" || kv["listenPort"] == "" ||
		// Left to storage's defaults, RocketMQ's values.
		kv["fileReservedTime"] != "72" || kv["flushDiskType"] != "ASYNC_FLUSH" || kv["deleteWhen"] != "04" ||
		kv["diskMaxUsedSpaceRatio"] != "75" || kv["diskSpaceCleanForciblyRatio"] != "85" || kv["diskSpaceWarningLevelRatio"] != "90" || kv["maxIndexNum"] != "20000000" || kv["brokerRole"] != "ASYNC_MASTER" {
		t.Fatalf("config %v", kv)
	}
	var v route.DataVersion
	if err := json.Unmarshal([]byte(version), &v); err != nil || v.Timestamp == 0 {
		t.Fatalf("version %q: %v", version, err)
	}

	update := func(body string) *remoting.Command {
		return adminCall(t, tb.TCP, tb, remoting.UpdateBrokerConfig, nil, []byte(body))
	}
	resp := update("brokerPermission=4\nfileReservedTime=1\n")
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "fileReservedTime") {
		t.Fatalf("fixed key: %d %q", resp.Code, resp.Remark)
	}
	for _, bad := range []string{"brokerPermission=9", "brokerPermission=x", "brokerPermission=-1"} {
		if resp := update(bad); resp.Code == remoting.Success {
			t.Fatalf("%s accepted", bad)
		}
	}
	if resp := update(strings.Repeat("brokerPermission=4\n", 5000)); resp.Code == remoting.Success {
		t.Fatal("a 95 KB body accepted")
	}
	if tb.Permission() != route.PermReadWrite {
		t.Fatalf("refused updates changed the permission to %d", tb.Permission())
	}
	wantOK(t, update("brokerPermission = 4"))
	kv, version2 := brokerConfig(t, tb.TCP, tb)
	if kv["brokerPermission"] != "4" || version2 == version {
		t.Fatalf("after update: perm %s, version %s (was %s)", kv["brokerPermission"], version2, version)
	}
	data, err := os.ReadFile(filepath.Join(dir, "config", BrokerConfigFile))
	if err != nil || string(data) != "brokerPermission=4\n" {
		t.Fatalf("persisted %q: %v", data, err)
	}

	tb.Stop(t)
	tb = startIn(t, dir)
	if tb.Permission() != route.PermRead {
		t.Fatalf("after a restart the permission is %d, want 4 from %s", tb.Permission(), BrokerConfigFile)
	}
	wantOK(t, update("brokerPermission=6"))
	if tb.Permission() != route.PermReadWrite {
		t.Fatal("permission not restored")
	}
}

func startIn(t *testing.T, dir string) *env {
	e := &env{}
	e.Broker = brokertest.StartIn(t, dir, brokertest.Config{Attach: func(b *broker.Broker) error {
		e.stats = stats.New(b)
		b.Attach(e.stats)
		s, err := New(b, Deps{Stats: e.stats})
		if err != nil {
			return err
		}
		b.Attach(s)
		return nil
	}})
	return e
}

// TestAdminCloneAndBrokerConsumeStats: CLONE_GROUP_OFFSET copies a group's offsets (one topic
// or all), and GET_BROKER_CONSUME_STATS reports every group's lag.
func TestAdminCloneAndBrokerConsumeStats(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "CT", 2)
	addTopic(t, tb, "CU", 1)
	putMsgs(t, tb, "CT", 0, 5, "", "a")
	putMsgs(t, tb, "CT", 1, 3, "", "b")
	putMsgs(t, tb, "CU", 0, 4, "", "c")
	tb.Offsets().Commit("src", "CT", 0, 2)
	tb.Offsets().Commit("src", "CT", 1, 3)
	tb.Offsets().Commit("src", "CU", 0, 1)
	for _, g := range []string{"src", "dst", "dst2"} {
		wantOK(t, adminCall(t, tb.TCP, tb, remoting.UpdateAndCreateSubscription, nil, []byte(`{"groupName":"`+g+`"}`)))
	}

	wantOK(t, adminCall(t, tb.TCP, tb, remoting.CloneGroupOffset,
		&protocol.CloneGroupOffsetRequestHeader{SrcGroup: "src", DestGroup: "dst", Topic: "CT"}, nil))
	if a, b, c := tb.Offsets().Query("dst", "CT", 0), tb.Offsets().Query("dst", "CT", 1), tb.Offsets().Query("dst", "CU", 0); a != 2 || b != 3 || c != -1 {
		t.Fatalf("dst offsets %d %d %d, want 2 3 -1", a, b, c)
	}
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.CloneGroupOffset,
		&protocol.CloneGroupOffsetRequestHeader{SrcGroup: "src", DestGroup: "dst2", Offline: true}, nil))
	if c := tb.Offsets().Query("dst2", "CU", 0); c != 1 {
		t.Fatalf("dst2 CU offset %d, want 1 (every topic)", c)
	}
	resp := adminCall(t, tb.TCP, tb, remoting.CloneGroupOffset,
		&protocol.CloneGroupOffsetRequestHeader{SrcGroup: "src", DestGroup: "bad group!"}, nil)
	if resp.Code == remoting.Success {
		t.Fatal("a clone into an invalid group name succeeded")
	}

	resp = adminCall(t, tb.TCP, tb, remoting.GetBrokerConsumeStats, &protocol.GetConsumeStatsInBrokerHeader{}, nil)
	wantOK(t, resp)
	body, err := protocol.DecodeConsumeStatsList(resp.Body)
	if err != nil {
		t.Fatalf("%v: %s", err, resp.Body)
	}
	// src: CT 3+0, CU 3; dst: CT 3+0; dst2: CT 3+0, CU 3.
	if body.BrokerAddr != tb.Addr || body.TotalDiff != 15 {
		t.Fatalf("addr %s totalDiff %d, want %s 15: %s", body.BrokerAddr, body.TotalDiff, tb.Addr, resp.Body)
	}
	var groups []string
	for _, g := range body.Groups {
		groups = append(groups, g.Group)
		if g.Group == "src" && (len(g.Stats) != 2 || len(g.Stats[0].OffsetTable) != 2) {
			t.Fatalf("src stats %+v", g.Stats)
		}
	}
	if !slices.Contains(groups, "src") || !slices.Contains(groups, "dst2") {
		t.Fatalf("groups %v", groups)
	}
	resp = adminCall(t, tb.TCP, tb, remoting.GetBrokerConsumeStats, &protocol.GetConsumeStatsInBrokerHeader{IsOrder: true}, nil)
	wantOK(t, resp)
	if body, err = protocol.DecodeConsumeStatsList(resp.Body); err != nil || body.TotalDiff != 0 {
		t.Fatalf("isOrder: totalDiff %d (no order topics): %v", body.TotalDiff, err)
	}

	resp = adminCall(t, tb.TCP, tb, remoting.QueryTopicConsumeByWho, &protocol.QueryTopicConsumeByWhoRequestHeader{Topic: "CU"}, nil)
	wantOK(t, resp)
	if got := string(resp.Body); got != `{"groupList":["dst2","src"]}` {
		t.Errorf("consumed by %s", got)
	}
	resp = adminCall(t, tb.TCP, tb, remoting.QueryTopicsByConsumer, &protocol.QueryTopicsByConsumerRequestHeader{Group: "src"}, nil)
	wantOK(t, resp)
	if got, want := string(resp.Body), `{"topicList":["CT","CU"],"brokerAddr":"`+tb.Options().BrokerAddr+`"}`; got != want {
		t.Errorf("topics of src %s, want %s", got, want)
	}
}

// TestAdminQueryConsumeQueue reads ConsumeQueue units and refuses queues that do not exist.
func TestAdminQueryConsumeQueue(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "QT", 2)
	putMsgs(t, tb, "QT", 1, 5, "tagA", "m")
	q := func(h *protocol.QueryConsumeQueueRequestHeader) (*remoting.Command, queryConsumeQueueBody) {
		resp := adminCall(t, tb.TCP, tb, remoting.QueryConsumeQueue, h, nil)
		var b queryConsumeQueueBody
		if resp.Code == remoting.Success && len(resp.Body) > 0 {
			if err := json.Unmarshal(resp.Body, &b); err != nil {
				t.Fatal(err)
			}
		}
		return resp, b
	}
	resp, b := q(&protocol.QueryConsumeQueueRequestHeader{Topic: "QT", QueueID: 1, Index: 1, Count: 3, ConsumerGroup: "nobody"})
	wantOK(t, resp)
	if b.MinQueueIndex != 0 || b.MaxQueueIndex != 5 || len(b.QueueData) != 3 {
		t.Fatalf("body %+v", b)
	}
	for i := 1; i < len(b.QueueData); i++ {
		if b.QueueData[i].PhysicOffset <= b.QueueData[i-1].PhysicOffset || b.QueueData[i].PhysicSize <= 0 {
			t.Fatalf("units %+v", b.QueueData)
		}
	}
	if b.FilterData == nil || *b.FilterData != "nobody@QT is not online!" {
		t.Errorf("filterData %v", b.FilterData)
	}
	if resp, b = q(&protocol.QueryConsumeQueueRequestHeader{Topic: "QT", QueueID: 1, Index: 3, Count: 1 << 30}); len(b.QueueData) != 2 {
		t.Fatalf("count 2^30 from 3: %d units (%q)", len(b.QueueData), resp.Remark)
	}
	if resp, _ = q(&protocol.QueryConsumeQueueRequestHeader{Topic: "QT", QueueID: 1, Index: 9, Count: 1}); resp.Code != remoting.Success ||
		!strings.Contains(resp.Remark, "Index 9") {
		t.Fatalf("index past the end: %d %q", resp.Code, resp.Remark)
	}
	for _, h := range []*protocol.QueryConsumeQueueRequestHeader{{Topic: "QT", QueueID: 2, Count: 1},
		{Topic: "QT", QueueID: -1, Count: 1}, {Topic: "nope", Count: 1}} {
		if resp, _ := q(h); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "is not exist") {
			t.Fatalf("%+v: %d %q", h, resp.Code, resp.Remark)
		}
	}
}

// TestAdminCleanExpiredConsumeQueue deletes the ConsumeQueues of topics the broker no longer
// has, and only those.
func TestAdminCleanExpiredConsumeQueue(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "Kept", 1)
	putMsgs(t, tb, "Kept", 0, 2, "", "k")
	putMsgs(t, tb, "Gone", 0, 2, "", "g") // straight into the store: no topic config
	has := func(topic string) bool {
		return slices.ContainsFunc(tb.Store().Queues(), func(q storage.QueueInfo) bool { return q.Topic == topic })
	}
	if !has("Gone") || !has("Kept") {
		t.Fatal("queues not there to start with")
	}
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.CleanExpiredConsumeQueue, nil, nil))
	if has("Gone") || !has("Kept") {
		t.Fatalf("after the clean: Gone %v Kept %v", has("Gone"), has("Kept"))
	}
}

// TestAdminViewBrokerStatsData reads a topic's put and a group's get figures as statsAll does.
func TestAdminViewBrokerStatsData(t *testing.T) {
	tb := start(t, nil, nil)
	// The windows' first snapshot is taken as the statistics start; count after it.
	brokertest.Eventually(t, "the statistics to sample", func() bool { _, _, ok := tb.stats.Rates(); return ok })
	tb.stats.CountPut("VT", 3, 30)
	tb.stats.CountGet("VT", "vg", 2, 20)
	view := func(name, key string) (*remoting.Command, map[string]brokerStatsItem) {
		resp := adminCall(t, tb.TCP, tb, remoting.ViewBrokerStatsData,
			&protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}, nil)
		var body map[string]brokerStatsItem
		if resp.Code == remoting.Success {
			if err := json.Unmarshal(resp.Body, &body); err != nil {
				t.Fatal(err)
			}
		}
		return resp, body
	}
	for _, c := range []struct {
		name, key string
		sum       int64
	}{{stats.TopicPutNums, "VT", 3}, {stats.TopicPutSize, "VT", 30}, {stats.GroupGetNums, "VT@vg", 2}, {stats.GroupGetSize, "VT@vg", 20}} {
		resp, body := view(c.name, c.key)
		wantOK(t, resp)
		for _, w := range []string{"statsMinute", "statsHour", "statsDay"} {
			if body[w].Sum != c.sum || body[w].TPS <= 0 {
				t.Errorf("%s %s %s: %+v, want sum %d and a rate", c.name, c.key, w, body[w], c.sum)
			}
		}
	}
	for _, c := range [][2]string{{stats.TopicPutNums, "nope"}, {stats.GroupGetNums, "VT"}, {"SNDBCK_PUT_NUMS", "VT"}} {
		resp, _ := view(c[0], c[1])
		if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "not exist") {
			t.Errorf("%v: %d %q", c, resp.Code, resp.Remark)
		}
	}
}

// TestAdminBrokerConfigFileRefused: a broker.properties whose brokerPermission a broker may not
// take stops the start with an error naming the file and the key, and leaves the permission
// alone.
func TestAdminBrokerConfigFileRefused(t *testing.T) {
	for _, bad := range []string{"brokerPermission=7\n", "brokerPermission=x\n"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config", BrokerConfigFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := brokertest.Options(t, dir)
		opts.BrokerAddr = "127.0.0.1:10911"
		b, err := broker.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(b, Deps{})
		if err == nil || !strings.Contains(err.Error(), BrokerConfigFile) || !strings.Contains(err.Error(), KeyBrokerPermission) {
			t.Errorf("%q: New returned %v, want an error naming the file and the key", bad, err)
		}
		if p := b.Permission(); p != route.PermReadWrite {
			t.Errorf("%q: permission %d after a refused file", bad, p)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
