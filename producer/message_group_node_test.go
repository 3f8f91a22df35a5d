package producer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// TestMessageGroupsLandOnOneQueueEach sends the messages of 12 groups interleaved, by SendSync,
// SendAsync and SendBatch, to a node's topic of 8 queues, in-process and over TCP: each group's
// messages share one queue at consecutive-in-send-order offsets, the groups spread over more
// than one queue, and every stored message carries its group in __SHARDINGKEY.
func TestMessageGroupsLandOnOneQueueEach(t *testing.T) {
	for _, kind := range []string{"inproc", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
			var o mq.Options
			o.Listen, o.Store.Dir, o.Logger, o.Store.SegmentBytes = "127.0.0.1:0", t.TempDir(), &l, 16<<20
			n, err := mq.StartNode(o)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			ctx := context.Background()
			adm, err := admin.New(admin.Options{NameServers: []string{n.Addr()}})
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			const topic = "GroupTopic"
			if err := adm.CreateTopic(ctx, n.Addr(), admin.TopicConfig{Topic: topic, ReadQueueNums: 8, WriteQueueNums: 8}); err != nil {
				t.Fatal(err)
			}
			opts := []producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup("group-pg"),
				producer.WithInstanceName("group-" + kind), producer.WithLogger(&l)}
			if kind == "inproc" {
				opts = append(opts, producer.WithOwnedTransport(n.NewTransport()))
			}
			p, err := producer.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()

			type stored struct {
				q   producer.MessageQueue
				off int64
			}
			got := map[string][]stored{} // by group, in send order
			const groups, rounds = 12, 6
			for r := range rounds {
				for g := range groups {
					group := fmt.Sprintf("order-%d", g)
					msg := func(i int) *producer.Message {
						return producer.NewMessage(topic, fmt.Appendf(nil, "%s/%d/%d", group, r, i)).WithMessageGroup(group)
					}
					var res *producer.SendResult
					switch r % 3 {
					case 0:
						res, err = p.SendSync(ctx, msg(0))
					case 1:
						var wg sync.WaitGroup
						var cbErr error
						wg.Add(1)
						if err = p.SendAsync(ctx, msg(0), func(sr *producer.SendResult, e error) {
							res, cbErr = sr, e
							wg.Done()
						}); err == nil {
							wg.Wait()
							err = cbErr
						}
					case 2:
						res, err = p.SendBatch(ctx, msg(0), msg(1))
					}
					if err != nil {
						t.Fatalf("round %d group %s: %v", r, group, err)
					}
					got[group] = append(got[group], stored{res.Queue, res.QueueOffset})
				}
			}
			used := map[producer.MessageQueue]bool{}
			for group, ss := range got {
				for i, s := range ss {
					if s.q != ss[0].q {
						t.Fatalf("group %s: send %d went to %v, the first to %v", group, i, s.q, ss[0].q)
					}
					if i > 0 && s.off <= ss[i-1].off {
						t.Fatalf("group %s: send %d stored at offset %d, not after %d", group, i, s.off, ss[i-1].off)
					}
				}
				used[ss[0].q] = true
				m, err := adm.QueryMessageByOffset(ctx, ss[0].q, ss[0].off)
				if err != nil {
					t.Fatal(err)
				}
				if g := m.Property("__SHARDINGKEY"); g != group {
					t.Errorf("group %s: stored __SHARDINGKEY %q", group, g)
				}
			}
			if len(used) < 2 {
				t.Errorf("%d groups all went to %v", groups, used)
			}
		})
	}
}
