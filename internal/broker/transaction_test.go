package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// sendHalf stores a prepared message for topic Tx queue 0 and returns the send answer.
func sendHalf(t *testing.T, tb *testBroker, uniq string) protocol.SendMessageResponseHeader {
	t.Helper()
	h := goSendHeader("Tx", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": uniq})
	return wantSendOK(t, invoke(t, tb.TCP, tb.Addr, sendRequest(remoting.SendMessageV2, &h, []byte(uniq), remoting.SerializeJSON)))
}

// endTxCmd is the END_TRANSACTION a producer sends for the half message at the offsets.
func endTxCmd(queueOffset, phyOffset int64, decision int32, fromCheck bool) *remoting.Command {
	h := protocol.EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: queueOffset,
		CommitLogOffset: phyOffset, CommitOrRollback: decision, FromTransactionCheck: fromCheck, MsgID: "m"}
	ext := map[string]string{}
	h.Encode(ext)
	return remoting.NewRequest(remoting.EndTransaction, ext, nil)
}

// endTx decides the half message of a send answer and expects SUCCESS.
func endTx(t *testing.T, tb *testBroker, rh protocol.SendMessageResponseHeader, decision int32) {
	t.Helper()
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	if resp := invoke(t, tb.TCP, tb.Addr, endTxCmd(rh.QueueOffset, phy, decision, false)); resp.Code != remoting.Success {
		t.Fatalf("END_TRANSACTION: %d %q", resp.Code, resp.Remark)
	}
}

// visible pulls every message of Tx queue 0 after the store dispatched what it holds.
func visible(t *testing.T, tb *testBroker) pullResult {
	t.Helper()
	eventually(t, "dispatched", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	p := pullHeader("g", "Tx", 0, 0)
	p.SysFlag, p.Subscription = protocol.PullFlagSubscription, "*"
	r := pull(t, tb.TCP, tb.Addr, p)
	if r.code != remoting.Success && r.code != remoting.PullNotFound && r.code != remoting.PullOffsetMoved {
		t.Fatalf("pull: code %d", r.code)
	}
	return r
}

func TestTransactionCommitDeliversOnce(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "Tx", 1)
	rh := sendHalf(t, tb, "c1")
	if r := visible(t, tb); len(r.bodies) != 0 {
		t.Fatalf("half message visible before the commit: %q", r.bodies)
	}
	endTx(t, tb, rh, message.TransactionCommitType)
	endTx(t, tb, rh, message.TransactionCommitType) // a producer repeating itself
	r := visible(t, tb)
	if !slices.Equal(r.bodies, []string{"c1"}) {
		t.Fatalf("after two commits: %q, want c1 once", r.bodies)
	}
	props := message.UnmarshalProperties([]byte(r.msgs[0].Properties))
	if message.TransactionType(r.msgs[0].SysFlag) != message.TransactionCommitType || props["UNIQ_KEY"] != "c1" ||
		props["REAL_TOPIC"] != "" || props["REAL_QID"] != "" || props["TRAN_MSG"] != "" || props["PGROUP"] != "pg" {
		t.Errorf("committed message sysFlag %d properties %v", r.msgs[0].SysFlag, props)
	}
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0); n != 1 {
		t.Errorf("%d op records, want 1", n)
	}
}

func TestTransactionRollbackNeverDelivers(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "Tx", 1)
	rh := sendHalf(t, tb, "r1")
	endTx(t, tb, rh, message.TransactionRollbackType)
	endTx(t, tb, rh, message.TransactionCommitType) // too late: the rollback stands
	if r := visible(t, tb); len(r.bodies) != 0 {
		t.Fatalf("rolled back message delivered: %q", r.bodies)
	}
}

func TestEndTransactionRefusesWrongOffsets(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "Tx", 1)
	rh := sendHalf(t, tb, "w1")
	_, phy, _ := message.ParseOffsetMsgID(rh.MsgID)
	resp := invoke(t, tb.TCP, tb.Addr, endTxCmd(rh.QueueOffset+5, phy, message.TransactionCommitType, false))
	if resp.Code != remoting.SystemError || resp.Remark != "The transaction state table offset wrong" {
		t.Fatalf("wrong queue offset answered %d %q", resp.Code, resp.Remark)
	}
	if r := visible(t, tb); len(r.bodies) != 0 {
		t.Fatalf("refused commit delivered %q", r.bodies)
	}
}

// checkRecorder is a producer connection of group pg that records CHECK_TRANSACTION_STATE.
type checkRecorder struct {
	tr     *remoting.Client
	checks chan *remoting.Command
}

func newCheckRecorder(t *testing.T, tb *testBroker) *checkRecorder {
	c := &checkRecorder{tr: newTCPClient(t), checks: make(chan *remoting.Command, 100)}
	c.tr.RegisterProcessor(remoting.CheckTransactionState, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			c.checks <- req
			return nil, nil
		}))
	hb := protocol.HeartbeatData{ClientID: "producer@1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []protocol.ConsumerData{}}
	if resp := invoke(t, c.tr, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	return c
}

func (c *checkRecorder) next(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case req := <-c.checks:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no CHECK_TRANSACTION_STATE")
		return nil
	}
}

func checkOptions(o *Options) {
	o.TransactionTimeout = time.Millisecond // the test sends born in 2023
	o.TransactionCheckInterval = 10 * time.Millisecond
}

func TestTransactionCheckThenCommit(t *testing.T) {
	tb := startTestBroker(t, checkOptions)
	addTopic(tb, "Tx", 1)
	c := newCheckRecorder(t, tb)
	sendHalf(t, tb, "u1")
	u2 := sendHalf(t, tb, "u2")
	_, phy, _ := message.ParseOffsetMsgID(u2.MsgID)
	// Unknown leaves it to the check; RocketMQ answers nothing, so it goes one-way as producers send it.
	if err := tb.TCP.InvokeOneway(context.Background(), tb.Addr, endTxCmd(u2.QueueOffset, phy, 0, false)); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 2 {
		req := c.next(t)
		var h protocol.CheckTransactionStateRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			t.Fatal(err)
		}
		var rec message.Record
		if _, err := message.DecodeRecord(req.Body, &rec, true); err != nil {
			t.Fatalf("check body: %v", err)
		}
		props := message.UnmarshalProperties(rec.Properties)
		if string(rec.Topic) != "Tx" || rec.QueueOffset != h.TranStateTableOffset || rec.PhysicalOffset != h.CommitLogOffset ||
			h.MsgID != props["UNIQ_KEY"] || props["TRANSACTION_CHECK_TIMES"] == "" {
			t.Fatalf("check %+v for record of %s offsets %d/%d properties %v", h, rec.Topic, rec.QueueOffset, rec.PhysicalOffset, props)
		}
		if slices.Contains(seen, props["UNIQ_KEY"]) {
			continue // checked again before the answer arrived
		}
		seen = append(seen, props["UNIQ_KEY"])
		decision := message.TransactionCommitType
		if props["UNIQ_KEY"] == "u2" {
			decision = message.TransactionRollbackType
		}
		if err := c.tr.InvokeOneway(context.Background(), tb.Addr, endTxCmd(h.TranStateTableOffset, h.CommitLogOffset, decision, true)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "half queue checked to its end", func() bool {
		return tb.halfCursor() == tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	})
	if r := visible(t, tb); !slices.Equal(r.bodies, []string{"u1"}) {
		t.Fatalf("delivered %q, want the committed u1 once", r.bodies)
	}
}

func TestTransactionCheckMaxMovesToCheckMaxTopic(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		checkOptions(o)
		o.TransactionCheckMax = 2
	})
	addTopic(tb, "Tx", 1)
	sendHalf(t, tb, "m1") // no producer answers
	eventually(t, "moved to "+names.TopicTransCheckMaxTime, func() bool {
		return tb.Store().MaxOffsetInQueue(names.TopicTransCheckMaxTime, 0) == 1
	})
	units, err := tb.Store().ConsumeQueueUnits(names.TopicTransCheckMaxTime, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordAt(t, tb, units[0].PhyOffset)
	props := message.UnmarshalProperties(rec.Properties)
	if props["TRANSACTION_CHECK_TIMES"] != "2" || props["REAL_TOPIC"] != "Tx" || string(rec.Body) != "m1" {
		t.Errorf("discarded message properties %v body %q", props, rec.Body)
	}
	eventually(t, "half queue checked to its end", func() bool {
		return tb.halfCursor() == tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	})
	if r := visible(t, tb); len(r.bodies) != 0 {
		t.Fatalf("undecided message delivered: %q", r.bodies)
	}
}

// TestTransactionDecisionsSurviveRestart: a decision taken after a restart is honoured, and one
// taken before it is neither taken again nor checked.
func TestTransactionDecisionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBrokerIn(t, dir, nil)
	addTopic(tb, "Tx", 1)
	early := sendHalf(t, tb, "early")
	endTx(t, tb, early, message.TransactionCommitType)
	late := sendHalf(t, tb, "late")
	lost := sendHalf(t, tb, "lost")
	tb.Stop(t)

	tb = startTestBrokerIn(t, dir, nil)
	endTx(t, tb, early, message.TransactionCommitType) // repeated after the restart
	endTx(t, tb, late, message.TransactionCommitType)
	endTx(t, tb, lost, message.TransactionRollbackType)
	if r := visible(t, tb); !slices.Equal(r.bodies, []string{"early", "late"}) {
		t.Fatalf("delivered %q, want early and late once each", r.bodies)
	}
	halfEnd := tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	tb.Stop(t)

	tb = startTestBrokerIn(t, dir, checkOptions)
	c := newCheckRecorder(t, tb)
	eventually(t, "half queue checked to its end", func() bool { return tb.halfCursor() == halfEnd })
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0); n != halfEnd {
		t.Errorf("half queue grew from %d to %d: a decided message was checked", halfEnd, n)
	}
	select {
	case req := <-c.checks:
		t.Errorf("decided message checked: %v", req.ExtFields)
	default:
	}
	if r := visible(t, tb); !slices.Equal(r.bodies, []string{"early", "late"}) {
		t.Fatalf("after a second restart delivered %q", r.bodies)
	}
}

// A commit stored before a crash that lost its op record (the broker died between the two) is
// not stored again when the producer, asked again after the restart, commits once more.
func TestTransactionCommitAfterLostOpRecordStoredOnce(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "Tx", 1)
	rh := sendHalf(t, tb, "lost-op")
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	var rec message.Record
	if err := tb.readRecord(phy, &rec); err != nil {
		t.Fatal(err)
	}
	// What the crash left: the commit in the real topic, no op record, nothing decided in memory.
	m, err := tb.committedMessage(&rec, message.UnmarshalProperties(rec.Properties))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := tb.Store().PutMessage(m); err != nil || !putStored(r.Status) {
		t.Fatalf("put the commit: %v %v", r.Status, err)
	}
	eventually(t, "dispatched", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	endTx(t, tb, rh, message.TransactionCommitType)
	if r := visible(t, tb); !slices.Equal(r.bodies, []string{"lost-op"}) {
		t.Fatalf("after the commit was repeated: %q, want lost-op once", r.bodies)
	}
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0); n != 1 {
		t.Errorf("%d op records, want 1", n)
	}
}
