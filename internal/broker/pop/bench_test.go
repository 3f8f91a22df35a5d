package pop

import (
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// BenchmarkPopAck pops messages in batches of up to 32 over the in-process transport and acks
// each one: one op is one message popped and acknowledged (ASYNC_FLUSH, as a node's default).
func BenchmarkPopAck(b *testing.B) {
	e := start(b, "", func(o *broker.Options) { o.Store.FlushDiskType = storage.AsyncFlush })
	e.tr = e.InProc
	wiretest.CreateTopic(b, e.TCP, e.Addr, tTopic, 4)
	for q := range int32(4) {
		e.put(b, tTopic, q, b.N/4+1, "", "m")
	}
	h := popHeader(tGroup, tTopic, -1, 32, 60_000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		h.BornTime = time.Now().UnixMilli()
		resp, ms := e.pop(b, h)
		if resp.Code != remoting.Success {
			b.Fatalf("pop after %d: %d %q", done, resp.Code, resp.Remark)
		}
		for _, m := range ms {
			ack := request(remoting.AckMessage, &protocol.AckMessageRequestHeader{ConsumerGroup: tGroup, Topic: tTopic,
				QueueID: m.qid, ExtraInfo: m.handle, Offset: m.offset})
			if r := e.invoke(b, ack); r.Code != remoting.Success {
				b.Fatalf("ack: %d %q", r.Code, r.Remark)
			}
		}
		done += len(ms)
	}
}
