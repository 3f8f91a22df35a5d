package ha_test

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/internal/broker/services"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// fakeMaster answers a slave's four metadata requests with fixed bodies, in process.
func fakeMaster(t *testing.T, bodies map[int32]string) remoting.Transport {
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
	master := fakeMaster(t, map[int32]string{
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
	logs := &warnWriter{}
	slave := brokertest.Start(t, brokertest.Config{Mutate: func(o *broker.Options) {
		o.Broker.ID = 1
		o.Timers.DelayLevels = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
		o.Transport = master
		l := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.WarnLevel)
		o.Logger = &l
	}, Attach: func(b *broker.Broker) error { return services.Attach(b, services.Deps{}) }})
	s := ha.Of(slave.Broker)
	if err := s.SyncFromMaster(context.Background(), fakeMasterAddr); err != nil {
		t.Fatalf("sync: %v", err)
	}

	// What the slave holds now, read as its own slaves and admins would.
	var topics route.TopicConfigSerializeWrapper
	getJSON(t, slave, remoting.GetAllTopicConfig, &topics)
	wantTopics := map[string]broker.TopicConfig{
		"Good": {TopicName: "Good", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
		"Huge": {TopicName: "Huge", ReadQueueNums: broker.DefaultMaxQueueNums, WriteQueueNums: 0, Perm: 6, TopicFilterType: "SINGLE_TAG"},
	}
	if diff := cmp.Diff(wantTopics, topics.TopicConfigTable); diff != "" {
		t.Errorf("topics (-want +got):\n%s", diff)
	}
	var groupsW broker.SubscriptionGroupWrapper
	getJSON(t, slave, remoting.GetAllSubscriptionGroupConfig, &groupsW)
	groups := groupsW.SubscriptionGroupTable
	if diff := cmp.Diff([]string{"cg", "ok"}, slices.Sorted(maps.Keys(groups))); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if got := groups["cg"].RetryQueueNums; got != broker.DefaultMaxQueueNums {
		t.Errorf("cg retryQueueNums %d, want %d", got, broker.DefaultMaxQueueNums)
	}
	offsets, err := protocol.DecodeConsumerOffsetSerializeWrapper(get(t, slave, remoting.GetAllConsumerOffset))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]map[int32]int64{"Good@cg": {0: 5, 3: 9}}, offsets.OffsetTable); diff != "" {
		t.Errorf("offsets (-want +got):\n%s", diff)
	}
	delays, err := protocol.DecodeDelayOffsetSerializeWrapper(get(t, slave, remoting.GetAllDelayOffset))
	if err != nil {
		t.Fatal(err)
	}
	if got := delays.OffsetTable[1]; got != 4 {
		t.Errorf("delay level 1 offset %d, want 4", got)
	}
	if n := s.MetadataSyncs(); n != 1 {
		t.Errorf("%d metadata syncs counted, want 1", n)
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
	if err := s.SyncFromMaster(context.Background(), fakeMasterAddr); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := len(logs.got()); got != 4 {
		t.Errorf("%d warnings after a second sync, want 4 (only offsets, which carry no version)", got)
	}
}

// get sends code to tb and returns the body of its SUCCESS answer.
func get(t *testing.T, tb *brokertest.Broker, code int32) []byte {
	t.Helper()
	resp := brokertest.Invoke(t, tb.InProc, tb.Addr, remoting.NewRequest(code, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("request %d: %d %q", code, resp.Code, resp.Remark)
	}
	return resp.Body
}

// getJSON decodes get's body into v.
func getJSON(t *testing.T, tb *brokertest.Broker, code int32, v any) {
	t.Helper()
	if err := json.Unmarshal(get(t, tb, code), v); err != nil {
		t.Fatalf("request %d: %v", code, err)
	}
}

// A slave in controller mode installs its master's delay cursors only once its log holds the
// master's log as it ended when they were read: a cursor counts a message as delivered once the
// master stored its copy, and a slave promoted with a cursor ahead of its log skipped messages
// whose copies it never got (internal/sim, seed 39: a retried message stayed in
// SCHEDULE_TOPIC_XXXX for good). A fixed-role slave installs them at once.
func TestControllerModeSlaveDelayCursorsWaitForTheLog(t *testing.T) {
	epochCache := func(end int64) string {
		return `{"clusterName":"c","brokerName":"broker-a","brokerId":1,"epochList":[{"epoch":1,"startOffset":0,"endOffset":9223372036854775807}],"maxOffset":` +
			strconv.FormatInt(end, 10) + `}`
	}
	for _, c := range []struct {
		name       string
		controller bool
		masterEnd  int64
		want       int64
	}{
		{"controller mode, log behind the master", true, 5000, 0},
		{"controller mode, log caught up", true, 0, 4},
		{"fixed roles", false, 5000, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			master := fakeMaster(t, map[int32]string{
				remoting.GetAllTopicConfig:             `{"topicConfigTable":{},"dataVersion":{"timestamp":1,"counter":1}}`,
				remoting.GetAllSubscriptionGroupConfig: `{"subscriptionGroupTable":{},"dataVersion":{"timestamp":1,"counter":1}}`,
				remoting.GetAllConsumerOffset:          `{"offsetTable":{}}`,
				remoting.GetAllDelayOffset:             `{"offsetTable":{1:4}}`,
				remoting.GetBrokerEpochCache:           epochCache(c.masterEnd),
			})
			slave := brokertest.Start(t, brokertest.Config{Mutate: func(o *broker.Options) {
				o.Broker.ID = 1
				o.ControllerMode, o.ReplicaID = c.controller, 2
				o.Timers.DelayLevels = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
				o.Transport = master
			}, Attach: func(b *broker.Broker) error { return services.Attach(b, services.Deps{}) }})
			if err := ha.Of(slave.Broker).SyncFromMaster(context.Background(), fakeMasterAddr); err != nil {
				t.Fatalf("sync: %v", err)
			}
			delays, err := protocol.DecodeDelayOffsetSerializeWrapper(get(t, slave, remoting.GetAllDelayOffset))
			if err != nil {
				t.Fatal(err)
			}
			if got := delays.OffsetTable[1]; got != c.want {
				t.Fatalf("delay level 1 cursor %d, want %d", got, c.want)
			}
		})
	}
}
