package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The attacks of an outsider on the Raft port, made with hashicorp/raft's own transport as an
// outsider would: well-formed RPCs with a term far above the cluster's.

func withSecret(secret string) func(*Options) {
	return func(o *Options) { o.Secret = secret }
}

// quietRaft gives Raft hashicorp/raft's timeouts doubled instead of the harness's 100 ms, so that
// no election happens on its own while a test checks that the term and the leader stay put.
func quietRaft(o *Options) {
	o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
}

const (
	forgedBroker     = "forged-broker"
	forgedBrokerAddr = "203.0.113.66:10911"
	forgedTermAhead  = 1000
)

// newOutsider is a Raft transport of someone who reaches the port but has no secret.
func newOutsider(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func outsiderHeader(tr raft.Transport) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("outsider"), Addr: []byte(tr.LocalAddr())}
}

func lastLogTerm(c *Controller) uint64 {
	n, _ := strconv.ParseUint(c.raft.Stats()["last_log_term"], 10, 64)
	return n
}

func forgedCommands(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, cmd := range []command{
		{Op: opApplyBrokerID, Cluster: "DefaultCluster", BrokerName: forgedBroker, BrokerID: 1, Addr: forgedBrokerAddr, CheckCode: forgedBrokerAddr + ";1"},
		{Op: opElectMaster, BrokerName: forgedBroker, BrokerID: 1},
	} {
		b, err := json.Marshal(&cmd)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// forgedAppend makes the victim's master of forgedBroker the outsider's broker: two entries
// right after the victim's log, in a term far ahead, committed at once.
func forgedAppend(t *testing.T, tr raft.Transport, victim *Controller) *raft.AppendEntriesRequest {
	last, term := victim.raft.LastIndex(), victim.raft.CurrentTerm()+forgedTermAhead
	req := &raft.AppendEntriesRequest{RPCHeader: outsiderHeader(tr), Term: term,
		PrevLogEntry: last, PrevLogTerm: lastLogTerm(victim)}
	for i, b := range forgedCommands(t) {
		req.Entries = append(req.Entries, &raft.Log{Index: last + 1 + uint64(i), Term: term, Type: raft.LogCommand, Data: b})
	}
	req.LeaderCommitIndex = last + uint64(len(req.Entries))
	return req
}

type attack struct {
	name string
	run  func() error
}

// attacks are every RPC an outsider can send victim: each, answered, takes over the cluster or
// disturbs it.
func attacks(t *testing.T, tr *raft.NetworkTransport, id string, victim *Controller) []attack {
	target := raft.ServerAddress(victim.opts.Peers[id])
	sid := raft.ServerID(id)
	ahead := func() uint64 { return victim.raft.CurrentTerm() + forgedTermAhead }
	return []attack{
		{"AppendEntries with a forged entry", func() error {
			return tr.AppendEntries(sid, target, forgedAppend(t, tr, victim), &raft.AppendEntriesResponse{})
		}},
		{"RequestVote", func() error {
			return tr.RequestVote(sid, target, &raft.RequestVoteRequest{RPCHeader: outsiderHeader(tr), Term: ahead(),
				LastLogIndex: victim.raft.LastIndex() + forgedTermAhead, LastLogTerm: ahead(), LeadershipTransfer: true}, &raft.RequestVoteResponse{})
		}},
		{"RequestPreVote", func() error {
			return tr.RequestPreVote(sid, target, &raft.RequestPreVoteRequest{RPCHeader: outsiderHeader(tr), Term: ahead(),
				LastLogIndex: victim.raft.LastIndex() + forgedTermAhead, LastLogTerm: ahead()}, &raft.RequestPreVoteResponse{})
		}},
		{"TimeoutNow", func() error {
			return tr.TimeoutNow(sid, target, &raft.TimeoutNowRequest{RPCHeader: outsiderHeader(tr)}, &raft.TimeoutNowResponse{})
		}},
		{"InstallSnapshot of a forged state", func() error {
			st := state{Groups: map[string]*Group{forgedBroker: {Cluster: "DefaultCluster", BrokerName: forgedBroker,
				Replicas: map[int64]Replica{1: {Addr: forgedBrokerAddr}}, NextBrokerID: 2, MasterID: 1, MasterEpoch: 1,
				SyncStateSet: []int64{1}, SyncStateSetEpoch: 1}}, Controllers: map[string]string{}}
			data, _ := json.Marshal(&st)
			cfg := raft.Configuration{Servers: []raft.Server{{ID: "outsider", Address: tr.LocalAddr()}}}
			return tr.InstallSnapshot(sid, target, &raft.InstallSnapshotRequest{RPCHeader: outsiderHeader(tr),
				SnapshotVersion: raft.SnapshotVersionMax, Term: ahead(), Leader: []byte(tr.LocalAddr()),
				LastLogIndex: victim.raft.LastIndex() + forgedTermAhead, LastLogTerm: ahead(),
				Configuration: raft.EncodeConfiguration(cfg), ConfigurationIndex: 1, Size: int64(len(data))},
				&raft.InstallSnapshotResponse{}, bytes.NewReader(data))
		}},
	}
}

// raftView is what an attack would change on a controller.
type raftView struct {
	Term      uint64
	Leader    string
	LastIndex uint64
	State     string
}

func viewOf(c *Controller) raftView {
	_, leader := c.raft.LeaderWithID()
	c.fsm.mu.RLock()
	st, _ := json.Marshal(&c.fsm.st)
	c.fsm.mu.RUnlock()
	return raftView{Term: c.raft.CurrentTerm(), Leader: string(leader), LastIndex: c.raft.LastIndex(), State: string(st)}
}

func views(c *cluster) map[string]raftView {
	out := map[string]raftView{}
	for id, ctl := range c.live() {
		out[id] = viewOf(ctl)
	}
	return out
}

// applyEverywhere registers a broker and waits until every live controller applied it.
func applyEverywhere(t *testing.T, c *cluster, brokerName string) {
	t.Helper()
	registerBroker(t, c, brokerName)
	for id, ctl := range c.live() {
		poll(t, fmt.Sprintf("%s applied on %s", brokerName, id), func() bool {
			return slices.ContainsFunc(ctl.Groups(), func(g Group) bool { return g.BrokerName == brokerName })
		})
	}
}

// registerBroker registers a broker through the leader, again through the next one if
// leadership moves meanwhile: applying the same id with the same code is idempotent.
func registerBroker(t *testing.T, c *cluster, brokerName string) {
	t.Helper()
	poll(t, "broker "+brokerName+" registered", func() bool {
		_, leader := c.leader()
		err := leader.ApplyBrokerID("DefaultCluster", brokerName, 1, "10.0.0.9:10911;1")
		if err != nil {
			t.Logf("apply broker id of %s: %v", brokerName, err)
		}
		return err == nil
	})
}

// TestRaftOutsiderIsRefused: with a cluster secret, neither an outsider speaking plain Raft nor
// a peer with another secret gets an RPC through to any controller, the leader included: the
// term, the leader, the log and the state stay as they were, and the cluster goes on
// committing. Closing the controllers leaves no goroutine behind.
func TestRaftOutsiderIsRefused(t *testing.T) {
	before := goroutineIDs()
	c := newCluster(t, 3, false, false, withSecret(testSecret), quietRaft)
	c.leader()
	applyEverywhere(t, c, "broker-a")
	was := views(c)

	outsider := newOutsider(t)
	wrongStream, _ := newTestStream(t, testOtherSecret)
	wrongPeer := raft.NewNetworkTransportWithLogger(wrongStream, 1, 5*time.Second, hclog.NewNullLogger())
	for _, tr := range []struct {
		who string
		tr  *raft.NetworkTransport
	}{{"an outsider", outsider}, {"a peer with another secret", wrongPeer}} {
		for _, id := range slices.Sorted(maps.Keys(c.live())) {
			for _, a := range attacks(t, tr.tr, id, c.live()[id]) {
				if err := a.run(); err == nil {
					t.Errorf("%s: %s to %s was answered", tr.who, a.name, id)
				}
			}
		}
	}
	if now := views(c); !maps.Equal(now, was) {
		t.Fatalf("the attacks changed the cluster:\nbefore %+v\nafter  %+v", was, now)
	}
	applyEverywhere(t, c, "broker-b")
	for id, v := range views(c) {
		if v.Term != was[id].Term || v.Leader != was[id].Leader {
			t.Fatalf("%s: term %d, leader %q after the attacks; before, %d and %q", id, v.Term, v.Leader, was[id].Term, was[id].Leader)
		}
	}

	outsider.Close()
	wrongPeer.Close()
	for _, id := range c.ids {
		c.kill(id)
	}
	checkNoGoroutinesSince(t, before)
}

// TestRaftOutsiderWithoutSecret is the attack the secret stops, against a cluster without one:
// the same RPCs take it over. It keeps the attacks above honest: they are ones Raft obeys.
func TestRaftOutsiderWithoutSecret(t *testing.T) {
	c := newCluster(t, 3, false, false, quietRaft)
	leaderID, leader := c.leader()
	outsider := newOutsider(t)

	term := leader.raft.CurrentTerm()
	if err := attacks(t, outsider, leaderID, leader)[3].run(); err != nil {
		t.Fatalf("TimeoutNow: %v", err)
	}
	poll(t, "an election forced by TimeoutNow", func() bool { return leader.raft.CurrentTerm() > term })

	// Once the new leader has announced itself and every controller applied the announcement,
	// the log stands still: the forged entries follow the victim's last one and are the ones
	// it commits.
	leaderID, leader = c.leader()
	poll(t, "every controller applying the whole log", func() bool {
		for _, ctl := range c.live() {
			if ctl.raft.AppliedIndex() != leader.raft.LastIndex() {
				return false
			}
		}
		return true
	})
	var victimID string
	var victim *Controller
	for id, ctl := range c.live() {
		if id != leaderID {
			victimID, victim = id, ctl
		}
	}
	var resp raft.AppendEntriesResponse
	poll(t, "the forged AppendEntries accepted", func() bool {
		err := outsider.AppendEntries(raft.ServerID(victimID), raft.ServerAddress(c.peers[victimID]), forgedAppend(t, outsider, victim), &resp)
		return err == nil && resp.Success
	})
	poll(t, "the outsider's broker master on "+victimID, func() bool {
		return slices.ContainsFunc(victim.Groups(), func(g Group) bool {
			return g.BrokerName == forgedBroker && g.MasterAddr() == forgedBrokerAddr
		})
	})
}

// TestRaftPeerWithWrongSecret: a controller configured with another secret never joins: the two
// others elect a leader and commit without it, and it receives nothing.
func TestRaftPeerWithWrongSecret(t *testing.T) {
	c := newCluster(t, 3, false, false, withSecret(testSecret), func(o *Options) {
		if o.ID == "n2" {
			o.Secret = testOtherSecret
		}
	})
	for _, name := range []string{"broker-a", "broker-b"} {
		registerBroker(t, c, name)
	}
	if leaderID, _ := c.leader(); leaderID == "n2" {
		t.Fatal("the controller with the wrong secret leads")
	}
	poll(t, "both controllers with the secret applying", func() bool {
		return len(c.live()["n0"].Groups()) == 2 && len(c.live()["n1"].Groups()) == 2
	})
	outcast := c.live()["n2"]
	if g := outcast.Groups(); len(g) != 0 {
		t.Fatalf("the controller with the wrong secret applied %+v", g)
	}
	if _, lid := outcast.raft.LeaderWithID(); lid != "" {
		t.Fatalf("the controller with the wrong secret follows %s", lid)
	}
	if n := outcast.raft.LastIndex(); n > 1 {
		t.Fatalf("the controller with the wrong secret has %d log entries; only its bootstrap is its own", n)
	}
}

// TestRaftSilentConnectionsAndSnapshots: strangers holding connections that never finish the
// handshake on every Raft port stop no one: the leader dies, the others elect a new one, and a
// controller that returns empty catches up from a snapshot, which streams over an authenticated
// connection like every RPC.
func TestRaftSilentConnectionsAndSnapshots(t *testing.T) {
	c := newCluster(t, 3, false, false, withSecret(testSecret))
	var silent []net.Conn
	t.Cleanup(func() {
		for _, s := range silent {
			s.Close()
		}
	})
	hold := func(addr string) {
		for range 4 {
			s, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			s.Write([]byte(raftMagic[:4]))
			silent = append(silent, s)
		}
	}
	for _, id := range c.ids {
		hold(c.peers[id])
	}
	oldID, _ := c.leader()
	c.kill(oldID)
	const groups = 5
	for i := range groups {
		applyEverywhere(t, c, fmt.Sprint("broker-", i))
	}

	// Both controllers drop the log behind a snapshot, so whichever leads can bring the
	// returning one (empty, in memory) up to date only with a snapshot.
	for id, ctl := range c.live() {
		rc := ctl.raft.ReloadableConfig()
		rc.TrailingLogs = 1
		if err := ctl.raft.ReloadConfig(rc); err != nil {
			t.Fatal(err)
		}
		if err := ctl.Snapshot(); err != nil {
			t.Fatalf("snapshot of %s: %v", id, err)
		}
	}
	c.start(oldID)
	hold(c.peers[oldID])
	back := c.live()[oldID]
	// Raft records the snapshot's index just after the state machine restored it.
	poll(t, "the returning controller restoring the state from a snapshot", func() bool {
		s := back.raft.Stats()["last_snapshot_index"]
		return len(back.Groups()) == groups && s != "0" && s != ""
	})
}
