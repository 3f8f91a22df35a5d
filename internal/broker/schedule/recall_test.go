package schedule

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func withRecall(o *broker.Options) {
	withTimerPrecision(o)
	o.Types.RecallMessageEnable = true
}

// sendForHandle sends a timer message and returns the recall handle its answer carries.
func sendForHandle(t *testing.T, tb *schedBroker, topic, body string, delay time.Duration) string {
	t.Helper()
	resp := brokertest.Invoke(t, tb.InProc, tb.Addr, sendCmd(topic, 0, map[string]string{
		"UNIQ_KEY": "U-" + body, PropertyTimerDelayMS: strconv.FormatInt(delay.Milliseconds(), 10)}, []byte(body)))
	h := wiretest.WantSendOK(t, resp)
	if h.RecallHandle == "" {
		t.Fatalf("timer send answered without a recall handle: %v", resp.ExtFields)
	}
	return h.RecallHandle
}

func recallCmd(topic, handle string) *remoting.Command {
	return remoting.NewRequest(remoting.RecallMessage, remoting.EncodeHeader(&protocol.RecallMessageRequestHeader{
		ProducerGroup: "pg", Topic: topic, RecallHandle: handle}), nil)
}

// A recalled timer message is never delivered; another of the same time is; both survive a
// restart between the recall and their time.
func TestRecallTimerMessage(t *testing.T) {
	dir := t.TempDir()
	tb := startIn(t, dir, withRecall)
	addTopic(t, tb, "TimerR", 1)
	handle := sendForHandle(t, tb, "TimerR", "recalled", 1500*time.Millisecond)
	sendTimer(t, tb, "TimerR", 0, "kept", map[string]string{"UNIQ_KEY": "U-kept", PropertyTimerDelayMS: "1500"})
	raw, _ := base64.URLEncoding.DecodeString(handle)
	if f := strings.Fields(string(raw)); len(f) != 5 || f[0] != "v1" || f[1] != "TimerR" || f[2] != tb.Options().Broker.Name || f[4] != "U-recalled" {
		t.Errorf("handle %q", raw)
	}
	for name, tr := range tb.Transports() {
		resp := brokertest.Invoke(t, tr, tb.Addr, recallCmd("TimerR", handle))
		if resp.Code != remoting.Success || resp.ExtFields["msgId"] != "U-recalled" || resp.ExtFields["MSG_REGION"] != "DefaultRegion" {
			t.Fatalf("%s: RECALL_MESSAGE: %d %q %v", name, resp.Code, resp.Remark, resp.ExtFields)
		}
	}
	tb.Stop(t)
	tb = startIn(t, dir, withRecall)
	if got := readAt(t, tb, "TimerR", 0, 0); string(got.Body) != "kept" {
		t.Fatalf("delivered %q first, want kept", got.Body)
	}
	// Two messages and two markers: the cursor passes all four once their time is done.
	brokertest.Eventually(t, "timer cursor past the markers", func() bool {
		return tb.Offsets().Query(timerGroup, names.TopicTimer, 0) == 4
	})
	if n := tb.Store().MaxOffsetInQueue("TimerR", 0); n != 1 {
		t.Errorf("%d messages delivered, want 1 (the recalled one was delivered)", n)
	}
}

func TestRecallRefusals(t *testing.T) {
	tb := start(t, func(o *broker.Options) { withRecall(o); o.Timers.MaxDelay = time.Hour })
	addTopic(t, tb, "TimerR", 1)
	addTopic(t, tb, "Other", 1)
	good := sendForHandle(t, tb, "TimerR", "m", time.Minute)
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	future := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	name := tb.Options().Broker.Name
	for _, c := range []struct {
		name, topic, handle string
		code                int32
		remark              string
	}{
		{"not base64", "TimerR", "%%%", remoting.IllegalOperation, "recall handle is invalid"},
		{"empty", "TimerR", "", remoting.SystemError, ""},
		{"short", "TimerR", enc("v1 TimerR " + name + " " + future), remoting.IllegalOperation, "recall handle is invalid"},
		{"version", "TimerR", enc("v2 TimerR " + name + " " + future + " id"), remoting.IllegalOperation, "recall handle is invalid"},
		{"separator in id", "TimerR", enc("v1 TimerR " + name + " " + future + " a\x01b"), remoting.IllegalOperation, "recall handle is invalid"},
		{"long id", "TimerR", enc("v1 TimerR " + name + " " + future + " " + strings.Repeat("i", 200)), remoting.IllegalOperation, "recall handle is invalid"},
		{"other topic", "Other", good, remoting.IllegalOperation, "recall failed, topic not match"},
		{"other broker", "TimerR", enc("v1 TimerR broker-z " + future + " id"), remoting.IllegalOperation, "recall failed, broker service not available"},
		{"past", "TimerR", enc("v1 TimerR " + name + " 1000 id"), remoting.IllegalOperation, "recall failed, timestamp invalid"},
		{"beyond max delay", "TimerR", enc("v1 TimerR " + name + " " + strconv.FormatInt(time.Now().Add(2*time.Hour).UnixMilli(), 10) + " id"),
			remoting.IllegalOperation, "recall failed, timestamp invalid"},
		{"not a number", "TimerR", enc("v1 TimerR " + name + " soon id"), remoting.IllegalOperation, "recall failed, timestamp invalid"},
		{"unknown topic", "Nope", good, remoting.TopicNotExist, "recall failed, the topic[Nope] not exist"},
		{"bad topic name", "a/b", good, remoting.SystemError, "topic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := tb.Store().MaxPhyOffset()
			resp := brokertest.Invoke(t, tb.TCP, tb.Addr, recallCmd(c.topic, c.handle))
			if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
				t.Errorf("%d %q, want %d %q", resp.Code, resp.Remark, c.code, c.remark)
			}
			if after := tb.Store().MaxPhyOffset(); after != before {
				t.Errorf("a refused recall stored something: %d -> %d", before, after)
			}
		})
	}
	// Off by default, as in RocketMQ 5.
	off := start(t, withTimerPrecision)
	addTopic(t, off, "TimerR", 1)
	resp := brokertest.Invoke(t, off.TCP, off.Addr, recallCmd("TimerR", good))
	if resp.Code != remoting.NoPermission || resp.Remark != "recall failed, operation is forbidden" {
		t.Errorf("disabled: %d %q", resp.Code, resp.Remark)
	}
	// A plain message's answer has no handle.
	h := wiretest.WantSendOK(t, brokertest.Invoke(t, tb.InProc, tb.Addr, sendCmd("TimerR", 0, nil, []byte("plain"))))
	if h.RecallHandle != "" {
		t.Errorf("plain send answered recall handle %q", h.RecallHandle)
	}
}

// TestRecallHandleRoundTrip: the handle a send is answered with decodes to its own fields.
func TestRecallHandleRoundTrip(t *testing.T) {
	h := recallHandle{topic: "T", brokerName: "broker-a", timestamp: "1700000000001", msgID: "0A0B0C"}
	if got, ok := decodeRecallHandle(encodeRecallHandle(h)); !ok || got != h {
		t.Errorf("decode(encode(%+v)) = %+v, %t", h, got, ok)
	}
}
