package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/mqgo/mq/remoting"
)

// NoMaster is the master id of a group without a live master (Java's null masterBrokerId).
const NoMaster int64 = -1

// FirstBrokerID is the id the first broker of a group gets (RocketMQ's
// MixAll.FIRST_BROKER_CONTROLLER_ID); later ones count up from it.
const FirstBrokerID int64 = 1

// Replica is one broker of a group as the controller records it.
type Replica struct {
	Addr string `json:"addr"`
	// CheckCode is the "<address>;<time>" the broker applied for its id with, so that the same
	// broker applying again gets the id back and another one does not.
	CheckCode string `json:"checkCode"`
}

// Group is a broker group (one broker name) as the replicated state keeps it: RocketMQ 5's
// BrokerReplicaInfo and SyncStateInfo in one.
type Group struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// Replicas are the brokers by id.
	Replicas map[int64]Replica `json:"replicas"`
	// NextBrokerID is the id GET_NEXT_BROKER_ID offers.
	NextBrokerID int64 `json:"nextBrokerId"`
	// MasterID is NoMaster when the group has none.
	MasterID          int64   `json:"masterId"`
	MasterEpoch       int32   `json:"masterEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet"` // ascending
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// MasterAddr is the address of the master, "" without one.
func (g *Group) MasterAddr() string {
	if g.MasterID == NoMaster {
		return ""
	}
	return g.Replicas[g.MasterID].Addr
}

// InSync reports whether id is in the SyncStateSet.
func (g *Group) InSync(id int64) bool {
	_, ok := slices.BinarySearch(g.SyncStateSet, id)
	return ok
}

func (g *Group) clone() Group {
	c := *g
	c.Replicas = maps.Clone(g.Replicas)
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return c
}

// Command kinds: RocketMQ 5's events, and the leader's announcement of its remoting address.
const (
	opAnnounce      = "announce"
	opApplyBrokerID = "applyBrokerId"
	opUpdateAddr    = "updateBrokerAddress"
	opAlterSyncSet  = "alterSyncStateSet"
	opElectMaster   = "electMaster"
	opCleanBroker   = "cleanBrokerData"
)

// command is one entry of the Raft log, JSON-encoded. The leader decides against its state and
// proposes; the expected epochs make the state machine refuse a decision that a change
// committed in between made stale, so every node applies the same thing.
type command struct {
	Op         string  `json:"op"`
	Cluster    string  `json:"cluster,omitempty"`
	BrokerName string  `json:"brokerName,omitempty"`
	BrokerID   int64   `json:"brokerId,omitempty"`
	Addr       string  `json:"addr,omitempty"`
	CheckCode  string  `json:"checkCode,omitempty"`
	IDs        []int64 `json:"ids,omitempty"`
	// ExpectMasterEpoch and ExpectSyncStateSetEpoch guard alterSyncStateSet and electMaster.
	ExpectMasterEpoch       int32 `json:"expectMasterEpoch,omitempty"`
	ExpectSyncStateSetEpoch int32 `json:"expectSyncStateSetEpoch,omitempty"`
	// ControllerID names the announcing controller.
	ControllerID string `json:"controllerId,omitempty"`
}

// applyResult is what fsm.Apply returns: a refusal (code and remark) or the group after the
// change.
type applyResult struct {
	Code   int32
	Remark string
	Group  Group
}

// state is the replicated state: every group by broker name, and the remoting address each
// controller announced when it became leader.
type state struct {
	Groups      map[string]*Group `json:"groups"`
	Controllers map[string]string `json:"controllers"`
}

// fsm is the raft.FSM. Reads take the read lock and copy.
type fsm struct {
	mu sync.RWMutex
	st state
}

func newFSM() *fsm {
	return &fsm{st: state{Groups: map[string]*Group{}, Controllers: map[string]string{}}}
}

func (f *fsm) Apply(l *raft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		// Only this package writes the log; an entry it cannot read is a bug, and skipping it
		// on every node alike keeps them equal.
		return applyResult{Code: remoting.SystemError, Remark: "undecodable log entry: " + err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apply(&c)
}

func refuse(code int32, format string, args ...any) applyResult {
	return applyResult{Code: code, Remark: fmt.Sprintf(format, args...)}
}

func (f *fsm) apply(c *command) applyResult {
	if c.Op == opAnnounce {
		f.st.Controllers[c.ControllerID] = c.Addr
		return applyResult{}
	}
	g := f.st.Groups[c.BrokerName]
	switch c.Op {
	case opApplyBrokerID:
		if g == nil {
			if c.BrokerID != FirstBrokerID {
				return refuse(remoting.ControllerBrokerIDInvalid, "broker-set %s is not registered; the first id is %d, not %d", c.BrokerName, FirstBrokerID, c.BrokerID)
			}
			g = &Group{Cluster: c.Cluster, BrokerName: c.BrokerName, Replicas: map[int64]Replica{},
				NextBrokerID: FirstBrokerID, MasterID: NoMaster, SyncStateSet: []int64{}}
			f.st.Groups[c.BrokerName] = g
		}
		if r, ok := g.Replicas[c.BrokerID]; ok {
			if r.CheckCode != c.CheckCode {
				return refuse(remoting.ControllerBrokerIDInvalid, "broker id %d of %s belongs to another broker", c.BrokerID, c.BrokerName)
			}
			return applyResult{Group: g.clone()}
		}
		if len(g.Replicas) >= maxReplicasPerGroup {
			return refuse(remoting.ControllerBrokerIDInvalid, "broker-set %s has %d brokers already", c.BrokerName, len(g.Replicas))
		}
		g.Replicas[c.BrokerID] = Replica{Addr: c.Addr, CheckCode: c.CheckCode}
		g.NextBrokerID = max(g.NextBrokerID, c.BrokerID+1)
		return applyResult{Group: g.clone()}
	}
	if g == nil {
		return refuse(remoting.ControllerBrokerMetadataNotExist, "broker-set %s is not registered", c.BrokerName)
	}
	switch c.Op {
	case opUpdateAddr:
		r, ok := g.Replicas[c.BrokerID]
		if !ok {
			return refuse(remoting.ControllerBrokerNeedToBeRegistered, "broker id %d is not registered in %s", c.BrokerID, c.BrokerName)
		}
		r.Addr = c.Addr
		g.Replicas[c.BrokerID] = r
	case opAlterSyncSet:
		if g.MasterID != c.BrokerID || g.MasterEpoch != c.ExpectMasterEpoch || g.SyncStateSetEpoch != c.ExpectSyncStateSetEpoch {
			return refuse(remoting.ControllerFencedSyncStateSetEpoch, "%s changed since the proposal (master %d epoch %d, set epoch %d)", c.BrokerName, g.MasterID, g.MasterEpoch, g.SyncStateSetEpoch)
		}
		g.SyncStateSet = slices.Sorted(slices.Values(c.IDs))
		g.SyncStateSetEpoch++
	case opElectMaster:
		if g.MasterEpoch != c.ExpectMasterEpoch || g.SyncStateSetEpoch != c.ExpectSyncStateSetEpoch {
			return refuse(remoting.ControllerElectMasterFailed, "%s changed since the election was decided (master epoch %d, set epoch %d)", c.BrokerName, g.MasterEpoch, g.SyncStateSetEpoch)
		}
		g.MasterEpoch++
		if c.BrokerID == NoMaster {
			// The master is gone and nobody may replace it: keep the set, so that its members
			// are still the only candidates when one returns.
			g.MasterID = NoMaster
			break
		}
		if _, ok := g.Replicas[c.BrokerID]; !ok {
			return refuse(remoting.ControllerInvalidReplicas, "broker id %d is not registered in %s", c.BrokerID, c.BrokerName)
		}
		g.MasterID = c.BrokerID
		g.SyncStateSet = []int64{c.BrokerID}
		g.SyncStateSetEpoch++
	case opCleanBroker:
		if len(c.IDs) == 0 {
			delete(f.st.Groups, c.BrokerName)
			return applyResult{}
		}
		for _, id := range c.IDs {
			delete(g.Replicas, id)
			g.SyncStateSet = slices.DeleteFunc(g.SyncStateSet, func(x int64) bool { return x == id })
			if g.MasterID == id {
				g.MasterID = NoMaster
			}
		}
		if len(g.Replicas) == 0 {
			delete(f.st.Groups, c.BrokerName)
			return applyResult{}
		}
	default:
		return refuse(remoting.SystemError, "unknown log entry %q", c.Op)
	}
	return applyResult{Group: g.clone()}
}

// group returns a copy of a group's state.
func (f *fsm) group(brokerName string) (Group, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	g, ok := f.st.Groups[brokerName]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}

// groups returns a copy of every group, by broker name.
func (f *fsm) groups() []Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Group, 0, len(f.st.Groups))
	for _, name := range slices.Sorted(maps.Keys(f.st.Groups)) {
		out = append(out, f.st.Groups[name].clone())
	}
	return out
}

func (f *fsm) groupCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.st.Groups)
}

func (f *fsm) controllerAddr(id string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.Controllers[id]
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(&f.st)
	if err != nil {
		return nil, err
	}
	return snapshot(b), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st := state{}
	if err := json.NewDecoder(rc).Decode(&st); err != nil {
		return fmt.Errorf("controller snapshot: %w", err)
	}
	if st.Groups == nil {
		st.Groups = map[string]*Group{}
	}
	if st.Controllers == nil {
		st.Controllers = map[string]string{}
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

// snapshot is the state encoded when raft asked for it; Persist may run concurrently with
// Apply, so it holds bytes, not the maps.
type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
