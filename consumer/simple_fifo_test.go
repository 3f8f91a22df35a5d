package consumer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/producer"
)

// TestSimpleConsumerFIFO is issue 28's FIFO acceptance through our clients: a producer sends
// the messages of 10 message groups interleaved to a topic of 4 queues; 4 orderly simple
// consumers of one group (each its own client instance, in-process or over TCP) receive and
// acknowledge concurrently. Every group's messages arrive once each and in send order, and no
// group is out at two receivers at once: a receiver marks the groups of a batch as its own
// until it has processed them, just before it acknowledges them, and the broker hands a queue's
// next batch out only after the acks.
func TestSimpleConsumerFIFO(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleFIFO", 4)
			p := newTestProducer(t, n)
			const groups, perGroup = 10, 15
			ctx := context.Background()
			for i := range perGroup {
				for g := range groups {
					msg := producer.NewMessage("SimpleFIFO", fmt.Appendf(nil, "g%d/%d", g, i)).WithMessageGroup(fmt.Sprintf("g%d", g))
					if _, err := p.SendSync(ctx, msg); err != nil {
						t.Fatal(err)
					}
				}
			}

			var mu sync.Mutex
			holder := map[string]int{} // group -> receiver holding a batch of it
			got := map[string][]int{}  // group -> sequence numbers in the order received
			var violations []string    // a group at two receivers at once
			total := 0
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			errc := make(chan error, 4)
			var wg sync.WaitGroup
			for r := range 4 {
				sc := startSimple(t, map[string]MessageSelector{"SimpleFIFO": ByTag("*")},
					simpleOptions(t, n, transportFor(t, n, kind), "simple-fifo-"+kind, WithOrderly(true),
						WithInstanceName(fmt.Sprintf("fifo-%s-%d", kind, r)))...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for cctx.Err() == nil {
						views, err := sc.Receive(cctx, 8, 10*time.Second)
						if err != nil {
							if cctx.Err() == nil {
								errc <- err
							}
							return
						}
						mu.Lock()
						mine := map[string]bool{}
						for _, v := range views {
							g := v.MessageGroup()
							if h, ok := holder[g]; ok && h != r && !mine[g] {
								violations = append(violations, fmt.Sprintf("%s at receivers %d and %d", g, h, r))
							}
							holder[g], mine[g] = r, true
							seq, _ := strconv.Atoi(strings.TrimPrefix(string(v.Body), g+"/"))
							got[g] = append(got[g], seq)
							total++
						}
						for g := range mine {
							delete(holder, g)
						}
						mu.Unlock()
						for _, v := range views {
							if err := sc.Ack(cctx, v); err != nil {
								if cctx.Err() == nil {
									errc <- err
								}
								return
							}
						}
					}
				}()
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				done := total >= groups*perGroup
				mu.Unlock()
				if done {
					break
				}
				select {
				case err := <-errc:
					t.Fatal(err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("received %d of %d", total, groups*perGroup)
				}
				time.Sleep(10 * time.Millisecond)
			}
			// A message handed out twice would show within a few more receives.
			time.Sleep(300 * time.Millisecond)
			cancel()
			wg.Wait()
			want := make([]int, perGroup)
			for i := range want {
				want[i] = i
			}
			mu.Lock()
			defer mu.Unlock()
			for g := range groups {
				if diff := cmp.Diff(want, got[fmt.Sprintf("g%d", g)]); diff != "" {
					t.Errorf("group g%d received out of order or not once (-want +got):\n%s", g, diff)
				}
			}
			for _, v := range violations {
				t.Error(v)
			}
		})
	}
}

// TestSimpleConsumerFIFORedelivers: in a FIFO group, a batch whose first message was acked and
// the rest not holds its queue back until the invisible time passes; then the messages not
// acked come again, in order and with their delivery attempt raised (the broker's
// orderCountInfo), ahead of a message sent meanwhile.
func TestSimpleConsumerFIFORedelivers(t *testing.T) {
	n := popNode(t)
	a := newAdmin(t, n)
	a.createTopic("SimpleFIFOAgain", 1)
	p := newTestProducer(t, n)
	ctx := context.Background()
	for i := range 3 {
		if _, err := p.SendSync(ctx, producer.NewMessage("SimpleFIFOAgain", fmt.Appendf(nil, "m%d", i)).WithMessageGroup("g")); err != nil {
			t.Fatal(err)
		}
	}
	sc := startSimple(t, map[string]MessageSelector{"SimpleFIFOAgain": ByTag("*")},
		simpleOptions(t, n, nil, "simple-fifo-again", WithOrderly(true))...)
	var first []*MessageView
	receiveUntil(t, sc, time.Second, func(v *MessageView) { first = append(first, v) }, func() bool { return len(first) > 0 })
	if len(first) != 3 {
		t.Fatalf("first batch %d messages, want the queue's 3", len(first))
	}
	if err := sc.Ack(ctx, first[0]); err != nil {
		t.Fatal(err)
	}
	// A later message is sent meanwhile; it must wait behind the unacked ones.
	if _, err := p.SendSync(ctx, producer.NewMessage("SimpleFIFOAgain", []byte("m3")).WithMessageGroup("g")); err != nil {
		t.Fatal(err)
	}
	var again []*MessageView
	receiveUntil(t, sc, 30*time.Second, func(v *MessageView) {
		if time.Now().Before(first[1].InvisibleUntil()) {
			t.Errorf("%s handed out while the batch was still invisible", v.Body)
		}
		again = append(again, v)
		// Acked at once: the queue's next batch, if m3 is not in this one, comes after.
		if err := sc.Ack(ctx, v); err != nil {
			t.Fatal(err)
		}
	}, func() bool { return len(again) > 0 && string(again[len(again)-1].Body) == "m3" })
	var bodies []string
	for _, v := range again {
		bodies = append(bodies, fmt.Sprintf("%s#%d", v.Body, v.DeliveryAttempt()))
	}
	if diff := cmp.Diff([]string{"m1#2", "m2#2", "m3#1"}, bodies); diff != "" {
		t.Errorf("after the invisible time (body#attempt, -want +got):\n%s", diff)
	}
	assertNothingFor(t, sc, 700*time.Millisecond)
}
