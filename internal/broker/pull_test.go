package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

func bodies(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func TestPullRoundTrip(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 4)
	putMsgs(t, tb, "T", 1, 5, "", "m")
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "g-" + name
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub("T", "*"))
			h := pullHeader(group, "T", 1, 0)
			h.SysFlag = 0
			resp := invoke(t, tr, tb.Addr, pullCmd(h))
			want := map[string]string{"nextBeginOffset": "5", "minOffset": "0", "maxOffset": "5", "suggestWhichBrokerId": "0"}
			if diff := cmp.Diff(want, resp.ExtFields); diff != "" {
				t.Errorf("ext (-want +got):\n%s", diff)
			}
			r := decodePull(t, resp)
			if r.code != remoting.Success || r.remark != "FOUND" {
				t.Fatalf("code %d remark %q", r.code, r.remark)
			}
			if diff := cmp.Diff(bodies("m", 0, 5), r.bodies); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
			for i, m := range r.msgs {
				if m.QueueOffset != int64(i) || m.QueueID != 1 || string(m.Topic) != "T" || m.StoreHost != tb.storeHost {
					t.Errorf("record %d: offset %d queue %d topic %s store %v", i, m.QueueOffset, m.QueueID, m.Topic, m.StoreHost)
				}
			}
			// Caught up, no suspend: nothing new at 5.
			h.QueueOffset = 5
			r = pull(t, tr, tb.Addr, h)
			if r.code != remoting.PullNotFound || r.hdr.NextBeginOffset != 5 || r.remark != "OFFSET_OVERFLOW_ONE" {
				t.Errorf("at max: %+v", r)
			}
			// From the middle, two at a time.
			h.QueueOffset, h.MaxMsgNums = 2, 2
			r = pull(t, tr, tb.Addr, h)
			if r.code != remoting.Success || r.hdr.NextBeginOffset != 4 || !cmp.Equal(bodies("m", 2, 4), r.bodies) {
				t.Errorf("middle: code %d next %d bodies %v", r.code, r.hdr.NextBeginOffset, r.bodies)
			}
		})
	}
}

func TestPullMaxMsgNums(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	putMsgs(t, tb, "T", 0, 40, "", "m")
	for _, c := range []struct {
		max  int32
		want int
	}{{0, 1}, {-3, 1}, {1, 1}, {32, 32}, {100, 32}} {
		h := pullHeader("g", "T", 0, 0)
		h.SysFlag, h.MaxMsgNums, h.Subscription = protocol.PullFlagSubscription, c.max, "*"
		r := pull(t, tb.InProc, tb.Addr, h)
		if r.code != remoting.Success || len(r.msgs) != c.want || r.hdr.NextBeginOffset != int64(c.want) {
			t.Errorf("maxMsgNums %d: code %d, %d messages, next %d", c.max, r.code, len(r.msgs), r.hdr.NextBeginOffset)
		}
	}
}

// TestPullStatusMapping covers the rows of docs/protocol.md §5.6 "Reference broker mapping of store
// results" that a live store produces here; TestPullCodeTable covers every store status.
func TestPullStatusMapping(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Store.FileReservedTime = time.Millisecond })
	addTopic(tb, "T", 2)
	addTopic(tb, "Old", 1)
	// Fill "Old" past several CommitLog segments and ConsumeQueue files, then delete the
	// oldest data: its min offset moves past 0.
	// Fill "Old" past many CommitLog segments, then delete all but the active one: the
	// queue's min offset moves to its first readable message. (MESSAGE_WAS_REMOVING and
	// OFFSET_FOUND_NULL only occur while retention races a pull; TestPullCodeTable maps them.)
	const oldN = 2500
	body := make([]byte, 300)
	for range oldN {
		if _, err := tb.Store().PutMessage(&storage.Message{Topic: "Old", Body: body, BornHost: consumeTestBornHost,
			StoreHost: tb.storeHost, BornTimestamp: time.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "Old dispatched", func() bool { return tb.Store().MaxOffsetInQueue("Old", 0) == oldN })
	time.Sleep(5 * time.Millisecond)
	for {
		tb.Store().ExecuteDeleteFilesManually()
		if st := tb.Store().CleanExpired(); st.CommitLogSegments == 0 {
			break
		}
	}
	minOld := tb.Store().MinOffsetInQueue("Old", 0)
	if minOld == 0 {
		t.Fatal("retention did not move the min offset")
	}
	putMsgs(t, tb, "T", 0, 3, "a", "m")

	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "a"), wiretest.Sub("Old", "*"))
	cases := []struct {
		name   string
		topic  string
		queue  int32
		offset int64
		expr   string // header subscription, "" for the heartbeat's
		code   int32
		next   int64
	}{
		{"found", "T", 0, 0, "", remoting.Success, 3},
		{"none matched", "T", 0, 0, "zzz", remoting.PullRetryImmediately, 3},
		{"empty queue at 0", "T", 1, 0, "", remoting.PullNotFound, 0},
		{"empty queue past 0", "T", 1, 7, "", remoting.PullOffsetMoved, 0},
		{"at max", "T", 0, 3, "", remoting.PullNotFound, 3},
		{"past max, min 0", "T", 0, 9, "", remoting.PullOffsetMoved, 0},
		{"below min", "Old", 0, 0, "", remoting.PullOffsetMoved, minOld},
		{"past max, min > 0", "Old", 0, 9999, "", remoting.PullOffsetMoved, oldN},
		{"first readable", "Old", 0, minOld, "", remoting.Success, min(minOld+32, oldN)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := pullHeader("g", c.topic, c.queue, c.offset)
			h.SysFlag = 0
			if c.expr != "" {
				h.SysFlag, h.Subscription = protocol.PullFlagSubscription, c.expr
			}
			r := pull(t, tb.TCP, tb.Addr, h)
			if r.code != c.code || r.hdr.NextBeginOffset != c.next {
				t.Errorf("code %d (%s) next %d, want code %d next %d", r.code, r.remark, r.hdr.NextBeginOffset, c.code, c.next)
			}
		})
	}
}

func TestPullCodeTable(t *testing.T) {
	for _, c := range []struct {
		st     storage.GetStatus
		offset int64
		code   int32
	}{
		{storage.Found, 0, remoting.Success},
		{storage.NoMatchedMessage, 0, remoting.PullRetryImmediately},
		{storage.MessageWasRemoving, 0, remoting.PullRetryImmediately},
		{storage.OffsetFoundNull, 3, remoting.PullNotFound},
		{storage.OffsetOverflowBadly, 3, remoting.PullOffsetMoved},
		{storage.OffsetOverflowOne, 3, remoting.PullNotFound},
		{storage.OffsetTooSmall, 3, remoting.PullOffsetMoved},
		{storage.NoMatchedLogicQueue, 0, remoting.PullNotFound},
		{storage.NoMatchedLogicQueue, 3, remoting.PullOffsetMoved},
		{storage.NoMessageInQueue, 0, remoting.PullNotFound},
		{storage.NoMessageInQueue, 3, remoting.PullOffsetMoved},
	} {
		if got := pullCode(c.st, c.offset); got != c.code {
			t.Errorf("%v at %d: code %d, want %d", c.st, c.offset, got, c.code)
		}
	}
}

func TestPullSlaveDoesNotMoveOffsets(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Broker.ID = 1 })
	addTopic(tb, "T", 1)
	h := pullHeader("g", "T", 0, 7)
	h.SysFlag, h.Subscription = protocol.PullFlagSubscription|protocol.PullFlagCommitOffset, "*"
	h.CommitOffset = 5
	r := pull(t, tb.InProc, tb.Addr, h)
	if r.code != remoting.PullRetryImmediately || r.hdr.NextBeginOffset != 7 || r.hdr.SuggestWhichBrokerID != 0 {
		t.Errorf("slave: code %d next %d suggest %d", r.code, r.hdr.NextBeginOffset, r.hdr.SuggestWhichBrokerID)
	}
	if off := tb.offsets.Query("g", "T", 0); off != -1 {
		t.Errorf("slave committed offset %d", off)
	}
}

func TestPullRefusals(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 2)
	tb.topics.Update(TopicConfig{TopicName: "W", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 2})
	cfg := NewSubscriptionGroupConfig("off")
	cfg.ConsumeEnable = false
	tb.groups.Update(cfg)
	cfg = NewSubscriptionGroupConfig("nobroadcast")
	cfg.ConsumeBroadcastEnable = false
	tb.groups.Update(cfg)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("U", "*"))
	hb := wiretest.HeartbeatCmd("c@1", "nobroadcast", wiretest.Sub("T", "*"))
	hb.Body = []byte(`{"clientID":"c@1","consumerDataSet":[{"groupName":"nobroadcast","messageModel":"BROADCASTING",` +
		`"subscriptionDataSet":[{"topic":"T","subString":"*","subVersion":1}]}]}`)
	invoke(t, tb.InProc, tb.Addr, hb)
	newer := wiretest.Sub("T", "*")
	newer.SubVersion = 100
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "versioned", newer)

	for _, c := range []struct {
		name   string
		h      func(h *protocol.PullMessageRequestHeader)
		code   int32
		remark string
	}{
		{"unknown topic", func(h *protocol.PullMessageRequestHeader) { h.Topic = "nope" }, remoting.TopicNotExist,
			"topic[nope] not exist, apply first please!"},
		{"write-only topic", func(h *protocol.PullMessageRequestHeader) { h.Topic = "W" }, remoting.NoPermission,
			"the topic[W] pulling message is forbidden"},
		{"queue id too large", func(h *protocol.PullMessageRequestHeader) { h.QueueID = 2 }, remoting.SystemError, ""},
		{"negative queue id", func(h *protocol.PullMessageRequestHeader) { h.QueueID = -1 }, remoting.SystemError, ""},
		{"consume disabled", func(h *protocol.PullMessageRequestHeader) { h.ConsumerGroup = "off" }, remoting.NoPermission,
			"subscription group no permission, off"},
		{"no heartbeat", func(h *protocol.PullMessageRequestHeader) { h.ConsumerGroup = "silent" },
			remoting.SubscriptionNotExist, "the consumer's group info not exist"},
		{"topic not subscribed", func(*protocol.PullMessageRequestHeader) {}, remoting.SubscriptionNotExist,
			"the consumer's subscription not exist"},
		{"broadcast refused", func(h *protocol.PullMessageRequestHeader) { h.ConsumerGroup = "nobroadcast" },
			remoting.NoPermission, "the consumer group[nobroadcast] can not consume by broadcast way"},
		{"subscription not latest", func(h *protocol.PullMessageRequestHeader) {
			h.ConsumerGroup, h.SubVersion = "versioned", 101
		}, remoting.SubscriptionNotLatest, "the consumer's subscription not latest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := pullHeader("g", "T", 0, 0)
			h.SysFlag = 0
			c.h(h)
			resp := invoke(t, tb.TCP, tb.Addr, pullCmd(h))
			if resp.Code != c.code || (c.remark != "" && resp.Remark != c.remark) {
				t.Errorf("code %d remark %q, want %d %q", resp.Code, resp.Remark, c.code, c.remark)
			}
		})
	}
	resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.PullMessage, map[string]string{"topic": "T"}, nil))
	if resp.Code != remoting.SystemError {
		t.Errorf("bad header: code %d", resp.Code)
	}
}

func TestPullCommitOffsetAndRetryTopic(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"), wiretest.Sub(names.RetryTopic("g"), "*"))
	putMsgs(t, tb, names.RetryTopic("g"), 0, 2, "", "r")
	h := pullHeader("g", names.RetryTopic("g"), 0, 0)
	h.SysFlag = protocol.PullFlagCommitOffset | protocol.PullFlagSuspend
	h.CommitOffset = 1
	r := pull(t, tb.TCP, tb.Addr, h)
	if r.code != remoting.Success || !cmp.Equal(bodies("r", 0, 2), r.bodies) {
		t.Fatalf("retry topic pull: code %d bodies %v", r.code, r.bodies)
	}
	if off := tb.offsets.Query("g", names.RetryTopic("g"), 0); off != 1 {
		t.Errorf("committed offset %d, want 1", off)
	}
}

func TestPullTagFiltering(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	// Offsets: 0 a, 1 b, 2 é, 3 (no tag), 4 Aa, 5 BB (same Java hash as Aa), 6 a.
	for _, tag := range []string{"a", "b", "é", "", "Aa", "BB", "a"} {
		putMsgs(t, tb, "T", 0, 1, tag, "tag"+tag)
	}
	cases := []struct {
		name      string
		heartbeat bool
		expr      string
		want      []string
	}{
		{"all", false, "*", []string{"taga-0", "tagb-0", "tagé-0", "tag-0", "tagAa-0", "tagBB-0", "taga-0"}},
		{"a or b by header", false, "a || b", []string{"taga-0", "tagb-0", "taga-0"}},
		{"non-ASCII by heartbeat (Go client codeSet)", true, "é", []string{"tagé-0"}},
		{"hash collision excluded", true, "Aa", []string{"tagAa-0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := pullHeader("g", "T", 0, 0)
			h.SysFlag = 0
			switch {
			case c.heartbeat:
				wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", c.expr))
			default:
				h.SysFlag, h.Subscription = protocol.PullFlagSubscription, c.expr
			}
			r := pull(t, tb.TCP, tb.Addr, h)
			if r.code != remoting.Success || r.hdr.NextBeginOffset != 7 {
				t.Fatalf("code %d next %d", r.code, r.hdr.NextBeginOffset)
			}
			if diff := cmp.Diff(c.want, r.bodies); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
		})
	}
	if got := wiretest.Sub("T", "é").CodeSet[0]; got != 6214 {
		t.Fatalf("test helper: Go client hash of é = %d, want 6214", got)
	}
}

// asyncPull starts a pull and returns a channel with its answer.
func asyncPull(t *testing.T, tr remoting.Transport, addr string, h *protocol.PullMessageRequestHeader) <-chan *remoting.Command {
	t.Helper()
	done := make(chan *remoting.Command, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	err := tr.InvokeAsync(ctx, addr, pullCmd(h), func(resp *remoting.Command, err error) {
		if err != nil {
			resp = remoting.NewResponse(-1, err.Error())
		}
		done <- resp
	})
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func TestLongPollReleasedByMessage(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 2)
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "g-" + name
			queue := int32(0)
			if name == "tcp" {
				queue = 1
			}
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub("T", "*"))
			done := asyncPull(t, tr, tb.Addr, pullHeader(group, "T", queue, 0))
			eventually(t, "pull parked", func() bool { return tb.pull.hold.Count() == 1 })
			select {
			case resp := <-done:
				t.Fatalf("answered before any message: code %d", resp.Code)
			default:
			}
			putMsgs(t, tb, "T", queue, 1, "", "late")
			resp := <-done
			r := decodePull(t, resp)
			if r.code != remoting.Success || !cmp.Equal([]string{"late-0"}, r.bodies) || r.hdr.NextBeginOffset != 1 {
				t.Fatalf("woken pull: code %d remark %q bodies %v next %d", r.code, r.remark, r.bodies, r.hdr.NextBeginOffset)
			}
			if n := tb.pull.hold.Count(); n != 0 {
				t.Errorf("%d pulls still held", n)
			}
		})
	}
}

func TestLongPollIgnoresOtherTags(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.TCP, tb.Addr, "c@1", "g", wiretest.Sub("T", "want"))
	done := asyncPull(t, tb.TCP, tb.Addr, pullHeader("g", "T", 0, 0))
	eventually(t, "pull parked", func() bool { return tb.pull.hold.Count() == 1 })
	putMsgs(t, tb, "T", 0, 1, "other", "o")
	select {
	case resp := <-done:
		t.Fatalf("woken by a message of another tag: code %d", resp.Code)
	case <-time.After(100 * time.Millisecond):
	}
	putMsgs(t, tb, "T", 0, 1, "want", "w")
	r := decodePull(t, <-done)
	if r.code != remoting.Success || !cmp.Equal([]string{"w-0"}, r.bodies) || r.hdr.NextBeginOffset != 2 {
		t.Fatalf("code %d bodies %v next %d", r.code, r.bodies, r.hdr.NextBeginOffset)
	}
}

func TestLongPollTimeout(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	putMsgs(t, tb, "T", 0, 2, "", "m")
	for _, wait := range []int64{150, 0} {
		h := pullHeader("g", "T", 0, 2)
		h.SuspendTimeoutMillis = wait
		start := time.Now()
		r := decodePull(t, <-asyncPull(t, tb.InProc, tb.Addr, h))
		elapsed := time.Since(start)
		if r.code != remoting.PullNotFound || r.hdr.NextBeginOffset != 2 || r.hdr.MaxOffset != 2 {
			t.Fatalf("timeout %d: code %d next %d", wait, r.code, r.hdr.NextBeginOffset)
		}
		if elapsed < time.Duration(wait)*time.Millisecond {
			t.Errorf("answered after %v, before the %d ms suspend time", elapsed, wait)
		}
		if elapsed > time.Duration(wait)*time.Millisecond+2*time.Second {
			t.Errorf("answered after %v for a %d ms suspend time", elapsed, wait)
		}
	}
}

func TestShortPolling(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) {
		o.LongPollingDisable = true
		o.ShortPollingTime = 100 * time.Millisecond
	})
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	start := time.Now()
	r := decodePull(t, <-asyncPull(t, tb.InProc, tb.Addr, pullHeader("g", "T", 0, 0)))
	if r.code != remoting.PullNotFound || time.Since(start) < 100*time.Millisecond {
		t.Errorf("code %d after %v", r.code, time.Since(start))
	}
}

func TestLongPollDroppedOnDisconnect(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	tcp := newTCPClient(t)
	wiretest.Heartbeat(t, tcp, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@2", "g", wiretest.Sub("T", "*"))
	a := asyncPull(t, tcp, tb.Addr, pullHeader("g", "T", 0, 0))
	b := asyncPull(t, tb.InProc, tb.Addr, pullHeader("g", "T", 0, 0))
	eventually(t, "pulls parked", func() bool { return tb.pull.hold.Count() == 2 })
	tcp.CloseConn(tb.Addr)
	tb.InProc.CloseConn(tb.Addr)
	for _, done := range []<-chan *remoting.Command{a, b} {
		if resp := <-done; resp.Code != -1 {
			t.Errorf("pull on a closed connection answered with code %d", resp.Code)
		}
	}
	eventually(t, "held pulls dropped", func() bool { return tb.pull.hold.Count() == 0 })
	c := tb.pull.hold.Census()
	left := c.Queues + c.Channels + c.Deadlines
	if left != 0 {
		t.Errorf("%d index entries left", left)
	}
	// A message arriving now wakes nobody.
	putMsgs(t, tb, "T", 0, 1, "", "m")
}

func TestLongPollAnsweredAtShutdown(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 1)
	wiretest.Heartbeat(t, tb.InProc, tb.Addr, "c@1", "g", wiretest.Sub("T", "*"))
	h := pullHeader("g", "T", 0, 0)
	done := asyncPull(t, tb.InProc, tb.Addr, h)
	eventually(t, "pull parked", func() bool { return tb.pull.hold.Count() == 1 })
	tb.Cancel() // Run ends; the harness's Stop does the rest
	select {
	case resp := <-done:
		if resp.Code != remoting.PullNotFound && resp.Code != -1 {
			t.Errorf("code %d", resp.Code)
		} else if resp.Code == remoting.PullNotFound && resp.Ext("nextBeginOffset") != strconv.Itoa(0) {
			t.Errorf("next %q", resp.Ext("nextBeginOffset"))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked pull neither answered nor failed at shutdown")
	}
}
