package consumer

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Unit tests of the simple consumer's pure logic: reading POP answers into receipt handles, and
// the ack and change requests built from them. The end-to-end behaviour against a node's POP
// service is simple_consumer_test.go's.

// popRecord is a stored record of topic at queue/offset with extra properties.
func popRecord(t *testing.T, topic string, queue int32, offset int64, props map[string]string) []byte {
	t.Helper()
	m := testRecord(topic, "body")
	m.QueueID = queue
	all := map[string]string{"TAGS": "t", message.PropertyUniqKey: topic + "-" + string(rune('0'+queue))}
	for k, v := range props {
		all[k] = v
	}
	m.Properties = message.MarshalProperties(all)
	return record(t, m, offset, 1000+offset)
}

// popAnswer is a SUCCESS answer to POP_MESSAGE with h and the records.
func popAnswer(h protocol.PopMessageResponseHeader, records ...[]byte) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&h)
	for _, r := range records {
		resp.Body = append(resp.Body, r...)
	}
	return resp
}

func handles(views []*MessageView) []string {
	out := make([]string, len(views))
	for i, v := range views {
		out[i] = v.ReceiptHandle()
	}
	return out
}

func TestReadPopAnswerHandles(t *testing.T) {
	const group = "g"
	retryTopic := protocol.PopRetryTopicV1("T", group)
	h := protocol.PopMessageResponseHeader{PopTime: 1700000000000, InvisibleTime: 30000, ReviveQid: 3, RestNum: 5}
	withInfo := h
	withInfo.StartOffsetInfo = "0 1 10;0 2 40;1 0 7"
	for _, c := range []struct {
		name    string
		resp    *remoting.Command
		want    []string
		wantErr string
	}{
		{"checkpoints from startOffsetInfo, a retry message's from its POP_CK",
			popAnswer(withInfo,
				popRecord(t, "T", 1, 12, nil),
				popRecord(t, "T", 2, 40, nil),
				popRecord(t, retryTopic, 0, 9, map[string]string{protocol.PropertyPopCK: "7 1700000000000 30000 3 1 broker-a 0 9"})),
			[]string{"10 1700000000000 30000 3 0 broker-a 1 12", "40 1700000000000 30000 3 0 broker-a 2 40",
				"7 1700000000000 30000 3 1 broker-a 0 9"}, ""},
		{"a retry message without POP_CK takes its queue's retry entry",
			popAnswer(withInfo, popRecord(t, retryTopic, 0, 8, nil)),
			[]string{"7 1700000000000 30000 3 1 broker-a 0 8"}, ""},
		{"without startOffsetInfo each queue's first message is the checkpoint",
			popAnswer(h, popRecord(t, "T", 1, 5, nil), popRecord(t, "T", 1, 6, nil), popRecord(t, "T", 0, 3, nil)),
			[]string{"5 1700000000000 30000 3 0 broker-a 1 5", "5 1700000000000 30000 3 0 broker-a 1 6",
				"3 1700000000000 30000 3 0 broker-a 0 3"}, ""},
		{"a malformed POP_CK is rebuilt from the header",
			popAnswer(withInfo, popRecord(t, "T", 1, 11, map[string]string{protocol.PropertyPopCK: "1 2 3"})),
			[]string{"10 1700000000000 30000 3 0 broker-a 1 11"}, ""},
		{"startOffsetInfo without the message's queue",
			popAnswer(withInfo, popRecord(t, "T", 5, 1, nil)), nil, "no checkpoint offset for queue 5 of T"},
		{"malformed startOffsetInfo",
			popAnswer(protocol.PopMessageResponseHeader{StartOffsetInfo: "0 1"}, popRecord(t, "T", 1, 1, nil)),
			nil, `startOffsetInfo entry "0 1" is not "retry queue value"`},
		{"a repeated queue in startOffsetInfo",
			popAnswer(protocol.PopMessageResponseHeader{StartOffsetInfo: "0 1 2;0 1 3"}, popRecord(t, "T", 1, 2, nil)),
			nil, "startOffsetInfo repeats queue 0@1"},
		{"nothing within the poll time", remoting.NewResponse(remoting.PollingTimeout, "no message"), nil, ""},
		{"no message in the queue", remoting.NewResponse(remoting.PullNotFound, ""), nil, ""},
		{"a pop the broker took as late (clock skew)",
			remoting.NewResponse(remoting.PollingTimeout, "the broker[broker-a] pop message is timeout too much"),
			nil, "refused the pop as late"}, // Receive reads errLatePop as no messages, and warns
		{"polling full", remoting.NewResponse(remoting.PollingFull, "too many parked"), nil, "too many parked"},
		{"a record that does not decode",
			func() *remoting.Command {
				r := popAnswer(h, popRecord(t, "T", 1, 1, nil))
				r.Body = r.Body[:20]
				return r
			}(),
			nil, "POP answer from broker broker-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			views, err := readPopAnswer(c.resp, "broker-a", "T", "T", false)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, handles(views), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("handles (-want +got):\n%s", diff)
			}
			for _, v := range views {
				if v.Topic != "T" {
					t.Errorf("view of %s shows topic %q, want the subscribed T", v.Queue.Topic, v.Topic)
				}
			}
		})
	}
	_, err := readPopAnswer(remoting.NewResponse(remoting.PollingFull, "full"), "broker-a", "T", "T", false)
	var re *remoting.ResponseError
	if !errors.As(err, &re) || re.Code != remoting.PollingFull {
		t.Errorf("POLLING_FULL: %v, want a *remoting.ResponseError with its code", err)
	}
}

// TestReadPopAnswerOrderCount: a FIFO pop's orderCountInfo gives the attempts of a message
// handed out again, by message (qo<queue>%<offset>) before by queue; a plain pop ignores it.
func TestReadPopAnswerOrderCount(t *testing.T) {
	h := protocol.PopMessageResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 999,
		StartOffsetInfo: "0 1 4;0 2 9", OrderCountInfo: "0 qo1%5 2;0 2 3"}
	resp := popAnswer(h, popRecord(t, "T", 1, 4, nil), popRecord(t, "T", 1, 5, nil), popRecord(t, "T", 2, 9, nil))
	views, err := readPopAnswer(resp, "b", "T", "T", true)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, v := range views {
		got = append(got, v.DeliveryAttempt())
	}
	if diff := cmp.Diff([]int{1, 3, 4}, got); diff != "" {
		t.Errorf("delivery attempts (-want +got):\n%s", diff)
	}
	views, err = readPopAnswer(popAnswer(h, popRecord(t, "T", 1, 5, nil)), "b", "T", "T", false)
	if err != nil || views[0].DeliveryAttempt() != 1 {
		t.Errorf("plain pop: attempt %d, %v; want 1", views[0].DeliveryAttempt(), err)
	}
}

func TestMessageViewGroupAndInvisibleUntil(t *testing.T) {
	h := protocol.PopMessageResponseHeader{PopTime: 1700000000000, InvisibleTime: 15000, StartOffsetInfo: "0 0 0"}
	views, err := readPopAnswer(popAnswer(h, popRecord(t, "T", 0, 0, map[string]string{message.PropertyMessageGroup: "order-7"})), "b", "T", "T", false)
	if err != nil {
		t.Fatal(err)
	}
	v := views[0]
	if v.MessageGroup() != "order-7" {
		t.Errorf("message group %q", v.MessageGroup())
	}
	if got := v.InvisibleUntil().UnixMilli(); got != 1700000015000 {
		t.Errorf("invisible until %d, want 1700000015000", got)
	}
}

// TestAckAndChangeHeaders: the requests about a handle name the topic the message was popped
// from (the group's retry topic for a retry), its queue and offset, and the handle itself; the
// handle a change answers with checkpoints the message alone at its offset.
func TestAckAndChangeHeaders(t *testing.T) {
	plain := newReceipt(protocol.ExtraInfo{CkQueueOffset: 10, PopTime: 100, InvisibleTime: 2000, ReviveQid: 1,
		Retry: protocol.PopRetryNone, BrokerName: "broker-a", QueueID: 3, QueueOffset: 12})
	retry := newReceipt(protocol.ExtraInfo{CkQueueOffset: 0, PopTime: 100, InvisibleTime: 2000, ReviveQid: 1,
		Retry: protocol.PopRetryV1, BrokerName: "broker-a", QueueID: 0, QueueOffset: 4})
	if diff := cmp.Diff(&protocol.AckMessageRequestHeader{ConsumerGroup: "ns%g", Topic: "ns%T", QueueID: 3,
		ExtraInfo: "10 100 2000 1 0 broker-a 3 12", Offset: 12, BrokerName: "broker-a"}, ackHeader("ns%g", "ns%T", plain)); diff != "" {
		t.Errorf("ack (-want +got):\n%s", diff)
	}
	if got := ackHeader("g", "T", retry).Topic; got != "%RETRY%g_T" {
		t.Errorf("ack of a retry message goes to %q, want %%RETRY%%g_T", got)
	}
	ch := changeInvisibleHeader("g", "T", retry, 5000)
	if ch.Topic != "%RETRY%g_T" || ch.InvisibleTime != 5000 || ch.Offset != 4 || ch.ExtraInfo != retry.String() {
		t.Errorf("change header %+v", ch)
	}
	got := changedReceipt(plain, &protocol.ChangeInvisibleTimeResponseHeader{PopTime: 900, InvisibleTime: 5000, ReviveQid: 2})
	if got.String() != "12 900 5000 2 0 broker-a 3 12" {
		t.Errorf("changed handle %q", got.String())
	}
}

func TestPopBrokers(t *testing.T) {
	r := &route.TopicRouteData{
		QueueDatas: []route.QueueData{
			{BrokerName: "c", ReadQueueNums: 4, Perm: route.PermRead | route.PermWrite},
			{BrokerName: "a", ReadQueueNums: 4, Perm: route.PermRead},
			{BrokerName: "w", ReadQueueNums: 4, Perm: route.PermWrite},   // not readable
			{BrokerName: "z", ReadQueueNums: 0, Perm: route.PermRead},    // no readable queue
			{BrokerName: "s", ReadQueueNums: 4, Perm: route.PermRead},    // only a slave
			{BrokerName: "gone", ReadQueueNums: 4, Perm: route.PermRead}, // no broker data
		},
		BrokerDatas: []route.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "a:0", 1: "a:1"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{0: "c:0"}},
			{BrokerName: "w", BrokerAddrs: map[int64]string{0: "w:0"}},
			{BrokerName: "z", BrokerAddrs: map[int64]string{0: "z:0"}},
			{BrokerName: "s", BrokerAddrs: map[int64]string{1: "s:1"}},
		},
	}
	want := []popBroker{{"a", "a:0"}, {"c", "c:0"}}
	if diff := cmp.Diff(want, popBrokers(r), cmp.AllowUnexported(popBroker{})); diff != "" {
		t.Errorf("brokers (-want +got):\n%s", diff)
	}
}

func TestAttemptID(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newAttemptID()
		if !uuid.MatchString(id) || seen[id] {
			t.Fatalf("attempt id %q: not a fresh version 4 UUID", id)
		}
		seen[id] = true
	}
}

func TestParseOffsetInfoBounded(t *testing.T) {
	long := strings.Repeat("0 1 2;", maxOffsetInfoEntries) + "0 1 2"
	if _, err := parseOffsetInfo(long, "startOffsetInfo"); err == nil || !strings.Contains(err.Error(), "entries, over") {
		t.Errorf("%d entries: %v", maxOffsetInfoEntries+1, err)
	}
	if _, err := parseOffsetInfo("0 1 x", "startOffsetInfo"); err == nil || !strings.Contains(err.Error(), "startOffsetInfo") {
		t.Errorf("non-decimal value: %v", err)
	}
	// Order counts are advisory: entries that do not read as "retry queue count" are passed
	// over, the rest kept, and at most maxOffsetInfoEntries looked at.
	got := parseOrderCounts("0 1 qo1%5 2;0 qo1%6 x;0 qo1%7 3;0 1 4;;0 2 -1")
	want := map[string]int64{"0@qo1%7": 3, "0@1": 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order counts (-want +got):\n%s", diff)
	}
	if n := len(parseOrderCounts(strings.Repeat("0 1 2;", 10*maxOffsetInfoEntries))); n != 1 {
		t.Errorf("%d keys from repeats of one entry", n)
	}
}
