package schedule

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/storage"
)

// benchTimerBroker is a broker with the default timer precision and segments large enough for
// a few hundred thousand timer messages.
func benchTimerBroker(b *testing.B) *schedBroker {
	tb := start(b, func(o *broker.Options) { o.Store.SegmentBytes = 256 << 20; o.Store.ConsumeQueueUnits = 300000 })
	addTopic(b, tb, "BenchTimer", 1)
	return tb
}

// benchPutTimers stores n timer messages due at due, as the send path does.
func benchPutTimers(b *testing.B, tb *schedBroker, n int, due time.Time) {
	deliver := strconv.FormatInt(due.UnixMilli(), 10)
	for i := range n {
		m := &storage.Message{Topic: "BenchTimer", Body: []byte("timer"), BornTimestamp: time.Now().UnixMilli(),
			BornHost: testBornHost, StoreHost: tb.Messages().StoreHost(),
			Properties: message.MarshalProperties(map[string]string{message.PropertyUniqKey: "B" + strconv.Itoa(i) + "-" + deliver,
				message.PropertyTimerDeliverMS: deliver})}
		if resp := tb.s.timer.toTimerTopic(m); resp != nil {
			b.Fatalf("refused: %s", resp.Remark)
		}
		if r, err := tb.Store().PutMessage(m); err != nil || !broker.PutStored(r.Status) {
			b.Fatalf("put: %s %v", r.Status, err)
		}
	}
}

// waitPending polls until the timer service holds want messages.
func waitPending(b *testing.B, tb *schedBroker, want int64) {
	deadline := time.Now().Add(time.Minute)
	for tb.s.TimerPending() != want {
		if time.Now().After(deadline) {
			b.Fatalf("%d pending, want %d", tb.s.TimerPending(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkTimerSchedule: timer messages stored in the timer topic and indexed by the timer
// service, per second.
func BenchmarkTimerSchedule(b *testing.B) {
	tb := benchTimerBroker(b)
	b.ResetTimer()
	benchPutTimers(b, tb, b.N, time.Now().Add(time.Hour))
	waitPending(b, tb, int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scheduled/s")
}

// BenchmarkTimerDeliveryLag100kPending: with 100k messages pending an hour ahead, batches of
// 1000 due 200 ms after they are stored; reports how long after its time each was stored in
// its topic (p50, p99, max over all batches) and deliveries per second of a due batch.
func BenchmarkTimerDeliveryLag100kPending(b *testing.B) {
	const pending, batch = 100_000, 1000
	tb := benchTimerBroker(b)
	benchPutTimers(b, tb, pending, time.Now().Add(time.Hour))
	waitPending(b, tb, pending)
	var lags []int64
	var deliverTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		due := time.Now().Add(200 * time.Millisecond)
		benchPutTimers(b, tb, batch, due)
		from := int64(i * batch)
		deadline := time.Now().Add(time.Minute)
		for tb.Store().MaxOffsetInQueue("BenchTimer", 0) < from+batch {
			if time.Now().After(deadline) {
				b.Fatal("batch not delivered")
			}
			time.Sleep(time.Millisecond)
		}
		first, last := int64(-1), int64(0)
		for off := from; off < from+batch; {
			r := tb.Store().GetMessage("", "BenchTimer", 0, off, 32, 0, nil)
			if r.Status != storage.Found {
				b.Fatalf("get: %v", r.Status)
			}
			for _, raw := range r.Messages {
				var rec message.Record
				if _, err := message.DecodeRecord(raw, &rec, false); err != nil {
					b.Fatal(err)
				}
				out, _ := message.PropertyValue(rec.Properties, PropertyTimerOutMS)
				outMs, _ := strconv.ParseInt(string(out), 10, 64)
				lags = append(lags, rec.StoreTimestamp-outMs)
				if first < 0 {
					first = rec.StoreTimestamp
				}
				last = rec.StoreTimestamp
				off++
			}
			r.Release()
		}
		deliverTime += time.Duration(last-first+1) * time.Millisecond
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2]), "p50-lag-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100]), "p99-lag-ms")
	b.ReportMetric(float64(lags[len(lags)-1]), "max-lag-ms")
	b.ReportMetric(float64(b.N*batch)/deliverTime.Seconds(), "delivered/s")
	if p := tb.s.TimerPending(); p != pending {
		b.Fatalf("%d pending after the batches, want %d", p, pending)
	}
}
