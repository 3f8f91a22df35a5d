package proxy_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// sendN sends n messages to topic through the endpoint, edit shaping each, and returns their
// ids in order.
func sendN(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, topic string, n int, edit func(i int, m *apiv2.Message)) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d-%d", topic, time.Now().UnixNano(), i)
		m := msg(topic, id, fmt.Sprintf("body-%d", i))
		if edit != nil {
			edit(i, m)
		}
		resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
		if err != nil || resp.Status.Code != apiv2.Code_OK {
			t.Fatalf("send %d: %v %v", i, resp, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// receiveOnce makes one ReceiveMessage call and reads its whole stream: the status, the
// messages, and checks the delivery timestamp ends it.
func receiveOnce(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, req *apiv2.ReceiveMessageRequest) (*apiv2.Status, []*apiv2.Message) {
	t.Helper()
	stream, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var st *apiv2.Status
	var msgs []*apiv2.Message
	stamped := false
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("receive stream: %v", err)
		}
		switch x := r.Content.(type) {
		case *apiv2.ReceiveMessageResponse_Status:
			if st != nil {
				t.Fatalf("second status %v after %v", x.Status, st)
			}
			st = x.Status
		case *apiv2.ReceiveMessageResponse_Message:
			if st == nil || stamped {
				t.Fatalf("message out of place (status %v, stamped %v)", st, stamped)
			}
			msgs = append(msgs, x.Message)
		case *apiv2.ReceiveMessageResponse_DeliveryTimestamp:
			stamped = true
		}
	}
	if st == nil || !stamped {
		t.Fatalf("stream without status or delivery timestamp: %v %v", st, stamped)
	}
	return st, msgs
}

func receiveReq(group, topic string, filter *apiv2.FilterExpression, invisible time.Duration) *apiv2.ReceiveMessageRequest {
	if filter == nil {
		filter = &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "*"}
	}
	return &apiv2.ReceiveMessageRequest{Group: &apiv2.Resource{Name: group},
		MessageQueue:     &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: topic}, Id: 0},
		FilterExpression: filter, BatchSize: 32, InvisibleDuration: durationpb.New(invisible),
		LongPollingTimeout: durationpb.New(5 * time.Second)}
}

// receiveUntil receives until it holds want messages, failing after the generous wait.
func receiveUntil(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, req *apiv2.ReceiveMessageRequest, want int) []*apiv2.Message {
	t.Helper()
	var got []*apiv2.Message
	deadline := time.Now().Add(wait)
	for len(got) < want {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages", len(got), want)
		}
		st, msgs := receiveOnce(t, c, ctx, req)
		switch st.Code {
		case apiv2.Code_OK:
			got = append(got, msgs...)
		case apiv2.Code_MESSAGE_NOT_FOUND:
		default:
			t.Fatalf("receive: %v", st)
		}
	}
	return got
}

func ack(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, group, topic string, ms ...*apiv2.Message) *apiv2.AckMessageResponse {
	t.Helper()
	req := &apiv2.AckMessageRequest{Group: &apiv2.Resource{Name: group}, Topic: &apiv2.Resource{Name: topic}}
	for _, m := range ms {
		req.Entries = append(req.Entries, &apiv2.AckMessageEntry{MessageId: m.SystemProperties.MessageId,
			ReceiptHandle: m.SystemProperties.GetReceiptHandle()})
	}
	resp, err := c.AckMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func newAdmin(t *testing.T, n *mq.Node) *admin.Admin {
	t.Helper()
	a, err := admin.New(admin.Options{NameServers: []string{n.NameServerAddr()}, Transport: n.NewTransport()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func createGroup(t *testing.T, n *mq.Node, group string, fifo bool, retryMax int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := newAdmin(t, n).CreateSubscriptionGroup(ctx, n.BrokerAddr(), admin.SubscriptionGroupConfig{GroupName: group,
		ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: retryMax, ConsumeMessageOrderly: fifo}); err != nil {
		t.Fatal(err)
	}
}

// Messages sent through the endpoint are received once each, with every system property the
// SDKs read, and an ack ends them: the next receive finds nothing.
func TestGRPCReceiveAckExactlyOnce(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "RcvT", 2, "")
	ctx := as(t, "simple-1")
	tag := "TagR"
	ids := sendN(t, c, ctx, "RcvT", 6, func(i int, m *apiv2.Message) {
		m.SystemProperties.Tag = &tag
		m.SystemProperties.Keys = []string{"key" + strconv.Itoa(i)}
		m.UserProperties = map[string]string{"i": strconv.Itoa(i)}
	})
	got := receiveUntil(t, c, ctx, receiveReq("GroupR", "RcvT", nil, 20*time.Second), len(ids))
	if len(got) != len(ids) {
		t.Fatalf("received %d messages, want %d", len(got), len(ids))
	}
	seen := map[string]bool{}
	for _, m := range got {
		sp := m.SystemProperties
		if seen[sp.MessageId] {
			t.Fatalf("message %s received twice", sp.MessageId)
		}
		seen[sp.MessageId] = true
		i, err := strconv.Atoi(m.UserProperties["i"])
		if err != nil || ids[i] != sp.MessageId || string(m.Body) != "body-"+strconv.Itoa(i) {
			t.Fatalf("message %s: body %q properties %v", sp.MessageId, m.Body, m.UserProperties)
		}
		if want := fmt.Sprintf("%X", md5.Sum(m.Body)); sp.GetBodyDigest().GetChecksum() != want || sp.GetBodyDigest().GetType() != apiv2.DigestType_MD5 {
			t.Fatalf("digest %v, want MD5 %s", sp.GetBodyDigest(), want)
		}
		if sp.GetTag() != "TagR" || len(sp.Keys) != 1 || sp.Keys[0] != "key"+strconv.Itoa(i) || sp.GetDeliveryAttempt() != 1 ||
			sp.GetReceiptHandle() == "" || sp.GetInvisibleDuration().AsDuration() != 20*time.Second ||
			m.Topic.GetName() != "RcvT" || sp.QueueOffset == nil || sp.GetMessageType() != apiv2.MessageType_NORMAL ||
			sp.GetStoreTimestamp() == nil || sp.GetBornHost() != "10.0.0.9" {
			t.Fatalf("system properties: %v", sp)
		}
	}
	resp := ack(t, c, ctx, "GroupR", "RcvT", got...)
	if resp.Status.Code != apiv2.Code_OK || len(resp.Entries) != len(got) {
		t.Fatalf("ack: %v", resp)
	}
	for i, e := range resp.Entries {
		if e.Status.Code != apiv2.Code_OK || e.MessageId != got[i].SystemProperties.MessageId {
			t.Fatalf("ack entry %d: %v", i, e)
		}
	}
	st, msgs := receiveOnce(t, c, ctx, receiveReq("GroupR", "RcvT", nil, 20*time.Second))
	if st.Code != apiv2.Code_MESSAGE_NOT_FOUND || len(msgs) != 0 {
		t.Fatalf("receive after the ack: %v, %d messages", st, len(msgs))
	}
	// Another group gets them all again: POP is per group.
	if again := receiveUntil(t, c, ctx, receiveReq("GroupR2", "RcvT", nil, 20*time.Second), len(ids)); len(again) != len(ids) {
		t.Fatalf("second group received %d", len(again))
	}
}

// A receive's bad arguments get the proxy's codes, and the call still ends with its
// delivery timestamp.
func TestGRPCReceiveRefusals(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "RcvBad", 1, "")
	ctx := as(t, "simple-bad")
	cases := []struct {
		name string
		edit func(*apiv2.ReceiveMessageRequest)
		want apiv2.Code
	}{
		{"short invisible", func(r *apiv2.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(time.Second) }, apiv2.Code_ILLEGAL_INVISIBLE_TIME},
		{"no invisible", func(r *apiv2.ReceiveMessageRequest) { r.InvisibleDuration = nil }, apiv2.Code_ILLEGAL_INVISIBLE_TIME},
		{"long invisible", func(r *apiv2.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(13 * time.Hour) }, apiv2.Code_ILLEGAL_INVISIBLE_TIME},
		{"no batch", func(r *apiv2.ReceiveMessageRequest) { r.BatchSize = 0 }, apiv2.Code_BAD_REQUEST},
		{"bad topic", func(r *apiv2.ReceiveMessageRequest) { r.MessageQueue.Topic.Name = "bad topic" }, apiv2.Code_ILLEGAL_TOPIC},
		{"no group", func(r *apiv2.ReceiveMessageRequest) { r.Group = nil }, apiv2.Code_ILLEGAL_CONSUMER_GROUP},
		{"unknown topic", func(r *apiv2.ReceiveMessageRequest) { r.MessageQueue.Topic.Name = "NoSuchTopic" }, apiv2.Code_TOPIC_NOT_FOUND},
		{"empty SQL", func(r *apiv2.ReceiveMessageRequest) {
			r.FilterExpression = &apiv2.FilterExpression{Type: apiv2.FilterType_SQL, Expression: " "}
		}, apiv2.Code_ILLEGAL_FILTER_EXPRESSION},
		{"bad SQL", func(r *apiv2.ReceiveMessageRequest) {
			r.FilterExpression = &apiv2.FilterExpression{Type: apiv2.FilterType_SQL, Expression: "a >>> ("}
		}, apiv2.Code_ILLEGAL_FILTER_EXPRESSION},
	}
	for _, tc := range cases {
		req := receiveReq("GroupBad", "RcvBad", nil, 20*time.Second)
		tc.edit(req)
		st, msgs := receiveOnce(t, c, ctx, req)
		if st.Code != tc.want || len(msgs) != 0 || st.Message == "" {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.want)
		}
	}
	// A deadline too short for the shortest long polling is ILLEGAL_POLLING_TIME.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := receiveReq("GroupBad", "RcvBad", nil, 20*time.Second)
	req.LongPollingTimeout = nil
	if st, _ := receiveOnce(t, c, short, req); st.Code != apiv2.Code_ILLEGAL_POLLING_TIME {
		t.Errorf("short deadline: %v", st)
	}
	// Without the client id nothing is read.
	if st, _ := receiveOnce(t, c, context.Background(), receiveReq("GroupBad", "RcvBad", nil, 20*time.Second)); st.Code != apiv2.Code_CLIENT_ID_REQUIRED {
		t.Errorf("no client id: %v", st)
	}
}

// A message not acknowledged comes back after its invisible time, its delivery attempt
// counted; ChangeInvisibleDuration moves that time and answers the handle the ack must use.
func TestGRPCChangeInvisibleAndRedelivery(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "InvT", 1, "")
	ctx := as(t, "simple-inv")
	ids := sendN(t, c, ctx, "InvT", 2, nil)
	got := receiveUntil(t, c, ctx, receiveReq("GroupInv", "InvT", nil, 30*time.Second), 2)
	first, second := got[0], got[1]
	if first.SystemProperties.MessageId != ids[0] {
		first, second = second, first
	}
	// Hide the first a long time (a new handle), make the second visible at once.
	cr, err := c.ChangeInvisibleDuration(ctx, &apiv2.ChangeInvisibleDurationRequest{Group: &apiv2.Resource{Name: "GroupInv"},
		Topic: &apiv2.Resource{Name: "InvT"}, ReceiptHandle: first.SystemProperties.GetReceiptHandle(),
		InvisibleDuration: durationpb.New(time.Hour), MessageId: first.SystemProperties.MessageId})
	if err != nil || cr.Status.Code != apiv2.Code_OK || cr.ReceiptHandle == "" || cr.ReceiptHandle == first.SystemProperties.GetReceiptHandle() {
		t.Fatalf("change invisible: %v %v", cr, err)
	}
	cr2, err := c.ChangeInvisibleDuration(ctx, &apiv2.ChangeInvisibleDurationRequest{Group: &apiv2.Resource{Name: "GroupInv"},
		Topic: &apiv2.Resource{Name: "InvT"}, ReceiptHandle: second.SystemProperties.GetReceiptHandle(),
		InvisibleDuration: durationpb.New(0), MessageId: second.SystemProperties.MessageId})
	if err != nil || cr2.Status.Code != apiv2.Code_OK {
		t.Fatalf("change invisible to 0: %v %v", cr2, err)
	}
	// The second comes back with its attempt counted; the first does not.
	again := receiveUntil(t, c, ctx, receiveReq("GroupInv", "InvT", nil, 30*time.Second), 1)
	if len(again) != 1 || again[0].SystemProperties.MessageId != ids[1] || again[0].SystemProperties.GetDeliveryAttempt() != 2 ||
		string(again[0].Body) != "body-1" || again[0].Topic.GetName() != "InvT" {
		t.Fatalf("redelivered: %v", again)
	}
	// The first's new handle acks it.
	first.SystemProperties.ReceiptHandle = &cr.ReceiptHandle
	if r := ack(t, c, ctx, "GroupInv", "InvT", first, again[0]); r.Status.Code != apiv2.Code_OK {
		t.Fatalf("ack with the new handles: %v", r)
	}
	if st, msgs := receiveOnce(t, c, ctx, receiveReq("GroupInv", "InvT", nil, 30*time.Second)); st.Code != apiv2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after the acks: %v %d", st, len(msgs))
	}
	// An invisible time out of range is refused before the broker sees it.
	cr, err = c.ChangeInvisibleDuration(ctx, &apiv2.ChangeInvisibleDurationRequest{Group: &apiv2.Resource{Name: "GroupInv"},
		Topic: &apiv2.Resource{Name: "InvT"}, ReceiptHandle: cr.ReceiptHandle, InvisibleDuration: durationpb.New(13 * time.Hour)})
	if err != nil || cr.Status.Code != apiv2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("13 h: %v %v", cr, err)
	}
}

// A FIFO group gets a message group's messages in order, the next batch only after the
// previous one is acknowledged.
func TestGRPCReceiveFIFOOrder(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "FifoT", 2, "+message.type=FIFO")
	createGroup(t, n, "GroupFifo", true, 16)
	ctx := as(t, "simple-fifo")
	ids := sendN(t, c, ctx, "FifoT", 8, func(i int, m *apiv2.Message) {
		g := "order-1"
		m.SystemProperties.MessageGroup = &g
		m.SystemProperties.MessageType = apiv2.MessageType_FIFO
	})
	var order []string
	deadline := time.Now().Add(wait)
	for len(order) < len(ids) && time.Now().Before(deadline) {
		req := receiveReq("GroupFifo", "FifoT", nil, 30*time.Second)
		req.BatchSize = 3
		st, msgs := receiveOnce(t, c, ctx, req)
		if st.Code == apiv2.Code_MESSAGE_NOT_FOUND {
			continue
		}
		if st.Code != apiv2.Code_OK {
			t.Fatalf("receive: %v", st)
		}
		for _, m := range msgs {
			if m.SystemProperties.GetMessageGroup() != "order-1" || m.SystemProperties.GetMessageType() != apiv2.MessageType_FIFO {
				t.Fatalf("FIFO message: %v", m.SystemProperties)
			}
			order = append(order, m.SystemProperties.MessageId)
		}
		if r := ack(t, c, ctx, "GroupFifo", "FifoT", msgs...); r.Status.Code != apiv2.Code_OK {
			t.Fatalf("ack: %v", r)
		}
	}
	if strings.Join(order, ",") != strings.Join(ids, ",") {
		t.Fatalf("FIFO order\n got %v\nwant %v", order, ids)
	}
}

// Tag and SQL92 filters hand out only what they take.
func TestGRPCReceiveFilters(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "FiltT", 2, "")
	ctx := as(t, "simple-filter")
	sendN(t, c, ctx, "FiltT", 10, func(i int, m *apiv2.Message) {
		tag := "odd"
		if i%2 == 0 {
			tag = "even"
		}
		m.SystemProperties.Tag = &tag
		m.UserProperties = map[string]string{"n": strconv.Itoa(i)}
	})
	got := receiveUntil(t, c, ctx, receiveReq("GroupTag", "FiltT",
		&apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "even"}, 30*time.Second), 5)
	for _, m := range got {
		if m.SystemProperties.GetTag() != "even" {
			t.Fatalf("tag filter let %v through", m.SystemProperties.GetTag())
		}
	}
	got = receiveUntil(t, c, ctx, receiveReq("GroupSQL", "FiltT",
		&apiv2.FilterExpression{Type: apiv2.FilterType_SQL, Expression: "n >= 7"}, 30*time.Second), 3)
	for _, m := range got {
		if v, _ := strconv.Atoi(m.UserProperties["n"]); v < 7 {
			t.Fatalf("SQL filter let n=%d through", v)
		}
	}
	if len(got) != 3 {
		t.Fatalf("SQL filter: %d messages", len(got))
	}
	// Neither group gets more.
	for _, g := range []string{"GroupTag", "GroupSQL"} {
		req := receiveReq(g, "FiltT", &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "even"}, 30*time.Second)
		if g == "GroupSQL" {
			req.FilterExpression = &apiv2.FilterExpression{Type: apiv2.FilterType_SQL, Expression: "n >= 7"}
		}
		if st, msgs := receiveOnce(t, c, ctx, req); st.Code != apiv2.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("%s again: %v %d", g, st, len(msgs))
		}
	}
}

// ForwardMessageToDeadLetterQueue moves a message to its group's dead-letter topic and
// acknowledges it; a handle whose CommitLog offset names another message moves nothing.
func TestGRPCForwardToDeadLetterQueue(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "DlqT", 1, "")
	ctx := as(t, "simple-dlq")
	sendN(t, c, ctx, "DlqT", 2, nil)
	got := receiveUntil(t, c, ctx, receiveReq("GroupDlq", "DlqT", nil, 30*time.Second), 2)
	// A handle with the other message's CommitLog offset in its last field.
	h0, h1 := got[0].SystemProperties.GetReceiptHandle(), got[1].SystemProperties.GetReceiptHandle()
	forged := h0[:strings.LastIndexByte(h0, ' ')] + h1[strings.LastIndexByte(h1, ' '):]
	fwd := func(handle string, m *apiv2.Message) *apiv2.Status {
		r, err := c.ForwardMessageToDeadLetterQueue(ctx, &apiv2.ForwardMessageToDeadLetterQueueRequest{
			Group: &apiv2.Resource{Name: "GroupDlq"}, Topic: &apiv2.Resource{Name: "DlqT"}, ReceiptHandle: handle,
			MessageId: m.SystemProperties.MessageId, DeliveryAttempt: 1, MaxDeliveryAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if st := fwd(forged, got[0]); st.Code != apiv2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("forged offset: %v", st)
	}
	if st := fwd(h0, got[0]); st.Code != apiv2.Code_OK {
		t.Fatalf("forward: %v", st)
	}
	// The dead-letter topic holds the one message, readable with PullMessage.
	dlq := "%DLQ%GroupDlq"
	msgs, next := pull(t, c, ctx, "GroupDlqReader", dlq, 0, 0)
	if len(msgs) != 1 || string(msgs[0].Body) != string(got[0].Body) || next != 1 {
		t.Fatalf("dead-letter topic: %d messages, next %d", len(msgs), next)
	}
	// It was acknowledged: after the second's ack nothing comes back.
	if r := ack(t, c, ctx, "GroupDlq", "DlqT", got[1]); r.Status.Code != apiv2.Code_OK {
		t.Fatalf("ack: %v", r)
	}
	if st, _ := receiveOnce(t, c, ctx, receiveReq("GroupDlq", "DlqT", nil, 30*time.Second)); st.Code != apiv2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after forward and ack: %v", st)
	}
}

// pull reads one PullMessage stream of queue id of topic from offset.
func pull(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, group, topic string, id int32, offset int64) ([]*apiv2.Message, int64) {
	t.Helper()
	msgs, next, st := pullStatus(t, c, ctx, group, topic, id, offset)
	if st.Code != apiv2.Code_OK {
		t.Fatalf("pull %s/%d from %d: %v", topic, id, offset, st)
	}
	return msgs, next
}

func pullStatus(t *testing.T, c apiv2.MessagingServiceClient, ctx context.Context, group, topic string, id int32, offset int64) ([]*apiv2.Message, int64, *apiv2.Status) {
	t.Helper()
	stream, err := c.PullMessage(ctx, &apiv2.PullMessageRequest{Group: &apiv2.Resource{Name: group},
		MessageQueue: &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: topic}, Id: id}, Offset: offset, BatchSize: 32,
		FilterExpression: &apiv2.FilterExpression{Type: apiv2.FilterType_TAG, Expression: "*"}})
	if err != nil {
		t.Fatal(err)
	}
	var st *apiv2.Status
	var msgs []*apiv2.Message
	next := int64(-1)
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return msgs, next, st
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x := r.Content.(type) {
		case *apiv2.PullMessageResponse_Status:
			st = x.Status
		case *apiv2.PullMessageResponse_Message:
			msgs = append(msgs, x.Message)
		case *apiv2.PullMessageResponse_NextOffset:
			next = x.NextOffset
		}
	}
}

// PullMessage reads a queue from an offset; QueryOffset finds its ends and a time; the group's
// offset is stored with UpdateOffset and read back with GetOffset.
func TestGRPCPullAndOffsets(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "PullT", 1, "")
	ctx := as(t, "puller")
	before := time.Now().Add(-time.Second)
	ids := sendN(t, c, ctx, "PullT", 5, nil)
	qo := func(p apiv2.QueryOffsetPolicy, ts *timestamppb.Timestamp) *apiv2.QueryOffsetResponse {
		r, err := c.QueryOffset(ctx, &apiv2.QueryOffsetRequest{MessageQueue: &apiv2.MessageQueue{
			Topic: &apiv2.Resource{Name: "PullT"}, Id: 0}, QueryOffsetPolicy: p, Timestamp: ts})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := qo(apiv2.QueryOffsetPolicy_BEGINNING, nil); r.Status.Code != apiv2.Code_OK || r.Offset != 0 {
		t.Fatalf("BEGINNING: %v", r)
	}
	if r := qo(apiv2.QueryOffsetPolicy_END, nil); r.Status.Code != apiv2.Code_OK || r.Offset != 5 {
		t.Fatalf("END: %v", r)
	}
	if r := qo(apiv2.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(before)); r.Status.Code != apiv2.Code_OK || r.Offset != 0 {
		t.Fatalf("TIMESTAMP: %v", r)
	}
	if r := qo(apiv2.QueryOffsetPolicy_TIMESTAMP, nil); r.Status.Code != apiv2.Code_BAD_REQUEST {
		t.Fatalf("TIMESTAMP without one: %v", r)
	}
	msgs, next := pull(t, c, ctx, "GroupPull", "PullT", 0, 2)
	if len(msgs) != 3 || next != 5 {
		t.Fatalf("pull from 2: %d messages, next %d", len(msgs), next)
	}
	for i, m := range msgs {
		if m.SystemProperties.MessageId != ids[2+i] || m.SystemProperties.GetQueueOffset() != int64(2+i) {
			t.Fatalf("pulled %d: %v", i, m.SystemProperties)
		}
	}
	if _, next, st := pullStatus(t, c, ctx, "GroupPull", "PullT", 0, 5); st.Code != apiv2.Code_MESSAGE_NOT_FOUND || next != 5 {
		t.Fatalf("pull at the end: %v next %d", st, next)
	}
	if _, _, st := pullStatus(t, c, ctx, "GroupPull", "PullT", 0, 500); st.Code != apiv2.Code_ILLEGAL_OFFSET && st.Code != apiv2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("pull past the end: %v", st)
	}
	if _, _, st := pullStatus(t, c, ctx, "GroupPull", "PullT", 0, -1); st.Code != apiv2.Code_ILLEGAL_OFFSET {
		t.Fatalf("pull from -1: %v", st)
	}
	if _, _, st := pullStatus(t, c, ctx, "GroupPull", "PullT", 7, 0); st.Code == apiv2.Code_OK {
		t.Fatalf("pull of queue 7 of a one-queue topic: %v", st)
	}
	mq := &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: "PullT"}, Id: 0}
	// A group that stored no offset where the queue still holds its first message reads 0
	// (the broker's rule, ConsumerManageProcessor's).
	g, err := c.GetOffset(ctx, &apiv2.GetOffsetRequest{Group: &apiv2.Resource{Name: "GroupPull"}, MessageQueue: mq})
	if err != nil || g.Status.Code != apiv2.Code_OK || g.Offset != 0 {
		t.Fatalf("offset never stored: %v %v", g, err)
	}

	u, err := c.UpdateOffset(ctx, &apiv2.UpdateOffsetRequest{Group: &apiv2.Resource{Name: "GroupPull"}, MessageQueue: mq, Offset: 4})
	if err != nil || u.Status.Code != apiv2.Code_OK {
		t.Fatalf("update offset: %v %v", u, err)
	}
	g, err = c.GetOffset(ctx, &apiv2.GetOffsetRequest{Group: &apiv2.Resource{Name: "GroupPull"}, MessageQueue: mq})
	if err != nil || g.Status.Code != apiv2.Code_OK || g.Offset != 4 {
		t.Fatalf("offset stored: %v %v", g, err)
	}
	u, err = c.UpdateOffset(ctx, &apiv2.UpdateOffsetRequest{Group: &apiv2.Resource{Name: "GroupPull"}, MessageQueue: mq, Offset: -3})
	if err != nil || u.Status.Code != apiv2.Code_ILLEGAL_OFFSET {
		t.Fatalf("negative offset: %v %v", u, err)
	}
	other := &apiv2.MessageQueue{Topic: &apiv2.Resource{Name: "PullT"}, Id: 0, Broker: &apiv2.Broker{Name: "elsewhere"}}
	if r, err := c.GetOffset(ctx, &apiv2.GetOffsetRequest{Group: &apiv2.Resource{Name: "GroupPull"}, MessageQueue: other}); err != nil || r.Status.Code != apiv2.Code_BAD_REQUEST {
		t.Fatalf("another broker's queue: %v %v", r, err)
	}
}

// QueryAssignment answers the broker as one queue of id -1 for a group that is not FIFO, each
// read queue for a FIFO group, at the broker's gRPC endpoint.
func TestGRPCQueryAssignment(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "AssignT", 3, "")
	createGroup(t, n, "GroupAssignFifo", true, 16)
	ctx := as(t, "push-1")
	qa := func(topic, group string) *apiv2.QueryAssignmentResponse {
		r, err := c.QueryAssignment(ctx, &apiv2.QueryAssignmentRequest{Topic: &apiv2.Resource{Name: topic},
			Group: &apiv2.Resource{Name: group}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := qa("AssignT", "GroupAssign")
	if r.Status.Code != apiv2.Code_OK || len(r.Assignments) != 1 {
		t.Fatalf("assignment: %v", r)
	}
	q := r.Assignments[0].MessageQueue
	addrs := q.GetBroker().GetEndpoints().GetAddresses()
	if q.Id != -1 || q.Permission != apiv2.Permission_READ_WRITE || q.Topic.GetName() != "AssignT" || len(addrs) != 1 ||
		!strings.HasSuffix(n.GRPCAddr(), ":"+strconv.Itoa(int(addrs[0].Port))) {
		t.Fatalf("assigned queue: %v", q)
	}
	if r := qa("AssignT", "GroupAssignFifo"); r.Status.Code != apiv2.Code_OK || len(r.Assignments) != 3 || r.Assignments[2].MessageQueue.Id != 2 {
		t.Fatalf("FIFO assignment: %v", r)
	}
	if r := qa("NoSuchTopic", "GroupAssign"); r.Status.Code != apiv2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v", r)
	}
	if r := qa("AssignT", "bad group!"); r.Status.Code != apiv2.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("bad group: %v", r)
	}
}

// Receipt handles from the network are hostile: garbage, another broker's, expired ones and
// well-formed forgeries are refused with INVALID_RECEIPT_HANDLE, and none of them acknowledges
// the message another client holds.
func TestGRPCForgedReceiptHandles(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "ForgeT", 1, "")
	holder := as(t, "holder")
	attacker := as(t, "attacker")
	sendN(t, c, holder, "ForgeT", 1, nil)
	got := receiveUntil(t, c, holder, receiveReq("GroupForge", "ForgeT", nil, 60*time.Second), 1)
	real := got[0].SystemProperties.GetReceiptHandle()
	f := strings.Fields(real)
	if len(f) != 9 {
		t.Fatalf("handle %q: want 9 fields", real)
	}
	with := func(i int, v string) string {
		g := append([]string(nil), f...)
		g[i] = v
		return strings.Join(g, " ")
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	forged := []string{
		"", "x", strings.Repeat("9", 10000), "\x00 garbage", real + " extra", strings.Join(f[:7], " "),
		with(0, "-1"), with(1, "abc"), with(4, "7"), with(5, "otherBroker"), with(6, "99"), with(7, "123456"),
		with(8, "x"), with(1, "1"), // popped long ago: expired
		with(3, "99999"), // a revive queue that does not exist
		strings.Replace(real, " ", "  ", 1),
		// A pop time never handed out: well formed, so the broker takes its ack as a late one
		// for a checkpoint already gone and answers OK, acknowledging nothing (as RocketMQ's
		// does); its change names no message awaiting ack.
		with(1, now),
	}
	for i, h := range forged {
		m := &apiv2.Message{SystemProperties: &apiv2.SystemProperties{MessageId: "M", ReceiptHandle: &h}}
		r := ack(t, c, attacker, "GroupForge", "ForgeT", m)
		lateAck := i == len(forged)-1 && r.Status.Code == apiv2.Code_OK
		if !lateAck && (r.Status.Code != apiv2.Code_INVALID_RECEIPT_HANDLE || r.Entries[0].Status.Code != apiv2.Code_INVALID_RECEIPT_HANDLE || r.Status.Message == "") {
			t.Errorf("ack with %q: %v", h, r.Status)
		}
		cr, err := c.ChangeInvisibleDuration(attacker, &apiv2.ChangeInvisibleDurationRequest{Group: &apiv2.Resource{Name: "GroupForge"},
			Topic: &apiv2.Resource{Name: "ForgeT"}, ReceiptHandle: h, InvisibleDuration: durationpb.New(0)})
		if err != nil || cr.Status.Code != apiv2.Code_INVALID_RECEIPT_HANDLE {
			t.Errorf("change with %q: %v %v", h, cr, err)
		}
	}
	// The holder's message is still its own: the forgeries neither acked nor released it.
	if st, _ := receiveOnce(t, c, attacker, receiveReq("GroupForge", "ForgeT", nil, 60*time.Second)); st.Code != apiv2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("the held message was released: %v", st)
	}
	if r := ack(t, c, holder, "GroupForge", "ForgeT", got[0]); r.Status.Code != apiv2.Code_OK {
		t.Fatalf("holder's ack: %v", r)
	}
	// Mixed entries answer each, MULTIPLE_RESULTS overall.
	bad := "1 2 3"
	r := ack(t, c, holder, "GroupForge", "ForgeT", got[0], &apiv2.Message{SystemProperties: &apiv2.SystemProperties{MessageId: "B", ReceiptHandle: &bad}})
	if r.Status.Code != apiv2.Code_MULTIPLE_RESULTS && r.Status.Code != apiv2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("mixed ack: %v", r)
	}
	if r.Entries[1].Status.Code != apiv2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("mixed ack's bad entry: %v", r.Entries[1])
	}
	if r, err := c.AckMessage(holder, &apiv2.AckMessageRequest{Group: &apiv2.Resource{Name: "GroupForge"}, Topic: &apiv2.Resource{Name: "ForgeT"}}); err != nil || r.Status.Code != apiv2.Code_BAD_REQUEST {
		t.Fatalf("ack of nothing: %v %v", r, err)
	}
}
