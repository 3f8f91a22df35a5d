package wiretest

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// DefaultRegion is the MSG_REGION a broker answers a send with: RocketMQ's default
// (MixAll.DEFAULT_REGION "DefaultRegion" is brokerConfig.regionId's default).
const DefaultRegion = "DefaultRegion"

// SendHeader is a single send as the official Go client builds it (docs/protocol.md §4.1).
func SendHeader(topic string, queueID int32, props map[string]string) protocol.SendMessageRequestHeader {
	return protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000123, Flag: 7,
		Properties: message.MarshalProperties(props), BrokerName: "broker-a"}
}

// SendRequest encodes h with the keys code uses (the short ones of SEND_MESSAGE_V2 and its
// kin) and sets the header serialization.
func SendRequest(code int32, h *protocol.SendMessageRequestHeader, body []byte, ser remoting.SerializeType) *remoting.Command {
	ext := make(map[string]string, 16)
	switch code {
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		(*protocol.SendMessageRequestHeaderV2)(h).Encode(ext)
	default:
		h.Encode(ext)
	}
	req := remoting.NewRequest(code, ext, body)
	req.Serialize = ser
	return req
}

// WantSendOK checks a success response, with the region and trace flag every send answer
// carries, and returns its header.
func WantSendOK(t testing.TB, resp *remoting.Command) protocol.SendMessageResponseHeader {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("response %d %q, want SUCCESS", resp.Code, resp.Remark)
	}
	resp.Materialize() // as a connection would, writing it
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatalf("response header: %v (%v)", err, resp.ExtFields)
	}
	if h.MsgRegion != DefaultRegion || !h.TraceOn {
		t.Errorf("MSG_REGION %q TRACE_ON %t, want DefaultRegion true", h.MsgRegion, h.TraceOn)
	}
	return h
}

// WantRefused checks a refusal's code and remark and that st appended nothing since maxPhy.
func WantRefused(t testing.TB, st *storage.Store, resp *remoting.Command, code int32, remark string, maxPhy int64) {
	t.Helper()
	if resp.Code != code || !strings.Contains(resp.Remark, remark) {
		t.Errorf("response %d %q, want %d containing %q", resp.Code, resp.Remark, code, remark)
	}
	if got := st.MaxPhyOffset(); got != maxPhy {
		t.Errorf("store max offset %d after a refused send, want %d", got, maxPhy)
	}
}

// StoredRecord waits until (topic, queueID, offset) is dispatched and returns its record,
// decoded from a private copy of the stored bytes.
func StoredRecord(t testing.TB, st *storage.Store, topic string, queueID int32, offset int64) message.Record {
	t.Helper()
	var raw []byte
	Eventually(t, fmt.Sprintf("%s/%d@%d dispatched", topic, queueID, offset), func() bool {
		r := st.GetMessage("test", topic, queueID, offset, 1, 0, nil)
		defer r.Release()
		if r.Status != storage.Found {
			return false
		}
		raw = bytes.Clone(r.Messages[0])
		return true
	})
	var rec message.Record
	if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
		t.Fatalf("decode stored record: %v", err)
	}
	return rec
}

// RecordAt is the record at a CommitLog offset (also one with no ConsumeQueue unit), decoded
// from a private copy.
func RecordAt(t testing.TB, st *storage.Store, phy int64) message.Record {
	t.Helper()
	raw, err := st.LookMessageByOffset(phy)
	if err != nil {
		t.Fatalf("look message at %d: %v", phy, err)
	}
	var rec message.Record
	if _, err := message.DecodeRecord(bytes.Clone(raw), &rec, true); err != nil {
		t.Fatal(err)
	}
	return rec
}

// Sub is a tag subscription of topic as the Go client builds it: codeSet from the tags' UTF-8
// bytes with Java's string hash (docs/protocol.md §9.8).
func Sub(topic, expr string) protocol.SubscriptionData {
	s := protocol.SubscriptionData{Topic: topic, SubString: expr, TagsSet: []string{}, CodeSet: protocol.TagCodes{},
		SubVersion: time.Now().UnixNano(), ExpressionType: protocol.ExpressionTag}
	if expr == "*" {
		return s
	}
	for tag := range strings.SplitSeq(expr, "||") {
		if tag = strings.TrimSpace(tag); tag == "" {
			continue
		}
		s.TagsSet = append(s.TagsSet, tag)
		var h int32
		for i := 0; i < len(tag); i++ {
			h = 31*h + int32(tag[i])
		}
		s.CodeSet = append(s.CodeSet, h)
	}
	return s
}

// HeartbeatCmd builds a HEART_BEAT of one push consumer group.
func HeartbeatCmd(clientID, group string, subs ...protocol.SubscriptionData) *remoting.Command {
	hb := protocol.HeartbeatData{ClientID: clientID, ProducerDataSet: []protocol.ProducerData{},
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: group, ConsumeType: protocol.ConsumePassively,
			MessageModel: protocol.Clustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
			SubscriptionDataSet: subs}}}
	return remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())
}

// Heartbeat sends a heartbeat and checks it succeeded.
func Heartbeat(t testing.TB, tr remoting.Transport, addr, clientID, group string, subs ...protocol.SubscriptionData) {
	t.Helper()
	resp := Invoke(t, tr, addr, HeartbeatCmd(clientID, group, subs...))
	if resp.Code != remoting.Success || resp.Version < 0 {
		t.Fatalf("heartbeat: code %d version %d remark %q", resp.Code, resp.Version, resp.Remark)
	}
}

// CheckMsgID checks that id is the offset message id of (the broker's store host addr, phy).
func CheckMsgID(t testing.TB, addr, id string, phy int64) {
	t.Helper()
	host, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		t.Fatalf("msgId %q: %v", id, err)
	}
	if want := netip.MustParseAddrPort(addr); host != want || off != phy {
		t.Errorf("msgId %q = %v@%d, want %v@%d", id, host, off, want, phy)
	}
}

// CreateTopic creates a readable and writable topic of queues read and write queues through
// UPDATE_AND_CREATE_TOPIC, as mqadmin's updateTopic sends it.
func CreateTopic(t testing.TB, tr remoting.Transport, addr, topic string, queues int32) {
	t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: names.TopicAutoCreate, ReadQueueNums: queues,
		WriteQueueNums: queues, Perm: 6}
	resp := Invoke(t, tr, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(&h), nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: %d %q", topic, resp.Code, resp.Remark)
	}
}

// PutMsgs stores n messages straight into st, in one queue with tag ("" for none), bodies
// "<prefix>-<i>", and waits until they are dispatched.
func PutMsgs(t testing.TB, st *storage.Store, storeHost netip.AddrPort, topic string, queueID int32, n int, tag, prefix string) {
	t.Helper()
	before := st.MaxOffsetInQueue(topic, queueID)
	for i := range n {
		props := map[string]string{message.PropertyUniqKey: fmt.Sprintf("%s-%d-%d", prefix, queueID, i)}
		if tag != "" {
			props[message.PropertyTags] = tag
		}
		m := &storage.Message{Topic: topic, QueueID: queueID, Body: []byte(fmt.Sprintf("%s-%d", prefix, i)),
			Properties: message.MarshalProperties(props), BornTimestamp: time.Now().UnixMilli(),
			BornHost: bornHost, StoreHost: storeHost}
		if _, err := st.PutMessage(m); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	Eventually(t, "messages dispatched", func() bool {
		return st.MaxOffsetInQueue(topic, queueID) >= before+int64(n)
	})
}

// bornHost is the producer address PutMsgs stamps.
var bornHost = netip.MustParseAddrPort("127.0.0.1:40000")
