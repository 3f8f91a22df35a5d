package transaction

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// sendHalf stores a prepared message for topic Tx queue 0 and returns the send answer.
func sendHalf(t *testing.T, tb *txBroker, uniq string) protocol.SendMessageResponseHeader {
	t.Helper()
	req := sendCmd("Tx", 0, map[string]string{"TRAN_MSG": "true", "PGROUP": "pg", "UNIQ_KEY": uniq}, []byte(uniq))
	return wiretest.WantSendOK(t, brokertest.Invoke(t, tb.TCP, tb.Addr, req))
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
func endTx(t *testing.T, tb *txBroker, rh protocol.SendMessageResponseHeader, decision int32) {
	t.Helper()
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	if resp := brokertest.Invoke(t, tb.TCP, tb.Addr, endTxCmd(rh.QueueOffset, phy, decision, false)); resp.Code != remoting.Success {
		t.Fatalf("END_TRANSACTION: %d %q", resp.Code, resp.Remark)
	}
}

// visible is every message of Tx queue 0, once the store dispatched what it holds.
func visible(t *testing.T, tb *txBroker) []message.Record { return records(t, tb, "Tx", 0) }

// visibleBodies are their bodies.
func visibleBodies(t *testing.T, tb *txBroker) []string { return bodies(t, tb, "Tx", 0) }

func TestTransactionCommitDeliversOnce(t *testing.T) {
	tb := start(t, nil)
	addTopic(t, tb, "Tx", 1)
	rh := sendHalf(t, tb, "c1")
	if b := visibleBodies(t, tb); len(b) != 0 {
		t.Fatalf("half message visible before the commit: %q", b)
	}
	endTx(t, tb, rh, message.TransactionCommitType)
	endTx(t, tb, rh, message.TransactionCommitType) // a producer repeating itself
	r := visible(t, tb)
	if len(r) != 1 || string(r[0].Body) != "c1" {
		t.Fatalf("after two commits: %d messages, want c1 once", len(r))
	}
	props := message.UnmarshalProperties(r[0].Properties)
	if message.TransactionType(r[0].SysFlag) != message.TransactionCommitType || props["UNIQ_KEY"] != "c1" ||
		props["REAL_TOPIC"] != "" || props["REAL_QID"] != "" || props["TRAN_MSG"] != "" || props["PGROUP"] != "pg" {
		t.Errorf("committed message sysFlag %d properties %v", r[0].SysFlag, props)
	}
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0); n != 1 {
		t.Errorf("%d op records, want 1", n)
	}
}

func TestTransactionRollbackNeverDelivers(t *testing.T) {
	tb := start(t, nil)
	addTopic(t, tb, "Tx", 1)
	rh := sendHalf(t, tb, "r1")
	endTx(t, tb, rh, message.TransactionRollbackType)
	endTx(t, tb, rh, message.TransactionCommitType) // too late: the rollback stands
	if b := visibleBodies(t, tb); len(b) != 0 {
		t.Fatalf("rolled back message delivered: %q", b)
	}
}

func TestEndTransactionRefusesWrongOffsets(t *testing.T) {
	tb := start(t, nil)
	addTopic(t, tb, "Tx", 1)
	rh := sendHalf(t, tb, "w1")
	_, phy, _ := message.ParseOffsetMsgID(rh.MsgID)
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, endTxCmd(rh.QueueOffset+5, phy, message.TransactionCommitType, false))
	if resp.Code != remoting.SystemError || resp.Remark != "The transaction state table offset wrong" {
		t.Fatalf("wrong queue offset answered %d %q", resp.Code, resp.Remark)
	}
	if b := visibleBodies(t, tb); len(b) != 0 {
		t.Fatalf("refused commit delivered %q", b)
	}
}

// checkRecorder is a producer connection of group pg that records CHECK_TRANSACTION_STATE.
type checkRecorder struct {
	tr     *remoting.Client
	checks chan *remoting.Command
}

func newCheckRecorder(t *testing.T, tb *txBroker) *checkRecorder {
	c := &checkRecorder{tr: wiretest.NewTCPClient(t), checks: make(chan *remoting.Command, 100)}
	c.tr.RegisterProcessor(remoting.CheckTransactionState, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			c.checks <- req
			return nil, nil
		}))
	hb := protocol.HeartbeatData{ClientID: "producer@1", ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []protocol.ConsumerData{}}
	if resp := brokertest.Invoke(t, c.tr, tb.Addr, remoting.NewRequest(remoting.HeartBeat, map[string]string{}, hb.Encode())); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	return c
}

func checkOptions(o *broker.Options) {
	o.Transactions.Timeout = time.Millisecond // the test sends born in 2023
	o.Transactions.CheckInterval = 10 * time.Millisecond
}

func TestTransactionCheckThenCommit(t *testing.T) {
	tb := start(t, checkOptions)
	addTopic(t, tb, "Tx", 1)
	c := newCheckRecorder(t, tb)
	sendHalf(t, tb, "u1")
	u2 := sendHalf(t, tb, "u2")
	_, phy, _ := message.ParseOffsetMsgID(u2.MsgID)
	// Unknown leaves it to the check; RocketMQ answers nothing, so it goes one-way as producers send it.
	if err := tb.TCP.InvokeOneway(context.Background(), tb.Addr, endTxCmd(u2.QueueOffset, phy, 0, false)); err != nil {
		t.Fatal(err)
	}
	// Every check is answered, a repeated one too, as a producer does: a decision that arrives
	// while the check loop holds the half message (re-putting it for the next check) is not
	// applied, and the copy is checked again.
	seen := map[string]bool{}
	done := func() bool {
		return len(seen) == 2 && tb.tx.halfCursor() == tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0) &&
			len(visibleBodies(t, tb)) > 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("checked %v, half cursor %d of %d, delivered %q", seen, tb.tx.halfCursor(),
				tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0), visibleBodies(t, tb))
		}
		var req *remoting.Command
		select {
		case req = <-c.checks:
		case <-time.After(5 * time.Millisecond):
			continue
		}
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
		seen[props["UNIQ_KEY"]] = true
		decision := message.TransactionCommitType
		if props["UNIQ_KEY"] == "u2" {
			decision = message.TransactionRollbackType
		}
		if err := c.tr.InvokeOneway(context.Background(), tb.Addr, endTxCmd(h.TranStateTableOffset, h.CommitLogOffset, decision, true)); err != nil {
			t.Fatal(err)
		}
	}
	if b := visibleBodies(t, tb); !slices.Equal(b, []string{"u1"}) {
		t.Fatalf("delivered %q, want the committed u1 once", b)
	}
}

func TestTransactionCheckMaxMovesToCheckMaxTopic(t *testing.T) {
	tb := start(t, func(o *broker.Options) {
		checkOptions(o)
		o.Transactions.CheckMax = 2
	})
	addTopic(t, tb, "Tx", 1)
	sendHalf(t, tb, "m1") // no producer answers
	brokertest.Eventually(t, "moved to "+names.TopicTransCheckMaxTime, func() bool {
		return tb.Store().MaxOffsetInQueue(names.TopicTransCheckMaxTime, 0) == 1
	})
	units, err := tb.Store().ConsumeQueueUnits(names.TopicTransCheckMaxTime, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := wiretest.RecordAt(t, tb.Store(), units[0].PhyOffset)
	props := message.UnmarshalProperties(rec.Properties)
	if props["TRANSACTION_CHECK_TIMES"] != "2" || props["REAL_TOPIC"] != "Tx" || string(rec.Body) != "m1" {
		t.Errorf("discarded message properties %v body %q", props, rec.Body)
	}
	brokertest.Eventually(t, "half queue checked to its end", func() bool {
		return tb.tx.halfCursor() == tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	})
	if b := visibleBodies(t, tb); len(b) != 0 {
		t.Fatalf("undecided message delivered: %q", b)
	}
}

// TestTransactionDecisionsSurviveRestart: a decision taken after a restart is honoured, and one
// taken before it is neither taken again nor checked.
func TestTransactionDecisionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startIn(t, dir, nil)
	addTopic(t, tb, "Tx", 1)
	early := sendHalf(t, tb, "early")
	endTx(t, tb, early, message.TransactionCommitType)
	late := sendHalf(t, tb, "late")
	lost := sendHalf(t, tb, "lost")
	tb.Stop(t)

	tb = startIn(t, dir, nil)
	endTx(t, tb, early, message.TransactionCommitType) // repeated after the restart
	endTx(t, tb, late, message.TransactionCommitType)
	endTx(t, tb, lost, message.TransactionRollbackType)
	if b := visibleBodies(t, tb); !slices.Equal(b, []string{"early", "late"}) {
		t.Fatalf("delivered %q, want early and late once each", b)
	}
	halfEnd := tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0)
	tb.Stop(t)

	tb = startIn(t, dir, checkOptions)
	c := newCheckRecorder(t, tb)
	brokertest.Eventually(t, "half queue checked to its end", func() bool { return tb.tx.halfCursor() == halfEnd })
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransHalf, 0); n != halfEnd {
		t.Errorf("half queue grew from %d to %d: a decided message was checked", halfEnd, n)
	}
	select {
	case req := <-c.checks:
		t.Errorf("decided message checked: %v", req.ExtFields)
	default:
	}
	if b := visibleBodies(t, tb); !slices.Equal(b, []string{"early", "late"}) {
		t.Fatalf("after a second restart delivered %q", b)
	}
}

// A commit stored before a crash that lost its op record (the broker died between the two) is
// not stored again when the producer, asked again after the restart, commits once more.
func TestTransactionCommitAfterLostOpRecordStoredOnce(t *testing.T) {
	tb := start(t, nil)
	addTopic(t, tb, "Tx", 1)
	rh := sendHalf(t, tb, "lost-op")
	_, phy, err := message.ParseOffsetMsgID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	var rec message.Record
	if err := tb.Messages().Read(phy, &rec); err != nil {
		t.Fatal(err)
	}
	// What the crash left: the commit in the real topic, no op record, nothing decided in memory.
	m, err := tb.tx.committedMessage(&rec, message.UnmarshalProperties(rec.Properties))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := tb.Store().PutMessage(m); err != nil || !broker.PutStored(r.Status) {
		t.Fatalf("put the commit: %v %v", r.Status, err)
	}
	brokertest.Eventually(t, "dispatched", func() bool { return tb.Store().DispatchedPhyOffset() >= tb.Store().MaxPhyOffset() })
	endTx(t, tb, rh, message.TransactionCommitType)
	if b := visibleBodies(t, tb); !slices.Equal(b, []string{"lost-op"}) {
		t.Fatalf("after the commit was repeated: %q, want lost-op once", b)
	}
	if n := tb.Store().MaxOffsetInQueue(names.TopicTransOpHalf, 0); n != 1 {
		t.Errorf("%d op records, want 1", n)
	}
}
