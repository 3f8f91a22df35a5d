package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

func queryOffset(t *testing.T, tr remoting.Transport, addr, group, topic string, queueID int32) (int32, int64) {
	t.Helper()
	resp := invoke(t, tr, addr, remoting.NewRequest(remoting.QueryConsumerOffset,
		remoting.EncodeHeader(&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic,
			QueueID: queueID, BrokerName: "broker-a"}), nil))
	if resp.Code != remoting.Success {
		if len(resp.ExtFields) != 0 {
			t.Errorf("code %d with ext %v", resp.Code, resp.ExtFields)
		}
		return resp.Code, -1
	}
	var h protocol.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return resp.Code, h.Offset
}

func queueOffsetReq(t *testing.T, tr remoting.Transport, addr string, code int32, h remoting.Header) (int32, map[string]string) {
	t.Helper()
	resp := invoke(t, tr, addr, remoting.NewRequest(code, remoting.EncodeHeader(h), nil))
	return resp.Code, resp.ExtFields
}

func TestConsumerOffsets(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Store.FileReservedTime = time.Millisecond })
	addTopic(tb, "T", 2)
	addTopic(tb, "Old", 1)
	putMsgs(t, tb, "T", 0, 3, "", "m")
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "g-" + name
			// Nothing stored, queue starts at 0 with its first message present (or is empty):
			// RocketMQ answers 0.
			if code, off := queryOffset(t, tr, tb.Addr, group, "T", 0); code != remoting.Success || off != 0 {
				t.Errorf("young queue: code %d offset %d", code, off)
			}
			if code, off := queryOffset(t, tr, tb.Addr, group, "T", 1); code != remoting.Success || off != 0 {
				t.Errorf("empty queue: code %d offset %d", code, off)
			}
			// A commit needs its group (RocketMQ 5): the consumer's heartbeat creates it.
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub("T", "*"))
			resp := invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.UpdateConsumerOffset,
				remoting.EncodeHeader(&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: "T",
					QueueID: 0, CommitOffset: 2}), nil))
			if resp.Code != remoting.Success {
				t.Fatalf("update: code %d", resp.Code)
			}
			if code, off := queryOffset(t, tr, tb.Addr, group, "T", 0); code != remoting.Success || off != 2 {
				t.Errorf("stored: code %d offset %d", code, off)
			}
		})
	}

	// A queue whose head was deleted: no stored offset is QUERY_NOT_FOUND.
	body := make([]byte, 300)
	for range 2500 {
		if _, err := tb.Store().PutMessage(&storage.Message{Topic: "Old", Body: body, BornHost: consumeTestBornHost,
			StoreHost: tb.storeHost, BornTimestamp: time.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "Old dispatched", func() bool { return tb.Store().MaxOffsetInQueue("Old", 0) == 2500 })
	time.Sleep(5 * time.Millisecond)
	tb.Store().ExecuteDeleteFilesManually()
	tb.Store().CleanExpired()
	resp := invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.QueryConsumerOffset,
		remoting.EncodeHeader(&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "Old"}), nil))
	if resp.Code != remoting.QueryNotFound || resp.Remark != queryNotFoundRemark {
		t.Errorf("old queue: code %d remark %q", resp.Code, resp.Remark)
	}
	minOld := tb.Store().MinOffsetInQueue("Old", 0)
	code, ext := queueOffsetReq(t, tb.TCP, tb.Addr, remoting.GetMinOffset, &protocol.QueueHeader{Topic: "Old"})
	if code != remoting.Success || ext["offset"] != strconv.FormatInt(minOld, 10) || minOld == 0 {
		t.Errorf("min offset: code %d ext %v, store %d", code, ext, minOld)
	}

	// Offsets survive a restart.
	dir := tb.Dir
	tb.Stop(t)
	tb2 := startTestBrokerIn(t, dir, nil)
	if code, off := queryOffset(t, tb2.InProc, tb2.Addr, "g-tcp", "T", 0); code != remoting.Success || off != 2 {
		t.Errorf("after restart: code %d offset %d", code, off)
	}
}

func TestQueueOffsetQueries(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 2)
	before := time.Now().UnixMilli()
	putMsgs(t, tb, "T", 0, 3, "", "early")
	first, err := tb.Store().GetMessageStoreTimestamp("T", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	mid := time.Now().UnixMilli()
	time.Sleep(5 * time.Millisecond)
	putMsgs(t, tb, "T", 0, 2, "", "late")
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				code int32
				h    remoting.Header
				key  string
				want int64
			}{
				{"max", remoting.GetMaxOffset, &protocol.QueueHeader{Topic: "T", QueueID: 0}, "offset", 5},
				{"max of empty queue", remoting.GetMaxOffset, &protocol.QueueHeader{Topic: "T", QueueID: 1}, "offset", 0},
				{"max of unknown topic", remoting.GetMaxOffset, &protocol.QueueHeader{Topic: "nope"}, "offset", 0},
				{"min", remoting.GetMinOffset, &protocol.QueueHeader{Topic: "T", QueueID: 0}, "offset", 0},
				{"search before all", remoting.SearchOffsetByTimestamp,
					&protocol.SearchOffsetRequestHeader{Topic: "T", Timestamp: before - 1000}, "offset", 0},
				{"search middle", remoting.SearchOffsetByTimestamp,
					&protocol.SearchOffsetRequestHeader{Topic: "T", Timestamp: mid}, "offset", 3},
				{"search after all", remoting.SearchOffsetByTimestamp,
					&protocol.SearchOffsetRequestHeader{Topic: "T", Timestamp: time.Now().UnixMilli() + 1000}, "offset", 5},
				{"earliest", remoting.GetEarliestMsgStoreTime, &protocol.QueueHeader{Topic: "T"}, "timestamp", first},
				{"earliest of empty queue", remoting.GetEarliestMsgStoreTime, &protocol.QueueHeader{Topic: "T", QueueID: 1},
					"timestamp", -1},
			} {
				code, ext := queueOffsetReq(t, tr, tb.Addr, c.code, c.h)
				if code != remoting.Success || ext[c.key] != strconv.FormatInt(c.want, 10) || len(ext) != 1 {
					t.Errorf("%s: code %d ext %v, want %s=%d", c.name, code, ext, c.key, c.want)
				}
			}
			if code, _ := queueOffsetReq(t, tr, tb.Addr, remoting.GetMaxOffset, &protocol.ConsumerGroupHeader{ConsumerGroup: "x"}); code != remoting.SystemError {
				t.Errorf("missing topic: code %d", code)
			}
		})
	}
}
