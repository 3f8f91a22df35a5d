package mq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// A SYNC_MASTER acknowledges a send only once its slave has the bytes (issue 7): kill the master
// right after the last acknowledgement, and every acknowledged message is in the slave's
// CommitLog at the offset the master reported, intact.
func TestHASyncMasterKillLosesNothing(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1,
		Role: mqtest.SyncMaster})
	const topic = "SyncKill"
	c.CreateTopic(topic, 4)
	p := c.NewProducer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type ack struct {
		phy  int64
		body string
	}
	var acks []ack
	for i := range 200 {
		body := fmt.Sprint("sync-", i)
		res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != producer.SendOK {
			t.Fatalf("send %d: status %v (the slave should have acknowledged)", i, res.Status)
		}
		_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, ack{phy, body})
	}
	if err := c.KillMaster(0); err != nil {
		t.Fatal(err)
	}
	store := c.Slaves()[0].Current().Broker().Store()
	for _, a := range acks {
		raw, err := store.LookMessageByOffset(a.phy)
		if err != nil {
			t.Fatalf("acknowledged message %q at %d is not on the slave: %v", a.body, a.phy, err)
		}
		var rec message.Record
		if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
			t.Fatalf("record at %d: %v", a.phy, err)
		}
		if string(rec.Body) != a.body || string(rec.Topic) != topic {
			t.Fatalf("record at %d: topic %q body %q, want %q", a.phy, rec.Topic, rec.Body, a.body)
		}
	}
}

// An ASYNC_MASTER killed while a producer is sending: everything the slave received is intact,
// and the only acknowledged messages it may lack are the last ones, past its end (acknowledged,
// not yet replicated). The test reports how many.
func TestHAAsyncMasterKilledUnderLoad(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 1, SlavesPerGroup: 1})
	const topic = "AsyncKill"
	c.CreateTopic(topic, 4)
	p := c.NewProducer(producer.WithRetries(0), producer.WithSendTimeout(2*time.Second))
	type ack struct {
		phy  int64
		body string
	}
	acks := make(chan ack, 100000)
	killed := make(chan struct{})
	go func() {
		defer close(acks)
		for i := 0; ; i++ {
			body := fmt.Sprint("async-", i)
			res, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte(body)))
			if err != nil {
				select {
				case <-killed:
					return // the master is gone
				default:
					t.Errorf("send %d before the kill: %v", i, err)
					return
				}
			}
			_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
			if err != nil {
				t.Error(err)
				return
			}
			acks <- ack{phy, body}
			if i == 300 {
				close(killed)
				if err := c.KillMaster(0); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	var all []ack
	for a := range acks {
		all = append(all, a)
	}
	store := c.Slaves()[0].Current().Broker().Store()
	end := store.MaxPhyOffset()
	missing := 0
	for _, a := range all {
		raw, err := store.LookMessageByOffset(a.phy)
		if err != nil {
			if a.phy < end {
				t.Fatalf("message %q at %d is below the slave's end %d yet unreadable: %v", a.body, a.phy, end, err)
			}
			missing++
			continue
		}
		var rec message.Record
		if _, err := message.DecodeRecord(raw, &rec, true); err != nil || string(rec.Body) != a.body {
			t.Fatalf("message at %d on the slave: %q, %v; want %q", a.phy, rec.Body, err, a.body)
		}
	}
	t.Logf("%d acknowledged messages, %d not replicated before the master died", len(all), missing)
}
