package broker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// TestLongPollManyQueues parks one pull per queue on both transports, then fills the queues
// concurrently: every pull is answered once with its queue's first message and nothing stays
// parked.
func TestLongPollManyQueues(t *testing.T) {
	tb := startTestBroker(t, nil)
	const queues = 16
	addTopic(tb, "T", queues)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@2", "g", wiretest.Sub("T", "*"))
	var dones []<-chan *remoting.Command
	for q := range int32(queues) {
		tr := remoting.Transport(tb.TCP)
		if q%2 == 1 {
			tr = tb.InProc
		}
		dones = append(dones, asyncPull(t, tr, tb.Addr, pullHeader("g", "T", q, 0)))
	}
	eventually(t, "pulls parked", func() bool { return tb.pull.hold.Count() == queues })
	var wg sync.WaitGroup
	for q := range int32(queues) {
		wg.Go(func() {
			for i := range 3 {
				m := &storage.Message{Topic: "T", QueueID: q, Body: []byte(fmt.Sprintf("m-%d", i)),
					BornHost: consumeTestBornHost, StoreHost: tb.storeHost}
				if _, err := tb.Store().PutMessage(m); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for q, done := range dones {
		select {
		case resp := <-done:
			r := decodePull(t, resp)
			if r.code != remoting.Success || len(r.msgs) == 0 || r.bodies[0] != "m-0" || r.msgs[0].QueueID != int32(q) {
				t.Errorf("queue %d: code %d bodies %v", q, r.code, r.bodies)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("queue %d: pull not answered", q)
		}
	}
	if n := tb.pull.hold.Count(); n != 0 {
		t.Errorf("%d pulls still parked", n)
	}
}

// TestWokenPullIsNotParkedAgain: a tag whose hash collides with the subscription's wakes the
// parked pull (the ConsumeQueue test passes); the re-run rejects it by tag string and answers
// at once instead of parking again.
func TestWokenPullIsNotParkedAgain(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "Aa"))
	h := pullHeader("g", "T", 0, 0)
	h.SysFlag |= protocol.PullFlagCommitOffset
	h.CommitOffset = 7
	done := asyncPull(t, tb.InProc, tb.Addr, h)
	eventually(t, "pull parked", func() bool { return tb.pull.hold.Count() == 1 })
	tb.offsets.Commit("g", "T", 0, 3) // a later commit the re-run must not overwrite
	putMsgs(t, tb, "T", 0, 1, "BB", "collide")
	select {
	case resp := <-done:
		r := decodePull(t, resp)
		if r.code != remoting.PullRetryImmediately || r.hdr.NextBeginOffset != 1 || len(r.msgs) != 0 {
			t.Errorf("code %d (%s) next %d msgs %d", r.code, r.remark, r.hdr.NextBeginOffset, len(r.msgs))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("woken pull parked again")
	}
	if off := tb.offsets.Query("g", "T", 0); off != 3 {
		t.Errorf("offset %d: the re-run committed again", off)
	}
}
