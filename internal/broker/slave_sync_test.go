package broker

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// TestLoadDropsInvalidNames: a hand-edited topics.json and subscriptionGroup.json holding names
// no request may carry load without them (one error line per file naming them), keep every
// other entry, and the broker neither serves nor writes them back.
func TestLoadDropsInvalidNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	topics := `{"topicConfigTable":{
		"Good":{"topicName":"Good","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG"},
		"NoName":{"readQueueNums":2,"writeQueueNums":2,"perm":6},
		"mq-01.example.com":{"topicName":"mq-01.example.com","readQueueNums":1,"writeQueueNums":1,"perm":7},
		"../../x/pwn":{"topicName":"../../x/pwn","readQueueNums":1,"writeQueueNums":1,"perm":6},
		"Alias":{"topicName":"a/b","readQueueNums":1,"writeQueueNums":1,"perm":6},
		"` + strings.Repeat("t", 128) + `":{"readQueueNums":1,"writeQueueNums":1,"perm":6}},
		"dataVersion":{"timestamp":1,"counter":7}}`
	groups := `{"subscriptionGroupTable":{
		"cg":{"groupName":"cg","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16},
		"T@g":{"groupName":"T@g","consumeEnable":true,"retryQueueNums":1},
		"host.name":{"consumeEnable":true,"retryQueueNums":1}},
		"dataVersion":{"timestamp":1,"counter":3}}`
	for name, body := range map[string]string{"topics.json": topics, "subscriptionGroup.json": groups} {
		if err := os.WriteFile(filepath.Join(dir, "config", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := &countingWriter{}
	tb := startTestBrokerIn(t, dir, func(o *Options) {
		l := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.WarnLevel)
		o.Logger = &l
	})

	gotTopics := tb.topics.names()
	for _, want := range []string{"Good", "NoName"} {
		if _, ok := tb.topics.get(want); !ok {
			t.Errorf("valid topic %s not loaded (have %v)", want, gotTopics)
		}
	}
	if tc, _ := tb.topics.get("NoName"); tc.TopicName != "NoName" {
		t.Errorf("NoName loaded with topicName %q", tc.TopicName)
	}
	for _, bad := range []string{"mq-01.example.com", "../../x/pwn", "Alias", "a/b", strings.Repeat("t", 128)} {
		if slices.Contains(gotTopics, bad) {
			t.Errorf("invalid topic %q loaded", bad)
		}
	}
	if _, ok := tb.groups.get("cg"); !ok {
		t.Error("valid group cg not loaded")
	}
	for _, bad := range []string{"T@g", "host.name"} {
		if _, ok := tb.groups.get(bad); ok {
			t.Errorf("invalid group %q loaded", bad)
		}
	}
	// Served nowhere: not in GET_ALL_TOPIC_CONFIG, which is also what slaves copy.
	resp := invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if strings.Contains(string(resp.Body), "pwn") || strings.Contains(string(resp.Body), "example.com") {
		t.Errorf("GET_ALL_TOPIC_CONFIG serves a dropped topic: %s", resp.Body)
	}

	var topicLine, groupLine string
	for _, l := range logs.got() {
		switch {
		case strings.Contains(l, "topics with invalid names dropped at load"):
			topicLine = l
		case strings.Contains(l, "subscription groups with invalid names dropped at load"):
			groupLine = l
		}
	}
	for _, want := range []string{`"level":"error"`, `"dropped":4`, `mq-01.example.com`, `../../x/pwn`, `Alias`,
		`(128 bytes)`, `"component":"broker"`} {
		if !strings.Contains(topicLine, want) {
			t.Errorf("topics log line lacks %s: %s", want, topicLine)
		}
	}
	for _, want := range []string{`"level":"error"`, `"dropped":2`, `T@g`, `host.name`} {
		if !strings.Contains(groupLine, want) {
			t.Errorf("groups log line lacks %s: %s", want, groupLine)
		}
	}

	tb.Stop(t)
	written := readTopicsFile(t, dir)
	if _, ok := written["Good"]; !ok {
		t.Errorf("topics.json lost Good: %v", written)
	}
	for name := range written {
		if strings.Contains(name, ".") || strings.Contains(name, "/") || name == "Alias" {
			t.Errorf("topics.json written back with %q", name)
		}
	}
}

// fakeMaster answers a slave's four metadata requests with fixed bodies, in process.
func fakeMaster(t *testing.T, bodies map[int16]string) remoting.Transport {
	t.Helper()
	d := remoting.NewDispatcher(nil)
	ex := remoting.NewExecutor("fake-master", 1, 16)
	for code, body := range bodies {
		d.Register(code, remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = []byte(body)
			return resp, nil
		}), ex)
	}
	d.Start()
	tr := remoting.NewInProcTransport(func(addr string) *remoting.Dispatcher {
		if addr == fakeMasterAddr {
			return d
		}
		return nil
	}, nil, 20*time.Millisecond)
	t.Cleanup(func() {
		tr.Close()
		d.Close()
	})
	return tr
}

const fakeMasterAddr = "10.9.9.9:10911"

// TestSlaveSyncChecksMaster: what a master sends is installed only where it is valid: topics
// and groups with invalid names and offsets of invalid keys or queue ids are left out, queue
// counts are clamped, everything else is installed, and one warning per table says so.
func TestSlaveSyncChecksMaster(t *testing.T) {
	huge := math.MaxInt32
	master := fakeMaster(t, map[int16]string{
		remoting.GetAllTopicConfig: `{"topicConfigTable":{
			"Good":{"topicName":"Good","readQueueNums":4,"writeQueueNums":4,"perm":6},
			"Huge":{"topicName":"Huge","readQueueNums":` + strconv.Itoa(huge) + `,"writeQueueNums":-3,"perm":6},
			"mq-01.example.com":{"topicName":"mq-01.example.com","readQueueNums":1,"writeQueueNums":1,"perm":7},
			"../../../x/pwn":{"topicName":"../../../x/pwn","readQueueNums":1,"writeQueueNums":1,"perm":6},
			"Alias":{"topicName":"%RETRY%../x","readQueueNums":1,"writeQueueNums":1,"perm":6}},
			"dataVersion":{"timestamp":5,"counter":9}}`,
		remoting.GetAllSubscriptionGroupConfig: `{"subscriptionGroupTable":{
			"cg":{"groupName":"cg","consumeEnable":true,"retryQueueNums":1073741824,"retryMaxTimes":16},
			"ok":{"groupName":"ok","consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16},
			"../g":{"groupName":"../g","consumeEnable":true,"retryQueueNums":1}},
			"dataVersion":{"timestamp":5,"counter":4}}`,
		remoting.GetAllConsumerOffset: `{"offsetTable":{
			"Good@cg":{0:5,3:9,2000:7,-1:3},
			"../x@cg":{0:1},
			"Good@../g":{0:1},
			"Good@a@b":{0:1},
			"NoSeparator":{0:1},
			"Huge@ok":{1048576:1}}}`,
		remoting.GetAllDelayOffset: `{"offsetTable":{1:4,2:0}}`,
	})
	logs := &countingWriter{}
	slave := startTestBroker(t, func(o *Options) {
		o.BrokerID = 1
		o.DelayLevels = sbDelays
		o.Transport = master
		l := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.WarnLevel)
		o.Logger = &l
	})
	if err := slave.syncFromMaster(context.Background(), fakeMasterAddr); err != nil {
		t.Fatalf("sync: %v", err)
	}

	wantTopics := map[string]TopicConfig{
		"Good": {TopicName: "Good", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		"Huge": {TopicName: "Huge", ReadQueueNums: DefaultMaxQueueNums, WriteQueueNums: 0, Perm: 6},
	}
	if diff := cmp.Diff(wantTopics, slave.topics.snapshot().TopicConfigTable); diff != "" {
		t.Errorf("topics (-want +got):\n%s", diff)
	}
	groups := slave.groups.snapshot().SubscriptionGroupTable
	if diff := cmp.Diff([]string{"cg", "ok"}, slices.Sorted(maps.Keys(groups))); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if got := groups["cg"].RetryQueueNums; got != DefaultMaxQueueNums {
		t.Errorf("cg retryQueueNums %d, want %d", got, DefaultMaxQueueNums)
	}
	slave.offsets.mu.RLock()
	offsets := slave.offsets.table
	slave.offsets.mu.RUnlock()
	if diff := cmp.Diff(map[string]map[int32]int64{"Good@cg": {0: 5, 3: 9}}, offsets); diff != "" {
		t.Errorf("offsets (-want +got):\n%s", diff)
	}
	if got := slave.delayOffsets().OffsetTable[1]; got != 4 {
		t.Errorf("delay level 1 offset %d, want 4", got)
	}

	lines := logs.got()
	for _, want := range []string{
		`"dropped":3`, // topics: the dotted host name, the traversal, the alias
		`"dropped":1`, // groups
		`"dropped":4`, // offsets: four bad keys
	} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("no warning with %s in %q", want, lines)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d warnings, want one per table that lost entries: %q", len(lines), lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "\n\"") || !json.Valid([]byte(strings.TrimSpace(l))) {
			t.Errorf("log line not one JSON object: %q", l)
		}
	}

	// The same versions again: topics and groups are not re-read, so they do not log again.
	if err := slave.syncFromMaster(context.Background(), fakeMasterAddr); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := len(logs.got()); got != 4 {
		t.Errorf("%d warnings after a second sync, want 4 (only offsets, which carry no version)", got)
	}
}
