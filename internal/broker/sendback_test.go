package broker

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/names"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// sbDelays are delay levels for tests: level 3 (the first retry) is long enough to see the
// message wait, short enough to keep the test fast.
var sbDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond,
	500 * time.Millisecond, 600 * time.Millisecond}

func sbWithDelays(o *Options) { o.Timers.DelayLevels = sbDelays }

var sbBornHost = netip.MustParseAddrPort("10.1.2.3:45678")

// sbPut stores a message straight into the store and returns where it went.
func sbPut(t *testing.T, tb *testBroker, topic string, qid int32, body string, props map[string]string, reconsume int32) storage.PutResult {
	t.Helper()
	m := &storage.Message{Topic: topic, QueueID: qid, Body: []byte(body), Flag: 7,
		Properties: message.MarshalProperties(props), BornTimestamp: time.Now().UnixMilli() - 1000,
		BornHost: sbBornHost, StoreHost: tb.storeHost, ReconsumeTimes: reconsume}
	res, err := tb.Store().PutMessage(m)
	if err != nil {
		t.Fatalf("put %s: %v", topic, err)
	}
	return res
}

// sbRecord is a decoded copy of a stored record.
type sbRecord struct {
	message.Record
	Props map[string]string
}

// sbRead returns the message at a queue offset, waiting until it is dispatched.
func sbRead(t *testing.T, tb *testBroker, topic string, qid int32, off int64) sbRecord {
	t.Helper()
	eventually(t, topic+" message dispatched", func() bool { return tb.Store().MaxOffsetInQueue(topic, qid) > off })
	r := tb.Store().GetMessage("", topic, qid, off, 1, 0, nil)
	defer r.Release()
	if r.Status != storage.Found {
		t.Fatalf("get %s/%d@%d: %v", topic, qid, off, r.Status)
	}
	raw := append([]byte(nil), r.Messages[0]...)
	var rec sbRecord
	if _, err := message.DecodeRecord(raw, &rec.Record, true); err != nil {
		t.Fatal(err)
	}
	rec.Props = message.UnmarshalProperties(rec.Properties)
	return rec
}

func sbSendBack(t *testing.T, tr remoting.Transport, tb *testBroker, h protocol.ConsumerSendMsgBackRequestHeader) *remoting.Command {
	t.Helper()
	return invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(&h), nil))
}

func TestSendBackArrivesOnRetryTopicAfterDelay(t *testing.T) {
	tb := startTestBroker(t, sbWithDelays)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group, topic := "cg_"+name, "T_"+name
			retry := names.RetryTopic(group)
			orig := sbPut(t, tb, topic, 0, "hello", map[string]string{
				message.PropertyUniqKey: "UNIQ-" + name, message.PropertyTags: "TagA", message.PropertyKeys: "k1"}, 0)
			schedBefore := tb.Store().MaxOffsetInQueue(names.TopicSchedule, 2)
			sent := time.Now()
			resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: orig.PhyOffset,
				OriginMsgID: "ORIGIN-" + name, OriginTopic: topic, MaxReconsumeTimes: 16, BrokerName: "broker-a"})
			if resp.Code != remoting.Success {
				t.Fatalf("send back: %d %s", resp.Code, resp.Remark)
			}
			tc, ok := tb.topics.Get(retry)
			if !ok || tc.WriteQueueNums != 1 || tc.Perm != int32(route.PermReadWrite) {
				t.Fatalf("retry topic %+v %v", tc, ok)
			}
			// Level 3 + 0 reconsumes = 400 ms: it waits in the schedule topic first.
			sched := sbRead(t, tb, names.TopicSchedule, 2, schedBefore)
			if n := tb.Store().MaxOffsetInQueue(retry, 0); n != 0 && time.Since(sent) < 300*time.Millisecond {
				t.Fatalf("retry message visible after %v", time.Since(sent))
			}
			if sched.Props[message.PropertyRealTopic] != retry || sched.Props[message.PropertyRealQueueID] != "0" ||
				sched.Props[message.PropertyDelayTimeLevel] != "3" {
				t.Fatalf("scheduled copy properties %v", sched.Props)
			}
			got := sbRead(t, tb, retry, 0, 0)
			if waited := got.StoreTimestamp - sched.StoreTimestamp; waited < 400 {
				t.Errorf("delivered %d ms after scheduling, want >= 400", waited)
			}
			if string(got.Topic) != retry || string(got.Body) != "hello" || got.Flag != 7 || got.ReconsumeTimes != 1 ||
				got.BornHost != sbBornHost || got.StoreHost != tb.storeHost {
				t.Errorf("retry record: topic %s body %q flag %d reconsume %d born %v store %v", got.Topic, got.Body,
					got.Flag, got.ReconsumeTimes, got.BornHost, got.StoreHost)
			}
			want := map[string]string{
				message.PropertyRetryTopic:      topic,
				message.PropertyOriginMessageID: "ORIGIN-" + name,
				message.PropertyUniqKey:         "UNIQ-" + name,
				message.PropertyTags:            "TagA",
				message.PropertyKeys:            "k1",
				message.PropertyRealTopic:       retry,
			}
			for k, v := range want {
				if got.Props[k] != v {
					t.Errorf("property %s = %q, want %q (all: %v)", k, got.Props[k], v, got.Props)
				}
			}
			if _, ok := got.Props[message.PropertyDelayTimeLevel]; ok {
				t.Errorf("delivered message keeps DELAY: %v", got.Props)
			}

			// Failing again: the retried message goes back with RETRY_TOPIC and
			// ORIGIN_MESSAGE_ID kept, one more reconsume, at level 4.
			resp = sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group,
				Offset: got.PhysicalOffset, OriginMsgID: "other", MaxReconsumeTimes: 16})
			if resp.Code != remoting.Success {
				t.Fatalf("second send back: %d %s", resp.Code, resp.Remark)
			}
			again := sbRead(t, tb, retry, 0, 1)
			if again.ReconsumeTimes != 2 || again.Props[message.PropertyRetryTopic] != topic ||
				again.Props[message.PropertyOriginMessageID] != "ORIGIN-"+name {
				t.Errorf("second retry: reconsume %d props %v", again.ReconsumeTimes, again.Props)
			}
		})
	}
}

func TestSendBackDeadLetters(t *testing.T) {
	tb := startTestBroker(t, sbWithDelays)
	tr := tb.InProc
	const group = "cg"
	dlq := names.DLQTopic(group)

	// The 17th failure: reconsumed 16 times with a maximum of 16.
	m := sbPut(t, tb, names.RetryTopic(group), 0, "tired", map[string]string{
		message.PropertyRetryTopic: "T", message.PropertyOriginMessageID: "FIRST"}, 16)
	resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset,
		OriginMsgID: "X", MaxReconsumeTimes: 16})
	if resp.Code != remoting.Success {
		t.Fatalf("send back: %d %s", resp.Code, resp.Remark)
	}
	tc, ok := tb.topics.Get(dlq)
	// Read and write (6), as RocketMQ 4.9 creates it: the dead letters can be consumed.
	if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != int32(route.PermReadWrite) {
		t.Fatalf("DLQ topic %+v %v", tc, ok)
	}
	got := sbRead(t, tb, dlq, 0, 0)
	if got.ReconsumeTimes != 17 || string(got.Body) != "tired" || got.Props[message.PropertyRetryTopic] != "T" ||
		got.Props[message.PropertyOriginMessageID] != "FIRST" {
		t.Errorf("dead letter: reconsume %d body %q props %v", got.ReconsumeTimes, got.Body, got.Props)
	}
	if _, ok := got.Props[message.PropertyDelayTimeLevel]; ok {
		t.Errorf("dead letter has DELAY: %v", got.Props)
	}

	// delayLevel -1 (orderly consumer past its maximum) goes straight to the DLQ.
	m = sbPut(t, tb, "T", 0, "ordered", nil, 0)
	resp = sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset,
		DelayLevel: -1, MaxReconsumeTimes: 16})
	if resp.Code != remoting.Success {
		t.Fatalf("send back -1: %d %s", resp.Code, resp.Remark)
	}
	got = sbRead(t, tb, dlq, 0, 1)
	if string(got.Body) != "ordered" || got.ReconsumeTimes != 1 {
		t.Errorf("dead letter -1: body %q reconsume %d", got.Body, got.ReconsumeTimes)
	}

	// Without maxReconsumeTimes the group's retryMaxTimes (16) applies: 15 retries, 16 dies.
	schedBefore := tb.Store().MaxOffsetInQueue(names.TopicSchedule, int32(len(sbDelays)-1))
	m = sbPut(t, tb, "T", 0, "fifteen", nil, 15)
	if resp = sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset,
		MaxReconsumeTimes: -1}); resp.Code != 0 {
		t.Fatalf("send back 15: %d %s", resp.Code, resp.Remark)
	}
	// 3 + 15 is past the last level: capped to it.
	sched := sbRead(t, tb, names.TopicSchedule, int32(len(sbDelays)-1), schedBefore)
	if string(sched.Body) != "fifteen" || sched.Props[message.PropertyDelayTimeLevel] != "5" {
		t.Errorf("capped level: body %q props %v", sched.Body, sched.Props)
	}
	m = sbPut(t, tb, "T", 0, "sixteen", nil, 16)
	if resp = sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset,
		MaxReconsumeTimes: -1}); resp.Code != 0 {
		t.Fatalf("send back 16: %d %s", resp.Code, resp.Remark)
	}
	if got = sbRead(t, tb, dlq, 0, 2); string(got.Body) != "sixteen" {
		t.Errorf("third dead letter %q", got.Body)
	}
}

// An explicit maxReconsumeTimes of 0 is the limit, as RocketMQ 4.9 takes whatever the header
// carries: a first failure goes straight to the DLQ. A request without the field, or from a
// client older than 3.4.9 (whose field RocketMQ ignores), falls back to the group's
// retryMaxTimes and is retried.
func TestSendBackMaxReconsumeTimesZero(t *testing.T) {
	tb := startTestBroker(t, sbWithDelays)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "zero_" + name
			dlq, retry := names.DLQTopic(group), names.RetryTopic(group)
			m := sbPut(t, tb, "T", 0, "first failure", nil, 0)
			h := protocol.ConsumerSendMsgBackRequestHeader{Group: group, Offset: m.PhyOffset, MaxReconsumeTimes: 0}
			if resp := sbSendBack(t, tr, tb, h); resp.Code != remoting.Success {
				t.Fatalf("send back with max 0: %d %s", resp.Code, resp.Remark)
			}
			if got := sbRead(t, tb, dlq, 0, 0); string(got.Body) != "first failure" || got.ReconsumeTimes != 1 {
				t.Errorf("dead letter: body %q reconsume %d", got.Body, got.ReconsumeTimes)
			}

			// The same request from a 3.4.8 client: the group's 16 decides, so a retry.
			schedBefore := tb.Store().MaxOffsetInQueue(names.TopicSchedule, 2)
			req := remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(&h), nil)
			req.Version = minMaxReconsumeTimesVersion - 1
			if resp := invoke(t, tr, tb.Addr, req); resp.Code != remoting.Success {
				t.Fatalf("send back from an old client: %d %s", resp.Code, resp.Remark)
			}
			// Without the field at all: the same.
			req = remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(&h), nil)
			delete(req.ExtFields, "maxReconsumeTimes")
			if resp := invoke(t, tr, tb.Addr, req); resp.Code != remoting.Success {
				t.Fatalf("send back without the field: %d %s", resp.Code, resp.Remark)
			}
			for i := range int64(2) {
				sched := sbRead(t, tb, names.TopicSchedule, 2, schedBefore+i)
				if sched.Props[message.PropertyRealTopic] != retry {
					t.Errorf("copy %d scheduled for %q, want the retry topic", i, sched.Props[message.PropertyRealTopic])
				}
			}
			if n := tb.Store().MaxOffsetInQueue(dlq, 0); n != 1 {
				t.Errorf("DLQ holds %d messages, want only the first", n)
			}
		})
	}
}

func TestSendBackErrors(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.DisableAutoCreateSubscriptionGroup = true })
	tb.groups.Update(NewSubscriptionGroupConfig("known"))
	m := sbPut(t, tb, "T", 0, "x", nil, 0)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: "unknown", Offset: m.PhyOffset})
			if resp.Code != remoting.SubscriptionGroupNotExist || !strings.Contains(resp.Remark, "unknown") {
				t.Errorf("unknown group: %d %q", resp.Code, resp.Remark)
			}
			bad := m.PhyOffset + 1<<20
			resp = sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: "known", Offset: bad})
			if resp.Code != remoting.SystemError || resp.Remark != "look message by offset failed, 1048576" {
				t.Errorf("bad offset: %d %q", resp.Code, resp.Remark)
			}
			req := remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{"group": "known"}, nil)
			if resp = invoke(t, tr, tb.Addr, req); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "offset") {
				t.Errorf("missing offset: %d %q", resp.Code, resp.Remark)
			}
		})
	}
	if _, ok := tb.topics.Get(names.RetryTopic("unknown")); ok {
		t.Error("retry topic created for an unknown group")
	}
}

func TestSendBackSlaveAndDisabledRetries(t *testing.T) {
	slave := startTestBroker(t, func(o *Options) { o.Broker.ID = 1 })
	resp := sbSendBack(t, slave.InProc, slave, protocol.ConsumerSendMsgBackRequestHeader{Group: "g", Offset: 0})
	if resp.Code != remoting.ServiceNotAvailable {
		t.Errorf("slave: %d %q", resp.Code, resp.Remark)
	}

	tb := startTestBroker(t, nil)
	c := NewSubscriptionGroupConfig("noretry")
	c.RetryQueueNums = 0
	tb.groups.Update(c)
	m := sbPut(t, tb, "T", 0, "x", nil, 0)
	maxPhy := tb.Store().MaxPhyOffset()
	resp = sbSendBack(t, tb.TCP, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: "noretry", Offset: m.PhyOffset})
	if resp.Code != remoting.Success {
		t.Errorf("retries disabled: %d %q", resp.Code, resp.Remark)
	}
	if _, ok := tb.topics.Get(names.RetryTopic("noretry")); ok || tb.Store().MaxPhyOffset() != maxPhy {
		t.Error("a group without retry queues got a retry topic or a stored copy")
	}
}

// A send-back is answered SUCCESS only once its copy is as durable as a send: on a SYNC_MASTER
// with no slave to hold it, the copy is stored but the consumer is told to consume the message
// again. RocketMQ stores the copy with WAIT=false and answers at once; a crash or a failover
// then lost a message the consumer had handed back (internal/sim, seed 54).
func TestSendBackWaitsForReplication(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		sbWithDelays(o)
		o.Broker.Role = storage.SyncMaster
		o.HA.SyncFlushTimeout = 100 * time.Millisecond
	})
	tr := tb.Transports()["tcp"]
	orig := sbPut(t, tb, "T", 0, "hello", map[string]string{message.PropertyUniqKey: "U1", message.PropertyWaitStoreMsgOK: "false"}, 0)
	schedBefore := tb.Store().MaxOffsetInQueue(names.TopicSchedule, 2)
	resp := sbSendBack(t, tr, tb, protocol.ConsumerSendMsgBackRequestHeader{Group: "cg", Offset: orig.PhyOffset,
		OriginMsgID: "U1", OriginTopic: "T", MaxReconsumeTimes: 16, BrokerName: "broker-a"})
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "SLAVE_NOT_AVAILABLE") {
		t.Fatalf("send-back with no slave: %d %q, want SYSTEM_ERROR naming SLAVE_NOT_AVAILABLE", resp.Code, resp.Remark)
	}
	copyRec := sbRead(t, tb, names.TopicSchedule, 2, schedBefore)
	if _, ok := copyRec.Props[message.PropertyWaitStoreMsgOK]; ok {
		t.Fatalf("the copy carries WAIT=%s: its put would not wait for durability", copyRec.Props[message.PropertyWaitStoreMsgOK])
	}
}
