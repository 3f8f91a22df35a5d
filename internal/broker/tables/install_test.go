package tables

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mqgo/mq/route"
)

// TestSlaveRefusesTooManyTopics: a master's table above MaxTopics (and the system topics'
// allowance) is not installed; the slave keeps what it held.
func TestSlaveRefusesTooManyTopics(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxTopics = 10
	tb := load(t, cfg)
	w := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{},
		DataVersion: route.DataVersion{Timestamp: 1, Counter: 1}}
	for i := range 10 + maxUncappedTopics + 1 {
		name := fmt.Sprintf("M%d", i)
		w.TopicConfigTable[name] = route.TopicConfig{TopicName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	}
	before := tb.Topics.Count()
	if err := tb.Topics.InstallMaster(w); err == nil || !strings.Contains(err.Error(), "MaxTopics") {
		t.Errorf("install of %d topics: %v, want an error naming MaxTopics", len(w.TopicConfigTable), err)
	}
	if n := tb.Topics.Count(); n != before {
		t.Errorf("the slave holds %d topics after a refused install, had %d", n, before)
	}
}
