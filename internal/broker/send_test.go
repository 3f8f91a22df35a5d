package broker

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

func TestSendRoundTrip(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "RoundTrip", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
	storeHost := netip.MustParseAddrPort(tb.Addr)
	// Replies (324, 325) are pushed before they are stored: reply_test.go.
	codes := []int32{remoting.SendMessage, remoting.SendMessageV2}
	sers := map[string]remoting.SerializeType{"json": remoting.SerializeJSON, "binary": remoting.SerializeRocketMQ}
	next := map[int32]int64{}
	for trName, tr := range tb.Transports() {
		for serName, ser := range sers {
			for _, code := range codes {
				t.Run(fmt.Sprintf("%s/%s/%d", trName, serName, code), func(t *testing.T) {
					props := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ID" + strconv.Itoa(int(code))}
					queue := int32(code % 4)
					h := wiretest.SendHeader("RoundTrip", queue, props)
					h.SysFlag = message.FlagCompressed // never inflated: kept as sent
					body := []byte("body of " + t.Name())
					resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(code, &h, body, ser))
					if trName == "tcp" && resp.Serialize != ser {
						t.Errorf("answered in serialization %d, want %d", resp.Serialize, ser)
					}
					rh := wiretest.WantSendOK(t, resp)
					if rh.QueueID != queue || rh.QueueOffset != next[queue] {
						t.Errorf("queue %d offset %d, want %d %d", rh.QueueID, rh.QueueOffset, queue, next[queue])
					}
					next[queue]++
					rec := wiretest.StoredRecord(t, tb.Store(), "RoundTrip", queue, rh.QueueOffset)
					wiretest.CheckMsgID(t, tb.Addr, rh.MsgID, rec.PhysicalOffset)
					if string(rec.Topic) != "RoundTrip" || rec.QueueID != queue || !bytes.Equal(rec.Body, body) ||
						rec.Flag != 7 || rec.SysFlag != message.FlagCompressed || rec.BornTimestamp != 1700000000123 {
						t.Errorf("stored %s/%d body %q flag %d sysFlag %d born %d", rec.Topic, rec.QueueID, rec.Body,
							rec.Flag, rec.SysFlag, rec.BornTimestamp)
					}
					if rec.StoreHost != storeHost {
						t.Errorf("store host %v, want %v", rec.StoreHost, storeHost)
					}
					wantBorn := "127.0.0.1"
					if trName == "inproc" {
						wantBorn = "127.0.0.2"
					}
					if rec.BornHost.Addr().String() != wantBorn || rec.BornHost.Port() == 0 {
						t.Errorf("born host %v, want %s:<port>", rec.BornHost, wantBorn)
					}
					props[message.PropertyCluster] = "DefaultCluster"
					if diff := cmp.Diff(props, message.UnmarshalProperties(rec.Properties)); diff != "" {
						t.Errorf("properties (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func TestSendBatch(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "Batch", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
	next := int64(0)
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			var body []byte
			for i := range 3 {
				body = message.AppendBatchElement(body, int32(i), []byte(fmt.Sprintf("m%d", i)),
					message.MarshalProperties(map[string]string{"TAGS": fmt.Sprintf("t%d", i)}))
			}
			h := wiretest.SendHeader("Batch", 1, nil)
			h.Batch = true
			resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendBatchMessage, &h, body, remoting.SerializeJSON))
			rh := wiretest.WantSendOK(t, resp)
			// That the statistics count 3 puts: internal/broker/stats' TestCountsBatchesAndPulls.
			if rh.QueueID != 1 || rh.QueueOffset != next {
				t.Errorf("queue %d offset %d, want 1 %d", rh.QueueID, rh.QueueOffset, next)
			}
			ids := strings.Split(rh.MsgID, ",")
			if len(ids) != 3 {
				t.Fatalf("msgId %q, want 3 ids", rh.MsgID)
			}
			for i := range 3 {
				rec := wiretest.StoredRecord(t, tb.Store(), "Batch", 1, next+int64(i))
				wiretest.CheckMsgID(t, tb.Addr, ids[i], rec.PhysicalOffset)
				if rec.QueueOffset != next+int64(i) || string(rec.Body) != fmt.Sprintf("m%d", i) || rec.Flag != int32(i) {
					t.Errorf("element %d stored at %d body %q flag %d", i, rec.QueueOffset, rec.Body, rec.Flag)
				}
				want := map[string]string{"TAGS": fmt.Sprintf("t%d", i), "CLUSTER": "DefaultCluster"}
				if diff := cmp.Diff(want, message.UnmarshalProperties(rec.Properties)); diff != "" {
					t.Errorf("element %d properties (-want +got):\n%s", i, diff)
				}
			}
			next += 3
		})
	}
}

func TestSendBatchRefused(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxMessageBytes = 1024 })
	tb.topics.Update(TopicConfig{TopicName: "Batch", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	elem := func(props map[string]string) []byte {
		return message.AppendBatchElement(nil, 0, []byte("x"), message.MarshalProperties(props))
	}
	cases := []struct {
		name   string
		topic  string
		mutate func(h *protocol.SendMessageRequestHeader)
		body   []byte
		code   int32
		remark string
	}{
		{"retry topic", "%RETRY%cg", nil, elem(nil), remoting.MessageIllegal, "does not support retry group"},
		{"prepared", "Batch", func(h *protocol.SendMessageRequestHeader) { h.SysFlag = message.TransactionPreparedType },
			elem(nil), remoting.MessageIllegal, "transaction"},
		{"delayed wrapper", "Batch", func(h *protocol.SendMessageRequestHeader) { h.Properties = "DELAY\x012\x02" },
			elem(nil), remoting.MessageIllegal, "delay"},
		{"delayed element", "Batch", nil, elem(map[string]string{"DELAY": "3"}), remoting.MessageIllegal, "delay"},
		{"garbage", "Batch", nil, []byte("not a batch at all, surely"), remoting.MessageIllegal, "batch"},
		{"empty", "Batch", nil, nil, remoting.MessageIllegal, "empty"},
		{"too large", "Batch", nil, bytes.Repeat(elem(nil), 60), remoting.MessageIllegal, "msg body length limit 1k"},
	}
	for trName, tr := range tb.Transports() {
		for _, c := range cases {
			t.Run(trName+"/"+c.name, func(t *testing.T) {
				h := wiretest.SendHeader(c.topic, 0, nil)
				h.Batch = true
				if c.mutate != nil {
					c.mutate(&h)
				}
				maxPhy := tb.Store().MaxPhyOffset()
				resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendBatchMessage, &h, c.body, remoting.SerializeJSON))
				wiretest.WantRefused(t, tb.Store(), resp, c.code, c.remark, maxPhy)
			})
		}
	}
}

func TestSendAutoCreate(t *testing.T) {
	tb := startTestBroker(t, nil)
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			cases := []struct {
				clientQueues, want int32
			}{{4, 4}, {16, 8}} // min(defaultTopicQueueNums, TBW102's 8 write queues)
			for _, c := range cases {
				topic := fmt.Sprintf("Auto_%s_%d", trName, c.clientQueues)
				h := wiretest.SendHeader(topic, 0, nil)
				h.DefaultTopicQueueNums = c.clientQueues
				wiretest.WantSendOK(t, invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON)))
				tc, ok := tb.topics.Get(topic)
				want := TopicConfig{TopicName: topic, ReadQueueNums: c.want, WriteQueueNums: c.want,
					Perm: route.PermReadWrite, TopicFilterType: route.FilterSingleTag}
				if !ok {
					t.Fatalf("topic %s not created", topic)
				}
				if diff := cmp.Diff(want, tc); diff != "" {
					t.Errorf("created topic (-want +got):\n%s", diff)
				}
				wiretest.StoredRecord(t, tb.Store(), topic, 0, 0)
			}
		})
	}
}

func TestSendTopicNotExist(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Broker.DisableAutoCreateTopic = true })
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			maxPhy := tb.Store().MaxPhyOffset()
			h := wiretest.SendHeader("Unknown", 0, nil)
			resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON))
			wiretest.WantRefused(t, tb.Store(), resp, remoting.TopicNotExist, "topic[Unknown] not exist, apply first please!", maxPhy)
			if _, ok := tb.topics.Get("Unknown"); ok {
				t.Error("topic created with auto-creation disabled")
			}
		})
	}
}

func TestSendRefused(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Limits.MaxMessageBytes = 1024 })
	tb.topics.Update(TopicConfig{TopicName: "Small", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
	tb.topics.Update(TopicConfig{TopicName: "ReadOnly", ReadQueueNums: 2, WriteQueueNums: 2, Perm: int32(route.PermRead)})
	long := strings.Repeat("t", 128)
	cases := []struct {
		name   string
		topic  string
		queue  int32
		props  map[string]string
		body   []byte
		code   int32
		remark string
	}{
		{"queue id", "Small", 2, nil, []byte("x"), remoting.SystemError, "request queueId[2] is illegal, TopicConfig [topicName=Small"},
		{"body over max", "Small", 0, nil, make([]byte, 1025), remoting.MessageIllegal, "msg body length limit 1k"},
		{"retry body over max", "%RETRY%cg", 0, nil, make([]byte, 1025), remoting.MessageIllegal, "msg body length limit 1k"},
		{"properties over 32767", "Small", 0, map[string]string{"big": strings.Repeat("p", 32767)}, []byte("x"),
			remoting.MessageIllegal, "properties length"},
		{"blank topic", " ", 0, nil, []byte("x"), remoting.SystemError, "The specified topic is blank."},
		{"illegal characters", "bad/topic", 0, nil, []byte("x"), remoting.SystemError, "illegal characters"},
		{"topic too long", long, 0, nil, []byte("x"), remoting.SystemError, "longer than topic max length"},
		{"TBW102", names.TopicAutoCreate, 0, nil, []byte("x"), remoting.SystemError, "conflict with system reserved words"},
		{"schedule topic", names.TopicSchedule, 0, nil, []byte("x"), remoting.NoPermission, "is forbidden"},
		{"not writable", "ReadOnly", 0, nil, []byte("x"), remoting.NoPermission, "the topic[ReadOnly] sending message is forbidden"},
	}
	for trName, tr := range tb.Transports() {
		for _, c := range cases {
			t.Run(trName+"/"+c.name, func(t *testing.T) {
				maxPhy := tb.Store().MaxPhyOffset()
				h := wiretest.SendHeader(c.topic, c.queue, c.props)
				resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, c.body, remoting.SerializeJSON))
				wiretest.WantRefused(t, tb.Store(), resp, c.code, c.remark, maxPhy)
			})
		}
	}
	if _, ok := tb.topics.Get(names.DLQTopic("cg")); ok {
		t.Error("a refused retry message created the DLQ topic")
	}
	t.Run("bad header", func(t *testing.T) {
		h := wiretest.SendHeader("Small", 0, nil)
		req := wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON)
		delete(req.ExtFields, "queueId")
		resp := invoke(t, tb.TCP, tb.Addr, req)
		wiretest.WantRefused(t, tb.Store(), resp, remoting.SystemError, "<queueId>", tb.Store().MaxPhyOffset())
	})
}

func TestSendRandomQueue(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "Rand", ReadQueueNums: 8, WriteQueueNums: 3, Perm: 6})
	for range 20 {
		h := wiretest.SendHeader("Rand", -1, nil)
		rh := wiretest.WantSendOK(t, invoke(t, tb.InProc, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON)))
		if rh.QueueID < 0 || rh.QueueID >= 3 {
			t.Fatalf("picked queue %d, want one of the 3 write queues", rh.QueueID)
		}
	}
}

func TestSendSlaveRefuses(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Broker.ID = 1 })
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			h := wiretest.SendHeader("T", 0, nil)
			resp := invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("x"), remoting.SerializeJSON))
			wiretest.WantRefused(t, tb.Store(), resp, remoting.ServiceNotAvailable, "sending message is forbidden", 0)
		})
	}
}

func TestSendRetryAndDLQ(t *testing.T) {
	tb := startTestBroker(t, nil)
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			group := "cg_" + trName
			retry := names.RetryTopic(group)
			send := func(reconsume, max int32, props map[string]string) protocol.SendMessageResponseHeader {
				h := wiretest.SendHeader(retry, 0, props)
				h.ProducerGroup = "CLIENT_INNER_PRODUCER"
				h.ReconsumeTimes, h.MaxReconsumeTimes = reconsume, max
				return wiretest.WantSendOK(t, invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("r"), remoting.SerializeJSON)))
			}
			// Below the max: stored in the retry topic, created from the group (1 queue).
			send(3, 16, map[string]string{"RETRY_TOPIC": "T"})
			if tc, ok := tb.topics.Get(retry); !ok || tc.WriteQueueNums != 1 || tc.Perm != route.PermReadWrite {
				t.Errorf("retry topic %+v (exists %t), want 1 read-write queue", tc, ok)
			}
			if rec := wiretest.StoredRecord(t, tb.Store(), retry, 0, 0); rec.ReconsumeTimes != 3 {
				t.Errorf("reconsume times %d, want 3", rec.ReconsumeTimes)
			}
			// At the header's max: to the DLQ, at once (DELAY dropped).
			send(16, 16, map[string]string{"RETRY_TOPIC": "T", "DELAY": "19"})
			// No max in the header: the group's retryMaxTimes (16) decides.
			send(16, -1, map[string]string{"RETRY_TOPIC": "T"})
			dlq := names.DLQTopic(group)
			// Read and write, as RocketMQ 4.9 creates it in this path too.
			if tc, ok := tb.topics.Get(dlq); !ok || tc.WriteQueueNums != 1 || tc.Perm != route.PermReadWrite {
				t.Errorf("DLQ topic %+v (exists %t), want 1 read-write queue", tc, ok)
			}
			for off := range int64(2) {
				rec := wiretest.StoredRecord(t, tb.Store(), dlq, 0, off)
				props := message.UnmarshalProperties(rec.Properties)
				if _, ok := props["DELAY"]; ok || props["RETRY_TOPIC"] != "T" || rec.ReconsumeTimes != 16 {
					t.Errorf("DLQ message %d: properties %v reconsume %d", off, props, rec.ReconsumeTimes)
				}
			}
			// A header max of 0 is a limit like any other; a client older than 3.4.9 has its
			// field ignored (the group's 16), as RocketMQ does.
			for _, version := range []int16{minMaxReconsumeTimesVersion - 1, remoting.ProtocolVersion} {
				h := wiretest.SendHeader(retry, 0, map[string]string{"RETRY_TOPIC": "T"})
				h.ProducerGroup, h.ReconsumeTimes, h.MaxReconsumeTimes = "CLIENT_INNER_PRODUCER", 3, 0
				req := wiretest.SendRequest(remoting.SendMessage, &h, []byte("v"), remoting.SerializeJSON)
				req.Version = version
				wiretest.WantSendOK(t, invoke(t, tr, tb.Addr, req))
			}
			if rec := wiretest.StoredRecord(t, tb.Store(), dlq, 0, 2); rec.ReconsumeTimes != 3 || string(rec.Body) != "v" {
				t.Errorf("DLQ message 2: reconsume %d body %q, want the current client's", rec.ReconsumeTimes, rec.Body)
			}
			// Stored before the DLQ message, so dispatched by now.
			if n := tb.Store().MaxOffsetInQueue(retry, 0); n != 2 {
				t.Errorf("retry queue holds %d messages, want 2 (the 3.4.8 client's went there)", n)
			}
		})
	}
}

func TestSendDelay(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "Delayed", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
	next := map[int32]int64{}
	for trName, tr := range tb.Transports() {
		cases := []struct{ level, wantLevel int }{{3, 3}, {99, len(storage.DefaultDelayLevels)}}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", trName, c.level), func(t *testing.T) {
				h := wiretest.SendHeader("Delayed", 2, map[string]string{"DELAY": strconv.Itoa(c.level), "TAGS": "a"})
				rh := wiretest.WantSendOK(t, invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("d"), remoting.SerializeJSON)))
				q := int32(c.wantLevel - 1)
				if rh.QueueID != 2 || rh.QueueOffset != next[q] {
					t.Errorf("answered queue %d offset %d, want 2 (as requested) and %d", rh.QueueID, rh.QueueOffset, next[q])
				}
				rec := wiretest.StoredRecord(t, tb.Store(), names.TopicSchedule, q, next[q])
				next[q]++
				wiretest.CheckMsgID(t, tb.Addr, rh.MsgID, rec.PhysicalOffset)
				want := map[string]string{"DELAY": strconv.Itoa(c.wantLevel), "TAGS": "a", "REAL_TOPIC": "Delayed",
					"REAL_QID": "2", "CLUSTER": "DefaultCluster"}
				if diff := cmp.Diff(want, message.UnmarshalProperties(rec.Properties)); diff != "" {
					t.Errorf("properties (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestSendTransactionPrepared(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.topics.Update(TopicConfig{TopicName: "Tx", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	props := map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": "U1", "DELAY": "2"}
	h := wiretest.SendHeader("Tx", 0, props)
	h.SysFlag = message.TransactionPreparedType
	rh := wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &h, []byte("half"), remoting.SerializeJSON)))
	if rh.TransactionID != "U1" {
		t.Errorf("transactionId %q, want the UNIQ_KEY", rh.TransactionID)
	}
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatalf("msgId %q: %v (the Go client panics on it)", rh.MsgID, err)
	}
	rec := wiretest.RecordAt(t, tb.Store(), phy)
	stored := message.UnmarshalProperties(rec.Properties)
	if string(rec.Topic) != names.TopicTransHalf || rec.QueueID != 0 || rec.SysFlag != message.TransactionNotType ||
		string(rec.Body) != "half" || stored["REAL_TOPIC"] != "Tx" || stored["REAL_QID"] != "0" || stored["DELAY"] != "2" {
		t.Errorf("half message stored as %s/%d sysFlag %d body %q properties %v, want the half queue with its "+
			"destination and its delay for the commit", rec.Topic, rec.QueueID, rec.SysFlag, rec.Body, stored)
	}
}

// TestTransactionHalfHiddenFromConsumers: RocketMQ 4.9 decides a half message by its TRAN_MSG
// property and moves it to RMQ_SYS_TRANS_HALF_TOPIC, so a consumer of the topic sees only the
// plain message sent after it.
func TestTransactionHalfHiddenFromConsumers(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "Tx", 1)
	for _, v := range []string{"true", "TRUE"} { // Java's Boolean.parseBoolean ignores case
		h := wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": v, "PGROUP": "pg", "UNIQ_KEY": "half-" + v})
		rh := wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("half"), remoting.SerializeJSON)))
		_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
		if err != nil {
			t.Fatal(err)
		}
		if rec := wiretest.RecordAt(t, tb.Store(), phy); string(rec.Topic) != names.TopicTransHalf {
			t.Errorf("TRAN_MSG=%s without the sysFlag bit stored in %s, want the half topic", v, rec.Topic)
		}
	}
	h := wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": "false", "UNIQ_KEY": "plain"})
	wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("plain"), remoting.SerializeJSON)))
	eventually(t, "dispatched", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	p := pullHeader("g", "Tx", 0, 0)
	p.SysFlag, p.Subscription = protocol.PullFlagSubscription, "*"
	r := pull(t, tb.TCP, tb.Addr, p)
	if r.code != remoting.Success || !slices.Equal(r.bodies, []string{"plain"}) || r.msgs[0].QueueOffset != 0 {
		t.Fatalf("pull: code %d bodies %q, want only the plain message at offset 0", r.code, r.bodies)
	}
}

// TestRejectTransactionMessage: with rejectTransactionMessage set a half message is refused
// like RocketMQ's SendMessageProcessor refuses it, and nothing is stored; plain messages and a
// pre-4.6.1 client's delayed retry that still carries TRAN_MSG go through.
func TestRejectTransactionMessage(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Transactions.Reject = true })
	addTopic(tb, "Tx", 1)
	h := wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": "U1"})
	h.SysFlag = message.TransactionPreparedType
	resp := invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("half"), remoting.SerializeJSON))
	want := "the broker[" + tb.storeHost.Addr().String() + "] sending transaction message is forbidden"
	if resp.Code != remoting.NoPermission || resp.Remark != want {
		t.Fatalf("code %d remark %q, want NO_PERMISSION %q", resp.Code, resp.Remark, want)
	}
	if resp.Ext(message.PropertyMsgRegion) != defaultRegion {
		t.Errorf("refusal without MSG_REGION: %v", resp.ExtFields)
	}
	if max := tb.Store().MaxPhyOffset(); max != 0 {
		t.Fatalf("refused half message stored: log ends at %d", max)
	}
	h = wiretest.SendHeader("Tx", 0, map[string]string{"TRAN_MSG": "true", "DELAY": "3", "UNIQ_KEY": "U2"})
	h.ReconsumeTimes = 1
	wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("retry"), remoting.SerializeJSON)))
	h = wiretest.SendHeader("Tx", 0, map[string]string{"UNIQ_KEY": "U3"})
	wiretest.WantSendOK(t, invoke(t, tb.TCP, tb.Addr, wiretest.SendRequest(remoting.SendMessageV2, &h, []byte("plain"), remoting.SerializeJSON)))
}
