package admin

import (
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// TestAdminCleanUnusedTopic deletes the ConsumeQueues of topics the topic table lacks, and
// keeps the broker's own (the transaction op topic is in no table, as in RocketMQ).
func TestAdminCleanUnusedTopic(t *testing.T) {
	tb := start(t, nil, nil)
	addTopic(t, tb, "Kept", 1)
	putMsgs(t, tb, "Kept", 0, 2, "", "k")
	putMsgs(t, tb, "Gone", 0, 2, "", "g") // straight into the store: no topic config
	putMsgs(t, tb, names.TopicTransOpHalf, 0, 1, "", "op")
	has := func(topic string) bool {
		return slices.ContainsFunc(tb.Store().Queues(), func(q storage.QueueInfo) bool { return q.Topic == topic })
	}
	if !has("Gone") || !has("Kept") || !has(names.TopicTransOpHalf) {
		t.Fatal("queues not there to start with")
	}
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.CleanUnusedTopic, nil, nil))
	if has("Gone") || !has("Kept") || !has(names.TopicTransOpHalf) {
		t.Fatalf("after the clean: Gone %v Kept %v op %v", has("Gone"), has("Kept"), has(names.TopicTransOpHalf))
	}
}

// TestAdminDeleteExpiredCommitLog: outside the delete hour expired segments stay until
// DELETE_EXPIRED_COMMITLOG asks the next retention round to delete them.
func TestAdminDeleteExpiredCommitLog(t *testing.T) {
	notNow := (time.Now().Hour() + 12) % 24
	tb := start(t, func(o *broker.Options) {
		o.Store.FileReservedTime = time.Millisecond
		o.Store.DeleteWhen = time.Date(2000, 1, 1, notNow, 0, 0, 0, time.Local).Format("15")
		o.Store.CleanResourceInterval = 20 * time.Millisecond
		// The host's disk may be fuller than the defaults (75 %): its use must not delete.
		o.Store.DiskMaxUsedSpaceRatio, o.Store.DiskSpaceCleanForciblyRatio = 100, 100
	}, nil)
	addTopic(t, tb, "Old", 1)
	for tb.Store().Stats().CommitLogSegments < 3 {
		putMsgs(t, tb, "Old", 0, 50, "", "old-message-body-with-some-length-")
	}
	time.Sleep(100 * time.Millisecond) // a few retention rounds: none may delete
	if min := tb.Store().MinPhyOffset(); min != 0 {
		t.Fatalf("segments deleted outside the delete hour: min offset %d", min)
	}
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.DeleteExpiredCommitLog, nil, nil))
	brokertest.Eventually(t, "the expired segments to go", func() bool { return tb.Store().MinPhyOffset() > 0 })
}

// TestAdminDeleteSubscriptionGroupRemoveOffset: RocketMQ 4.9.3's removeOffset also drops the
// group's committed offsets; without it they stay.
func TestAdminDeleteSubscriptionGroupRemoveOffset(t *testing.T) {
	tb := start(t, nil, nil)
	for _, g := range []string{"keepOffsets", "dropOffsets"} {
		tb.Offsets().Commit(g, "T1", 0, 5)
		tb.Offsets().Commit(g, "T2", 1, 7)
	}
	tb.Offsets().Commit("other", "T1", 0, 3)
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.DeleteSubscriptionGroup,
		&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: "keepOffsets"}, nil))
	wantOK(t, adminCall(t, tb.TCP, tb, remoting.DeleteSubscriptionGroup,
		&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: "dropOffsets", RemoveOffset: true}, nil))
	if got := tb.Offsets().TopicsOf("keepOffsets"); len(got) != 2 {
		t.Errorf("offsets kept without removeOffset: %v", got)
	}
	if got := tb.Offsets().TopicsOf("dropOffsets"); len(got) != 0 {
		t.Errorf("offsets left after removeOffset: %v", got)
	}
	if tb.Offsets().Query("other", "T1", 0) != 3 {
		t.Error("another group's offset went too")
	}
}
