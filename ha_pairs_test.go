package mq_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/storage"
)

// Two broker groups, each a master and a slave: after a run the CommitLog of every slave is
// byte for byte its master's (issue 7).
func TestHAPairsCommitLogsEqual(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{NameServers: 1, BrokerGroups: 2, SlavesPerGroup: 1})
	const topic = "Pairs"
	c.CreateTopic(topic, 4)
	p := c.NewProducer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 300 {
		if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(fmt.Sprint("pair-", i)))); err != nil {
			t.Fatal(err)
		}
	}
	for g := range 2 {
		group := c.Group(g)
		master, slave := group[0].Current().Broker().Store(), group[1].Current().Broker().Store()
		mqtest.Eventually(t, fmt.Sprintf("group %d slave caught up", g), func() bool {
			return slave.MaxPhyOffset() == master.MaxPhyOffset()
		})
		if master.MaxPhyOffset() == 0 {
			t.Fatalf("group %d stored nothing", g)
		}
		if a, b := readAll(t, master), readAll(t, slave); !bytes.Equal(a, b) {
			t.Fatalf("group %d: CommitLogs differ (%d and %d bytes)", g, len(a), len(b))
		}
	}
}

// readAll returns a store's whole CommitLog.
func readAll(t *testing.T, s *storage.Store) []byte {
	t.Helper()
	var out []byte
	for off := s.MinPhyOffset(); off < s.MaxPhyOffset(); {
		v, err := s.ReadCommitLog(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Data) == 0 {
			v.Release()
			t.Fatalf("no bytes at %d of %d", off, s.MaxPhyOffset())
		}
		out = append(out, v.Data...)
		off += int64(len(v.Data))
		v.Release()
	}
	return out
}
