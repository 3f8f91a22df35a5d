package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestHostileRequests sends what no broker would: every one is refused with a code, and none
// changes the state.
func TestHostileRequests(t *testing.T) {
	c := newCluster(t, 1, false, false)
	c.leader()
	b := newBroker(t, c, "broker-a", "10.0.0.1:10911")
	b.register()
	before, _ := json.Marshal(c.live()["n0"].Groups())

	long := strings.Repeat("x", maxIdentityBytes+1)
	for _, tc := range []struct {
		name string
		code int32
		ext  map[string]string
		body []byte
		want int32
	}{
		{"a control character in a broker name", remoting.ControllerGetNextBrokerID,
			map[string]string{"clusterName": "c", "brokerName": "a\nb"}, nil, remoting.ControllerInvalidRequest},
		{"an over-long cluster name", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": long, "brokerName": "b", "appliedBrokerId": "1", "registerCheckCode": "a:1;1"}, nil, remoting.ControllerInvalidRequest},
		{"a negative broker id", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": "c", "brokerName": "b", "appliedBrokerId": "-5", "registerCheckCode": "a:1;1"}, nil, remoting.ControllerBrokerIDInvalid},
		{"a huge broker id", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": "c", "brokerName": "b", "appliedBrokerId": "9223372036854775807", "registerCheckCode": "a:1;1"}, nil, remoting.ControllerBrokerIDInvalid},
		{"the first id of a new group other than 1", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": "c", "brokerName": "new", "appliedBrokerId": "7", "registerCheckCode": "a:1;1"}, nil, remoting.ControllerBrokerIDInvalid},
		{"another broker's id", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": b.cluster, "brokerName": b.name, "appliedBrokerId": "1", "registerCheckCode": "10.9.9.9:1;2"}, nil, remoting.ControllerBrokerIDInvalid},
		{"a group of another cluster", remoting.ControllerApplyBrokerID,
			map[string]string{"clusterName": "other", "brokerName": b.name, "appliedBrokerId": "2", "registerCheckCode": "a:1;1"}, nil, remoting.ControllerInvalidRequest},
		{"a heartbeat from an unregistered broker", remoting.BrokerHeartbeat,
			map[string]string{"clusterName": b.cluster, "brokerName": b.name, "brokerAddr": "a:1", "brokerId": "9"}, nil, remoting.ControllerBrokerNeedToBeRegistered},
		{"a SyncStateSet that is not JSON", remoting.ControllerAlterSyncStateSet,
			map[string]string{"brokerName": b.name, "masterBrokerId": "1", "masterEpoch": "1"}, []byte("{["), remoting.ControllerInvalidRequest},
		{"a SyncStateSet over the size bound", remoting.ControllerAlterSyncStateSet,
			map[string]string{"brokerName": b.name, "masterBrokerId": "1", "masterEpoch": "1"},
			(&protocol.SyncStateSet{SyncStateSet: manyIDs(protocol.MaxSyncStateSetSize + 1), SyncStateSetEpoch: 1}).Encode(), remoting.ControllerInvalidRequest},
		{"a SyncStateSet body over the byte bound", remoting.ControllerAlterSyncStateSet,
			map[string]string{"brokerName": b.name, "masterBrokerId": "1", "masterEpoch": "1"},
			append([]byte(`{"syncStateSet":[1],"x":"`), bytes.Repeat([]byte("y"), protocol.MaxSyncStateSetBody)...), remoting.ControllerInvalidRequest},
		{"a negative id in a SyncStateSet", remoting.ControllerAlterSyncStateSet,
			map[string]string{"brokerName": b.name, "masterBrokerId": "1", "masterEpoch": "1"}, []byte(`{"syncStateSet":[1,-2],"syncStateSetEpoch":1}`), remoting.ControllerInvalidRequest},
		{"too many ids to clean", remoting.CleanBrokerData,
			map[string]string{"brokerName": b.name, "brokerControllerIdsToClean": strings.Repeat("1;", 100000)}, nil, remoting.ControllerInvalidCleanBrokerMetadata},
		{"sync state data that is not a list", remoting.ControllerGetSyncStateData, nil, []byte(`{"a":1}`), remoting.ControllerInvalidRequest},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := b.tr.InvokeSync(ctx, ctrlAddr("n0"), remoting.NewRequest(tc.code, tc.ext, tc.body))
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Code != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, remoting.ResponseCodeName(r.Code), r.Remark, remoting.ResponseCodeName(tc.want))
		}
	}
	if after, _ := json.Marshal(c.live()["n0"].Groups()); !bytes.Equal(after, before) {
		t.Fatalf("state changed by refused requests:\n%s\n%s", before, after)
	}
}

func manyIDs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestStaleProposalIsRefusedByEveryReplica: a decision made against a state that changed before
// it committed must not apply, or replicas could take two elections from one epoch.
func TestStaleProposalIsRefusedByEveryReplica(t *testing.T) {
	f := newFSM()
	apply := func(c command) applyResult {
		b, _ := json.Marshal(&c)
		return f.Apply(&raft.Log{Data: b}).(applyResult)
	}
	for id := int64(1); id <= 2; id++ {
		if r := apply(command{Op: opApplyBrokerID, Cluster: "c", BrokerName: "b", BrokerID: id, Addr: "a", CheckCode: "a;1"}); r.Code != remoting.Success {
			t.Fatal(r.Remark)
		}
	}
	if r := apply(command{Op: opElectMaster, BrokerName: "b", BrokerID: 1}); r.Code != remoting.Success || r.Group.MasterEpoch != 1 {
		t.Fatalf("first election: %+v", r)
	}
	// Two elections decided from epoch 1: the first applies, the second is stale.
	if r := apply(command{Op: opElectMaster, BrokerName: "b", BrokerID: 2, ExpectMasterEpoch: 1, ExpectSyncStateSetEpoch: 1}); r.Code != remoting.Success {
		t.Fatalf("second election: %+v", r)
	}
	if r := apply(command{Op: opElectMaster, BrokerName: "b", BrokerID: 1, ExpectMasterEpoch: 1, ExpectSyncStateSetEpoch: 1}); r.Code != remoting.ControllerElectMasterFailed {
		t.Fatalf("stale election applied: %+v", r)
	}
	if r := apply(command{Op: opAlterSyncSet, BrokerName: "b", BrokerID: 1, IDs: []int64{1, 2}, ExpectMasterEpoch: 2, ExpectSyncStateSetEpoch: 2}); r.Code != remoting.ControllerFencedSyncStateSetEpoch {
		t.Fatalf("alter from the old master applied: %+v", r)
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(sink); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(f.groups())
	got, _ := json.Marshal(g.groups())
	if !bytes.Equal(got, want) {
		t.Fatalf("restored %s, want %s", got, want)
	}
}

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }
