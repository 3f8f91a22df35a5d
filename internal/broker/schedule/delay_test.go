package schedule

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
)

// putDelayed stores a message bound for topic/qid in the schedule topic at level, as the send
// path does for a DELAY message.
func putDelayed(t *testing.T, tb *schedBroker, topic string, qid int32, body string, level int) storage.PutResult {
	t.Helper()
	props := map[string]string{message.PropertyTags: "TagD", message.PropertyKeys: "dk",
		message.PropertyUniqKey: "U-" + body}
	m := &storage.Message{Topic: topic, QueueID: qid, Body: []byte(body), Flag: 3, Properties: message.MarshalProperties(props),
		BornTimestamp: time.Now().UnixMilli(), BornHost: testBornHost, StoreHost: tb.Messages().StoreHost(), ReconsumeTimes: 2}
	tb.s.delay.toScheduleTopic(m, level)
	res, err := tb.Store().PutMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestScheduleDeliversWhenDue(t *testing.T) {
	levels := []time.Duration{300 * time.Millisecond, 20 * time.Millisecond}
	tb := start(t, func(o *broker.Options) { o.Timers.DelayLevels = levels })
	put := putDelayed(t, tb, "Real", 2, "later", 1)
	putDelayed(t, tb, "Real", 1, "soon", 2)
	// Level 2 (20 ms) is delivered while level 1 still waits.
	soon := readAt(t, tb, "Real", 1, 0)
	if string(soon.Body) != "soon" {
		t.Fatalf("level 2 delivered %q", soon.Body)
	}
	if n := tb.Store().MaxOffsetInQueue("Real", 2); n != 0 && time.Now().UnixMilli() < put.StoreTimestamp+300 {
		t.Fatal("level 1 message delivered before its time")
	}
	got := readAt(t, tb, "Real", 2, 0)
	if got.StoreTimestamp < put.StoreTimestamp+300 {
		t.Errorf("delivered at %d, due %d", got.StoreTimestamp, put.StoreTimestamp+300)
	}
	if string(got.Topic) != "Real" || got.QueueID != 2 || string(got.Body) != "later" || got.Flag != 3 ||
		got.ReconsumeTimes != 2 || got.BornHost != testBornHost {
		t.Errorf("delivered record: topic %s queue %d body %q flag %d reconsume %d born %v", got.Topic,
			got.QueueID, got.Body, got.Flag, got.ReconsumeTimes, got.BornHost)
	}
	want := map[string]string{message.PropertyTags: "TagD", message.PropertyKeys: "dk",
		message.PropertyUniqKey: "U-later", message.PropertyRealTopic: "Real", message.PropertyRealQueueID: "2"}
	for k, v := range want {
		if got.Props[k] != v {
			t.Errorf("property %s = %q, want %q", k, got.Props[k], v)
		}
	}
	if _, ok := got.Props[message.PropertyDelayTimeLevel]; ok {
		t.Errorf("DELAY kept: %v", got.Props)
	}
	// The tag code is the tag's hash again, so tag filters work on the real queue.
	units, err := tb.Store().ConsumeQueueUnits("Real", 2, 0, 1)
	if err != nil || len(units) != 1 || units[0].TagsCode != message.TagsHashCode("TagD") {
		t.Errorf("real unit %+v %v", units, err)
	}
	brokertest.Eventually(t, "cursors saved", func() bool {
		w := readDelayOffsets(t, tb.Dir)
		return w.OffsetTable[1] == 1 && w.OffsetTable[2] == 1
	})
}

func readDelayOffsets(t *testing.T, dir string) protocol.DelayOffsetSerializeWrapper {
	t.Helper()
	var w protocol.DelayOffsetSerializeWrapper
	b, err := os.ReadFile(dir + "/config/delayOffset.json")
	if err != nil {
		return w
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("delayOffset.json: %v: %s", err, b)
	}
	return w
}

// A message still waiting when the broker stops is delivered after the restart, once; one
// delivered before the stop is not delivered again. Nothing here races the clock: in the first
// life level 2 waits an hour, so the message is pending at the stop however slow the machine;
// the second life shortens level 2, and a stored due time further out than the level's delay is
// corrected to now (RocketMQ's correctDeliverTimestamp), so it is delivered at once.
func TestScheduleResumesAfterRestart(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Timers.DelayLevels = []time.Duration{10 * time.Millisecond, time.Hour} })
	putDelayed(t, tb, "R", 0, "early", 1)
	readAt(t, tb, "R", 0, 0)
	putDelayed(t, tb, "R", 1, "pending", 2)
	brokertest.Eventually(t, "pending message in the schedule queue", func() bool {
		return tb.Store().MaxOffsetInQueue(names.TopicSchedule, 1) == 1
	})
	if n := tb.Store().MaxOffsetInQueue("R", 1); n != 0 {
		t.Fatalf("an hour's delay delivered at once (%d messages)", n)
	}
	dir := tb.Dir
	tb.Stop(t)
	w := readDelayOffsets(t, dir)
	if w.OffsetTable[1] != 1 || w.OffsetTable[2] != 0 {
		t.Fatalf("saved cursors %v, want level 1 at 1, level 2 at 0", w.OffsetTable)
	}

	restarted := time.Now().UnixMilli()
	tb2 := startIn(t, dir, func(o *broker.Options) {
		o.Timers.DelayLevels = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	})
	got := readAt(t, tb2, "R", 1, 0)
	if string(got.Body) != "pending" || got.StoreTimestamp < restarted {
		t.Errorf("after restart: %q stored at %d, restarted at %d", got.Body, got.StoreTimestamp, restarted)
	}
	// Each pass of the service walks level 1 before level 2, and the store dispatches in log
	// order: had level 1 restarted from a lost cursor, "early" would be in R/0 again by now.
	// The saved cursors past both messages mean neither will be delivered again.
	brokertest.Eventually(t, "cursors saved past both messages", func() bool {
		w := readDelayOffsets(t, dir)
		return w.OffsetTable[1] == 1 && w.OffsetTable[2] == 1
	})
	if a, b := tb2.Store().MaxOffsetInQueue("R", 0), tb2.Store().MaxOffsetInQueue("R", 1); a != 1 || b != 1 {
		t.Errorf("deliveries after restart: level 1 queue %d, level 2 queue %d; want 1 and 1", a, b)
	}
}

// A cursor lost in a crash (here: the saved file rolled back) redelivers: at least once.
func TestScheduleRedeliversFromSavedCursor(t *testing.T) {
	opts := func(o *broker.Options) { o.Timers.DelayLevels = []time.Duration{10 * time.Millisecond} }
	tb := start(t, opts)
	putDelayed(t, tb, "A", 0, "m1", 1)
	readAt(t, tb, "A", 0, 0)
	dir := tb.Dir
	tb.Stop(t)
	if err := storage.WriteJSONFile(dir+"/config/delayOffset.json",
		protocol.DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{1: 0}}); err != nil {
		t.Fatal(err)
	}
	tb2 := startIn(t, dir, opts)
	if got := readAt(t, tb2, "A", 0, 1); string(got.Body) != "m1" {
		t.Errorf("redelivered %q", got.Body)
	}
}

func TestScheduleSkipsBrokenMessages(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Timers.DelayLevels = []time.Duration{time.Millisecond} })
	// No REAL_TOPIC: dropped, and the next message still goes through.
	m := &storage.Message{Topic: names.TopicSchedule, QueueID: 0, Body: []byte("lost"),
		Properties: message.MarshalProperties(map[string]string{message.PropertyDelayTimeLevel: "1"}),
		BornHost:   testBornHost, StoreHost: tb.Messages().StoreHost()}
	if _, err := tb.Store().PutMessage(m); err != nil {
		t.Fatal(err)
	}
	putDelayed(t, tb, "B", 0, "fine", 1)
	if got := readAt(t, tb, "B", 0, 0); string(got.Body) != "fine" {
		t.Errorf("got %q", got.Body)
	}
	brokertest.Eventually(t, "cursor past both", func() bool { return tb.s.delay.offset(1) == 2 })
}

// A delayOffset.json written by a Java broker (fastjson, bare integer keys) is read.
func TestScheduleReadsJavaDelayOffsets(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/config", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/config/delayOffset.json", []byte(`{"offsetTable":{1:7,3:2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startIn(t, dir, withTestDelays)
	if a, b := tb.s.delay.offset(1), tb.s.delay.offset(3); a != 7 || b != 2 {
		t.Errorf("cursors %d, %d; want 7, 2", a, b)
	}
}

// A producer's DELAY message goes through the send path into the schedule topic and comes out
// in its topic when due.
func TestScheduleDeliversProducerDelay(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Timers.DelayLevels = []time.Duration{30 * time.Millisecond} })
	addTopic(t, tb, "PD", 4)
	var off int64
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			wiretest.WantSendOK(t, brokertest.Invoke(t, tr, tb.Addr, sendCmd("PD", 2, map[string]string{"DELAY": "1", "TAGS": "a", "UNIQ_KEY": "PD-" + name}, []byte(name))))
			got := readAt(t, tb, "PD", 2, off)
			off++
			if string(got.Body) != name || got.Props["UNIQ_KEY"] != "PD-"+name || got.Props["CLUSTER"] != "DefaultCluster" {
				t.Errorf("delivered %q props %v", got.Body, got.Props)
			}
			if _, ok := got.Props["DELAY"]; ok {
				t.Errorf("DELAY kept: %v", got.Props)
			}
		})
	}
}

// A message stored after the service took its "now" is not mistaken for one from a clock that
// stepped back: its due time lies a little past now+delay, and it must still wait its delay.
func TestScheduleStoredAfterPassStartWaits(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Timers.DelayLevels = []time.Duration{time.Hour} })
	passStart := time.Now().Add(-time.Second) // a pass that began before the put
	putDelayed(t, tb, "W", 0, "hour", 1)
	brokertest.Eventually(t, "message in the schedule queue", func() bool {
		return tb.Store().MaxOffsetInQueue(names.TopicSchedule, 0) == 1
	})
	due, err := tb.s.delay.deliverLevel(context.Background(), 1, passStart)
	if err != nil {
		t.Fatal(err)
	}
	if n := tb.Store().MaxOffsetInQueue("W", 0); n != 0 || due <= passStart.UnixMilli() {
		t.Fatalf("delivered %d messages, next due %d: an hour's delay treated as a clock step back", n, due)
	}
}
