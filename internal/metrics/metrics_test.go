package metrics

import (
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

// TestObserverLabels checks what requests cost in series: known codes under RocketMQ's names,
// codes the default processor served under one label, deferred answers not observed, and
// SYSTEM_BUSY answers and rejections counted as busy.
func TestObserverLabels(t *testing.T) {
	m := New(Sources{})
	o := m.Observer()
	o.Processed(remoting.SendMessageV2, true, remoting.Success, true, 2*time.Millisecond)
	o.Processed(remoting.SendMessageV2, true, remoting.Success, true, 20*time.Millisecond)
	o.Processed(remoting.PullMessage, true, 0, false, time.Millisecond) // parked: no latency
	o.Processed(12345, false, remoting.RequestCodeNotSupported, true, time.Microsecond)
	o.Processed(23456, false, remoting.RequestCodeNotSupported, true, time.Microsecond)
	o.Processed(remoting.PullMessage, true, remoting.SystemBusy, true, time.Microsecond)
	o.Rejected(remoting.SendMessageV2, true)

	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	latency := map[string]uint64{}
	busy := map[string]float64{}
	var sendSum float64
	for _, f := range fams {
		for _, s := range f.Metric {
			labels := map[string]string{}
			for _, l := range s.Label {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "rocketmq_rpc_latency":
				key := labels["request_code"] + "/" + labels["response_code"]
				latency[key] = s.Histogram.GetSampleCount()
				if key == "SEND_MESSAGE_V2/SUCCESS" {
					sendSum = s.Histogram.GetSampleSum()
				}
				if labels["protocol_type"] != "remoting" {
					t.Errorf("protocol_type = %q", labels["protocol_type"])
				}
			case "mq_busy_rejections_total":
				busy[labels["request_code"]] = s.Counter.GetValue()
			}
		}
	}
	wantLatency := map[string]uint64{"SEND_MESSAGE_V2/SUCCESS": 2, "unsupported/REQUEST_CODE_NOT_SUPPORTED": 2,
		"PULL_MESSAGE/SYSTEM_BUSY": 1}
	if len(latency) != len(wantLatency) {
		t.Fatalf("latency series %v, want %v", latency, wantLatency)
	}
	for k, v := range wantLatency {
		if latency[k] != v {
			t.Fatalf("latency series %v, want %v", latency, wantLatency)
		}
	}
	if sendSum != 22 { // milliseconds, as RocketMQ's histogram
		t.Fatalf("send latency sum %v ms, want 22", sendSum)
	}
	if busy["PULL_MESSAGE"] != 1 || busy["SEND_MESSAGE_V2"] != 1 || len(busy) != 2 {
		t.Fatalf("busy %v, want one PULL_MESSAGE and one SEND_MESSAGE_V2", busy)
	}
}

// BenchmarkObserve is what metrics cost a request: one Processed call.
func BenchmarkObserve(b *testing.B) {
	o := New(Sources{}).Observer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Processed(remoting.SendMessageV2, true, remoting.Success, true, 150*time.Microsecond)
		}
	})
}
