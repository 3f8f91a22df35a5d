package consumer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

// countingTransport counts the requests it carries by code. It holds each ACK_MESSAGE's answer
// for ackHold, as a network would: a broker that serves acks on the caller's goroutine (the
// in-process transport under ASYNC_FLUSH) answers before another Ack can join the wire.
type countingTransport struct {
	remoting.Transport
	ackHold time.Duration
	mu      sync.Mutex
	counts  map[int32]int
}

func (c *countingTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	c.mu.Lock()
	c.counts[req.Code]++
	c.mu.Unlock()
	resp, err := c.Transport.InvokeSync(ctx, addr, req)
	if req.Code == remoting.AckMessage && c.ackHold > 0 {
		time.Sleep(c.ackHold)
	}
	return resp, err
}

func (c *countingTransport) count(code int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[code]
}

// TestSimpleConsumerMergesConcurrentAcks acknowledges every message of each received batch
// from a goroutine of its own: the acks beyond the few on the wire leave merged in
// BATCH_ACK_MESSAGEs, every Ack returns nil, and none of the messages comes back after its
// invisible time.
func TestSimpleConsumerMergesConcurrentAcks(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			n := popNode(t)
			a := newAdmin(t, n)
			a.createTopic("SimpleMerged", 2)
			want := a.sendN("SimpleMerged", 2, 200, "m")
			var inner remoting.Transport
			if kind == "tcp" {
				inner = remoting.NewClient(remoting.ClientOptions{})
			} else {
				inner = n.NewTransport()
			}
			tr := &countingTransport{Transport: inner, ackHold: time.Millisecond, counts: map[int32]int{}}
			t.Cleanup(func() { tr.Close() })
			sc := startSimple(t, map[string]MessageSelector{"SimpleMerged": ByTag("*")},
				simpleOptions(t, n, tr, "simple-merged-"+kind)...)
			ctx := context.Background()
			count := map[string]int{}
			deadline := time.Now().Add(20 * time.Second)
			for len(count) < len(want) {
				if time.Now().After(deadline) {
					t.Fatalf("timed out: %d of %d received", len(count), len(want))
				}
				views, err := sc.Receive(ctx, MaxReceiveMessageNum, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				errs := make([]error, len(views))
				for i, v := range views {
					count[string(v.Body)]++
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[i] = sc.Ack(ctx, v)
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("ack of %s: %v", views[i].Body, err)
					}
				}
			}
			// Past the invisible time and several revive rounds: nothing acknowledged comes back.
			assertNothingFor(t, sc, 2*time.Second)
			for body, c := range count {
				if c != 1 {
					t.Errorf("%s received %d times", body, c)
				}
			}
			acks, batches := tr.count(remoting.AckMessage), tr.count(remoting.BatchAckMessage)
			if batches == 0 || acks >= len(want) {
				t.Errorf("%d ACK_MESSAGE and %d BATCH_ACK_MESSAGE for %d concurrent acks: nothing merged", acks, batches, len(want))
			}
			t.Logf("%d acks: %d ACK_MESSAGE, %d BATCH_ACK_MESSAGE", len(want), acks, batches)
		})
	}
}

// noBatchTransport answers every BATCH_ACK_MESSAGE REQUEST_CODE_NOT_SUPPORTED, as a broker
// without the code does, and counts the ACK_MESSAGEs it carries.
type noBatchTransport struct {
	remoting.Transport
	mu              sync.Mutex
	batches, single int
}

func (c *noBatchTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	c.mu.Lock()
	switch req.Code {
	case remoting.BatchAckMessage:
		c.batches++
		c.mu.Unlock()
		return remoting.NewResponse(remoting.RequestCodeNotSupported, "request type 200151 not supported"), nil
	case remoting.AckMessage:
		c.single++
	}
	c.mu.Unlock()
	return c.Transport.InvokeSync(ctx, addr, req)
}

// TestSimpleConsumerAckAsyncBatchRefused: acks made with AckAsync whose merged batch the broker
// refuses as a whole go again one by one, and each done gets that answer: nil, and none of
// the messages comes back after its invisible time. An AckAsync with an ended context is
// refused before anything is sent, without calling done.
func TestSimpleConsumerAckAsyncBatchRefused(t *testing.T) {
	n := popNode(t)
	a := newAdmin(t, n)
	a.createTopic("SimpleAsyncNoBatch", 2)
	want := a.sendN("SimpleAsyncNoBatch", 2, 100, "m")
	tr := &noBatchTransport{Transport: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { tr.Close() })
	sc := startSimple(t, map[string]MessageSelector{"SimpleAsyncNoBatch": ByTag("*")},
		simpleOptions(t, n, tr, "simple-async-nobatch")...)
	count := map[string]int{}
	var dones asyncDones
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	received := 0
	receiveUntil(t, sc, time.Second, func(v *MessageView) {
		received++
		count[string(v.Body)]++
		if received == 1 {
			if err := sc.AckAsync(ended, v, func(error) { t.Error("done called for a refused AckAsync") }); !errors.Is(err, context.Canceled) {
				t.Errorf("AckAsync with an ended context: %v, want context.Canceled", err)
			}
		}
		if err := sc.AckAsync(context.Background(), v, dones.done); err != nil {
			t.Fatal(err)
		}
	}, func() bool { return len(count) == len(want) })
	wantNoneBack(t, sc, count)
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	dones.check(t, received)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.batches == 0 || tr.single < received {
		t.Errorf("%d refused batches and %d ACK_MESSAGEs for %d acks: want the refused ones sent alone", tr.batches, tr.single, received)
	}
}

// asyncDones tallies the answers AckAsync's dones get.
type asyncDones struct {
	mu       sync.Mutex
	answered int
	errs     []error
}

func (d *asyncDones) done(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answered++
	if err != nil {
		d.errs = append(d.errs, err)
	}
}

// check fails t unless every one of the acks made got its answer, each nil.
func (d *asyncDones) check(t *testing.T, acks int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.answered != acks || len(d.errs) != 0 {
		t.Errorf("after Close: %d of %d acks answered, errors %v", d.answered, acks, d.errs)
	}
}
