package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// A broker restart seen from one consumer: its pulls fail while the broker is away, then the
// broker refuses them until it hears the group's heartbeat again, and its member list forgets
// the consumer. These tests script that on a fake broker, on synctest's clock.

var (
	errConnRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	errNotKnown    = &remoting.ResponseError{Code: remoting.SubscriptionNotExist, Remark: "the consumer's group info not exist"}
	errBusy        = &remoting.ResponseError{Code: remoting.SystemBusy, Remark: "busy"}
)

// holdPull answers a pull as an idle broker does: nothing new, after a second.
func holdPull(ctx context.Context, h protocol.PullMessageRequestHeader) (*remoting.Command, error) {
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp := remoting.NewResponse(remoting.PullNotFound, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: h.QueueOffset,
		MaxOffset: h.QueueOffset})
	return resp, nil
}

// A pull whose connection broke, or could not be made, is retried after 20 ms, doubling while
// the broker stays away; once it is back, pulls it refuses for not knowing the group yet are
// retried the same quick way. Every other failure waits RocketMQ's 3 s, and so does a refusal
// that no broken connection came before.
func TestPullRetriesQuicklyAcrossBrokenConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := []error{remoting.ErrConnClosed, errConnRefused, remoting.ErrConnClosed, errNotKnown, errNotKnown,
			nil, errBusy, errNotKnown}
		br := newScriptBroker()
		br.answerPull = func(ctx context.Context, h protocol.PullMessageRequestHeader, n int) (*remoting.Command, error) {
			if h.Topic != "T" || h.QueueID != 0 || n > len(script) || script[n-1] == nil {
				return holdPull(ctx, h)
			}
			var re *remoting.ResponseError
			if errors.As(script[n-1], &re) {
				return remoting.NewResponse(re.Code, re.Remark), nil
			}
			return nil, script[n-1]
		}
		if _, err := startFakePush(t, br, ByTag("*")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		pulls := br.pullsOf(0)
		if len(pulls) <= len(script) {
			t.Fatalf("%d pulls, want more than %d", len(pulls), len(script))
		}
		var gaps []time.Duration
		for i := 1; i <= len(script); i++ {
			gaps = append(gaps, pulls[i].at.Sub(pulls[i-1].at))
		}
		want := []time.Duration{
			20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, // broker away
			20 * time.Millisecond, 40 * time.Millisecond, // back, group not heartbeated yet
			time.Second,                       // a long poll answered
			DefaultPullTimeDelayWhenException, // SYSTEM_BUSY
			DefaultPullTimeDelayWhenException, // not known, with no broken connection before
		}
		if diff := cmp.Diff(want, gaps); diff != "" {
			t.Errorf("waits between pulls (-want +got):\n%s", diff)
		}
	})
}

// The quick retries double up to DefaultMaxReconnectPullDelay, and never past the pull error
// delay; the registration retries give up after one round of doubling.
func TestFailedPullDelayBounds(t *testing.T) {
	run := func(errorDelay time.Duration, errs ...error) []time.Duration {
		p := &puller{cfg: pullerConfig{pullErrorDelay: errorDelay}}
		qs := &queueState{}
		var out []time.Duration
		for _, err := range errs {
			out = append(out, p.failedPullDelay(qs, err))
		}
		return out
	}
	ms := time.Millisecond
	lost := make([]error, 8)
	for i := range lost {
		lost[i] = remoting.ErrConnClosed
	}
	if diff := cmp.Diff([]time.Duration{20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 500 * ms, 500 * ms, 500 * ms},
		run(3*time.Second, lost...)); diff != "" {
		t.Errorf("broker away (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{20 * ms, 40 * ms, 50 * ms, 50 * ms}, run(50*ms, lost[:4]...)); diff != "" {
		t.Errorf("with a 50 ms pull error delay (-want +got):\n%s", diff)
	}
	refused := append([]error{remoting.ErrConnClosed}, errNotKnown, errNotKnown, errNotKnown, errNotKnown, errNotKnown,
		errNotKnown, errNotKnown, errNotKnown)
	if diff := cmp.Diff([]time.Duration{20 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 500 * ms, 3 * time.Second, 3 * time.Second},
		run(3*time.Second, refused...)); diff != "" {
		t.Errorf("broker back but refusing (-want +got):\n%s", diff)
	}
}

// memberBroker is a fakeBroker whose member list a heartbeat fills, as a broker's consumer
// table is: empty, it answers GET_CONSUMER_LIST_BY_GROUP as RocketMQ does, "no consumer for
// this group".
type memberBroker struct {
	*fakeBroker
	remember atomic.Bool // whether a heartbeat registers the consumer
}

func (m *memberBroker) InvokeSync(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code == remoting.GetConsumerListByGroup {
		m.mu.Lock()
		ids := m.members
		m.mu.Unlock()
		if len(ids) == 0 {
			return remoting.NewResponse(remoting.SystemError, "no consumer for this group, g"), nil
		}
		body, _ := json.Marshal(protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: ids})
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = body
		return resp, nil
	}
	return m.fakeBroker.InvokeSync(ctx, addr, req)
}

// heartbeatInstance is a brokerInstance whose heartbeats reach a memberBroker.
type heartbeatInstance struct {
	brokerInstance
	br    *memberBroker
	beats atomic.Int32
}

func (h *heartbeatInstance) SendHeartbeatToAllBrokers(context.Context) {
	h.beats.Add(1)
	if !h.br.remember.Load() {
		return
	}
	h.br.mu.Lock()
	defer h.br.mu.Unlock()
	for _, id := range h.br.members {
		if id == h.ClientID() {
			return
		}
	}
	h.br.members = append(h.br.members, h.ClientID())
}

// A broker that lost the consumer's registration (it restarted) answers the member list
// without it. The consumer then heartbeats at once and allocates by the list the broker gives
// after it: it keeps its share instead of skipping the rebalance, and gives up only the queues
// of members the broker knows of, instead of all of them.
func TestRebalanceHeartbeatsWhenBrokerForgotTheConsumer(t *testing.T) {
	q0 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	for _, tc := range []struct {
		name      string
		members   []string // what the broker knows after its restart
		remember  bool     // whether the consumer's heartbeat registers it again
		wantHeld  []MessageQueue
		wantBeats int32 // heartbeats of the rebalance round, one more when the queues changed
	}{
		{"no consumer for this group", nil, true, []MessageQueue{q0, q1}, 1},
		{"a member that joined alone", []string{"0.0.0.0@first"}, true, []MessageQueue{q1}, 2},
		// RocketMQ's answers once the heartbeat did not help: keep the queues on the error,
		// and allocate by the list without us (nothing).
		{"no consumer, heartbeat lost", nil, false, []MessageQueue{q0, q1}, 2},
		{"joined alone, heartbeat lost", []string{"0.0.0.0@first"}, false, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				br := &memberBroker{fakeBroker: newFakeBroker(fakeQueues(), fakeInstance{}.ClientID())}
				br.remember.Store(true)
				inst := &heartbeatInstance{brokerInstance: brokerInstance{fakeInstance{tr: br}}, br: br}
				pc, err := NewPushConsumer(append(fakeOptions(t, br), optionFunc(func(c *config) { c.inst = inst }))...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pc.Close() })
				if err := pc.Subscribe("T", "*", func(context.Context, []*Message) (ConsumeResult, error) {
					return ConsumeSuccess, nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := pc.Start(); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if diff := cmp.Diff([]MessageQueue{q0, q1}, heldQueues(pc, "T")); diff != "" {
					t.Fatalf("held before the restart (-want +got):\n%s", diff)
				}

				br.setMembers(tc.members...)
				br.remember.Store(tc.remember)
				before := inst.beats.Load()
				pc.p.Rebalance()
				synctest.Wait()
				if diff := cmp.Diff(tc.wantHeld, heldQueues(pc, "T")); diff != "" {
					t.Errorf("held after the rebalance (-want +got):\n%s", diff)
				}
				// The round covers T and the retry topic; one heartbeat serves both when it
				// works. A round that changed the queues heartbeats once more, as RocketMQ's
				// messageQueueChanged does.
				if n := inst.beats.Load() - before; n != tc.wantBeats {
					t.Errorf("%d heartbeats in the rebalance round, want %d", n, tc.wantBeats)
				}
			})
		})
	}
}
