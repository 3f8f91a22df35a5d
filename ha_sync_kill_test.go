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
