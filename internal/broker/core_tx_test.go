package broker

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// endTxCmd is the END_TRANSACTION a producer sends for the half message at the offsets (served
// by internal/broker/transaction, which the test brokers attach).
func endTxCmd(queueOffset, phyOffset int64, decision int32, fromCheck bool) *remoting.Command {
	h := protocol.EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: queueOffset,
		CommitLogOffset: phyOffset, CommitOrRollback: decision, FromTransactionCheck: fromCheck, MsgID: "m"}
	ext := map[string]string{}
	h.Encode(ext)
	return remoting.NewRequest(remoting.EndTransaction, ext, nil)
}

// checkOptions have the transaction check loop ask about every half message at once.
func checkOptions(o *Options) {
	o.Transactions.Timeout = time.Millisecond // the tests send born in 2023
	o.Transactions.CheckInterval = 10 * time.Millisecond
}

// Without a Scheduler or Transactions the core does what RocketMQ does with the feature off: a
// DELAY or timer message and a retry are stored where they were sent, a half message is
// refused as with RejectTransactionMessage, and there are no delay cursors to report or keep.
func TestCoreWithoutSchedulerOrTransactions(t *testing.T) {
	b := &Broker{storeHost: netip.MustParseAddrPort("10.0.0.1:10911")}
	b.send = newSender(b)
	props := message.SetProperty("", "DELAY", "3")
	props = message.SetProperty(props, "TIMER_DELAY_SEC", "10")
	m := &storage.Message{Topic: "T", QueueID: 2, Properties: props}
	if resp := b.seams.schedule(m); resp != nil || m.Topic != "T" || m.QueueID != 2 || m.Properties != props {
		t.Errorf("Schedule without a Scheduler: %v, message now %s/%d %q", resp, m.Topic, m.QueueID, m.Properties)
	}
	b.seams.delay(m, 3)
	if m.Topic != "T" || m.QueueID != 2 || m.Properties != props {
		t.Errorf("delay without a Scheduler moved the message to %s/%d %q", m.Topic, m.QueueID, m.Properties)
	}
	// The sender refuses it with RejectTransactionMessage's answer (send_props.go).
	half := &storage.Message{Topic: "T", Properties: message.SetProperty("", "TRAN_MSG", "true")}
	if b.seams.prepareHalf(half) || half.Topic != "T" {
		t.Errorf("half message without Transactions was prepared (now in %s)", half.Topic)
	}
	timer := &storage.Message{Topic: names.TopicTimer, Properties: message.SetProperty(props, message.PropertyRealTopic, "T")}
	if h := b.seams.recallHandle(timer); h != "" {
		t.Errorf("recall handle %q without a Scheduler", h)
	}
	if f := b.seams.retentionFloor(); f != 1<<63-1 {
		t.Errorf("retention floor without a service: %d", f)
	}
	b.Seams().SetRetentionFloor(func() int64 { return 42 })
	if f := b.seams.retentionFloor(); f != 42 {
		t.Errorf("retention floor %d, want the installed one's 42", f)
	}
}
