package ha_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// A controller-mode master appends its epoch at open and serves it in GET_BROKER_EPOCH_CACHE,
// the last epoch open-ended as RocketMQ's; the answer reads back through DecodeEpochCache.
func TestEpochCacheServesTheMastersEpoch(t *testing.T) {
	tb, _ := start(t, func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.MasterEpoch = true, 3, 7
	})
	if resp := syncSend(t, tb, "m"); resp.Code != remoting.Success {
		t.Fatalf("send: %d %q", resp.Code, resp.Remark)
	}
	body := get(t, tb, remoting.GetBrokerEpochCache)
	var raw struct {
		BrokerID  int64 `json:"brokerId"`
		EpochList []struct {
			Epoch       int32 `json:"epoch"`
			StartOffset int64 `json:"startOffset"`
			EndOffset   int64 `json:"endOffset"`
		} `json:"epochList"`
		MaxOffset int64 `json:"maxOffset"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	end := tb.Store().MaxPhyOffset()
	if raw.BrokerID != 3 || len(raw.EpochList) != 1 || raw.EpochList[0].Epoch != 7 || raw.EpochList[0].StartOffset != 0 ||
		raw.EpochList[0].EndOffset != math.MaxInt64 || raw.MaxOffset != end || end == 0 {
		t.Fatalf("epoch cache %s (log end %d)", body, end)
	}
	c, err := ha.DecodeEpochCache(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) != 1 || c.Entries[0] != (ha.EpochEntry{Epoch: 7}) || c.MaxOffset != end {
		t.Fatalf("decoded %+v", c)
	}
}

// Outside controller mode GET_BROKER_EPOCH_CACHE is refused with RocketMQ's remark.
func TestEpochCacheOnlyInControllerMode(t *testing.T) {
	tb, _ := start(t, nil)
	resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "only for controllerMode") {
		t.Fatalf("answer %d %q", resp.Code, resp.Remark)
	}
}

// A peer's epoch cache is checked before the replicas manager acts on it.
func TestDecodeEpochCacheRefusesBadAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"not json":          `{`,
		"negative end":      `{"epochList":[],"maxOffset":-1}`,
		"start past end":    `{"epochList":[{"epoch":1,"startOffset":10}],"maxOffset":5}`,
		"negative start":    `{"epochList":[{"epoch":1,"startOffset":-1}],"maxOffset":5}`,
		"epochs not rising": `{"epochList":[{"epoch":2,"startOffset":0},{"epoch":2,"startOffset":3}],"maxOffset":5}`,
		"offsets back":      `{"epochList":[{"epoch":1,"startOffset":4},{"epoch":2,"startOffset":3}],"maxOffset":5}`,
		"too many": `{"epochList":[` + strings.Repeat(`{"epoch":1,"startOffset":0},`, 1<<16) +
			`{"epoch":1,"startOffset":0}],"maxOffset":5}`,
	} {
		if c, err := ha.DecodeEpochCache([]byte(body)); err == nil {
			t.Errorf("%s: decoded %+v", name, c)
		}
	}
}

// A controller-mode master refuses sends while its SyncStateSet is smaller than
// MinInSyncReplicas (SYSTEM_ERROR, RocketMQ's IN_SYNC_REPLICAS_NOT_ENOUGH) and takes them once
// the replicas manager reports a set large enough.
func TestSendsWaitForInSyncReplicas(t *testing.T) {
	tb, s := start(t, func(o *broker.Options) {
		o.ControllerMode, o.ReplicaID, o.MasterEpoch, o.MinInSyncReplicas = true, 1, 1, 2
		o.Broker.Role = storage.AsyncMaster
	})
	resp := syncSend(t, tb, "alone")
	if resp.Code != remoting.SystemError || resp.Remark != "in-sync replicas not enough" {
		t.Fatalf("send with the master alone: %d %q", resp.Code, resp.Remark)
	}
	s.SetSyncStateSet([]int64{1, 2})
	if resp := syncSend(t, tb, "two"); resp.Code != remoting.Success {
		t.Fatalf("send with two in sync: %d %q", resp.Code, resp.Remark)
	}
	s.SetSyncStateSet([]int64{1})
	if resp := syncSend(t, tb, "shrunk"); resp.Code != remoting.SystemError {
		t.Fatalf("send after the set shrank: %d %q", resp.Code, resp.Remark)
	}
}
