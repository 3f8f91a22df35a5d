package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// TestSendBackTraversalRefused is the attack from issue 10: CONSUMER_SEND_MSG_BACK over TCP
// with group "../../../../x/pwn" and delay level -1 made the broker store a dead letter in
// %DLQ%../../../../x/pwn, whose ConsumeQueue directory was created outside the store. It must
// be refused naming the group, and nothing may appear outside the store directory.
func TestSendBackTraversalRefused(t *testing.T) {
	tb := startTestBroker(t, nil)
	orig := sbPut(t, tb, "T", 0, "victim", nil, 0)
	const group = "../../../../x/pwn"
	resp := sbSendBack(t, tb.TCP, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group,
		Offset: orig.PhyOffset, DelayLevel: -1, OriginTopic: "T", MaxReconsumeTimes: 16, BrokerName: "broker-a"})
	if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "group: ") ||
		!strings.Contains(resp.Remark, `"../../../../x/pwn"`) {
		t.Fatalf("send back: code %d remark %q", resp.Code, resp.Remark)
	}
	// Whatever was stored is dispatched before we look (without the guard, the dead letter's
	// queue directory appears on dispatch).
	eventually(t, "dispatch", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	assertInsideStore(t, tb)
	for _, topic := range []string{names.RetryTopic(group), names.DLQTopic(group)} {
		if _, ok := tb.topics.Get(topic); ok {
			t.Errorf("topic %q created", topic)
		}
	}
	if _, ok := tb.groups.Get(group); ok {
		t.Errorf("group %q created", group)
	}
}

// assertInsideStore fails when anything exists next to the store directory (t.TempDir()'s
// parent holds only this test's directories) or when the broker's tables hold an invalid name.
func assertInsideStore(t *testing.T, tb *testBroker) {
	t.Helper()
	parent := filepath.Dir(tb.Dir)
	err := filepath.WalkDir(parent, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == parent || path == tb.Dir {
			return nil
		}
		if rel, _ := filepath.Rel(tb.Dir, path); strings.HasPrefix(rel, "..") {
			if d.IsDir() && filepath.Dir(path) == parent && strings.HasPrefix(d.Name(), "0") {
				return filepath.SkipDir // another t.TempDir() of this test
			}
			t.Errorf("%s created outside the store", path)
		}
		if d.Name() == "pwn" {
			t.Errorf("%s created", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range tb.topics.Names() {
		if err := names.CheckTopic(topic); err != nil {
			t.Errorf("topic table holds %v", err)
		}
	}
	for group := range tb.groups.Snapshot().SubscriptionGroupTable {
		if err := names.CheckGroup(group); err != nil {
			t.Errorf("group table holds %v", err)
		}
	}
}

// rowKind is the rule a test row's field follows.
type rowKind int

const (
	rowTopic rowKind = iota
	rowGroup
	rowRetryGroup // a consumer group the broker builds %RETRY% topics from
)

// guardRow is one name-carrying field of one request code.
type guardRow struct {
	name  string
	code  int32
	field string // the remark must name it
	kind  rowKind
	// key is the header key ("" for a body field): an empty value is the header decoder's to
	// refuse, naming "<key>".
	key string
	// optional: an empty value means "absent" and is accepted.
	optional bool
	// build returns the request with v in the field (all other names valid).
	build func(v string) *remoting.Command
}

// header builds a request whose header h carries v under key (after encoding).
func hdrRow(name string, code int32, key string, kind rowKind, optional bool, h remoting.Header) guardRow {
	return guardRow{name: name, code: code, field: key, key: key, kind: kind, optional: optional,
		build: func(v string) *remoting.Command {
			ext := remoting.EncodeHeader(h)
			ext[key] = v
			return remoting.NewRequest(code, ext, nil)
		}}
}

// bodyRow is a name in a request body.
func bodyRow(name string, code int32, field string, kind rowKind, build func(string) *remoting.Command) guardRow {
	return guardRow{name: name, code: code, field: field, kind: kind, build: build}
}

func sendRow(code int32, key, field string, kind rowKind, optional bool) guardRow {
	return guardRow{name: fmt.Sprintf("send code %d", code), code: code, field: field, key: key, kind: kind,
		optional: optional, build: func(v string) *remoting.Command {
			h := wiretest.SendHeader("T", 0, nil)
			req := wiretest.SendRequest(code, &h, []byte("x"), remoting.SerializeJSON)
			req.ExtFields[key] = v
			return req
		}}
}

func jsonBody(code int32, v any) *remoting.Command {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return remoting.NewRequest(code, map[string]string{}, b)
}

func guardRows() []guardRow {
	noSuspend := func(group, topic string) *protocol.PullMessageRequestHeader {
		h := pullHeader(group, topic, 0, 0)
		h.SysFlag = 0 // never parked: answered at once
		return h
	}
	rows := []guardRow{
		sendRow(remoting.SendMessage, "topic", "topic", rowTopic, false),
		sendRow(remoting.SendMessage, "producerGroup", "producerGroup", rowGroup, false),
		sendRow(remoting.SendMessage, "defaultTopic", "defaultTopic", rowTopic, false),
		sendRow(remoting.SendMessageV2, "b", "topic", rowTopic, false),
		sendRow(remoting.SendMessageV2, "a", "producerGroup", rowGroup, false),
		sendRow(remoting.SendMessageV2, "c", "defaultTopic", rowTopic, false),
		sendRow(remoting.SendBatchMessage, "b", "topic", rowTopic, false),
		sendRow(remoting.SendBatchMessage, "a", "producerGroup", rowGroup, false),
		hdrRow("send back group", remoting.ConsumerSendMsgBack, "group", rowRetryGroup, false,
			&protocol.ConsumerSendMsgBackRequestHeader{Group: "cg",
				Offset: 0, DelayLevel: -1, OriginTopic: "T"}),
		hdrRow("send back origin topic", remoting.ConsumerSendMsgBack, "originTopic", rowTopic, true,
			&protocol.ConsumerSendMsgBackRequestHeader{Group: "cg",
				Offset: 1 << 40, DelayLevel: -1, OriginTopic: "T"}),
		hdrRow("pull group", remoting.PullMessage, "consumerGroup", rowGroup, false,
			noSuspend("cg", "T")),
		hdrRow("pull topic", remoting.PullMessage, "topic", rowTopic, false,
			noSuspend("cg", "T")),
		hdrRow("query message topic", remoting.QueryMessage, "topic", rowTopic, false,
			&protocol.QueryMessageRequestHeader{Topic: "T", Key: "k", MaxNum: 1,
				EndTimestamp: 1}),
		hdrRow("query offset group", remoting.QueryConsumerOffset, "consumerGroup", rowGroup, false,
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg",
				Topic: "T"}),
		hdrRow("query offset topic", remoting.QueryConsumerOffset, "topic", rowTopic, false,
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg",
				Topic: "T"}),
		hdrRow("update offset group", remoting.UpdateConsumerOffset, "consumerGroup", rowGroup, false,
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg",
				Topic: "T", CommitOffset: 1}),
		hdrRow("update offset topic", remoting.UpdateConsumerOffset, "topic", rowTopic, false,
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg",
				Topic: "T", CommitOffset: 1}),
		hdrRow("search offset topic", remoting.SearchOffsetByTimestamp, "topic", rowTopic, false,
			&protocol.SearchOffsetRequestHeader{Topic: "T"}),
		{name: "search offset Topic", code: remoting.SearchOffsetByTimestamp, field: "Topic", key: "Topic",
			kind: rowTopic, optional: true, build: func(v string) *remoting.Command {
				ext := remoting.EncodeHeader(&protocol.SearchOffsetRequestHeader{Topic: "T"})
				delete(ext, "topic")
				ext["Topic"] = v
				return remoting.NewRequest(remoting.SearchOffsetByTimestamp, ext, nil)
			}},
		hdrRow("max offset topic", remoting.GetMaxOffset, "topic", rowTopic, false,
			&protocol.QueueHeader{Topic: "T"}),
		hdrRow("min offset topic", remoting.GetMinOffset, "topic", rowTopic, false,
			&protocol.QueueHeader{Topic: "T"}),
		hdrRow("earliest time topic", remoting.GetEarliestMsgStoreTime, "topic", rowTopic, false,
			&protocol.QueueHeader{Topic: "T"}),
		hdrRow("unregister producer group", remoting.UnregisterClient, "producerGroup", rowGroup, true,
			&protocol.UnregisterClientRequestHeader{ClientID: "c1"}),
		hdrRow("unregister consumer group", remoting.UnregisterClient, "consumerGroup", rowGroup, true,
			&protocol.UnregisterClientRequestHeader{ClientID: "c1"}),
		hdrRow("consumer list group", remoting.GetConsumerListByGroup, "consumerGroup", rowGroup, false,
			&protocol.ConsumerGroupHeader{ConsumerGroup: "cg"}),
		hdrRow("create topic", remoting.UpdateAndCreateTopic, "topic", rowTopic, false,
			goAdminCreate("T")),
		hdrRow("create topic default", remoting.UpdateAndCreateTopic, "defaultTopic", rowTopic, true,
			goAdminCreate("T")),
		hdrRow("delete topic", remoting.DeleteTopicInBroker, "topic", rowTopic, false,
			&protocol.DeleteTopicRequestHeader{Topic: "Gone"}),
		bodyRow("heartbeat producer group", remoting.HeartBeat, "producerDataSet[0].groupName", rowGroup,
			func(v string) *remoting.Command {
				return jsonBody(remoting.HeartBeat, protocol.HeartbeatData{ClientID: "c1",
					ProducerDataSet: []protocol.ProducerData{{GroupName: v}}})
			}),
		bodyRow("heartbeat consumer group", remoting.HeartBeat, "consumerDataSet[0].groupName", rowRetryGroup,
			func(v string) *remoting.Command { return wiretest.HeartbeatCmd("c1", v, wiretest.Sub("T", "*")) }),
		bodyRow("heartbeat subscription topic", remoting.HeartBeat, "consumerDataSet[0].subscriptionDataSet[1].topic",
			rowTopic, func(v string) *remoting.Command {
				return wiretest.HeartbeatCmd("c1", "cg", wiretest.Sub("T", "*"), wiretest.Sub(v, "*"))
			}),
	}
	for _, code := range []int32{remoting.LockBatchMQ, remoting.UnlockBatchMQ} {
		rows = append(rows,
			bodyRow(fmt.Sprintf("lock code %d group", code), code, "consumerGroup", rowGroup,
				func(v string) *remoting.Command {
					return lockCmd(code, v, "c1", protocol.MessageQueue{Topic: "T", BrokerName: "broker-a"})
				}),
			bodyRow(fmt.Sprintf("lock code %d topic", code), code, "mqSet[1].topic", rowTopic,
				func(v string) *remoting.Command {
					return lockCmd(code, "cg", "c1", protocol.MessageQueue{Topic: "T", BrokerName: "broker-a"},
						protocol.MessageQueue{Topic: v, BrokerName: "broker-a"})
				}))
	}
	return rows
}

// limits returns the longest valid value and the shortest too long one of a row's kind.
func (k rowKind) limits() (longestValid, tooLong string) {
	switch k {
	case rowTopic:
		return strings.Repeat("t", 127), strings.Repeat("t", 128)
	case rowGroup:
		return strings.Repeat("g", 255), strings.Repeat("g", 256)
	default:
		return strings.Repeat("g", 120), strings.Repeat("g", 121)
	}
}

// namesRefusal reports whether a remark is one of the name checks' refusals.
func namesRefusal(remark string) bool {
	for _, s := range []string{"illegal characters", "max length", "too long for a consumer group", " is empty",
		"is blank", "longer than topic max length", " is null", "without groupName"} {
		if strings.Contains(remark, s) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestRequestNamesGuarded runs every name-carrying field of every request code with bad names
// over TCP (headers as JSON and as RocketMQ's binary serialization): each is refused with
// SYSTEM_ERROR and a remark naming the field, the remark is ASCII (so valid UTF-8 on the wire
// whatever the name held), and afterwards nothing exists outside the store and no table holds
// a bad name. The longest valid names (127-byte topic, 255-byte group, 120-byte consumer group
// where a retry topic is built) pass the guard.
func TestRequestNamesGuarded(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	for _, row := range guardRows() {
		longest, tooLong := row.kind.limits()
		bad := map[string]string{"slash": "a/b", "dotdot": "..", "at": "T@g", "too long": tooLong,
			"invalid utf8": "T\xff\xfe", "traversal": "../../../../x/pwn"}
		if !row.optional {
			bad["empty"] = ""
		}
		for _, ser := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			for _, badName := range slices.Sorted(maps.Keys(bad)) {
				t.Run(fmt.Sprintf("%s/%s/%s/ser%d", row.name, row.field, badName, ser), func(t *testing.T) {
					req := row.build(bad[badName])
					req.Serialize = ser
					resp := invoke(t, tb.TCP, tb.Addr, req)
					wantField := row.field
					if badName == "empty" && row.key != "" {
						wantField = "<" + row.key + ">"
					}
					if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, wantField) || !namesRefusal(resp.Remark) {
						t.Fatalf("code %d remark %q, want SYSTEM_ERROR naming %s", resp.Code, resp.Remark, wantField)
					}
					if !isASCII(resp.Remark) || len(resp.Remark) > 512 {
						t.Errorf("remark of %d bytes is not short ASCII: %q", len(resp.Remark), resp.Remark)
					}
				})
			}
		}
		t.Run(row.name+"/"+row.field+"/longest valid", func(t *testing.T) {
			resp := invoke(t, tb.TCP, tb.Addr, row.build(longest))
			if namesRefusal(resp.Remark) {
				t.Fatalf("%d-byte name refused: code %d remark %q", len(longest), resp.Code, resp.Remark)
			}
		})
	}
	eventually(t, "dispatch", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	assertInsideStore(t, tb)
}

// TestEveryProcessorHasANameEntry: a processor registered for a code requestNames does not
// list would serve names nobody checked; handle warns about it at registration.
func TestEveryProcessorHasANameEntry(t *testing.T) {
	var buf syncBuffer
	startTestBroker(t, func(o *Options) {
		l := zerolog.New(&buf).Level(zerolog.WarnLevel)
		o.Logger = &l
	})
	if s := buf.String(); strings.Contains(s, "requestNames") {
		t.Fatalf("codes without a name entry:\n%s", s)
	}
	// The guard really warns (the test above would pass with a silent guard).
	var warned syncBuffer
	l := zerolog.New(&warned)
	b := &Broker{log: l}
	b.handle(remoting.NewDispatcher(&l), 9999, remoting.ProcessorFunc(nil), nil)
	if !strings.Contains(warned.String(), "requestNames") {
		t.Fatal("no warning for an unlisted code")
	}
}

// syncBuffer is a bytes.Buffer safe for the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBrokerNamesMustBeTopics: the broker serves topics named after its cluster and itself, so
// names no name server would route are refused at New.
func TestBrokerNamesMustBeTopics(t *testing.T) {
	for _, c := range []struct{ cluster, broker, field string }{
		{"DefaultCluster", "broker.a", "Broker.Name"},
		{"my cluster", "broker-a", "Broker.ClusterName"},
		{strings.Repeat("c", 116), "broker-a", "Broker.ClusterName"}, // + _REPLY_TOPIC is 128 bytes
	} {
		opts := testOptions(t, t.TempDir())
		opts.BrokerAddr, opts.Broker.ClusterName, opts.Broker.Name = "127.0.0.1:10911", c.cluster, c.broker
		if b, err := New(opts); err == nil || !strings.Contains(err.Error(), c.field) {
			if b != nil {
				b.Close()
			}
			t.Errorf("cluster %q broker %q: %v, want an error naming %s", c.cluster, c.broker, err, c.field)
		}
	}
}

// guardedSendAndPull are the core's guards (reqnames over the core's send answers) of
// SEND_MESSAGE_V2 and PULL_MESSAGE in front of a processor that answers nothing, and a valid
// request of each.
func guardedSendAndPull() (send, pull remoting.Processor, sendReq, pullReq *remoting.Command) {
	h := wiretest.SendHeader("BenchTopic", 0, nil)
	sendReq = wiretest.SendRequest(remoting.SendMessageV2, &h, nil, remoting.SerializeJSON)
	pullReq = pullCmd(pullHeader("cg", "%RETRY%cg", 0, 0))
	pass := remoting.ProcessorFunc(func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return nil, nil
	})
	sendFields, _ := reqnames.Fields(remoting.SendMessageV2)
	pullFields, _ := reqnames.Fields(remoting.PullMessage)
	return guardNames(remoting.SendMessageV2, sendFields, pass), guardNames(remoting.PullMessage, pullFields, pass), sendReq, pullReq
}

// TestGuardDoesNotAllocate: checking valid names is a byte loop on the send and pull paths.
func TestGuardDoesNotAllocate(t *testing.T) {
	send, pull, sendReq, pullReq := guardedSendAndPull()
	ctx := t.Context()
	n := testing.AllocsPerRun(100, func() {
		r1, _ := send.ProcessRequest(ctx, nil, sendReq)
		r2, _ := pull.ProcessRequest(ctx, nil, pullReq)
		if r1 != nil || r2 != nil {
			t.Fatal("refused")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}

// BenchmarkGuardSend measures the guard on a send header: three names, no allocation.
func BenchmarkGuardSend(b *testing.B) {
	send, _, req, _ := guardedSendAndPull()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := send.ProcessRequest(ctx, nil, req); r != nil {
			b.Fatal("refused")
		}
	}
}

// lockCmd is a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ of mqs (internal/broker/locks serves them).
func lockCmd(code int32, group, client string, mqs ...protocol.MessageQueue) *remoting.Command {
	body, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: client, MQSet: mqs})
	return remoting.NewRequest(code, nil, body)
}
