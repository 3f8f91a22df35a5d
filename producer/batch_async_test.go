package producer_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// SendAsync with WithAsyncBatching against a node in this process, over TCP and in-process.
// The producer's transport records every send request, so a test knows which messages went
// in which request; a pull consumer reads back what the node stored.

// sendRequest is a send request a recordingTransport saw: its code and, for a batch, the
// number of messages it carries.
type sendRequest struct {
	code int32
	msgs int
}

// recordingTransport passes every request on and records the sends.
type recordingTransport struct {
	remoting.Transport
	mu    sync.Mutex
	sends []sendRequest
}

func (r *recordingTransport) record(req *remoting.Command) {
	switch req.Code {
	case remoting.SendMessageV2:
		r.mu.Lock()
		r.sends = append(r.sends, sendRequest{code: req.Code, msgs: 1})
		r.mu.Unlock()
	case remoting.SendBatchMessage:
		elems, err := message.DecodeBatch(req.Body)
		if err != nil {
			panic(err) // the producer's own encoding: a test bug
		}
		r.mu.Lock()
		r.sends = append(r.sends, sendRequest{code: req.Code, msgs: len(elems)})
		r.mu.Unlock()
	}
}

func (r *recordingTransport) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	r.record(req)
	return r.Transport.InvokeSync(ctx, addr, req)
}

func (r *recordingTransport) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	r.record(req)
	return r.Transport.InvokeAsync(ctx, addr, req, cb)
}

func (r *recordingTransport) requests() []sendRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sends)
}

var batchTestSeq atomic.Int64

// batchNode starts a node on port 0 with opts' limits.
func batchNode(t *testing.T, opts mq.Options) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts.Listen, opts.Store.Dir, opts.Logger, opts.Store.SegmentBytes = "127.0.0.1:0", t.TempDir(), &l, 16<<20
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// batchProducer is a producer reaching n by kind ("tcp" or "inproc") through a recording
// transport, and a topic of its own. The caller closes the producer.
func batchProducer(t *testing.T, n *mq.Node, kind string, opts ...producer.Option) (*producer.Producer, *recordingTransport, string) {
	t.Helper()
	var inner remoting.Transport = remoting.NewClient(remoting.ClientOptions{})
	if kind == "inproc" {
		inner = n.NewTransport()
	}
	rec := &recordingTransport{Transport: inner}
	seq := batchTestSeq.Add(1)
	base := []producer.Option{producer.WithNameServers(n.Addr()), producer.WithGroup("batch-pg"),
		producer.WithInstanceName(fmt.Sprintf("batch-%d", seq)), producer.WithOwnedTransport(rec)}
	p, err := producer.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, fmt.Sprintf("Batch_%d", seq)
}

// readBack pulls the first want messages of topic from n.
func readBack(t *testing.T, n *mq.Node, topic string, want int) []*consumer.Message {
	t.Helper()
	c, err := n.NewPullConsumer(consumer.WithGroup(fmt.Sprintf("batch-cg-%d", batchTestSeq.Add(1))),
		consumer.WithInstanceName(fmt.Sprintf("batch-c-%d", batchTestSeq.Add(1))),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, "*"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// A bound so that a lost message fails the test instead of hanging it; not a speed limit.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*consumer.Message
	for len(out) < want {
		msgs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("read back %d of %d messages: %v", len(out), want, err)
		}
		out = append(out, msgs...)
	}
	return out
}

// outcome is what one message's callback got; done is closed by its first call.
type outcome struct {
	res   *producer.SendResult
	err   error
	calls atomic.Int32
	done  chan struct{}
}

// callbacks makes a callback per message that records its outcome and counts its calls.
func callbacks(n int, wg *sync.WaitGroup) ([]*outcome, []func(*producer.SendResult, error)) {
	outs := make([]*outcome, n)
	cbs := make([]func(*producer.SendResult, error), n)
	for i := range n {
		o := &outcome{done: make(chan struct{})}
		outs[i] = o
		cbs[i] = func(res *producer.SendResult, err error) {
			if o.calls.Add(1) == 1 {
				o.res, o.err = res, err
				close(o.done)
				wg.Done()
			}
		}
	}
	return outs, cbs
}

// checkEachCalledOnce fails unless every callback ran exactly once.
func checkEachCalledOnce(t *testing.T, outs []*outcome) {
	t.Helper()
	for i, o := range outs {
		if c := o.calls.Load(); c != 1 {
			t.Errorf("callback of message %d ran %d times", i, c)
		}
	}
}

// checkNoProducerGoroutine fails when a goroutine still runs producer code: after Close,
// nothing of the producer may be left running.
func checkNoProducerGoroutine(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		var left []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "mq/producer.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines run producer code after Close:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond) // a goroutine's end signals nothing to wait on
	}
}

func seqBody(i, size int) []byte {
	b := []byte(fmt.Sprintf("%08d", i))
	return append(b, strings.Repeat("b", size-len(b))...)
}

func bodySeq(t *testing.T, body []byte) int {
	t.Helper()
	i, err := strconv.Atoi(string(body[:8]))
	if err != nil {
		t.Fatalf("body %q: %v", body[:8], err)
	}
	return i
}

// TestAsyncBatchingStoresEachOnceInOrder sends many messages through small batches and a small
// window: every callback runs once with the result of its own stored message (its UNIQ_KEY,
// queue, offset and offset id), every message is stored once, in the order SendAsync took it
// within its queue, and only batch requests carried them, never one message twice.
func TestAsyncBatchingStoresEachOnceInOrder(t *testing.T) {
	const msgs, bodySize = 3000, 300
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n := batchNode(t, mq.Options{})
			p, rec, topic := batchProducer(t, n, kind, producer.WithAsyncBatching(2*time.Millisecond, 4<<10),
				producer.WithMaxAsyncInFlight(200))
			var wg sync.WaitGroup
			wg.Add(msgs)
			outs, cbs := callbacks(msgs, &wg)
			for i := range msgs {
				if err := p.SendAsync(context.Background(), producer.NewMessage(topic, seqBody(i, bodySize)), cbs[i]); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			checkNoProducerGoroutine(t)
			checkEachCalledOnce(t, outs)

			carried := 0
			for _, r := range rec.requests() {
				if r.code != remoting.SendBatchMessage {
					t.Fatalf("a request of code %d: every message should have gone in a batch", r.code)
				}
				carried += r.msgs
			}
			if carried != msgs {
				t.Fatalf("batch requests carried %d messages, want each of the %d once", carried, msgs)
			}

			stored := readBack(t, n, topic, msgs)
			seen := make(map[int]bool, msgs)
			last := map[producer.MessageQueue]int{}
			slices.SortFunc(stored, func(a, b *consumer.Message) int { return int(a.QueueOffset - b.QueueOffset) })
			for _, m := range stored {
				i := bodySeq(t, m.Body)
				if seen[i] {
					t.Fatalf("message %d stored twice", i)
				}
				seen[i] = true
				if prev, ok := last[m.Queue]; ok && i < prev {
					t.Fatalf("queue %v stores message %d after %d", m.Queue, i, prev)
				}
				last[m.Queue] = i
				o := outs[i]
				if o.err != nil {
					t.Fatalf("message %d: %v", i, o.err)
				}
				got := *o.res
				want := producer.SendResult{Status: producer.SendOK, MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID,
					Queue: m.Queue, QueueOffset: m.QueueOffset}
				got.RegionID, got.TraceOn, got.Attempts = "", false, 0
				if got != want {
					t.Fatalf("message %d: callback's result %v, stored as %v", i, &got, &want)
				}
				if o.res.Attempts != 1 {
					t.Fatalf("message %d: %d attempts", i, o.res.Attempts)
				}
			}
			if len(last) < 2 {
				t.Fatalf("messages went to queues %v: batching must keep the round robin", last)
			}
		})
	}
}

// TestAsyncBatchingLingerSendsALoneMessage: a message nothing joins leaves when its linger
// passed, without Close.
func TestAsyncBatchingLingerSendsALoneMessage(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n := batchNode(t, mq.Options{})
			p, rec, topic := batchProducer(t, n, kind, producer.WithAsyncBatching(5*time.Millisecond, producer.DefaultAsyncBatchMaxBytes))
			defer p.Close()
			type result struct {
				res *producer.SendResult
				err error
			}
			done := make(chan result, 1)
			if err := p.SendAsync(context.Background(), producer.NewMessage(topic, []byte("alone")), func(res *producer.SendResult, err error) {
				done <- result{res, err}
			}); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if want := []sendRequest{{remoting.SendBatchMessage, 1}}; !slices.Equal(rec.requests(), want) {
				t.Fatalf("requests %v, want %v", rec.requests(), want)
			}
			stored := readBack(t, n, topic, 1)
			if m := stored[0]; string(m.Body) != "alone" || m.MsgID != r.res.MsgID || m.QueueOffset != r.res.QueueOffset {
				t.Fatalf("stored %s at %d, callback said %v", m.MsgID, m.QueueOffset, r.res)
			}
		})
	}
}

// TestAsyncBatchingSplitsAtMaxBytesAndCloseFlushes: with a linger that never ends during the
// test and one queue, a batch leaves when the next message would take it past maxBytes, and
// Close sends the last one, open, before it returns.
func TestAsyncBatchingSplitsAtMaxBytesAndCloseFlushes(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n := batchNode(t, mq.Options{})
			// 1000-byte bodies make elements of a little more than 1000 bytes: three fit.
			p, rec, topic := batchProducer(t, n, kind, producer.WithDefaultTopicQueueNums(1),
				producer.WithSendTimeout(10*time.Minute), producer.WithAsyncBatching(5*time.Minute, 3500))
			const msgs = 10
			var wg sync.WaitGroup
			wg.Add(msgs)
			outs, cbs := callbacks(msgs, &wg)
			for i := range msgs {
				if err := p.SendAsync(context.Background(), producer.NewMessage(topic, seqBody(i, 1000)), cbs[i]); err != nil {
					t.Fatal(err)
				}
			}
			// Messages 0-8 are in three full batches, sent when 3, 6 and 9 came; 9 lingers.
			for i := range 9 {
				<-outs[i].done
			}
			if c := outs[9].calls.Load(); c != 0 {
				t.Fatal("the last message left before its linger ended or Close")
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if c := outs[9].calls.Load(); c != 1 {
				t.Fatalf("Close returned with the open batch's callback run %d times", c)
			}
			wg.Wait()
			checkEachCalledOnce(t, outs)
			want := []sendRequest{{remoting.SendBatchMessage, 3}, {remoting.SendBatchMessage, 3},
				{remoting.SendBatchMessage, 3}, {remoting.SendBatchMessage, 1}}
			if got := rec.requests(); !slices.Equal(got, want) {
				t.Fatalf("requests %v, want %v", got, want)
			}
			for i, o := range outs {
				if o.err != nil || o.res.QueueOffset != int64(i) {
					t.Fatalf("message %d: offset %v, error %v", i, o.res, o.err)
				}
			}
			checkNoProducerGoroutine(t)
		})
	}
}

// TestAsyncBatchingUnbatchableGoAlone: messages a batch cannot hold take the unbatched path at
// once, although the batching linger would hold a batch for minutes.
func TestAsyncBatchingUnbatchableGoAlone(t *testing.T) {
	n := batchNode(t, mq.Options{})
	p, rec, topic := batchProducer(t, n, "inproc", producer.WithSendTimeout(10*time.Minute),
		producer.WithAsyncBatching(5*time.Minute, 2<<10), producer.WithCompressOver(4<<10))
	defer p.Close()
	for _, c := range []struct {
		name string
		msg  *producer.Message
	}{
		{"delay level", producer.NewMessage(topic, []byte("x")).WithDelayTimeLevel(1)},
		{"DELAY property", producer.NewMessage(topic, []byte("x")).WithProperty("DELAY", "2")},
		{"WAIT property", producer.NewMessage(topic, []byte("x")).WithProperty("WAIT", "false")},
		{"compressed body", producer.NewMessage(topic, []byte(strings.Repeat("z", 5<<10)))},
		{"element over maxBytes", producer.NewMessage(topic, []byte(strings.Repeat("y", 3<<10)))},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(rec.requests())
			done := make(chan error, 1)
			if err := p.SendAsync(context.Background(), c.msg, func(_ *producer.SendResult, err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := rec.requests()[before:]; !slices.Equal(got, []sendRequest{{remoting.SendMessageV2, 1}}) {
				t.Fatalf("requests %v, want one SEND_MESSAGE_V2", got)
			}
		})
	}
}

// TestAsyncBatchingErrorReachesEveryCallback: a batch the broker refuses (larger than its max
// message size) fails every message's callback with the broker's error, once, and a callback
// that panics keeps none of the others from running.
func TestAsyncBatchingErrorReachesEveryCallback(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n := batchNode(t, mq.Options{Limits: config.Limits{MaxMessageBytes: 16 << 10}})
			p, _, topic := batchProducer(t, n, kind, producer.WithDefaultTopicQueueNums(1),
				producer.WithSendTimeout(10*time.Minute), producer.WithAsyncBatching(5*time.Minute, 64<<10))
			// The topic exists before the batch, which then fails for its size only.
			if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("first"))); err != nil {
				t.Fatal(err)
			}
			const msgs = 20
			var wg sync.WaitGroup
			wg.Add(msgs)
			outs, cbs := callbacks(msgs, &wg)
			record := cbs[0]
			cbs[0] = func(res *producer.SendResult, err error) {
				record(res, err)
				panic("callback 0 panics")
			}
			for i := range msgs {
				if err := p.SendAsync(context.Background(), producer.NewMessage(topic, seqBody(i, 1000)), cbs[i]); err != nil {
					t.Fatal(err)
				}
			}
			// Close sends the one open batch of the 20 messages, about 21 KiB.
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			checkEachCalledOnce(t, outs)
			refused := 0
			for i, o := range outs {
				var re *remoting.ResponseError
				if !errors.As(o.err, &re) || re.Code != remoting.MessageIllegal {
					t.Fatalf("message %d: %v, want the broker's MESSAGE_ILLEGAL", i, o.err)
				}
				var se *producer.SendError
				if errors.As(o.err, &se) && len(se.Attempts) == 1 {
					refused++
				}
			}
			if refused != msgs {
				t.Fatalf("%d of %d callbacks saw one attempt: a broker's refusal is not retried", refused, msgs)
			}
		})
	}
}

// TestAsyncBatchingFullWindowSendsLingeringBatches: when SendAsync has to wait for room among
// the async sends in flight, the batch holding them leaves without waiting out its linger
// (which outlasts the test), so the wait ends.
func TestAsyncBatchingFullWindowSendsLingeringBatches(t *testing.T) {
	n := batchNode(t, mq.Options{})
	p, rec, topic := batchProducer(t, n, "tcp", producer.WithDefaultTopicQueueNums(1), producer.WithMaxAsyncInFlight(5),
		producer.WithSendTimeout(10*time.Minute), producer.WithAsyncBatching(5*time.Minute, producer.DefaultAsyncBatchMaxBytes))
	const msgs = 6
	var wg sync.WaitGroup
	wg.Add(msgs)
	outs, cbs := callbacks(msgs, &wg)
	// A bound so that a wait the flush does not end fails instead of hanging; not a speed limit.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range msgs {
		if err := p.SendAsync(ctx, producer.NewMessage(topic, seqBody(i, 100)), cbs[i]); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for i := range 5 {
		<-outs[i].done
		if outs[i].err != nil {
			t.Fatal(outs[i].err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	checkEachCalledOnce(t, outs)
	want := []sendRequest{{remoting.SendBatchMessage, 5}, {remoting.SendBatchMessage, 1}}
	if got := rec.requests(); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
}

// TestAsyncBatchingCloseWhileSending: SendAsync racing Close from several goroutines either
// refuses the message with ErrClosed (its callback never runs) or runs its callback exactly
// once, successfully, and every accepted message is stored.
func TestAsyncBatchingCloseWhileSending(t *testing.T) {
	n := batchNode(t, mq.Options{})
	p, _, topic := batchProducer(t, n, "inproc", producer.WithAsyncBatching(time.Millisecond, 4<<10))
	const senders, each = 4, 500
	var called, underWay, sending sync.WaitGroup
	var accepted atomic.Int64
	outs := make([][]*outcome, senders)
	underWay.Add(senders)
	for g := range senders {
		var cbs []func(*producer.SendResult, error)
		outs[g], cbs = callbacks(each, &called)
		called.Add(each)
		sending.Add(1)
		go func() {
			defer sending.Done()
			for i := range each {
				if i == each/4 {
					underWay.Done()
				}
				err := p.SendAsync(context.Background(), producer.NewMessage(topic, seqBody(g*each+i, 100)), cbs[i])
				if errors.Is(err, producer.ErrClosed) {
					called.Add(-(each - i)) // these callbacks never run
					outs[g] = outs[g][:i]
					return
				}
				if err != nil {
					panic(err)
				}
				accepted.Add(1)
			}
		}()
	}
	underWay.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	sending.Wait()
	called.Wait()
	for _, o := range outs {
		checkEachCalledOnce(t, o)
		for i, x := range o {
			if x.err != nil {
				t.Fatalf("message %d: %v", i, x.err)
			}
		}
	}
	checkNoProducerGoroutine(t)
	readBack(t, n, topic, int(accepted.Load()))
}

func TestAsyncBatchingOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []producer.Option
	}{
		{"negative linger", []producer.Option{producer.WithAsyncBatching(-time.Millisecond, 1024)}},
		{"linger as long as the send timeout", []producer.Option{producer.WithSendTimeout(time.Second),
			producer.WithAsyncBatching(time.Second, 1024)}},
		{"no bytes", []producer.Option{producer.WithAsyncBatching(time.Millisecond, 0)}},
		{"over the max message size", []producer.Option{producer.WithMaxMessageSize(1 << 20),
			producer.WithAsyncBatching(time.Millisecond, 1<<20+1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := producer.New(append([]producer.Option{producer.WithNameServers("127.0.0.1:9876")}, c.opts...)...)
			if !errors.Is(err, producer.ErrInvalidOption) {
				t.Fatalf("New: %v, want ErrInvalidOption", err)
			}
		})
	}
}
