package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/remoting"
)

// fakeControllers is a fakeCluster whose name servers answer CONTROLLER_GET_SYNC_STATE_DATA
// from a table: an answer or an error per address.
type fakeControllers struct {
	*fakeCluster
	ns      []string
	answers map[string]any // *admin.BrokerReplicasInfo or error
	asked   []string
}

func (f *fakeControllers) NameServers() []string { return f.ns }

func (f *fakeControllers) SyncStateData(_ context.Context, addr string, _ []string) (*admin.BrokerReplicasInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, addr)
	switch a := f.answers[addr].(type) {
	case *admin.BrokerReplicasInfo:
		return a, nil
	case error:
		return nil, a
	}
	return nil, &remoting.ResponseError{Code: remoting.RequestCodeNotSupported, Remark: "request type 1006 not supported"}
}

func haOf(t *testing.T, src source) haBody {
	t.Helper()
	srv := httptest.NewServer(newServer(src, Options{Refresh: time.Millisecond}))
	defer srv.Close()
	var h haBody
	getJSON(t, srv.URL+"/api/ha", http.StatusOK, &h)
	return h
}

// Without a controller the HA view is the groups of the cluster table with each slave's lag
// behind its master, from their CommitLog max offsets.
func TestHALagFromMaxOffsets(t *testing.T) {
	f := &fakeControllers{fakeCluster: &fakeCluster{}, ns: []string{"ns:1", "ns:2"}}
	f.set("m:1", keyCommitLogMax, "1000")
	f.set("s:1", keyCommitLogMax, "600")
	h := haOf(t, f)
	if len(h.Groups) != 1 || h.Controller != "" || h.ControllerError != "" || len(f.asked) != 2 {
		t.Fatalf("ha %+v (asked %v)", h, f.asked)
	}
	g := h.Groups[0]
	m, s := g.Members[0], g.Members[1]
	if g.BrokerName != "broker-a" || m.Role != "MASTER" || *m.MaxOffset != 1000 || m.LagBytes != nil ||
		s.Role != "SLAVE" || *s.MaxOffset != 600 || *s.LagBytes != 400 || *g.MaxLagBytes != 400 || m.InSync != nil {
		t.Fatalf("group %+v", g)
	}

	// A slave ahead (sampled a moment later) is 0 behind; a slave down has no lag.
	f.set("s:1", keyCommitLogMax, "1200")
	if s := haOf(t, f).Groups[0].Members[1]; *s.LagBytes != 0 {
		t.Fatalf("slave ahead: %+v", s)
	}
	f.drop("s:1")
	if g := haOf(t, f).Groups[0]; g.Members[1].Status != statusDown || g.Members[1].LagBytes != nil || g.MaxLagBytes != nil {
		t.Fatalf("slave down: %+v", g)
	}
}

// In controller mode the leader's SyncStateSet and epochs join the groups, a replica only the
// controller knows is added, and a controller that refuses is named; its table is bounded.
func TestHAController(t *testing.T) {
	f := &fakeControllers{fakeCluster: &fakeCluster{}, ns: []string{"ns:1", "ns:2"}}
	f.set("m:1", keyCommitLogMax, "10")
	f.set("s:1", keyCommitLogMax, "10")
	info := &admin.BrokerReplicasInfo{ReplicasInfoTable: map[string]admin.ReplicasInfo{"broker-a": {
		MasterBrokerID: 1, MasterAddress: "m:1", MasterEpoch: 3, SyncStateSetEpoch: 7,
		InSyncReplicas:    []admin.ReplicaIdentity{{BrokerID: 1, BrokerAddress: "m:1", Alive: true}},
		NotInSyncReplicas: []admin.ReplicaIdentity{{BrokerID: 2, BrokerAddress: "s:1", Alive: true}, {BrokerID: 3, BrokerAddress: "x:1"}},
	}}}
	f.answers = map[string]any{
		"ns:1": &remoting.ResponseError{Code: remoting.ControllerNotLeader, Remark: "not leader"},
		"ns:2": info,
	}
	h := haOf(t, f)
	g := h.Groups[0]
	if h.Controller != "ns:2" || h.ControllerError != "" || g.Controller == nil || g.Controller.MasterEpoch != 3 ||
		g.Controller.SyncStateSetEpoch != 7 || fmt.Sprint(g.Controller.SyncStateSet) != "[1]" || len(g.Members) != 3 {
		t.Fatalf("ha %+v, group %+v", h, g)
	}
	if m := g.Members[0]; !*m.InSync || !*m.Alive {
		t.Fatalf("master %+v", m)
	}
	if s := g.Members[1]; *s.InSync || !*s.Alive {
		t.Fatalf("slave %+v", s)
	}
	if x := g.Members[2]; x.Addr != "x:1" || x.Status != statusDown || *x.Alive || x.BrokerID != 3 {
		t.Fatalf("replica known to the controller only: %+v", x)
	}

	f.answers["ns:2"] = &remoting.ResponseError{Code: remoting.NoPermission, Remark: "cluster secret could not be verified"}
	if h := haOf(t, f); h.Controller != "" || !strings.Contains(h.ControllerError, "cluster secret") || h.Groups[0].Controller != nil {
		t.Fatalf("refused: %+v", h)
	}

	var many []admin.ReplicaIdentity
	for i := range 5000 {
		many = append(many, admin.ReplicaIdentity{BrokerID: int64(i), BrokerAddress: fmt.Sprintf("h:%d", i)})
	}
	f.answers["ns:2"] = &admin.BrokerReplicasInfo{ReplicasInfoTable: map[string]admin.ReplicasInfo{"broker-a": {NotInSyncReplicas: many}}}
	if g := haOf(t, f).Groups[0]; len(g.Members) > maxBrokers+2 {
		t.Fatalf("%d members from a controller's table", len(g.Members))
	}
}
