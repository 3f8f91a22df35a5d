package consumer

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

func reqAt(off int64) consumeRequest {
	return consumeRequest{msgs: []*Message{{QueueOffset: off}}}
}

// The work queue hands requests out in arrival order, whatever the pushes and pops
// interleave (the array is reused when it empties and compacted when a backlog never
// does), and a push never waits for a worker.
func TestWorkQueueOrder(t *testing.T) {
	q := newWorkQueue()
	var next, want int64
	for round := range 50 {
		for range 1 + round%7*40 { // bursts of up to 241 with no worker
			q.push(reqAt(next))
			next++
		}
		for range 1 + round%5*30 {
			if q.len() == 0 {
				break
			}
			req, ok := q.pop()
			if !ok || req.msgs[0].QueueOffset != want {
				t.Fatalf("pop %d: %v %v, want offset %d", want, req.msgs, ok, want)
			}
			want++
		}
	}
	for q.len() > 0 {
		req, _ := q.pop()
		if req.msgs[0].QueueOffset != want {
			t.Fatalf("drain: offset %d, want %d", req.msgs[0].QueueOffset, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d of %d", want, next)
	}
	if q.head != 0 || len(q.reqs) != 0 {
		t.Errorf("empty queue keeps head %d and %d slots", q.head, len(q.reqs))
	}
}

// Close wakes the workers waiting and skips what is still queued; a push after it is dropped.
func TestWorkQueueClose(t *testing.T) {
	q := newWorkQueue()
	var wg sync.WaitGroup
	results := make(chan bool, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok := q.pop()
			results <- ok
		}()
	}
	q.push(reqAt(1))
	if !<-results {
		t.Fatal("a waiting worker got nothing for a push")
	}
	q.close()
	wg.Wait()
	close(results)
	for ok := range results {
		if ok {
			t.Error("a worker got a request after close")
		}
	}
	q.push(reqAt(2))
	if _, ok := q.pop(); ok || q.len() != 0 {
		t.Error("a request pushed after close was kept")
	}
}

// Many submitters and workers at once: every request is taken exactly once.
func TestWorkQueueConcurrent(t *testing.T) {
	q := newWorkQueue()
	const submitters, each = 8, 2000
	var taken sync.Map
	var workers sync.WaitGroup
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				req, ok := q.pop()
				if !ok {
					return
				}
				if _, dup := taken.LoadOrStore(req.msgs[0].QueueOffset, true); dup {
					t.Errorf("offset %d taken twice", req.msgs[0].QueueOffset)
				}
			}
		}()
	}
	var subs sync.WaitGroup
	for s := range submitters {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range each {
				q.push(reqAt(int64(s*each + i)))
			}
		}()
	}
	subs.Wait()
	eventually(t, "every request taken", func() bool { return q.len() == 0 })
	q.close()
	workers.Wait()
	n := 0
	taken.Range(func(any, any) bool { n++; return true })
	if n != submitters*each {
		t.Errorf("%d requests taken, want %d", n, submitters*each)
	}
}

// A listener busy on one queue's messages holds no other queue's pulls back: with every
// consume goroutine blocked on queue 0, queue 1 goes on pulling message after message into its
// cache (RocketMQ's unbounded consume queue, flow control per process queue). The blocked
// queue's own pulls stop at its threshold, and once released everything is consumed.
func TestBusyQueueDoesNotHoldBackOthers(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := testNode(t)
			a := newAdmin(t, n)
			a.createTopic("busy", 2)
			release := make(chan struct{})
			var got seen
			listener := func(ctx context.Context, msgs []*Message) (ConsumeResult, error) {
				if msgs[0].Queue.QueueID == 0 {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				got.add("b", msgs)
				return ConsumeSuccess, nil
			}
			opts := append(fastOptions(t, n, transportFor(t, n, kind), "g-busy-"+kind, "busy-"+kind),
				WithConsumeGoroutines(2), WithPullThresholds(20, 1<<20))
			pc := startConsumer(t, "busy", "*", listener, opts...)
			eventually(t, "both queues held", func() bool { return len(heldQueues(pc, "busy")) == 2 })
			for i := range 30 {
				a.send("busy", 0, "", "", "q0-"+strconv.Itoa(i))
			}
			q1 := MessageQueue{Topic: "busy", BrokerName: "broker-a", QueueID: 1}
			q0 := MessageQueue{Topic: "busy", BrokerName: "broker-a", QueueID: 0}
			eventually(t, "queue 0's cache full and its listeners stuck", func() bool {
				c, _, _ := cacheOf(pc, q0)
				return c >= 20 && pc.work.len() > 0
			})
			// One message at a time: each needs a pull of its own after the one before was
			// submitted, which a blocking submit would never have let happen.
			for i := range 3 {
				a.send("busy", 1, "", "", "q1-"+strconv.Itoa(i))
				eventually(t, "queue 1 pulled message "+strconv.Itoa(i), func() bool {
					c, _, _ := cacheOf(pc, q1)
					return c == i+1
				})
			}
			if c, _, _ := cacheOf(pc, q0); c > 20+32 {
				t.Errorf("queue 0 caches %d messages, want at most its threshold plus one pull", c)
			}
			close(release)
			eventually(t, "everything consumed", func() bool { return got.count() == 33 })
		})
	}
}

// cacheOf is the cache statistics of mq as pc holds it (zeros when it does not).
func cacheOf(pc *PushConsumer, mq MessageQueue) (int, int64, int64) {
	pc.p.queuesMu.Lock()
	qs := pc.p.queues[mq]
	pc.p.queuesMu.Unlock()
	if qs == nil {
		return 0, 0, 0
	}
	return qs.pq.stats()
}
