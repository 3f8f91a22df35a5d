package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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

	gotTopics := tb.topics.Names()
	for _, want := range []string{"Good", "NoName"} {
		if _, ok := tb.topics.Get(want); !ok {
			t.Errorf("valid topic %s not loaded (have %v)", want, gotTopics)
		}
	}
	if tc, _ := tb.topics.Get("NoName"); tc.TopicName != "NoName" {
		t.Errorf("NoName loaded with topicName %q", tc.TopicName)
	}
	for _, bad := range []string{"mq-01.example.com", "../../x/pwn", "Alias", "a/b", strings.Repeat("t", 128)} {
		if slices.Contains(gotTopics, bad) {
			t.Errorf("invalid topic %q loaded", bad)
		}
	}
	if _, ok := tb.groups.Get("cg"); !ok {
		t.Error("valid group cg not loaded")
	}
	for _, bad := range []string{"T@g", "host.name"} {
		if _, ok := tb.groups.Get(bad); ok {
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
