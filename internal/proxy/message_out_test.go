package proxy

import (
	"crypto/md5"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// encodeForTest writes m as the broker stores and hands it out.
func encodeForTest(t *testing.T, m *message.Message, queueOffset, phyOffset, storeTS int64) []byte {
	t.Helper()
	m.BodyCRC = message.BodyCRC(m.Body)
	size, err := message.RecordSize(m)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	message.EncodeRecord(b, size, m, queueOffset, phyOffset, storeTS)
	return b
}

func TestMessageOutSystemProperties(t *testing.T) {
	born := netip.MustParseAddrPort("10.1.2.3:50000")
	store := netip.MustParseAddrPort("10.9.9.9:10911")
	body := []byte("hello gRPC")
	props := message.MarshalProperties(map[string]string{
		message.PropertyTags:          "TagA",
		message.PropertyKeys:          "k1 k2",
		message.PropertyUniqKey:       "SDK-MSG-ID",
		message.PropertyMessageGroup:  "g1",
		propTraceContext:              "00-trace",
		protocol.PropertyPopCK:        "0 1 30000 0 0 b 0 7",
		message.PropertyReconsumeTime: "2",
		"color":                       "red",
		"size":                        "L",
	})
	rec := encodeForTest(t, &message.Message{Topic: "ns1%orders", QueueID: 3, Body: body, Properties: props,
		BornTimestamp: 1700000000123, BornHost: born, StoreHost: store, ReconsumeTimes: 2}, 7, 4096, 1700000000456)
	// A second record behind the first: a POP answer holds several.
	rec2 := encodeForTest(t, &message.Message{Topic: "plain", Body: []byte{1, 2, 3}, SysFlag: message.FlagCompressed,
		Properties: message.MarshalProperties(map[string]string{message.PropertyTimerDeliverMS: "1700000999000"}),
		BornHost:   born, StoreHost: store}, 0, 8192, 1)
	msgs, err := decodeStored(append(rec, rec2...))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("decode: %d messages, %v", len(msgs), err)
	}

	m := msgs[0].toAPI("")
	sp := m.GetSystemProperties()
	want := fmt.Sprintf("%X", md5.Sum(body))
	switch {
	case m.GetTopic().GetName() != "orders" || m.GetTopic().GetResourceNamespace() != "ns1":
		t.Errorf("topic %v, want orders in namespace ns1", m.GetTopic())
	case string(m.GetBody()) != string(body):
		t.Errorf("body %q", m.GetBody())
	case sp.GetTag() != "TagA" || strings.Join(sp.GetKeys(), ",") != "k1,k2":
		t.Errorf("tag %q keys %q", sp.GetTag(), sp.GetKeys())
	case sp.GetMessageId() != "SDK-MSG-ID":
		t.Errorf("message id %q", sp.GetMessageId())
	case sp.GetBodyDigest().GetType() != apiv2.DigestType_MD5 || sp.GetBodyDigest().GetChecksum() != want:
		t.Errorf("digest %v, want MD5 %s", sp.GetBodyDigest(), want)
	case sp.GetBodyEncoding() != apiv2.Encoding_IDENTITY:
		t.Errorf("encoding %v", sp.GetBodyEncoding())
	case sp.GetMessageType() != apiv2.MessageType_FIFO || sp.GetMessageGroup() != "g1":
		t.Errorf("type %v group %q", sp.GetMessageType(), sp.GetMessageGroup())
	case sp.GetBornTimestamp().AsTime().UnixMilli() != 1700000000123 || sp.GetStoreTimestamp().AsTime().UnixMilli() != 1700000000456:
		t.Errorf("born %v store %v", sp.GetBornTimestamp().AsTime(), sp.GetStoreTimestamp().AsTime())
	case sp.GetBornHost() != "10.1.2.3" || sp.GetStoreHost() != "10.9.9.9:10911":
		t.Errorf("born host %q store host %q", sp.GetBornHost(), sp.GetStoreHost())
	case sp.GetDeliveryAttempt() != 3:
		t.Errorf("delivery attempt %d, want reconsume times 2 + 1", sp.GetDeliveryAttempt())
	case sp.GetQueueId() != 3 || sp.QueueOffset == nil || sp.GetQueueOffset() != 7:
		t.Errorf("queue %d offset %d", sp.GetQueueId(), sp.GetQueueOffset())
	case sp.GetReceiptHandle() != "0 1 30000 0 0 b 0 7":
		t.Errorf("receipt handle %q", sp.GetReceiptHandle())
	case sp.GetTraceContext() != "00-trace":
		t.Errorf("trace context %q", sp.GetTraceContext())
	case sp.DeliveryTimestamp != nil:
		t.Errorf("delivery timestamp on a message without one: %v", sp.DeliveryTimestamp)
	}
	if len(m.GetUserProperties()) != 2 || m.GetUserProperties()["color"] != "red" || m.GetUserProperties()["size"] != "L" {
		t.Errorf("user properties %v: want only color and size", m.GetUserProperties())
	}

	// The caller's topic wins (a message popped from the retry topic shows the subscribed
	// one); a compressed body says GZIP; a timed message is DELAY with its delivery time;
	// without UNIQ_KEY the id is the offset message id.
	m = msgs[1].toAPI("shown")
	sp = m.GetSystemProperties()
	switch {
	case m.GetTopic().GetName() != "shown" || m.GetTopic().GetResourceNamespace() != "":
		t.Errorf("topic %v", m.GetTopic())
	case sp.GetBodyEncoding() != apiv2.Encoding_GZIP:
		t.Errorf("encoding %v, want GZIP", sp.GetBodyEncoding())
	case sp.GetMessageType() != apiv2.MessageType_DELAY || sp.GetDeliveryTimestamp().AsTime().UnixMilli() != 1700000999000:
		t.Errorf("type %v delivery %v", sp.GetMessageType(), sp.GetDeliveryTimestamp())
	case sp.GetMessageId() != message.OffsetMsgID(store, 8192):
		t.Errorf("message id %q, want the offset id", sp.GetMessageId())
	case sp.Tag != nil || sp.ReceiptHandle != nil || sp.MessageGroup != nil:
		t.Errorf("unset fields set: %v", sp)
	case sp.GetDeliveryAttempt() != 1:
		t.Errorf("delivery attempt %d", sp.GetDeliveryAttempt())
	}
}

func TestMessageOutTypesAndDLQ(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  apiv2.MessageType
	}{
		{map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyMessageGroup: "g"}, apiv2.MessageType_TRANSACTION},
		{map[string]string{message.PropertyDelayTimeLevel: "3"}, apiv2.MessageType_DELAY},
		{map[string]string{propTimerDelaySec: "10"}, apiv2.MessageType_DELAY},
		{map[string]string{message.PropertyTransactionPrepared: "false"}, apiv2.MessageType_NORMAL},
		{nil, apiv2.MessageType_NORMAL},
	}
	for _, c := range cases {
		if got := messageType(c.props); got != c.want {
			t.Errorf("%v: %v, want %v", c.props, got, c.want)
		}
	}
	at, ok := deliveryTime(map[string]string{propTimerDelaySec: "60"})
	if d := time.Until(at); !ok || d < 50*time.Second || d > 70*time.Second {
		t.Errorf("TIMER_DELAY_SEC 60: %v, %v", at, ok)
	}
	for _, bad := range []string{"x", "-1", "99999999999999999999"} {
		if _, ok := deliveryTime(map[string]string{propTimerDelaySec: bad}); ok {
			t.Errorf("TIMER_DELAY_SEC %q accepted", bad)
		}
	}

	rec := encodeForTest(t, &message.Message{Topic: "%DLQ%ns1%grp", Body: []byte("x"),
		Properties: message.MarshalProperties(map[string]string{propDLQOriginTopic: "ns1%orders", propDLQOriginMsgID: "ID1"})}, 0, 0, 0)
	msgs, err := decodeStored(rec)
	if err != nil {
		t.Fatal(err)
	}
	m := msgs[0].toAPI("")
	if d := m.GetSystemProperties().GetDeadLetterQueue(); d.GetTopic() != "ns1%orders" || d.GetMessageId() != "ID1" {
		t.Errorf("dead letter queue %v", d)
	}
	if r := m.GetTopic(); r.GetName() != "%DLQ%grp" || r.GetResourceNamespace() != "ns1" {
		t.Errorf("DLQ topic %v", r)
	}
	if len(m.GetUserProperties()) != 0 {
		t.Errorf("system properties leaked to the user's: %v", m.GetUserProperties())
	}
}

// A body that is not records is an error naming the place, never a panic; the records
// before it are kept.
func TestDecodeStoredGarbage(t *testing.T) {
	good := encodeForTest(t, &message.Message{Topic: "t", Body: []byte("ok")}, 0, 0, 0)
	for _, tail := range [][]byte{{1, 2, 3}, make([]byte, 64), good[:len(good)-1]} {
		msgs, err := decodeStored(append(append([]byte(nil), good...), tail...))
		if err == nil || len(msgs) != 1 || !strings.Contains(err.Error(), "record 1") {
			t.Errorf("tail %d bytes: %d messages, %v", len(tail), len(msgs), err)
		}
	}
	if msgs, err := decodeStored(nil); err != nil || len(msgs) != 0 {
		t.Errorf("empty body: %v %v", msgs, err)
	}
}
