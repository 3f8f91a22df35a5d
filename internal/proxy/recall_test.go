package proxy_test

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/node"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// sendDelay sends a delay message due at at and returns its entry.
func sendDelay(t *testing.T, c apiv2.MessagingServiceClient, clientID, topic, id, body string, at time.Time) *apiv2.SendResultEntry {
	t.Helper()
	m := msg(topic, id, body)
	m.SystemProperties.MessageType = apiv2.MessageType_DELAY
	m.SystemProperties.DeliveryTimestamp = timestamppb.New(at)
	resp, err := c.SendMessage(as(t, clientID), &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
	if err != nil || resp.Status.Code != apiv2.Code_OK || len(resp.Entries) != 1 {
		t.Fatalf("send delay message %s: %v %v", id, resp, err)
	}
	return resp.Entries[0]
}

func recall(t *testing.T, c apiv2.MessagingServiceClient, topic, handle string) *apiv2.RecallMessageResponse {
	t.Helper()
	resp, err := c.RecallMessage(as(t, "recaller"), &apiv2.RecallMessageRequest{Topic: &apiv2.Resource{Name: topic}, RecallHandle: handle})
	if err != nil {
		t.Fatalf("recall: %v", err)
	}
	return resp
}

func TestGRPCRecallMessage(t *testing.T) {
	n := startNode(t, func(o *mq.Options) { o.Types.RecallMessageEnable = true })
	c := dial(t, n)
	createTopic(t, n, c, "RecallT", 1, "+message.type=DELAY")
	createTopic(t, n, c, "RecallOther", 1, "+message.type=DELAY")
	createTopic(t, n, c, "RecallNormal", 1, "")
	const id = "recall-producer"
	if _, reply := openTelemetry(t, c, as(t, id), producerSettings("RecallT")); reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	// The recalled message is due before the kept one: the timer delivers in time order, so
	// once the kept one is read, the recalled one's time has passed without a delivery.
	now := time.Now()
	gone := sendDelay(t, c, id, "RecallT", "RECALL-GONE", "recalled", now.Add(time.Second))
	kept := sendDelay(t, c, id, "RecallT", "RECALL-KEPT", "kept", now.Add(2*time.Second))
	if gone.RecallHandle == "" || kept.RecallHandle == "" {
		t.Fatalf("delay messages answered without recall handles: %v %v", gone, kept)
	}
	normal, err := c.SendMessage(as(t, id), &apiv2.SendMessageRequest{Messages: []*apiv2.Message{msg("RecallNormal", "N-1", "now")}})
	if err != nil || normal.Status.Code != apiv2.Code_OK || normal.Entries[0].RecallHandle != "" {
		t.Fatalf("a normal message is answered with no recall handle: %v %v", normal, err)
	}

	resp := recall(t, c, "RecallT", gone.RecallHandle)
	if resp.Status.Code != apiv2.Code_OK || resp.MessageId != "RECALL-GONE" {
		t.Fatalf("recall before delivery: %v", resp)
	}
	got := pullAll(t, n, "RecallT", 1)
	if string(got[0].Body) != "kept" || time.Now().Before(now.Add(time.Second)) {
		t.Fatalf("read back %q at %v", got[0].Body, time.Now())
	}
	if max := node.Of(n).Broker().Store().MaxOffsetInQueue("RecallT", 0); max != 1 {
		t.Fatalf("RecallT holds %d messages, want only the kept one", max)
	}
	// After its delivery, a message's handle is refused.
	resp = recall(t, c, "RecallT", kept.RecallHandle)
	if resp.Status.Code != apiv2.Code_BAD_REQUEST || !strings.Contains(resp.Status.Message, "timestamp") {
		t.Fatalf("recall after delivery: %v", resp)
	}

	// Forged handles.
	later := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	brokerName := node.Of(n).Broker().Options().Broker.Name
	for name, h := range map[string]string{
		"not base64":       "!!not-base64!!",
		"too few fields":   enc("v1 RecallT " + brokerName),
		"unknown version":  enc("v2 RecallT " + brokerName + " " + later + " ID"),
		"another broker":   enc("v1 RecallT elsewhere " + later + " ID"),
		"another topic":    enc("v1 RecallOther " + brokerName + " " + later + " ID"),
		"time not number":  enc("v1 RecallT " + brokerName + " soon ID"),
		"time past":        enc("v1 RecallT " + brokerName + " 1 ID"),
		"id with controls": enc("v1 RecallT " + brokerName + " " + later + " \x01\x02"),
		"too long":         strings.Repeat("A", 2000),
		"blank":            "   ",
	} {
		resp := recall(t, c, "RecallT", h)
		if resp.Status.Code != apiv2.Code_BAD_REQUEST || resp.Status.Message == "" || resp.MessageId != "" {
			t.Errorf("%s: %v, want BAD_REQUEST", name, resp)
		}
	}
	if resp := recall(t, c, "RecallNormal", gone.RecallHandle); resp.Status.Code != apiv2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Errorf("recall on a NORMAL topic: %v", resp)
	}
	if resp := recall(t, c, "RecallNoSuch", gone.RecallHandle); resp.Status.Code != apiv2.Code_TOPIC_NOT_FOUND {
		t.Errorf("recall on an unknown topic: %v", resp)
	}
	if resp := recall(t, c, "bad topic!", gone.RecallHandle); resp.Status.Code != apiv2.Code_ILLEGAL_TOPIC {
		t.Errorf("recall on an illegal topic name: %v", resp)
	}
	if resp, err := c.RecallMessage(t.Context(), &apiv2.RecallMessageRequest{Topic: &apiv2.Resource{Name: "RecallT"},
		RecallHandle: gone.RecallHandle}); err != nil || resp.Status.Code != apiv2.Code_CLIENT_ID_REQUIRED {
		t.Errorf("no client id: %v %v", resp, err)
	}
	// The node still delivers after the forgeries.
	sendDelay(t, c, id, "RecallT", "RECALL-AFTER", "after", time.Now().Add(200*time.Millisecond))
	deadline := time.Now().Add(wait)
	for node.Of(n).Broker().Store().MaxOffsetInQueue("RecallT", 0) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the delay message sent after the forgeries was not delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A broker that does not serve recalls (RocketMQ's default) is answered FORBIDDEN, naming the
// setting.
func TestGRPCRecallDisabled(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "RecallOff", 1, "+message.type=DELAY")
	e := sendDelay(t, c, "p", "RecallOff", "OFF-1", "x", time.Now().Add(time.Hour))
	resp := recall(t, c, "RecallOff", e.RecallHandle)
	if resp.Status.Code != apiv2.Code_FORBIDDEN || !strings.Contains(resp.Status.Message, "recall-message-enable") {
		t.Fatalf("recall on a broker without recalls: %v", resp)
	}
}
