package schedule

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// timerTestPrecision is the precision the tests run with; timerSlack is what a loaded shared
// machine may add to it between a slot's end and the delivered record's store time.
const (
	timerTestPrecision = 20 * time.Millisecond
	timerSlack         = 500 * time.Millisecond
)

func withTimerPrecision(o *broker.Options) { o.Timers.Precision = timerTestPrecision }

// sendTimer sends one message through SEND_MESSAGE with the given properties and checks it was
// accepted.
func sendTimer(t *testing.T, tb *schedBroker, topic string, qid int32, body string, props map[string]string) {
	t.Helper()
	wiretest.WantSendOK(t, brokertest.Invoke(t, tb.InProc, tb.Addr, sendCmd(topic, qid, props, []byte(body))))
}

// checkOnTime checks that a delivered record was stored no earlier than its TIMER_OUT_MS and at
// most a precision (plus slack) later.
func checkOnTime(t *testing.T, rec storedRecord) {
	t.Helper()
	due, err := strconv.ParseInt(rec.Props[PropertyTimerOutMS], 10, 64)
	if err != nil {
		t.Fatalf("delivered %q without TIMER_OUT_MS: %v", rec.Body, rec.Props)
	}
	if late := rec.StoreTimestamp - due; late < 0 || late > (timerTestPrecision+timerSlack).Milliseconds() {
		t.Errorf("%q delivered %d ms after its time", rec.Body, late)
	}
}

func TestTimerDeliversOnTime(t *testing.T) {
	tb := start(t, withTimerPrecision)
	addTopic(t, tb, "TimerT", 4)
	start := time.Now()
	sendTimer(t, tb, "TimerT", 1, "abs", map[string]string{"UNIQ_KEY": "U-abs", "TAGS": "ta",
		message.PropertyTimerDeliverMS: strconv.FormatInt(start.Add(300*time.Millisecond).UnixMilli(), 10)})
	sendTimer(t, tb, "TimerT", 2, "ms", map[string]string{"UNIQ_KEY": "U-ms", PropertyTimerDelayMS: "150"})
	sendTimer(t, tb, "TimerT", 3, "sec", map[string]string{"UNIQ_KEY": "U-sec", PropertyTimerDelaySec: "1"})
	if n := tb.Store().MaxOffsetInQueue(names.TopicTimer, 0); n != 3 {
		brokertest.Eventually(t, "three timer messages in the timer queue", func() bool {
			return tb.Store().MaxOffsetInQueue(names.TopicTimer, 0) == 3
		})
	}
	for qid, body := range map[int32]string{2: "ms", 1: "abs", 3: "sec"} {
		rec := readAt(t, tb, "TimerT", qid, 0)
		if string(rec.Body) != body || string(rec.Topic) != "TimerT" || rec.QueueID != qid {
			t.Fatalf("queue %d: %q in %s/%d", qid, rec.Body, rec.Topic, rec.QueueID)
		}
		checkOnTime(t, rec)
		for _, k := range []string{message.PropertyRealTopic, message.PropertyRealQueueID} {
			if _, ok := rec.Props[k]; ok {
				t.Errorf("%q keeps %s", body, k)
			}
		}
		for _, k := range []string{PropertyTimerEnqueueMS, PropertyTimerDequeueMS, message.PropertyUniqKey} {
			if rec.Props[k] == "" {
				t.Errorf("%q lacks %s: %v", body, k, rec.Props)
			}
		}
	}
	if got := readAt(t, tb, "TimerT", 1, 0); got.Props[message.PropertyTags] != "ta" ||
		got.Props[message.PropertyTimerDeliverMS] == "" {
		t.Errorf("abs properties %v", got.Props)
	}
	// A delivered message is readable a moment before the service counts it out.
	brokertest.Eventually(t, "nothing pending after delivery", func() bool { return tb.s.TimerPending() == 0 })
	brokertest.Eventually(t, "timer cursor committed", func() bool { return tb.Offsets().Query(timerGroup, names.TopicTimer, 0) == 3 })
}

// Many messages due at scattered times, sent in reverse order of their times: each arrives no
// earlier than asked, and exactly once.
func TestTimerNoneEarly(t *testing.T) {
	tb := start(t, withTimerPrecision)
	addTopic(t, tb, "TimerN", 1)
	const n = 50
	for i := n; i > 0; i-- {
		sendTimer(t, tb, "TimerN", 0, strconv.Itoa(i), map[string]string{"UNIQ_KEY": "N" + strconv.Itoa(i),
			PropertyTimerDelayMS: strconv.Itoa(i * 7)})
	}
	seen := map[string]bool{}
	for off := int64(0); off < n; off++ {
		rec := readAt(t, tb, "TimerN", 0, off)
		checkOnTime(t, rec)
		if seen[string(rec.Body)] {
			t.Fatalf("%q delivered twice", rec.Body)
		}
		seen[string(rec.Body)] = true
	}
	brokertest.Eventually(t, "cursor past every message", func() bool { return tb.Offsets().Query(timerGroup, names.TopicTimer, 0) == n })
	if got := tb.Store().MaxOffsetInQueue("TimerN", 0); got != n {
		t.Errorf("%d messages delivered, want %d", got, n)
	}
}

func TestTimerSendChecks(t *testing.T) {
	tb := start(t, func(o *broker.Options) { o.Timers.Precision = timerTestPrecision; o.Timers.MaxDelay = time.Hour })
	addTopic(t, tb, "TimerC", 1)
	for name, props := range map[string]map[string]string{
		"beyond max delay": {PropertyTimerDelaySec: "3601"},
		"not a number":     {message.PropertyTimerDeliverMS: "soon"},
		"overflow":         {PropertyTimerDelaySec: "9223372036854775807"},
		"past deletion":    {PropertyTimerDelayMS: "-5", PropertyTimerDelUniqKey: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			before := tb.Store().MaxPhyOffset()
			resp := brokertest.Invoke(t, tb.InProc, tb.Addr, sendCmd("TimerC", 0, props, []byte("x")))
			wiretest.WantRefused(t, tb.Store(), resp, remoting.MessageIllegal, "timer message", before)
		})
	}
	// A time already past is stored in its topic at once, with its properties; so is a DELAY
	// level, which wins over a timer property as in RocketMQ.
	sendTimer(t, tb, "TimerC", 0, "past", map[string]string{message.PropertyTimerDeliverMS: "1000"})
	if rec := readAt(t, tb, "TimerC", 0, 0); string(rec.Body) != "past" || rec.Props[message.PropertyTimerDeliverMS] != "1000" {
		t.Errorf("past timer stored as %q %v", rec.Body, rec.Props)
	}
	sendTimer(t, tb, "TimerC", 0, "level", map[string]string{"DELAY": "1", PropertyTimerDelaySec: "60"})
	brokertest.Eventually(t, "DELAY message in the schedule topic", func() bool {
		return tb.Store().MaxOffsetInQueue(names.TopicSchedule, 0) == 1
	})
	if n := tb.Store().MaxOffsetInQueue(names.TopicTimer, 0); n != 0 {
		t.Errorf("%d messages in the timer topic", n)
	}
}

// putTimer stores a timer message as the send path does, straight into the store.
func putTimer(t *testing.T, tb *schedBroker, topic, body string, due time.Time) {
	t.Helper()
	m := &storage.Message{Topic: topic, Body: []byte(body), BornTimestamp: time.Now().UnixMilli(),
		BornHost: testBornHost, StoreHost: tb.Messages().StoreHost(),
		Properties: message.MarshalProperties(map[string]string{message.PropertyUniqKey: "U-" + body,
			message.PropertyTimerDeliverMS: strconv.FormatInt(due.UnixMilli(), 10)})}
	if resp := tb.s.timer.toTimerTopic(m); resp != nil || m.Topic != names.TopicTimer {
		t.Fatalf("not a timer message: %v %s", resp, m.Topic)
	}
	if _, err := tb.Store().PutMessage(m); err != nil {
		t.Fatal(err)
	}
}

// countBodies counts the messages of a queue by body.
func countBodies(t *testing.T, tb *schedBroker, topic string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for off := int64(0); off < tb.Store().MaxOffsetInQueue(topic, 0); off++ {
		out[string(readAt(t, tb, topic, 0, off).Body)]++
	}
	return out
}

// A restart delivers the message still pending once, and not again the one delivered before
// the stop although the cursor (held back by the pending one) had not moved past it. crash
// leaves the abort marker, so the store recovers as after a kill.
func TestTimerRestartDeliversOnce(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run("crash="+strconv.FormatBool(crash), func(t *testing.T) {
			dir := t.TempDir()
			tb := startIn(t, dir, withTimerPrecision)
			addTopic(t, tb, "TimerR", 1)
			pendingDue := time.Now().Add(3 * time.Second)
			putTimer(t, tb, "TimerR", "pending", pendingDue)
			putTimer(t, tb, "TimerR", "early", time.Now().Add(30*time.Millisecond))
			readAt(t, tb, "TimerR", 0, 0)
			// The delivered message is readable a moment before the service counts it out.
			brokertest.Eventually(t, "one pending before the stop", func() bool { return tb.s.TimerPending() == 1 })
			tb.Stop(t)
			if crash {
				markAborted(t, tb)
			}
			if cur := tb.Offsets().Query(timerGroup, names.TopicTimer, 0); cur > 0 {
				t.Fatalf("cursor %d at the stop, want none or 0 (held by the pending message)", cur)
			}
			tb2 := startIn(t, dir, withTimerPrecision)
			rec := readAt(t, tb2, "TimerR", 0, 1)
			if string(rec.Body) != "pending" {
				t.Fatalf("after the restart %q delivered, want pending", rec.Body)
			}
			checkOnTime(t, rec)
			brokertest.Eventually(t, "cursor past both", func() bool { return tb2.Offsets().Query(timerGroup, names.TopicTimer, 0) == 2 })
			if got := countBodies(t, tb2, "TimerR"); got["early"] != 1 || got["pending"] != 1 || len(got) != 2 {
				t.Errorf("delivered %v, want each once", got)
			}
		})
	}
}

// A kill before the metadata writer ever saved the cursor: on restart every timer message is
// past the cursor, so each delivered one must be found in its topic and not stored again, and
// the pending one is delivered once.
func TestTimerCursorLostInCrash(t *testing.T) {
	dir := t.TempDir()
	tb := startIn(t, dir, withTimerPrecision)
	addTopic(t, tb, "TimerL", 1)
	now := time.Now()
	const delivered = 20
	putTimer(t, tb, "TimerL", "pending", now.Add(3*time.Second))
	for i := range delivered {
		putTimer(t, tb, "TimerL", "d"+strconv.Itoa(i), now.Add(time.Second+time.Duration(i)*time.Millisecond))
	}
	readAt(t, tb, "TimerL", 0, delivered-1)
	tb.Stop(t)
	markAborted(t, tb)
	for _, f := range []string{"consumerOffset.json", "consumerOffset.json.bak"} {
		if err := os.Remove(filepath.Join(tb.Dir, "config", f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	tb2 := startIn(t, dir, withTimerPrecision)
	if cur := tb2.Offsets().Query(timerGroup, names.TopicTimer, 0); cur > 0 {
		t.Fatalf("cursor %d survived, the test needs it lost", cur)
	}
	checkOnTime(t, readAt(t, tb2, "TimerL", 0, delivered))
	brokertest.Eventually(t, "cursor past all", func() bool { return tb2.Offsets().Query(timerGroup, names.TopicTimer, 0) == delivered+1 })
	got := countBodies(t, tb2, "TimerL")
	for body, n := range got {
		if n != 1 {
			t.Errorf("%s delivered %d times", body, n)
		}
	}
	if len(got) != delivered+1 {
		t.Errorf("delivered %d distinct messages, want %d", len(got), delivered+1)
	}
}

// markAborted leaves the marker a killed broker leaves, so the next start recovers the store
// as after a crash.
func markAborted(t *testing.T, tb *schedBroker) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tb.Dir, "abort"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOffsetWindow(t *testing.T) {
	w := newOffsetWindow(130)
	for _, off := range []int64{200, 131, 132, 500} {
		w.done(off)
	}
	if w.next != 130 {
		t.Fatalf("next %d before 130 is done", w.next)
	}
	w.done(130)
	if w.next != 133 {
		t.Fatalf("next %d, want 133", w.next)
	}
	for off := int64(133); off < 500; off++ {
		w.done(off)
	}
	if w.next != 501 || w.base != 448 || len(w.words) != 1 {
		t.Fatalf("next %d base %d words %d, want 501 448 1", w.next, w.base, len(w.words))
	}
	w.done(7) // behind: ignored
	if w.next != 501 {
		t.Fatalf("next %d", w.next)
	}
}

// The store's retention keeps the CommitLog from the oldest pending timer message on: its
// floor is that message's offset while it waits, and lifts once it is delivered.
func TestTimerRetentionFloor(t *testing.T) {
	tb := start(t, withTimerPrecision)
	addTopic(t, tb, "TimerF", 1)
	if f := tb.s.timer.retentionFloor(); f != math.MaxInt64 {
		t.Fatalf("floor %d with nothing pending", f)
	}
	sendTimer(t, tb, "TimerF", 0, "soon", map[string]string{"UNIQ_KEY": "F-soon", PropertyTimerDelayMS: "300"})
	brokertest.Eventually(t, "the timer message indexed", func() bool { return tb.s.TimerPending() == 1 })
	phy, err := tb.Store().GetCommitLogOffsetInQueue(names.TopicTimer, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f := tb.s.timer.retentionFloor(); f != phy {
		t.Fatalf("floor %d while the message at %d waits", f, phy)
	}
	brokertest.Eventually(t, "the timer message delivered and the floor lifted", func() bool {
		return tb.s.TimerPending() == 0 && tb.s.timer.retentionFloor() == math.MaxInt64
	})
}
