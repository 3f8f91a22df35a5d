package controller

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// startGroup registers three brokers of one broker name: the first becomes master at epoch 1,
// and (withSlaveInSync) puts the second into its SyncStateSet, as a master does once a slave
// caught up. The third stays outside the set.
func startGroup(t *testing.T, c *cluster, withSlaveInSync bool) (b1, b2, b3 *broker) {
	t.Helper()
	b1 = newBroker(t, c, "broker-a", "10.0.0.1:10911")
	b2 = newBroker(t, c, "broker-a", "10.0.0.2:10911")
	b3 = newBroker(t, c, "broker-a", "10.0.0.3:10911")
	b1.register()
	b2.register()
	b3.register()
	if b1.id != 1 || b2.id != 2 || b3.id != 3 {
		t.Fatalf("broker ids %d %d %d, want 1 2 3", b1.id, b2.id, b3.id)
	}
	h, set := b1.replicaInfo()
	if h.MasterBrokerID != 1 || h.MasterEpoch != 1 || h.MasterAddress != b1.addr || !slices.Equal(set.SyncStateSet, []int64{1}) {
		t.Fatalf("after registration: master %d epoch %d at %q, set %v; want broker 1, epoch 1, set [1]",
			h.MasterBrokerID, h.MasterEpoch, h.MasterAddress, set.SyncStateSet)
	}
	b1.setProgress(1, 1000)
	b2.setProgress(1, 900)
	b3.setProgress(1, 5000) // furthest ahead, but not in sync: never a clean candidate
	if withSlaveInSync {
		r := b1.alter(1, []int64{1, 2}, set.SyncStateSetEpoch)
		mustSucceed(t, "master adds broker 2 to its SyncStateSet", r)
	}
	return b1, b2, b3
}

func TestFailoverElectsFromTheSyncStateSet(t *testing.T) {
	c := newCluster(t, 3, false, false)
	c.leader()
	b1, b2, b3 := startGroup(t, c, true)

	_, set := b1.replicaInfo()
	if !slices.Equal(set.SyncStateSet, []int64{1, 2}) || set.SyncStateSetEpoch != 2 {
		t.Fatalf("set %v epoch %d, want [1 2] epoch 2", set.SyncStateSet, set.SyncStateSetEpoch)
	}

	b1.stopHeartbeats()
	var h protocol.GetReplicaInfoResponseHeader
	poll(t, "broker 2 elected", func() bool {
		h, set = b2.replicaInfo()
		return h.MasterBrokerID == 2
	})
	if h.MasterEpoch != 2 || h.MasterAddress != b2.addr || !slices.Equal(set.SyncStateSet, []int64{2}) || set.SyncStateSetEpoch != 3 {
		t.Fatalf("after failover: master epoch %d at %q, set %v epoch %d; want epoch 2 at %q, set [2] epoch 3",
			h.MasterEpoch, h.MasterAddress, set.SyncStateSet, set.SyncStateSetEpoch, b2.addr)
	}
	for _, b := range []*broker{b2, b3} {
		poll(t, "role change notification to broker "+b.addr, func() bool {
			return slices.ContainsFunc(b.notifications(), func(n protocol.NotifyBrokerRoleChangedRequestHeader) bool {
				return n.MasterBrokerID == 2 && n.MasterEpoch == 2 && n.MasterAddress == b2.addr
			})
		})
	}

	// Broker 3 never was in sync: with unclean election off, the master's death leaves the
	// group without one rather than losing what only broker 2 had.
	b2.stopHeartbeats()
	poll(t, "the group left without a master", func() bool {
		h, set = b3.replicaInfo()
		return h.MasterBrokerID == NoMaster
	})
	if h.MasterEpoch != 3 || !slices.Equal(set.SyncStateSet, []int64{2}) {
		t.Fatalf("master epoch %d, set %v; want epoch 3 and the set kept as [2]", h.MasterEpoch, set.SyncStateSet)
	}
	r := b3.invoke(remoting.ControllerElectMaster, &protocol.ElectMasterRequestHeader{ClusterName: b3.cluster, BrokerName: b3.name, BrokerID: NoMaster}, nil)
	if r.Code != remoting.ControllerElectMasterFailed {
		t.Fatalf("electing with only broker 3 alive: %s %q, want CONTROLLER_ELECT_MASTER_FAILED", remoting.ResponseCodeName(r.Code), r.Remark)
	}

	// Broker 2 returns: it is the set, so the leader makes it master again.
	b2.startHeartbeats()
	poll(t, "broker 2 master again", func() bool {
		h, _ = b3.replicaInfo()
		return h.MasterBrokerID == 2
	})
	if h.MasterEpoch != 4 {
		t.Fatalf("master epoch %d, want 4", h.MasterEpoch)
	}
}

func TestUncleanElectionPicksTheFurthestReplica(t *testing.T) {
	c := newCluster(t, 3, false, true)
	c.leader()
	b1, _, b3 := startGroup(t, c, false) // the set is the master alone

	b1.stopHeartbeats()
	var h protocol.GetReplicaInfoResponseHeader
	var set protocol.SyncStateSet
	poll(t, "an unclean election", func() bool {
		h, set = b3.replicaInfo()
		return h.MasterBrokerID != 1
	})
	// Broker 3 reported the highest offset at the same epoch.
	if h.MasterBrokerID != 3 || h.MasterEpoch != 2 || !slices.Equal(set.SyncStateSet, []int64{3}) {
		t.Fatalf("master %d epoch %d set %v, want broker 3, epoch 2, set [3]", h.MasterBrokerID, h.MasterEpoch, set.SyncStateSet)
	}
}

func TestAlterSyncStateSetRefusals(t *testing.T) {
	c := newCluster(t, 3, false, false)
	c.leader()
	b1, b2, b3 := startGroup(t, c, false)
	_, set := b1.replicaInfo()

	for _, tc := range []struct {
		name     string
		from     *broker
		epoch    int32
		set      []int64
		setEpoch int32
		want     int32
	}{
		{"from a slave", b2, 1, []int64{1, 2}, set.SyncStateSetEpoch, remoting.ControllerInvalidMaster},
		{"a stale master epoch", b1, 0, []int64{1, 2}, set.SyncStateSetEpoch, remoting.ControllerFencedMasterEpoch},
		{"a stale set epoch", b1, 1, []int64{1, 2}, set.SyncStateSetEpoch - 1, remoting.ControllerFencedSyncStateSetEpoch},
		{"without the master", b1, 1, []int64{2, 3}, set.SyncStateSetEpoch, remoting.ControllerAlterSyncStateSetFailed},
		{"an unknown broker", b1, 1, []int64{1, 9}, set.SyncStateSetEpoch, remoting.ControllerInvalidReplicas},
		{"the same set", b1, 1, []int64{1}, set.SyncStateSetEpoch, remoting.ControllerAlterSyncStateSetFailed},
	} {
		r := tc.from.alter(tc.epoch, tc.set, tc.setEpoch)
		if r.Code != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, remoting.ResponseCodeName(r.Code), r.Remark, remoting.ResponseCodeName(tc.want))
		}
	}
	b3.stopHeartbeats()
	poll(t, "broker 3 judged dead", func() bool {
		_, ctl := c.leader()
		_, ok := ctl.BrokerLive(b3.name, b3.id)
		return !ok
	})
	if r := b1.alter(1, []int64{1, 3}, set.SyncStateSetEpoch); r.Code != remoting.ControllerBrokerNotAlive {
		t.Errorf("a dead member: %s %q, want CONTROLLER_BROKER_NOT_ALIVE", remoting.ResponseCodeName(r.Code), r.Remark)
	}
	if r := b1.alter(1, []int64{1, 2}, set.SyncStateSetEpoch); r.Code != remoting.Success {
		t.Fatalf("a valid change after the refusals: %s %q", remoting.ResponseCodeName(r.Code), r.Remark)
	}
	if _, got := b1.replicaInfo(); !slices.Equal(got.SyncStateSet, []int64{1, 2}) || got.SyncStateSetEpoch != set.SyncStateSetEpoch+1 {
		t.Fatalf("set %v epoch %d, want [1 2] epoch %d", got.SyncStateSet, got.SyncStateSetEpoch, set.SyncStateSetEpoch+1)
	}
}

func TestControllerLeaderFailover(t *testing.T) {
	c := newCluster(t, 3, false, false)
	oldID, _ := c.leader()
	b1, b2, _ := startGroup(t, c, true)
	before, beforeSet := b1.replicaInfo()

	c.kill(oldID)
	newID, _ := c.leader()
	if newID == oldID {
		t.Fatalf("leader %s again after it was killed", newID)
	}
	after, afterSet := b1.replicaInfo()
	if after != before || !slices.Equal(afterSet.SyncStateSet, beforeSet.SyncStateSet) || afterSet.SyncStateSetEpoch != beforeSet.SyncStateSetEpoch {
		t.Fatalf("new leader %s holds %+v %+v, the old held %+v %+v", newID, after, afterSet, before, beforeSet)
	}
	// A follower names the new leader in CONTROLLER_NOT_LEADER.
	for id, ctl := range c.live() {
		if id == newID {
			continue
		}
		// It knows once the leader's announcement reached it.
		poll(t, "follower "+id+" naming the new leader", func() bool {
			r := ctl.errorResponse(ErrNotLeader)
			var md protocol.GetMetaDataResponseHeader
			return md.Decode(r.ExtFields) == nil && r.Code == remoting.ControllerNotLeader && md.ControllerLeaderAddress == ctrlAddr(newID)
		})
	}

	b1.stopHeartbeats()
	poll(t, "an election under the new leader", func() bool {
		h, _ := b2.replicaInfo()
		return h.MasterBrokerID == 2
	})
	if h, _ := b2.replicaInfo(); h.MasterEpoch != 2 {
		t.Fatalf("master epoch %d, want 2", h.MasterEpoch)
	}
}

func TestRestartRecoversStateFromDisk(t *testing.T) {
	c := newCluster(t, 3, true, false)
	c.leader()
	b1, b2, _ := startGroup(t, c, false)
	for _, ctl := range c.live() {
		poll(t, "every controller applied the registrations", func() bool {
			return len(ctl.Groups()) == 1 && len(ctl.Groups()[0].Replicas) == 3
		})
		if err := ctl.Snapshot(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	// A change after the snapshots: recovered from the log, not the snapshot.
	_, set := b1.replicaInfo()
	mustSucceed(t, "alter after the snapshot", b1.alter(1, []int64{1, 2}, set.SyncStateSetEpoch))
	_, ctl := c.leader()
	want, _ := json.Marshal(ctl.Groups())

	b1.stopHeartbeats()
	b2.stopHeartbeats()
	for _, id := range c.ids {
		c.kill(id)
	}
	for _, id := range c.ids {
		snaps, _ := filepath.Glob(filepath.Join(c.dirs[id], "snapshots", "*", "state.bin"))
		if len(snaps) == 0 {
			t.Fatalf("%s wrote no snapshot in %s", id, c.dirs[id])
		}
		if _, err := os.Stat(filepath.Join(c.dirs[id], "raft.db")); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range c.ids {
		c.start(id)
	}
	_, ctl = c.leader()
	for id, x := range c.live() {
		poll(t, "controller "+id+" recovered the groups", func() bool {
			got, _ := json.Marshal(x.Groups())
			return string(got) == string(want)
		})
	}
	info, err := ctl.GetReplicaInfo("broker-a")
	if err != nil || info.MasterID != 1 || info.MasterEpoch != 1 || !slices.Equal(info.SyncStateSet, []int64{1, 2}) {
		t.Fatalf("recovered %+v %v, want master 1 epoch 1 set [1 2]", info, err)
	}
}

func TestAdminElection(t *testing.T) {
	c := newCluster(t, 3, false, false)
	c.leader()
	b1, b2, b3 := startGroup(t, c, true)
	elect := func(id int64, designate bool) *remoting.Command {
		return b1.invoke(remoting.ControllerElectMaster, &protocol.ElectMasterRequestHeader{ClusterName: b1.cluster, BrokerName: b1.name, BrokerID: id, DesignateElect: designate}, nil)
	}
	r := elect(NoMaster, false)
	var h protocol.ElectMasterResponseHeader
	if err := h.Decode(r.ExtFields); err != nil || r.Code != remoting.ControllerMasterStillExist || h.MasterBrokerID != 1 || h.MasterEpoch != 1 {
		t.Fatalf("electing beside a live master: %s %q %+v, want CONTROLLER_MASTER_STILL_EXIST naming broker 1", remoting.ResponseCodeName(r.Code), r.Remark, h)
	}
	if r := elect(b3.id, true); r.Code != remoting.ControllerElectMasterFailed {
		t.Fatalf("designating a broker outside the set: %s %q, want CONTROLLER_ELECT_MASTER_FAILED", remoting.ResponseCodeName(r.Code), r.Remark)
	}
	r = elect(b2.id, true)
	mustSucceed(t, "designating broker 2", r)
	if err := h.Decode(r.ExtFields); err != nil || h.MasterBrokerID != 2 || h.MasterEpoch != 2 || h.MasterAddress != b2.addr {
		t.Fatalf("designated election answered %+v, want broker 2 at epoch 2", h)
	}
	var body protocol.ElectMasterResponseBody
	if err := json.Unmarshal(r.Body, &body); err != nil || !slices.Equal(body.SyncStateSet, []int64{2}) ||
		body.BrokerMemberGroup == nil || len(body.BrokerMemberGroup.BrokerAddrs) != 3 {
		t.Fatalf("election body %s: %v", r.Body, err)
	}
	poll(t, "the old master told it is not master", func() bool {
		return slices.ContainsFunc(b1.notifications(), func(n protocol.NotifyBrokerRoleChangedRequestHeader) bool { return n.MasterBrokerID == 2 })
	})
}
