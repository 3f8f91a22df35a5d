package mq_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/storage"
)

// sentAck is a message the master acknowledged: its body and where the master stored it.
type sentAck struct {
	phy  int64
	body string
}

// A SYNC_MASTER acknowledges a send only once its slave has the bytes (issue 7). Four producers
// send concurrently, and each acknowledged message is checked on the slave the moment the
// acknowledgement arrives (a master that answered before its slave had the bytes fails here).
// Then the master is killed: the slave holds every acknowledged message, intact, at the offset
// the master reported, and its queues hold exactly the acknowledged messages, once each.
func TestHASyncMasterKillLosesNothing(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1,
		Role: mqtest.SyncMaster})
	const (
		topic   = "SyncKill"
		queues  = 4
		senders = 4
		each    = 50
	)
	c.CreateTopic(topic, queues)
	p := c.NewProducer(producer.WithRetries(0))
	store := c.Slaves()[0].Current().Broker().Store()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		acks []sentAck
		wg   sync.WaitGroup
	)
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf("sync-%d-%d", w, i)
				res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body)))
				if err != nil {
					t.Errorf("send %s: %v", body, err)
					return
				}
				if res.Status != producer.SendOK {
					t.Errorf("send %s: status %v (the slave should have acknowledged)", body, res.Status)
					return
				}
				_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
				if err != nil {
					t.Error(err)
					return
				}
				a := sentAck{phy, body}
				if err := checkRecord(store, a, topic); err != nil {
					t.Errorf("acknowledged before the slave had it: %v", err)
					return
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Killed right after the last acknowledgement: nothing in flight, so Close does not wait
	// on the slave.
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}

	if len(acks) != senders*each {
		t.Fatalf("%d acknowledgements, want %d", len(acks), senders*each)
	}
	missing := 0
	for _, a := range acks {
		if err := checkRecord(store, a, topic); err != nil {
			t.Errorf("acknowledged message after the kill: %v", err)
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged messages missing on the slave", missing, len(acks))
	}
	want := map[string]int{}
	var lastPhy int64
	for _, a := range acks {
		want[a.body] = 1
		lastPhy = max(lastPhy, a.phy)
	}
	mqtest.Eventually(t, "the slave dispatched every acknowledged message", func() bool {
		return store.DispatchedPhyOffset() > lastPhy
	})
	if diff := cmp.Diff(want, queuedBodies(t, store, topic, queues)); diff != "" {
		t.Errorf("bodies in the slave's queues (-acknowledged +held):\n%s", diff)
	}
}

// A SYNC_MASTER killed while sends wait for its slave's acknowledgement: the kill returns and
// every sender gets its answer without waiting out a timeout (both are set to ten minutes, so
// only a deadline of the test itself can end a wait), and nothing acknowledged is lost.
func TestHASyncMasterKilledWithSendsWaiting(t *testing.T) {
	const forever = 10 * time.Minute
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1,
		Role: mqtest.SyncMaster, Options: func(o *mq.Options) { o.HA.SyncFlushTimeout = forever }})
	const (
		topic     = "SyncKillWaiting"
		senders   = 8
		killAfter = 100
	)
	c.CreateTopic(topic, 4)
	// Without the unreachable-retry a sender whose master died answers at once instead of
	// retrying until its ten-minute timeout: the test is about the waits the kill ends.
	p := c.NewProducer(producer.WithRetries(0), producer.WithSendTimeout(forever),
		producer.WithRetryUnreachableUntilTimeout(false))
	store := c.Slaves()[0].Current().Broker().Store()
	var (
		mu      sync.Mutex
		acks    []sentAck
		unacked []string
		wg      sync.WaitGroup
		killed  = make(chan struct{})
		enough  = make(chan struct{})
	)
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf("wait-%d-%d", w, i)
				res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
				if err == nil && res.Status != producer.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				if err != nil {
					select {
					case <-killed:
						mu.Lock()
						unacked = append(unacked, body)
						mu.Unlock()
					default:
						t.Errorf("send %s before the kill: %v", body, err)
					}
					return
				}
				_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if acks = append(acks, sentAck{phy, body}); len(acks) == killAfter {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	<-enough
	close(killed)
	killDone := make(chan error, 1)
	go func() { killDone <- c.KillMaster(0) }()
	var killErr error
	mqtest.Eventually(t, "the kill returned", func() bool {
		select {
		case killErr = <-killDone:
			return true
		default:
			return false
		}
	})
	if killErr != nil {
		t.Fatal(killErr)
	}
	sendersDone := make(chan struct{})
	go func() { wg.Wait(); close(sendersDone) }()
	mqtest.Eventually(t, "every sender answered", func() bool {
		select {
		case <-sendersDone:
			return true
		default:
			return false
		}
	})
	for _, a := range acks {
		if err := checkRecord(store, a, topic); err != nil {
			t.Errorf("acknowledged message lost: %v", err)
		}
	}
	if len(unacked) > senders {
		t.Errorf("%d sends failed at the kill, more than one per sender", len(unacked))
	}
}

// checkRecord returns an error unless store holds a's record, intact, in topic.
func checkRecord(store *storage.Store, a sentAck, topic string) error {
	raw, err := store.LookMessageByOffset(a.phy)
	if err != nil {
		return fmt.Errorf("%s at %d: %w", a.body, a.phy, err)
	}
	var rec message.Record
	if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
		return fmt.Errorf("%s at %d: %w", a.body, a.phy, err)
	}
	if string(rec.Body) != a.body || string(rec.Topic) != topic {
		return fmt.Errorf("record at %d: topic %q body %q, want %q", a.phy, rec.Topic, rec.Body, a.body)
	}
	return nil
}

// queuedBodies counts the bodies in topic's queues of store.
func queuedBodies(t *testing.T, store *storage.Store, topic string, queues int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for q := range int32(queues) {
		for off := store.MinOffsetInQueue(topic, q); off < store.MaxOffsetInQueue(topic, q); {
			r := store.GetMessage("", topic, q, off, 32, 0, nil)
			if r.Status != storage.Found {
				r.Release()
				t.Fatalf("queue %d at %d: %v", q, off, r.Status)
			}
			for _, raw := range r.Messages {
				var rec message.Record
				if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
					r.Release()
					t.Fatalf("queue %d: %v", q, err)
				}
				out[string(rec.Body)]++
			}
			off = r.NextBeginOffset
			r.Release()
		}
	}
	return out
}

// An ASYNC_MASTER killed while a producer is sending: the slave holds every acknowledged
// message whose record lies below its CommitLog end, intact; the only acknowledged messages it
// may lack are the last ones (acknowledged, not yet replicated). The slave is known to have
// replicated part of the run before the kill, so an empty slave fails.
func TestHAAsyncMasterKilledUnderLoad(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1})
	const (
		topic     = "AsyncKill"
		killAfter = 300 // acknowledgements before the kill
	)
	c.CreateTopic(topic, 4)
	p := c.NewProducer(producer.WithRetries(0), producer.WithSendTimeout(2*time.Second))
	store := c.Slaves()[0].Current().Broker().Store()
	var (
		mu     sync.Mutex
		acks   []sentAck
		killed = make(chan struct{})
		done   = make(chan struct{})
	)
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			close(killed)
			if err := c.KillMaster(0); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() { kill(); <-done }() // a failing Eventually leaves no sender running
	acked := func() []sentAck {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(acks)
	}
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			body := fmt.Sprint("async-", i)
			res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
			if err != nil {
				select {
				case <-killed: // the master is gone
				default:
					t.Errorf("send %d before the kill: %v", i, err)
				}
				return
			}
			_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			acks = append(acks, sentAck{phy, body})
			mu.Unlock()
		}
	}()
	senderDone := func() bool {
		select {
		case <-done: // it failed before the kill, and said why
			return true
		default:
			return false
		}
	}
	mqtest.Eventually(t, fmt.Sprint(killAfter, " acknowledgements"), func() bool {
		return len(acked()) >= killAfter || senderDone()
	})
	if senderDone() {
		return
	}
	// The first record is whole on the slave once its end reaches the second's start.
	second := acked()[1].phy
	mqtest.Eventually(t, "the slave replicating", func() bool { return store.MaxPhyOffset() >= second })
	kill()
	<-done
	if t.Failed() {
		return
	}

	all := acked() // in send order, so in CommitLog order
	end := store.MaxPhyOffset()
	present := 0
	for i, a := range all {
		err := checkRecord(store, a, topic)
		if err == nil {
			if present != i {
				t.Fatalf("acknowledged %s is on the slave but %s before it is not", a.body, all[present].body)
			}
			present++
			continue
		}
		// A record wholly below the slave's end must be there; the one the end cuts, and those
		// past it, were acknowledged but not replicated.
		if i+1 < len(all) && all[i+1].phy <= end {
			t.Fatalf("below the slave's end %d: %v", end, err)
		}
	}
	if present < 1 {
		t.Fatalf("the slave holds none of %d acknowledged messages", len(all))
	}
	t.Logf("%d acknowledged messages, %d not replicated before the master died", len(all), len(all)-present)
}
